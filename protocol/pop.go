package protocol

// RocketMQ 5's pop consumption on the wire: the headers of POP_MESSAGE (200050), ACK_MESSAGE (200051),
// CHANGE_MESSAGE_INVISIBLETIME (200053), NOTIFICATION (200054), the body of BATCH_ACK_MESSAGE (200151), the
// receipt handle (ExtraInfoUtil's extraInfo) and the check-point and ack records the broker writes to its
// revive topic. Names, field keys and formats are RocketMQ 5's (PopMessageRequestHeader.java,
// PopMessageResponseHeader.java, AckMessageRequestHeader.java, ChangeInvisibleTimeRequestHeader.java,
// ChangeInvisibleTimeResponseHeader.java, NotificationRequestHeader.java, NotificationResponseHeader.java,
// BatchAckMessageRequestBody.java, BatchAck.java, ExtraInfoUtil.java, KeyBuilder.java, PopAckConstants.java,
// PopCheckPoint.java, AckMsg.java, BatchAckMsg.java of apache/rocketmq 5.x): wire format, never to change.

import (
	"fmt"
	"strconv"
	"strings"
)

// Pop naming (KeyBuilder, PopAckConstants, MixAll).
const (
	// ReviveTopicPrefix + the cluster name is the revive topic holding check points and acks.
	ReviveTopicPrefix = "rmq_sys_REVIVE_LOG_"
	// ReviveGroup is the consumer group under which the revive service keeps its progress per revive queue.
	ReviveGroup = "CID_RMQ_SYS_REVIVE_GROUP"
	// CheckPointTag, AckTag and BatchAckTag tag the records of the revive topic.
	CheckPointTag = "ck"
	AckTag        = "ack"
	BatchAckTag   = "bAck"
	// PopOrderReviveQueue is the revive queue id of a receipt handle from an ordered (FIFO) pop: such pops
	// write no check point, their acks move the group's offset.
	PopOrderReviveQueue = 999
	// RetryMarkNormal, RetryMarkV1 and RetryMarkV2 are the 5th field of a receipt handle and the "r" of a
	// BatchAck: the message came from the topic itself, from %RETRY%<group>_<topic>, or from
	// %RETRY%<group>+<topic>.
	RetryMarkNormal = "0"
	RetryMarkV1     = "1"
	RetryMarkV2     = "2"
)

// ReviveTopic is the revive topic of a cluster (PopAckConstants.buildClusterReviveTopic).
func ReviveTopic(cluster string) string { return ReviveTopicPrefix + cluster }

// PopRetryTopicV1 is %RETRY%<group>_<topic>, where a pop consumer's unacked messages come back (the default).
func PopRetryTopicV1(topic, group string) string { return RetryGroupTopicPrefix + group + "_" + topic }

// PopRetryTopicV2 is %RETRY%<group>+<topic> (brokers with enableRetryTopicV2).
func PopRetryTopicV2(topic, group string) string { return RetryGroupTopicPrefix + group + "+" + topic }

// RetryMark is the receipt handle's mark of a topic: RetryMarkV2 for %RETRY%...+..., RetryMarkV1 for
// another %RETRY% topic, RetryMarkNormal otherwise (ExtraInfoUtil.getRetry).
func RetryMark(topic string) string {
	switch {
	case strings.HasPrefix(topic, RetryGroupTopicPrefix) && strings.Contains(topic, "+"):
		return RetryMarkV2
	case strings.HasPrefix(topic, RetryGroupTopicPrefix):
		return RetryMarkV1
	}
	return RetryMarkNormal
}

// RealTopic is the topic a receipt handle's message was read from: topic itself, or the group's retry topic
// of topic that the mark names (ExtraInfoUtil.getRealTopic).
func RealTopic(topic, group, mark string) (string, error) {
	switch mark {
	case RetryMarkNormal:
		return topic, nil
	case RetryMarkV1:
		return PopRetryTopicV1(topic, group), nil
	case RetryMarkV2:
		return PopRetryTopicV2(topic, group), nil
	}
	return "", fmt.Errorf("retry mark %q is none of 0, 1, 2", mark)
}

// ExtraInfo is a pop receipt handle (ExtraInfoUtil.buildExtraInfo): the fields joined by single spaces, in
// this order:
//
//	ckQueueOffset popTime invisibleTime reviveQid retryMark brokerName queueId [queueOffset]
//
// ckQueueOffset is the first queue offset of the pop's check point (the start offset of that queue in the
// pop), popTime the broker's time of the pop (ms), invisibleTime how long (ms) the message stays hidden from
// that time, reviveQid the revive queue holding the check point (PopOrderReviveQueue for an ordered pop),
// retryMark the topic mark (RetryMark), queueId and queueOffset the message's queue and offset. The 5.x
// clients put it in a message's POP_CK property and hand it back in ACK_MESSAGE and
// CHANGE_MESSAGE_INVISIBLETIME as extraInfo.
type ExtraInfo struct {
	CKQueueOffset int64
	PopTime       int64
	InvisibleTime int64
	ReviveQueueID int32
	RetryMark     string
	BrokerName    string
	QueueID       int32
	QueueOffset   int64 // -1 when the handle has only seven fields
}

// String encodes e as RocketMQ's buildExtraInfo does (eight fields, or seven when QueueOffset < 0).
func (e ExtraInfo) String() string {
	s := strconv.FormatInt(e.CKQueueOffset, 10) + " " + strconv.FormatInt(e.PopTime, 10) + " " +
		strconv.FormatInt(e.InvisibleTime, 10) + " " + strconv.Itoa(int(e.ReviveQueueID)) + " " + e.RetryMark + " " +
		e.BrokerName + " " + strconv.Itoa(int(e.QueueID))
	if e.QueueOffset >= 0 {
		s += " " + strconv.FormatInt(e.QueueOffset, 10)
	}
	return s
}

// Order reports whether the handle is from an ordered pop.
func (e ExtraInfo) Order() bool { return e.ReviveQueueID == PopOrderReviveQueue }

// ParseExtraInfo decodes a receipt handle; an error names the field that is missing or not a number.
func ParseExtraInfo(s string) (ExtraInfo, error) {
	f := strings.Split(s, " ")
	if len(f) < 7 {
		return ExtraInfo{}, fmt.Errorf("extraInfo %q has %d fields, want 7 or 8 (ckQueueOffset popTime invisibleTime reviveQid retry brokerName queueId [queueOffset])", s, len(f))
	}
	e := ExtraInfo{RetryMark: f[4], BrokerName: f[5], QueueOffset: -1}
	var err error
	num := func(i int, name string) int64 {
		if err != nil {
			return 0
		}
		var v int64
		if v, err = strconv.ParseInt(f[i], 10, 64); err != nil {
			err = fmt.Errorf("extraInfo %q: field %s (%d) is not a number", s, name, i+1)
		}
		return v
	}
	e.CKQueueOffset = num(0, "ckQueueOffset")
	e.PopTime = num(1, "popTime")
	e.InvisibleTime = num(2, "invisibleTime")
	e.ReviveQueueID = int32(num(3, "reviveQid"))
	e.QueueID = int32(num(6, "queueId"))
	if len(f) > 7 {
		e.QueueOffset = num(7, "queueOffset")
	}
	if err != nil {
		return ExtraInfo{}, err
	}
	if _, err := RealTopic("", "", e.RetryMark); err != nil {
		return ExtraInfo{}, fmt.Errorf("extraInfo %q: %w", s, err)
	}
	return e, nil
}

// OffsetInfoKey is the key of one queue in the start-offset, msg-offset and order-count infos of a pop
// answer: the topic's retry mark, "@", the queue id.
func OffsetInfoKey(topic string, queueID int32) string {
	return RetryMark(topic) + "@" + strconv.Itoa(int(queueID))
}

// AppendStartOffsetInfo adds a queue's start offset to a pop answer's startOffsetInfo: entries
// "mark queueId startOffset" joined by ";".
func AppendStartOffsetInfo(b *strings.Builder, topic string, queueID int32, startOffset int64) {
	appendInfo(b, topic, strconv.Itoa(int(queueID)), strconv.FormatInt(startOffset, 10))
}

// AppendMsgOffsetInfo adds a queue's popped offsets to msgOffsetInfo: "mark queueId o1,o2,..." joined by ";".
func AppendMsgOffsetInfo(b *strings.Builder, topic string, queueID int32, offsets []int64) {
	s := make([]string, len(offsets))
	for i, o := range offsets {
		s[i] = strconv.FormatInt(o, 10)
	}
	appendInfo(b, topic, strconv.Itoa(int(queueID)), strings.Join(s, ","))
}

// AppendOrderCountInfo adds how often an ordered pop handed a queue's message out before
// (buildQueueIdOrderCountInfo): "mark queueId count" joined by ";".
func AppendOrderCountInfo(b *strings.Builder, topic string, queueID int32, count int) {
	appendInfo(b, topic, strconv.Itoa(int(queueID)), strconv.Itoa(count))
}

func appendInfo(b *strings.Builder, topic, queueID, value string) {
	if b.Len() > 0 {
		b.WriteByte(';')
	}
	b.WriteString(RetryMark(topic))
	b.WriteByte(' ')
	b.WriteString(queueID)
	b.WriteByte(' ')
	b.WriteString(value)
}

// ParseOffsetInfo decodes a startOffsetInfo, msgOffsetInfo or orderCountInfo: OffsetInfoKey to the values of
// the entry's third field, split at ",". An empty info is an empty map.
func ParseOffsetInfo(s string) (map[string][]int64, error) {
	out := map[string][]int64{}
	if s == "" {
		return out, nil
	}
	for _, one := range strings.Split(s, ";") {
		f := strings.Split(one, " ")
		if len(f) != 3 {
			return nil, fmt.Errorf("offset info entry %q has %d fields, want 3", one, len(f))
		}
		key := f[0] + "@" + f[1]
		if _, dup := out[key]; dup {
			return nil, fmt.Errorf("offset info %q names %s twice", s, key)
		}
		for _, v := range strings.Split(f[2], ",") {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("offset info entry %q: %q is not a number", one, v)
			}
			out[key] = append(out[key], n)
		}
	}
	return out, nil
}

// PopCheckPoint is the body (JSON) of a check-point record of the revive topic (tag CheckPointTag): one pop
// of up to 32 messages of one queue, and which of them are acked (PopCheckPoint.java).
type PopCheckPoint struct {
	StartOffset   int64  `json:"so"`
	PopTime       int64  `json:"pt"`
	InvisibleTime int64  `json:"it"`
	BitMap        int32  `json:"bm"` // bit i: the message at StartOffset+QueueOffsetDiff[i] is acked
	Num           int8   `json:"n"`  // how many messages
	QueueID       int32  `json:"q"`
	Topic         string `json:"t"` // the topic read from (a retry topic for redelivered messages)
	CID           string `json:"c"` // the consumer group
	ReviveOffset  int64  `json:"ro"`
	// QueueOffsetDiff are the messages' queue offsets minus StartOffset, ascending.
	QueueOffsetDiff []int32 `json:"d"`
	BrokerName      string  `json:"bn,omitempty"`
	RePutTimes      string  `json:"rp,omitempty"`
}

// ReviveTime is when the check point's unacked messages are due again (ms).
func (c *PopCheckPoint) ReviveTime() int64 { return c.PopTime + c.InvisibleTime }

// IndexOf is the index in the check point of the message at queue offset off, or -1.
func (c *PopCheckPoint) IndexOf(off int64) int {
	for i, d := range c.QueueOffsetDiff {
		if c.StartOffset+int64(d) == off {
			return i
		}
	}
	return -1
}

// AckMsg is the body (JSON) of an ack record of the revive topic (tag AckTag; BatchAckTag with
// AckOffsetList set and AckOffset -1): messages of one pop acked (AckMsg.java, BatchAckMsg.java).
type AckMsg struct {
	AckOffset     int64   `json:"ao"`
	StartOffset   int64   `json:"so"`
	ConsumerGroup string  `json:"c"`
	Topic         string  `json:"t"`
	QueueID       int32   `json:"q"`
	PopTime       int64   `json:"pt"`
	BrokerName    string  `json:"bn,omitempty"`
	AckOffsetList []int64 `json:"aol,omitempty"`
}

// BatchAck is one entry of BATCH_ACK_MESSAGE's body: acks of messages of one pop of one queue.
type BatchAck struct {
	ConsumerGroup string `json:"c"`
	Topic         string `json:"t"` // the topic the consumer subscribed; R names the retry topic read
	Retry         string `json:"r"` // a retry mark
	StartOffset   int64  `json:"so"`
	QueueID       int32  `json:"q"`
	ReviveQueueID int32  `json:"rq"`
	PopTime       int64  `json:"pt"`
	InvisibleTime int64  `json:"it"`
	// BitSet is java.util.BitSet.toByteArray (bit i, little-endian: the message at StartOffset+i is acked),
	// base64 in JSON as fastjson writes a byte[].
	BitSet []byte `json:"b"`
}

// Offsets are the acked queue offsets of the entry.
func (a *BatchAck) Offsets() []int64 {
	var out []int64
	for i, by := range a.BitSet {
		for bit := 0; bit < 8; bit++ {
			if by&(1<<bit) != 0 {
				out = append(out, a.StartOffset+int64(i*8+bit))
			}
		}
	}
	return out
}

// SetOffset marks the message at queue offset off (>= StartOffset) acked.
func (a *BatchAck) SetOffset(off int64) {
	i := int(off - a.StartOffset)
	for len(a.BitSet) <= i/8 {
		a.BitSet = append(a.BitSet, 0)
	}
	a.BitSet[i/8] |= 1 << (i % 8)
}

// BatchAckMessageRequestBody is BATCH_ACK_MESSAGE's JSON body.
type BatchAckMessageRequestBody struct {
	BrokerName string     `json:"brokerName"`
	Acks       []BatchAck `json:"acks"`
}

// BatchAckResultBody is ours, not RocketMQ's: the answer body of a BATCH_ACK_MESSAGE (SUCCESS) that did not
// ack every offset it named, one entry per request entry with such offsets. RocketMQ's broker answers
// SUCCESS with no body and skips what is not in flight; its clients read no body and so are unaffected.
// An answer without a body acked everything.
type BatchAckResultBody struct {
	Entries []BatchAckEntryResult `json:"entries"`
}

// BatchAckEntryResult is what was not acked of the request entry Index (of BatchAckMessageRequestBody.Acks):
// NotInFlight are offsets whose message was not in flight under the entry's pop (acked already, redelivered,
// its handle replaced: NO_MESSAGE as ACK_MESSAGE answers); a non-zero Code (a remoting response code, with
// Remark) failed the entry's other offsets.
type BatchAckEntryResult struct {
	Index       int     `json:"i"`
	NotInFlight []int64 `json:"nif,omitempty"`
	Code        int32   `json:"code,omitempty"`
	Remark      string  `json:"remark,omitempty"`
}
