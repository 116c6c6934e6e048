package client

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/rocketraft/rocketraft/message"
	"github.com/rocketraft/rocketraft/protocol"
	"github.com/rocketraft/rocketraft/remoting"
)

// RocketMQ 5's pop consumption over remoting (POP_MESSAGE, ACK_MESSAGE, BATCH_ACK_MESSAGE,
// CHANGE_MESSAGE_INVISIBLETIME, NOTIFICATION), as the 5.x Java client and the gRPC proxy use it. The
// broker hides a popped message from every other pop of the group until it is acked or its invisible time
// passes; then it comes back (from the group's retry topic, with one more reconsume time) until the group's
// retryMaxTimes is spent, after which it goes to %DLQ%<group>. Pops and acks go to the broker group's
// master (a Raft follower forwards them). These codes are above 32767: the requests always travel with
// JSON headers, whatever Config.Serialize says.

// Pop is one POP_MESSAGE.
type Pop struct {
	Group      string
	Topic      string
	BrokerName string // the broker's name, as the receipt handles carry it
	QueueID    int32  // -1: any queue of the topic on that broker
	MaxNums    int    // 1..32
	// Invisible is how long the popped messages stay hidden from other pops (ms precision, > 0).
	Invisible time.Duration
	// Poll is how long the broker may hold the pop when it finds nothing (0: answer at once).
	Poll time.Duration
	// FromStart makes a group new to a queue start at the queue's first message (initMode MIN); otherwise
	// at its last one (MAX), as RocketMQ.
	FromStart bool
	ExpType   string // "TAG" (default) or "SQL92"
	Exp       string // "" is "*"
	// Order asks for an ordered (FIFO) pop: a queue's next message comes only after the previous ones of
	// the queue are acked or visible again.
	Order bool
	// AttemptID names the attempt: an ordered pop retried with the same id gets the same messages.
	AttemptID string
}

// PopStatus is a pop's outcome, named as RocketMQ's PopStatus.
type PopStatus string

// The outcomes of a pop.
const (
	PopFound       PopStatus = "FOUND"
	PopNoNewMsg    PopStatus = "POLLING_NOT_FOUND"
	PopPollingFull PopStatus = "POLLING_FULL"
)

// PoppedMessage is a message of a pop answer and its receipt handle.
type PoppedMessage struct {
	*message.MessageExt // Topic is the topic popped (also for messages redelivered from the retry topic)
	// ReceiptHandle is the handle to ack it or change its invisible time with (protocol.ExtraInfo's text,
	// also set as the message's POP_CK property by the broker for redelivered messages).
	ReceiptHandle string
	Handle        protocol.ExtraInfo
	// Attempt is how often the message was delivered, this time included (reconsume times + 1; for an
	// ordered pop the broker's count of deliveries of the queue's first message).
	Attempt int32
}

// PopResult is a pop's answer decoded.
type PopResult struct {
	Status    PopStatus
	Msgs      []*PoppedMessage
	PopTime   int64 // the broker's clock, ms
	Invisible int64 // ms
	RestNum   int64 // messages left in the queues read
	// Release, when set (an in-process broker's answer: proxy.Local), gives back the store memory the
	// messages' bodies and properties point into; the messages are not to be used after it. Nil for an
	// answer decoded from the wire.
	Release func()
}

// PopMessage sends p to the broker at addr and decodes the answer. It waits p.Poll plus the client's
// Timeout. SUCCESS is FOUND, POLLING_TIMEOUT and PULL_NOT_FOUND are NO_NEW_MSG, POLLING_FULL is
// POLLING_FULL; other codes are a *ResponseError (SERVICE_NOT_AVAILABLE on a broker that is not master and
// cannot forward).
func (c *Client) PopMessage(ctx context.Context, addr string, p *Pop) (*PopResult, error) {
	h := &protocol.PopMessageRequestHeader{ConsumerGroup: p.Group, Topic: p.Topic, QueueID: p.QueueID,
		MaxMsgNums: int32(p.MaxNums), InvisibleTime: p.Invisible.Milliseconds(), PollTime: p.Poll.Milliseconds(),
		BornTime: time.Now().UnixMilli(), InitMode: protocol.PopInitModeMax, ExpType: p.ExpType, Exp: p.Exp,
		Order: p.Order, AttemptID: p.AttemptID, BrokerName: p.BrokerName}
	if p.FromStart {
		h.InitMode = protocol.PopInitModeMin
	}
	if h.ExpType == "" {
		h.ExpType = "TAG"
	}
	if h.Exp == "" {
		h.Exp = "*"
	}
	ctx, cancel := context.WithTimeout(ctx, p.Poll+c.timeout)
	defer cancel()
	resp, err := c.rc.Invoke(ctx, addr, c.jsonRequest(remoting.PopMessage, h.Ext(), nil))
	if err != nil {
		return nil, fmt.Errorf("%s to %s: %w", remoting.PopMessage, addr, err)
	}
	return ParsePop(addr, p, resp)
}

// ParsePop decodes the answer to p from addr, building each message's receipt handle as the 5.x Java
// client does (MQClientAPIImpl.processPopResponse): the message's POP_CK when the broker set one, else from
// the answer's startOffsetInfo and popTime, invisibleTime and reviveQid.
func ParsePop(addr string, p *Pop, resp *remoting.Command) (*PopResult, error) {
	res := &PopResult{}
	switch remoting.ResponseCode(resp.Code) {
	case remoting.Success:
		res.Status = PopFound
	case remoting.PollingTimeout, remoting.PullNotFound:
		res.Status = PopNoNewMsg
	case remoting.PollingFull:
		res.Status = PopPollingFull
	default:
		return nil, AnswerError(remoting.PopMessage, addr, resp)
	}
	h, err := protocol.ParsePopMessageResponseHeader(resp.ExtFields)
	if err != nil {
		if res.Status != PopFound {
			return res, nil
		}
		return nil, fmt.Errorf("%s from %s: %w", remoting.PopMessage, addr, err)
	}
	res.PopTime, res.Invisible, res.RestNum = h.PopTime, h.InvisibleTime, h.RestNum
	if res.Status != PopFound {
		return res, nil
	}
	msgs, err := DecodeMessages(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("%s from %s: %w", remoting.PopMessage, addr, err)
	}
	if res.Msgs, err = PoppedMessages(p, h, msgs); err != nil {
		return nil, fmt.Errorf("%s from %s: %w", remoting.PopMessage, addr, err)
	}
	return res, nil
}

// PoppedMessages are the messages of a pop answer (FOUND, its header h) to p, each with its receipt handle
// as the 5.x Java client builds it (MQClientAPIImpl.processPopResponse): the message's POP_CK when the broker
// set one, else from the answer's startOffsetInfo and popTime, invisibleTime and reviveQid. Each message's
// Topic becomes p.Topic.
func PoppedMessages(p *Pop, h *protocol.PopMessageResponseHeader, msgs []*message.MessageExt) ([]*PoppedMessage, error) {
	starts, err := protocol.ParseOffsetInfo(h.StartOffsetInfo)
	if err != nil {
		return nil, fmt.Errorf("startOffsetInfo: %w", err)
	}
	counts, err := protocol.ParseOffsetInfo(h.OrderCountInfo)
	if err != nil {
		return nil, fmt.Errorf("orderCountInfo: %w", err)
	}
	out := make([]*PoppedMessage, 0, len(msgs))
	for _, m := range msgs {
		pm := &PoppedMessage{MessageExt: m, Attempt: m.ReconsumeTimes + 1}
		if ck, ok := message.PropertyString(m.Properties, message.PropertyPopCK); ok {
			pm.ReceiptHandle = ck
			if pm.Handle, err = protocol.ParseExtraInfo(ck); err != nil {
				return nil, err
			}
		} else {
			key := protocol.OffsetInfoKey(m.Topic, m.QueueID)
			start, ok := starts[key]
			if !ok || len(start) != 1 {
				return nil, fmt.Errorf("no start offset for %s queue %d in %q", m.Topic, m.QueueID, h.StartOffsetInfo)
			}
			pm.Handle = protocol.ExtraInfo{CKQueueOffset: start[0], PopTime: h.PopTime, InvisibleTime: h.InvisibleTime,
				ReviveQueueID: h.ReviveQid, RetryMark: protocol.RetryMark(m.Topic), BrokerName: p.BrokerName,
				QueueID: m.QueueID, QueueOffset: m.QueueOffset}
			pm.ReceiptHandle = pm.Handle.String()
			if n := counts[key]; len(n) == 1 && n[0] > 0 {
				pm.Attempt = int32(n[0]) + 1
			}
		}
		m.Topic = p.Topic
		out = append(out, pm)
	}
	return out, nil
}

// ackTarget is what an ack or change of invisible time of handle on topic names: the topic the message was
// read from, its queue and offset.
func ackTarget(group, topic, handle string) (protocol.ExtraInfo, protocol.AckMessageRequestHeader, error) {
	ei, err := protocol.ParseExtraInfo(handle)
	if err != nil {
		return ei, protocol.AckMessageRequestHeader{}, err
	}
	if ei.QueueOffset < 0 {
		return ei, protocol.AckMessageRequestHeader{}, fmt.Errorf("receipt handle %q has no queue offset (8th field)", handle)
	}
	real, err := protocol.RealTopic(topic, group, ei.RetryMark)
	if err != nil {
		return ei, protocol.AckMessageRequestHeader{}, err
	}
	return ei, protocol.AckMessageRequestHeader{ConsumerGroup: group, Topic: real, QueueID: ei.QueueID,
		ExtraInfo: handle, Offset: ei.QueueOffset, BrokerName: ei.BrokerName}, nil
}

// AckMessage acks the message of handle (a PoppedMessage's ReceiptHandle) popped by group from topic (the
// topic popped, not the retry topic) at the broker at addr. A handle whose message is no longer in flight
// under it (acked already, redelivered after its invisible time, or replaced by ChangeInvisibleTime) is a
// *ResponseError with code NO_MESSAGE; a malformed one an error before anything is sent.
func (c *Client) AckMessage(ctx context.Context, addr, group, topic, handle string) error {
	_, h, err := ackTarget(group, topic, handle)
	if err != nil {
		return fmt.Errorf("%s: %w", remoting.AckMessage, err)
	}
	return c.callJSON(ctx, addr, remoting.AckMessage, h.Ext(), nil, nil)
}

// ChangeInvisibleTime hides the message of handle for invisible from now instead (not from its pop) and
// returns its new receipt handle; the old one is no longer valid. Errors as AckMessage's.
func (c *Client) ChangeInvisibleTime(ctx context.Context, addr, group, topic, handle string, invisible time.Duration) (string, error) {
	ei, a, err := ackTarget(group, topic, handle)
	if err != nil {
		return "", fmt.Errorf("%s: %w", remoting.ChangeMessageInvisibleTime, err)
	}
	h := &protocol.ChangeInvisibleTimeRequestHeader{AckMessageRequestHeader: a, InvisibleTime: invisible.Milliseconds()}
	var out *protocol.ChangeInvisibleTimeResponseHeader
	err = c.callJSON(ctx, addr, remoting.ChangeMessageInvisibleTime, h.Ext(), nil, func(resp *remoting.Command) error {
		out, err = protocol.ParseChangeInvisibleTimeResponseHeader(resp.ExtFields)
		return err
	})
	if err != nil {
		return "", err
	}
	ei.CKQueueOffset, ei.PopTime, ei.InvisibleTime, ei.ReviveQueueID = ei.QueueOffset, out.PopTime, out.InvisibleTime, out.ReviveQid
	return ei.String(), nil
}

// batchAckSpan bounds how far past its check point's first offset a handle's message may be to travel in a
// BATCH_ACK_MESSAGE entry (a bit set from that offset: 128 KiB at most); one further is acked alone.
const batchAckSpan = 1 << 20

// BatchAck acks the messages of handles (popped by group from topic, from the broker at addr) in one
// BATCH_ACK_MESSAGE, one entry per pop and queue, and returns one error per handle: nil when it was acked,
// a *ResponseError with code NO_MESSAGE when its message was no longer in flight under it (acked already,
// redelivered after its invisible time, replaced by ChangeInvisibleTime), another *ResponseError when the
// broker failed its entry, or an error for a malformed handle (not sent). The error returned alone is the
// request's: nothing is known to be acked then. A broker that answers SUCCESS without saying which offsets
// it skipped (RocketMQ's) reports every handle acked.
func (c *Client) BatchAck(ctx context.Context, addr, group, topic string, handles []string) ([]error, error) {
	infos := make([]protocol.ExtraInfo, len(handles))
	bad := make([]error, len(handles))
	for i, h := range handles {
		if infos[i], bad[i] = protocol.ParseExtraInfo(h); bad[i] != nil {
			bad[i] = fmt.Errorf("%s: %w", remoting.BatchAckMessage, bad[i])
			infos[i].QueueOffset = -1
		}
	}
	errs, err := c.BatchAckInfos(ctx, addr, group, topic, infos)
	if err != nil {
		return nil, err
	}
	for i, e := range bad {
		if e != nil {
			errs[i] = e
		}
	}
	return errs, nil
}

// BatchAckInfos is BatchAck of receipt handles already parsed; one with no queue offset (QueueOffset < 0)
// gets an error and is not sent.
func (c *Client) BatchAckInfos(ctx context.Context, addr, group, topic string, handles []protocol.ExtraInfo) ([]error, error) {
	errs := make([]error, len(handles))
	body := protocol.BatchAckMessageRequestBody{}
	entryOf := make([]int, len(handles)) // the body entry of each handle; -1 when not sent
	for hi, ei := range handles {
		entryOf[hi] = -1
		var err error
		switch {
		case ei.QueueOffset < 0:
			err = fmt.Errorf("receipt handle %q has no queue offset (8th field)", ei.String())
		case ei.QueueOffset < ei.CKQueueOffset || ei.QueueOffset-ei.CKQueueOffset >= batchAckSpan:
			err = fmt.Errorf("receipt handle %q: queue offset %d is not within [%d, %d) of its check point", ei.String(),
				ei.QueueOffset, ei.CKQueueOffset, ei.CKQueueOffset+batchAckSpan)
		default:
			_, err = protocol.RealTopic(topic, group, ei.RetryMark)
		}
		if err != nil {
			errs[hi] = fmt.Errorf("%s: %w", remoting.BatchAckMessage, err)
			continue
		}
		body.BrokerName = ei.BrokerName
		i := slices.IndexFunc(body.Acks, func(a protocol.BatchAck) bool {
			return a.Retry == ei.RetryMark && a.QueueID == ei.QueueID && a.StartOffset == ei.CKQueueOffset &&
				a.PopTime == ei.PopTime && a.ReviveQueueID == ei.ReviveQueueID
		})
		if i < 0 {
			i = len(body.Acks)
			body.Acks = append(body.Acks, protocol.BatchAck{ConsumerGroup: group, Topic: topic, Retry: ei.RetryMark,
				StartOffset: ei.CKQueueOffset, QueueID: ei.QueueID, ReviveQueueID: ei.ReviveQueueID, PopTime: ei.PopTime,
				InvisibleTime: ei.InvisibleTime})
		}
		body.Acks[i].SetOffset(ei.QueueOffset)
		entryOf[hi] = i
	}
	if len(body.Acks) == 0 {
		return errs, nil
	}
	b, err := json.Marshal(&body)
	if err != nil {
		return nil, err
	}
	var res protocol.BatchAckResultBody
	err = c.callJSON(ctx, addr, remoting.BatchAckMessage, map[string]string{}, b, func(resp *remoting.Command) error {
		if len(resp.Body) == 0 {
			return nil
		}
		return json.Unmarshal(resp.Body, &res)
	})
	if err != nil {
		return nil, err
	}
	for _, e := range res.Entries {
		var failed error
		if e.Code != 0 {
			failed = &ResponseError{Request: remoting.BatchAckMessage, Addr: addr, Code: remoting.ResponseCode(e.Code), Remark: e.Remark}
		}
		for hi, i := range entryOf {
			if i != e.Index || errs[hi] != nil {
				continue
			}
			if slices.Contains(e.NotInFlight, handles[hi].QueueOffset) {
				errs[hi] = &ResponseError{Request: remoting.BatchAckMessage, Addr: addr, Code: remoting.NoMessage,
					Remark: "the message is not in flight under this receipt handle: acked already, redelivered after its invisible time, or its handle replaced"}
			} else if failed != nil {
				errs[hi] = failed
			}
		}
	}
	return errs, nil
}

// Notification is NOTIFICATION: it reports whether a pop of the group would find a message, waiting up to
// poll for one (long polling, without taking it).
func (c *Client) Notification(ctx context.Context, addr string, h *protocol.NotificationRequestHeader) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Duration(h.PollTime)*time.Millisecond+c.timeout)
	defer cancel()
	resp, err := c.rc.Invoke(ctx, addr, c.jsonRequest(remoting.Notification, h.Ext(), nil))
	if err != nil {
		return false, fmt.Errorf("%s to %s: %w", remoting.Notification, addr, err)
	}
	if err := AnswerError(remoting.Notification, addr, resp); err != nil {
		return false, err
	}
	out, err := protocol.ParseNotificationResponseHeader(resp.ExtFields)
	if err != nil {
		return false, fmt.Errorf("%s from %s: %w", remoting.Notification, addr, err)
	}
	return out.HasMsg, nil
}

// jsonRequest is a request with a JSON header (the pop codes do not fit the binary header's int16).
func (c *Client) jsonRequest(code remoting.RequestCode, ext map[string]string, body []byte) *remoting.Command {
	req := remoting.NewRequest(code, ext, body)
	req.SerializeType = remoting.SerializeJSON
	return req
}

// callJSON sends a JSON-header request, waits the client's Timeout, turns a non-SUCCESS answer into a
// *ResponseError, and hands a SUCCESS answer to decode (when not nil).
func (c *Client) callJSON(ctx context.Context, addr string, code remoting.RequestCode, ext map[string]string, body []byte,
	decode func(*remoting.Command) error) error {
	resp, err := c.invoke(ctx, addr, code, c.jsonRequest(code, ext, body))
	if err != nil {
		return err
	}
	if decode != nil {
		if err := decode(resp); err != nil {
			return fmt.Errorf("%s from %s: %w", code, addr, err)
		}
	}
	return nil
}

// ConsumerSendMsgBack is CONSUMER_SEND_MSG_BACK: the broker at addr stores a copy of the message at physical
// offset phyOffset for group, in %RETRY%<group> with a delay, or in %DLQ%<group> when delayLevel is -1 or
// the message's reconsume times reached maxReconsumeTimes (-1: the group's retryMaxTimes). originMsgID and
// originTopic name the message as the consumer saw it. The gRPC ForwardMessageToDeadLetterQueue is this
// with delayLevel -1, followed by an ack of the pop's receipt handle.
func (c *Client) ConsumerSendMsgBack(ctx context.Context, addr, group string, phyOffset int64, delayLevel, maxReconsumeTimes int32,
	originMsgID, originTopic string) error {
	ext := map[string]string{"group": group, "offset": strconv.FormatInt(phyOffset, 10),
		"delayLevel": strconv.Itoa(int(delayLevel)), "maxReconsumeTimes": strconv.Itoa(int(maxReconsumeTimes)),
		"originMsgId": originMsgID, "originTopic": originTopic, "unitMode": "false"}
	_, err := c.Call(ctx, addr, remoting.ConsumerSendMsgBack, ext, nil)
	return err
}

// PollingInfo is POLLING_INFO: how many pops and notifications of group are held on queue queueID of topic
// at the broker at addr.
func (c *Client) PollingInfo(ctx context.Context, addr, group, topic string, queueID int32) (int, error) {
	h := &protocol.PollingInfoRequestHeader{ConsumerGroup: group, Topic: topic, QueueID: queueID}
	var n int
	err := c.callJSON(ctx, addr, remoting.PollingInfo, h.Ext(), nil, func(resp *remoting.Command) error {
		out, err := protocol.ParsePollingInfoResponseHeader(resp.ExtFields)
		if err == nil {
			n = int(out.PollingNum)
		}
		return err
	})
	return n, err
}
