package admin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"

	"github.com/rocketraft/rocketraft/message"
	"github.com/rocketraft/rocketraft/protocol"
)

// defaultTraceTopic is where clients send trace records unless told otherwise (RocketMQ's
// TopicValidator.RMQ_SYS_TRACE_TOPIC; the broker's msgTraceTopicName).
const defaultTraceTopic = protocol.TopicTrace

// traceResult is queryMsgTraceById's answer: the trace records of one message, oldest first.
type traceResult struct {
	MsgID      string                `json:"msgId"`
	TraceTopic string                `json:"traceTopic"`
	Records    []message.TraceRecord `json:"records"`
}

// writeText prints as RocketMQ's tool: the Pub records, then the SubAfter records per consumer group.
func (r *traceResult) writeText(w io.Writer) error {
	t := &textWriter{w: w}
	row := "%-10s %-20s %-20s %-20s %-10s %-10s\n"
	var groups []string
	subs := map[string][]message.TraceRecord{}
	for _, rec := range r.Records {
		switch rec.Type {
		case message.TracePub:
			t.printf(row, "#Type", "#ProducerGroup", "#ClientHost", "#SendTime", "#CostTimes", "#Status")
			t.printf(row, "Pub", rec.Group, rec.ClientHost, dateTime(rec.Timestamp), fmt.Sprintf("%dms", rec.CostTime), traceStatus(rec))
			t.printf("\n")
		case message.TraceSubAfter:
			if _, ok := subs[rec.Group]; !ok {
				groups = append(groups, rec.Group)
			}
			subs[rec.Group] = append(subs[rec.Group], rec)
		}
	}
	for _, g := range groups {
		t.printf(row, "#Type", "#ConsumerGroup", "#ClientHost", "#ConsumerTime", "#CostTimes", "#Status")
		for _, rec := range subs[g] {
			t.printf(row, "Sub", rec.Group, rec.ClientHost, dateTime(rec.Timestamp), fmt.Sprintf("%dms", rec.CostTime), traceStatus(rec))
		}
		t.printf("\n")
	}
	if len(r.Records) == 0 {
		t.printf("no trace of message %s in %s\n", r.MsgID, r.TraceTopic)
	}
	return t.err
}

func traceStatus(rec message.TraceRecord) string {
	if rec.Success {
		return "success"
	}
	return "failed"
}

func queryMsgTraceByIdCmd() *command {
	return &command{name: "queryMsgTraceById", desc: "Query a message's trace (the records of clients with tracing on)", setup: func(f *flags) runFunc {
		var msgID string
		traceTopic := defaultTraceTopic
		maxNum := 64
		var begin, end int64 = 0, math.MaxInt64
		f.String(&msgID, "i", "msgId", "Message Id (the unique id the producer got)", true)
		f.String(&traceTopic, "t", "traceTopic", "the trace topic (the brokers' msgTraceTopicName)", false)
		f.Int(&maxNum, "c", "maxNum", "the most trace messages to read per broker", false)
		f.Int64(&begin, "b", "beginTimestamp", "traced at or after this time (ms)", false)
		f.Int64(&end, "e", "endTimestamp", "traced before this time (ms)", false)
		return func(ctx context.Context, r *runner) (result, error) {
			if maxNum <= 0 {
				return nil, usagef("option -c (--maxNum) must be positive")
			}
			recs, err := r.messageTrace(ctx, traceTopic, msgID, maxNum, begin, end)
			return &traceResult{MsgID: msgID, TraceTopic: traceTopic, Records: recs}, err
		}
	}}
}

// messageTrace finds the trace records of message msgID in traceTopic: the trace messages indexed under the
// id, decoded, keeping the records of that message. A record names no client host in older clients' forms;
// it is then the trace message's born host (a SubAfter takes its SubBefore's). Records come oldest first
// (Pub, SubBefore, SubAfter at equal times). The error joins the failures of brokers and of records that
// could not be decoded; what was found is returned with it.
func (r *runner) messageTrace(ctx context.Context, traceTopic, msgID string, maxNum int, begin, end int64) ([]message.TraceRecord, error) {
	msgs, err := r.queryMessages(ctx, traceTopic, "", msgID, false, maxNum, begin, end)
	errs := []error{err}
	out := []message.TraceRecord{}
	before := map[string]string{} // SubBefore's client host by request id
	var born []string             // the born host of each record's trace message
	for _, m := range msgs {
		recs, err := message.DecodeTrace(newMessageView(m).body)
		if err != nil {
			errs = append(errs, fmt.Errorf("trace message %s: %w", message.CreateOffsetMsgID(m.StoreHost, m.PhysicalOffset), err))
		}
		for _, rec := range recs {
			if rec.MsgID != msgID {
				continue
			}
			if rec.Type == message.TraceSubBefore && rec.ClientHost != "" {
				before[rec.RequestID] = rec.ClientHost
			}
			out = append(out, rec)
			born = append(born, m.BornHost.Addr().String())
		}
	}
	for i := range out {
		if out[i].ClientHost == "" && out[i].Type == message.TraceSubAfter {
			out[i].ClientHost = before[out[i].RequestID]
		}
		if out[i].ClientHost == "" {
			out[i].ClientHost = born[i]
		}
	}
	rank := map[string]int{message.TracePub: 0, message.TraceEndTransaction: 1, message.TraceSubBefore: 2, message.TraceSubAfter: 3}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Timestamp != out[j].Timestamp {
			return out[i].Timestamp < out[j].Timestamp
		}
		return rank[out[i].Type] < rank[out[j].Type]
	})
	return out, errors.Join(errs...)
}
