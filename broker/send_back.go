package broker

import (
	"context"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/rocketraft/rocketraft/message"
	"github.com/rocketraft/rocketraft/protocol"
	"github.com/rocketraft/rocketraft/remoting"
	"github.com/rocketraft/rocketraft/store"
)

// dlqQueueNums is the number of queues of a %DLQ% topic (RocketMQ's DLQ_NUMS_PER_GROUP).
const dlqQueueNums = 1

// processConsumerSendMsgBack is CONSUMER_SEND_MSG_BACK: a consumer failed a message; the broker stores a
// copy in %RETRY%<group> with a delay that grows with each attempt (level 3 + reconsume times), or in
// %DLQ%<group> once the group's retry budget is spent (or the consumer asked for it with delayLevel -1).
func (b *Broker) processConsumerSendMsgBack(ctx context.Context, conn *remoting.Conn, req *remoting.Command) *remoting.Command {
	group, err := req.ExtString("group")
	if err != nil {
		return errResponse(remoting.InvalidParameter, "%v", err)
	}
	phy, err := req.ExtInt64("offset")
	if err != nil {
		return errResponse(remoting.InvalidParameter, "%v", err)
	}
	delayLevel, err := req.OptInt32("delayLevel", 0)
	if err != nil {
		return errResponse(remoting.InvalidParameter, "%v", err)
	}
	maxTimes, err := req.OptInt32("maxReconsumeTimes", -1)
	if err != nil {
		return errResponse(remoting.InvalidParameter, "%v", err)
	}
	sg := b.groups.find(group)
	if sg == nil {
		return errResponse(remoting.SubscriptionGroupNotExist, "subscription group not exist, %s", group)
	}
	if b.permission()&protocol.PermWrite == 0 {
		return errResponse(remoting.NoPermission, "the broker[%s] sending message is forbidden", b.addr)
	}
	if sg.RetryQueueNums <= 0 {
		return remoting.NewResponse(remoting.Success, "") // the group keeps no retries
	}
	msg, err := b.store.LookMessageByOffset(phy)
	if err != nil {
		return errResponse(remoting.SystemError, "look message by offset failed, %d: %v", phy, err)
	}
	if maxTimes < 0 || req.Version < versionV3_4_9 {
		maxTimes = sg.RetryMaxTimes
	}
	out, resp := b.retryOrDLQ(group, sg, &msg.Message, msg.ReconsumeTimes, delayLevel, maxTimes,
		req.OptString("originMsgId", ""), message.CreateOffsetMsgID(msg.StoreHost, msg.PhysicalOffset))
	if resp != nil {
		return resp
	}
	b.putAsync(out, func(res store.PutResult, err error) {
		resp := remoting.NewResponse(remoting.Success, "")
		if err != nil {
			resp = putErrorResponse(err, out.Topic)
		}
		if err := conn.Reply(req, resp); err != nil {
			b.log.Debug("send-back reply", "client", conn.RemoteAddr(), "err", err)
		}
	})
	return nil
}

// versionV3_4_9 is the client version from which RocketMQ honours the maxReconsumeTimes the consumer sends.
const versionV3_4_9 = 121

// retryOrDLQ builds the copy of a failed message: to %RETRY%<group> with a delay level (3 + reconsume
// times unless the consumer chose one), or to %DLQ%<group> when reconsumeTimes reached maxTimes or
// delayLevel < 0. The copy's reconsume times is one more than the original's; RETRY_TOPIC keeps the topic
// it was first sent to and ORIGIN_MESSAGE_ID the first message's id.
func (b *Broker) retryOrDLQ(group string, sg *protocol.SubscriptionGroupConfig, orig *message.Message, reconsumeTimes, delayLevel, maxTimes int32,
	originMsgID, offsetMsgID string) (*message.Message, *remoting.Command) {
	topic := RetryGroupPrefix + group
	queues := max(sg.RetryQueueNums, 1)
	dlq := reconsumeTimes >= maxTimes || delayLevel < 0
	if dlq {
		topic, queues = DLQGroupPrefix+group, dlqQueueNums
	} else if delayLevel == 0 {
		delayLevel = 3 + reconsumeTimes
	}
	perm := int32(protocol.PermRead | protocol.PermWrite)
	if _, err := b.topics.createIfAbsent(topic, queues, perm, 0); err != nil {
		return nil, errResponse(remoting.SystemError, "topic[%s] not exist and cannot be created: %v", topic, err)
	}
	props := message.EditProperties(orig.Properties, func(p map[string]string) {
		if _, ok := p[message.PropertyRetryTopic]; !ok && !strings.HasPrefix(orig.Topic, RetryGroupPrefix) {
			p[message.PropertyRetryTopic] = orig.Topic
		}
		if _, ok := p[message.PropertyOriginMessageID]; !ok {
			if originMsgID == "" {
				originMsgID = offsetMsgID
			}
			p[message.PropertyOriginMessageID] = originMsgID
		}
		delete(p, message.PropertyDelayLevel)
		delete(p, message.PropertyRealTopic)
		delete(p, message.PropertyRealQueueID)
		if dlq {
			p[message.PropertyDLQOriginTopic] = p[message.PropertyRetryTopic]
			p[message.PropertyDLQOriginMessageID] = p[message.PropertyOriginMessageID]
		} else {
			p[message.PropertyDelayLevel] = strconv.Itoa(int(delayLevel))
		}
	})
	firstTopic := orig.Topic
	if t, ok := message.FindProperty(orig.Properties, message.PropertyRetryTopic); ok {
		firstTopic = t
	}
	b.stats.RecordSendBack(firstTopic, group, dlq)
	if dlq {
		b.log.Info("message moved to the dead letter queue", "group", group, "topic", topic, "reconsumeTimes", reconsumeTimes, "max", maxTimes)
	}
	out := *orig
	out.Topic = topic
	out.QueueID = rand.Int32N(queues)
	out.Properties = props
	out.ReconsumeTimes = reconsumeTimes + 1
	out.SysFlag &^= message.SysFlagTransactionMask
	out.PreparedTransactionOffset = 0
	return &out, nil
}

// redirectRetry applies RocketMQ's handleRetryAndDLQ to a SEND_MESSAGE addressed to %RETRY%<group> (the
// client's fallback when CONSUMER_SEND_MSG_BACK failed): past the group's retry budget, the message goes
// to %DLQ%<group> instead, undelayed.
func (b *Broker) redirectRetry(h *sendHeader, m *message.Message, version int32) *remoting.Command {
	if !strings.HasPrefix(h.topic, RetryGroupPrefix) {
		return nil
	}
	group := strings.TrimPrefix(h.topic, RetryGroupPrefix)
	sg := b.groups.find(group)
	if sg == nil {
		return errResponse(remoting.SubscriptionGroupNotExist, "subscription group not exist, %s", group)
	}
	maxTimes := sg.RetryMaxTimes
	if version >= versionV3_4_9 && h.maxReconsumeTimes > 0 {
		maxTimes = h.maxReconsumeTimes
	}
	if h.reconsumeTimes < maxTimes {
		return nil
	}
	dlq := DLQGroupPrefix + group
	if _, err := b.topics.createIfAbsent(dlq, dlqQueueNums, protocol.PermRead|protocol.PermWrite, 0); err != nil {
		return errResponse(remoting.SystemError, "topic[%s] not exist and cannot be created: %v", dlq, err)
	}
	m.Topic, m.QueueID = dlq, 0
	m.Properties = message.EditProperties(m.Properties, func(p map[string]string) { delete(p, message.PropertyDelayLevel) })
	b.log.Info("retry message moved to the dead letter queue", "group", group, "reconsumeTimes", h.reconsumeTimes, "max", maxTimes)
	return nil
}
