package message

import (
	"fmt"
	"strconv"
	"strings"
)

// Message trace (RocketMQ's RIP-6). A client with tracing on (the Go client's producer.WithTrace and
// consumer.WithTrace, Java's enableMsgTrace) sends, besides its messages, trace messages to the trace topic
// (the broker's msgTraceTopicName, RMQ_SYS_TRACE_TOPIC by default) keyed by the traced messages' ids and keys,
// so they are found through the IndexFile by message id. A trace message's body is one or more records, each
// ended by TraceFieldSep, whose fields are separated by TraceContentSep. Wire format: never change.
//
//	Pub:            Pub  timestamp regionId group topic msgId tags keys storeHost bodyLength costTime msgType
//	                [offsetMsgId] success [clientHost]
//	SubBefore:      SubBefore timestamp regionId group requestId msgId retryTimes keys [clientHost]
//	SubAfter:       SubAfter requestId msgId costTime success keys [contextCode [timestamp group]]
//	EndTransaction: EndTransaction timestamp regionId group topic msgId tags keys storeHost msgType
//	                transactionId transactionState fromTransactionCheck
//
// Optional fields came with later client versions; a Pub of 13 fields has no offsetMsgId. Empty keys of Sub
// records are written as "null" (the Java console's convention).
const (
	TraceContentSep = '\x01'
	TraceFieldSep   = '\x02'
)

// Trace record types.
const (
	TracePub            = "Pub"
	TraceSubBefore      = "SubBefore"
	TraceSubAfter       = "SubAfter"
	TraceEndTransaction = "EndTransaction"
)

// TraceRecord is one decoded trace record. Which fields are set depends on Type (see the table above); a
// SubBefore and its SubAfter share RequestID.
type TraceRecord struct {
	Type        string `json:"type"`
	Timestamp   int64  `json:"timestamp"` // ms: when the client recorded it (Pub: after the send)
	RegionID    string `json:"regionId,omitempty"`
	Group       string `json:"group"` // producer group (Pub, EndTransaction) or consumer group (Sub*)
	RequestID   string `json:"requestId,omitempty"`
	Topic       string `json:"topic,omitempty"`
	MsgID       string `json:"msgId"`
	OffsetMsgID string `json:"offsetMsgId,omitempty"`
	Tags        string `json:"tags,omitempty"`
	Keys        string `json:"keys,omitempty"`
	StoreHost   string `json:"storeHost,omitempty"`
	ClientHost  string `json:"clientHost,omitempty"`
	BodyLength  int    `json:"bodyLength,omitempty"`
	CostTime    int64  `json:"costTime"` // ms: the send, or the consumer's listener
	// MsgType is RocketMQ's MessageType ordinal: 0 normal, 1 transaction half, 2 transaction commit, 3 delay.
	MsgType    int  `json:"msgType"`
	RetryTimes int  `json:"retryTimes,omitempty"`
	Success    bool `json:"success"`
	// ContextCode is the SubAfter's ConsumeReturnType ordinal: 0 success, 1 timeout, 2 exception, 3 return
	// null, 4 failed.
	ContextCode      int    `json:"contextCode,omitempty"`
	TransactionID    string `json:"transactionId,omitempty"`
	TransactionState string `json:"transactionState,omitempty"`
	FromCheck        bool   `json:"fromTransactionCheck,omitempty"`
}

// DecodeTrace decodes the records of a trace message's body. A record it cannot read (an unknown type, too
// few fields, a number that is not one) is skipped; the error names the first such record and field, and
// the records decoded are returned with it.
func DecodeTrace(body []byte) ([]TraceRecord, error) {
	var out []TraceRecord
	var firstErr error
	for i, rec := range strings.Split(string(body), string(rune(TraceFieldSep))) {
		if strings.TrimSpace(rec) == "" {
			continue
		}
		r, err := decodeTraceRecord(strings.Split(rec, string(rune(TraceContentSep))))
		if err != nil {
			if firstErr == nil {
				firstErr = fmt.Errorf("message: trace record %d: %w", i, err)
			}
			continue
		}
		out = append(out, r)
	}
	return out, firstErr
}

// traceFields reads the numeric fields of a record, keeping the first failure.
type traceFields struct {
	f   []string
	err error
}

func (t *traceFields) int64(i int, name string) int64 {
	n, err := strconv.ParseInt(t.f[i], 10, 64)
	if err != nil && t.err == nil {
		t.err = fmt.Errorf("%s field %d (%s) %q is not an integer", t.f[0], i, name, t.f[i])
	}
	return n
}

func (t *traceFields) int(i int, name string) int { return int(t.int64(i, name)) }

func (t *traceFields) bool(i int) bool { return strings.EqualFold(t.f[i], "true") }

func unNull(s string) string {
	if s == "null" {
		return ""
	}
	return s
}

func decodeTraceRecord(f []string) (TraceRecord, error) {
	least := map[string]int{TracePub: 13, TraceSubBefore: 8, TraceSubAfter: 6, TraceEndTransaction: 13}[f[0]]
	if least == 0 {
		return TraceRecord{}, fmt.Errorf("unknown type %q", f[0])
	}
	if len(f) < least {
		return TraceRecord{}, fmt.Errorf("%s has %d fields, want at least %d", f[0], len(f), least)
	}
	t := &traceFields{f: f}
	r := TraceRecord{Type: f[0]}
	switch f[0] {
	case TracePub:
		r.Timestamp, r.RegionID, r.Group = t.int64(1, "timestamp"), f[2], f[3]
		r.Topic, r.MsgID, r.Tags, r.Keys, r.StoreHost = f[4], f[5], f[6], f[7], f[8]
		r.BodyLength, r.CostTime, r.MsgType = t.int(9, "bodyLength"), t.int64(10, "costTime"), t.int(11, "msgType")
		if len(f) == 13 {
			r.Success = t.bool(12)
		} else {
			r.OffsetMsgID, r.Success = f[12], t.bool(13)
		}
		if len(f) >= 15 {
			r.ClientHost = f[14]
		}
	case TraceSubBefore:
		r.Timestamp, r.RegionID, r.Group, r.RequestID = t.int64(1, "timestamp"), f[2], f[3], f[4]
		r.MsgID, r.RetryTimes, r.Keys, r.Success = f[5], t.int(6, "retryTimes"), unNull(f[7]), true
		if len(f) >= 9 {
			r.ClientHost = f[8]
		}
	case TraceSubAfter:
		r.RequestID, r.MsgID, r.CostTime, r.Success, r.Keys = f[1], f[2], t.int64(3, "costTime"), t.bool(4), unNull(f[5])
		if len(f) >= 7 {
			r.ContextCode = t.int(6, "contextCode")
		}
		if len(f) >= 9 {
			r.Timestamp, r.Group = t.int64(7, "timestamp"), f[8]
		}
	case TraceEndTransaction:
		r.Timestamp, r.RegionID, r.Group = t.int64(1, "timestamp"), f[2], f[3]
		r.Topic, r.MsgID, r.Tags, r.Keys, r.StoreHost = f[4], f[5], f[6], f[7], f[8]
		r.MsgType, r.TransactionID, r.TransactionState, r.FromCheck = t.int(9, "msgType"), f[10], f[11], t.bool(12)
		r.Success = true
	}
	return r, t.err
}
