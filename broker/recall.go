package broker

import (
	"context"
	"strconv"

	"github.com/rocketraft/rocketraft/message"
	"github.com/rocketraft/rocketraft/protocol"
	"github.com/rocketraft/rocketraft/remoting"
)

// Recalling a timed message (RocketMQ 5.3). A send whose message goes to the timer topic answers a
// recall handle (recallHandle: protocol.RecallHandle, the message's delivery time and UNIQ_KEY on this
// broker). RECALL_MESSAGE with that handle stores a recall record in the timer topic, due at the same
// millisecond and carrying TIMER_DEL_UNIQKEY = "<topic>+<id>"; the timer (broker/internal/delay: Timer.dropRecalled)
// takes everything due at one millisecond together and delivers neither the recall nor the message it
// names. The record goes through the put path like any other, so it is replicated (a slave, a Raft log) and
// survives a restart, a failover and a checkpoint alike. A recall is answered SUCCESS once stored; it comes
// too late if the message was delivered before the record reached the timer (asked within the timer's
// scan delay of the delivery time), and the record is then dropped at its time, as RocketMQ's is.

// recallTag tags a recall record (RocketMQ's RECALL_MESSAGE_TAG).
const recallTag = "_RECALL_TAG_"

// recallHandleOf is the recall handle answered for m as prepared by put.go ("" unless m went to the
// timer topic).
func (b *Broker) recallHandleOf(m *message.Message) string {
	if m.Topic != TopicTimer {
		return ""
	}
	due, err := strconv.ParseInt(timerOut(m.Properties), 10, 64)
	if err != nil {
		return ""
	}
	topic, _ := message.FindProperty(m.Properties, message.PropertyRealTopic)
	id, _ := message.FindProperty(m.Properties, message.PropertyUniqKey)
	if topic == "" || id == "" {
		return ""
	}
	return protocol.RecallHandle{Topic: topic, BrokerName: b.cfg.BrokerName, DeliverMs: due, MessageID: id}.Encode()
}

// processRecallMessage serves RECALL_MESSAGE: the checks of RocketMQ's RecallMessageProcessor with its
// codes (ILLEGAL_OPERATION for a handle that does not decode, is of another topic or broker, or names a
// time passed or beyond timerMaxDelaySec), then the recall record stored as a send is.
func (b *Broker) processRecallMessage(ctx context.Context, conn *remoting.Conn, req *remoting.Command) *remoting.Command {
	h, err := protocol.ParseRecallMessageRequestHeader(req.ExtFields)
	if err != nil {
		return errResponse(remoting.InvalidParameter, "bad RECALL_MESSAGE header: %v", err)
	}
	if resp := b.role.refuseWrite(); resp != nil {
		return resp
	}
	if b.permission()&protocol.PermWrite == 0 {
		return errResponse(remoting.ServiceNotAvailable, "recall failed, the broker[%s] is not writable (brokerPermission %d)", b.addr, b.permission())
	}
	if _, ok := b.topics.lookup(h.Topic); !ok {
		return errResponse(remoting.TopicNotExist, "recall failed, the topic[%s] not exist", h.Topic)
	}
	handle, err := protocol.ParseRecallHandle(h.RecallHandle)
	if err != nil {
		return errResponse(remoting.IllegalOperation, "recall failed, %v", err)
	}
	if handle.Topic != h.Topic {
		return errResponse(remoting.IllegalOperation, "recall failed, topic not match: the handle is of topic %s", handle.Topic)
	}
	if handle.BrokerName != b.cfg.BrokerName {
		return errResponse(remoting.IllegalOperation, "recall failed, the handle is of broker %s, not of %s", handle.BrokerName, b.cfg.BrokerName)
	}
	left := handle.DeliverMs - b.clock.Now().UnixMilli()
	if left <= 0 || left >= b.cfg.TimerMaxDelaySec*1000 {
		return errResponse(remoting.IllegalOperation, "recall failed, timestamp invalid: the message was due %d ms from now (past, or beyond timerMaxDelaySec %d s)", left, b.cfg.TimerMaxDelaySec)
	}
	if _, err := b.putRaw(ctx, b.recallRecord(h, handle)); err != nil {
		return putErrorResponse(err, h.Topic)
	}
	resp := remoting.NewResponse(remoting.Success, "")
	resp.ExtFields = (&protocol.RecallMessageResponseHeader{MsgID: handle.MessageID}).Ext()
	return resp
}

// recallRecord is the timer-topic record recalling handle's message: due when the message is, so that the
// timer meets the two at one millisecond. It is built in the timer topic's form directly (put.go's
// prepare would store a record due within timerPrecisionMs in the real topic, where consumers see it).
func (b *Broker) recallRecord(h *protocol.RecallMessageRequestHeader, handle protocol.RecallHandle) *message.Message {
	now := b.clock.Now().UnixMilli()
	props := map[string]string{
		message.PropertyTags:            recallTag,
		message.PropertyTimerDelUniqKey: protocol.TimerDeleteKey(handle.Topic, handle.MessageID),
		message.PropertyUniqKey:         handle.MessageID,
		message.PropertyRealTopic:       handle.Topic,
		message.PropertyRealQueueID:     "0",
		message.PropertyTimerOutMs:      strconv.FormatInt(handle.DeliverMs, 10),
	}
	if h.ProducerGroup != "" {
		props[message.PropertyProducerGroup] = h.ProducerGroup
	}
	return &message.Message{Topic: TopicTimer, QueueID: 0, Body: []byte("0"),
		Properties: message.EncodeProperties(props), BornTimestamp: now, BornHost: b.storeHost}
}
