package broker

import (
	"context"
	"strings"
	"time"

	"github.com/rocketraft/rocketraft/protocol"
	"github.com/rocketraft/rocketraft/remoting"
	"github.com/rocketraft/rocketraft/store"
)

type pullHeader struct {
	group          string
	topic          string
	queueID        int32
	queueOffset    int64
	maxMsgNums     int32
	sysFlag        int32
	commitOffset   int64
	suspendTimeout time.Duration
	subscription   string
	subVersion     int64
	expressionType string
}

func parsePullHeader(req *remoting.Command) (*pullHeader, error) {
	h := &pullHeader{}
	var err error
	if h.group, err = req.ExtString("consumerGroup"); err != nil {
		return nil, err
	}
	if h.topic, err = req.ExtString("topic"); err != nil {
		return nil, err
	}
	if h.queueID, err = req.ExtInt32("queueId"); err != nil {
		return nil, err
	}
	if h.queueOffset, err = req.ExtInt64("queueOffset"); err != nil {
		return nil, err
	}
	if h.maxMsgNums, err = req.ExtInt32("maxMsgNums"); err != nil {
		return nil, err
	}
	if h.sysFlag, err = req.ExtInt32("sysFlag"); err != nil {
		return nil, err
	}
	if h.commitOffset, err = req.OptInt64("commitOffset", 0); err != nil {
		return nil, err
	}
	suspend, err := req.OptInt64("suspendTimeoutMillis", 0)
	if err != nil {
		return nil, err
	}
	h.suspendTimeout = time.Duration(suspend) * time.Millisecond
	h.subscription = req.OptString("subscription", "")
	if h.subVersion, err = req.OptInt64("subVersion", 0); err != nil {
		return nil, err
	}
	h.expressionType = req.OptString("expressionType", "TAG")
	return h, nil
}

// processPull is the PULL_MESSAGE handler: a first pass that may hold the request (long polling).
func (b *Broker) processPull(ctx context.Context, conn *remoting.Conn, req *remoting.Command) *remoting.Command {
	return b.pull(conn, req, true)
}

// pull runs one pass of a pull. allowSuspend is false when a held request is re-run after a wake-up or
// its timeout; then it always answers.
func (b *Broker) pull(conn *remoting.Conn, req *remoting.Command, allowSuspend bool) *remoting.Command {
	h, err := parsePullHeader(req)
	if err != nil {
		return errResponse(remoting.InvalidParameter, "bad pull header: %v", err)
	}
	if b.permission()&protocol.PermRead == 0 {
		return errResponse(remoting.NoPermission, "the broker[%s] pulling message is forbidden (brokerPermission %d)", b.addr, b.permission())
	}
	group := b.groups.find(h.group)
	if group == nil {
		return errResponse(remoting.SubscriptionGroupNotExist, "subscription group [%s] does not exist (autoCreateSubscriptionGroup=false)", h.group)
	}
	if !group.ConsumeEnable {
		return errResponse(remoting.NoPermission, "subscription group [%s] has consumeEnable=false", h.group)
	}
	tc := b.topics.get(h.topic)
	if tc == nil {
		return errResponse(remoting.TopicNotExist, "topic[%s] not exist, apply first please!", h.topic)
	}
	if tc.Perm&protocol.PermRead == 0 {
		return errResponse(remoting.NoPermission, "the topic[%s] pulling message is forbidden (perm %d)", h.topic, tc.Perm)
	}
	if h.queueID < 0 || h.queueID >= tc.ReadQueueNums {
		return errResponse(remoting.SystemError, "queueId[%d] is illegal, topic:[%s] topicConfig.readQueueNums:[%d] consumer:[%s]",
			h.queueID, h.topic, tc.ReadQueueNums, conn.RemoteAddr())
	}
	sub, resp := b.pullSubscription(h, group)
	if resp != nil {
		return resp
	}
	maxMsgs := int(h.maxMsgNums)
	if maxMsgs <= 0 {
		maxMsgs = 1
	}
	mf := sub.messageFilter()
	readStart := time.Now()
	res, err := b.store.GetMessage(h.group, h.topic, h.queueID, h.queueOffset, maxMsgs, maxPullBytes, mf)
	b.admin.putTimes.recordGet(time.Since(readStart))
	if err != nil {
		return errResponse(remoting.SystemError, "reading %s queue %d at offset %d: %v", h.topic, h.queueID, h.queueOffset, err)
	}
	code, remark := pullResponseCode(res.Status, h.queueOffset)
	resp = remoting.NewResponse(code, remark)
	resp.SetExt("nextBeginOffset", itoa(res.NextBeginOffset))
	resp.SetExt("minOffset", itoa(res.MinOffset))
	resp.SetExt("maxOffset", itoa(res.MaxOffset))
	resp.SetExt("suggestWhichBrokerId", itoa(b.suggestBrokerID(group, res)))
	if code == remoting.Success {
		resp.BodyParts = res.Records
		resp.Release = res.Release
		b.stats.RecordGet(h.topic, h.group, h.queueID, res.MessageCount, res.BufferTotalSize, res.NextBeginOffset)
	} else {
		res.Release()
	}
	if allowSuspend && b.resets.pulled(h.group, h.topic, h.queueID, h.queueOffset, h.commitOffset) &&
		h.sysFlag&remoting.PullFlagCommitOffset != 0 && b.role.acceptsWrites() {
		b.offsets.commit(h.group, h.topic, h.queueID, h.commitOffset)
	}
	if code == remoting.PullNotFound && allowSuspend && h.sysFlag&remoting.PullFlagSuspend != 0 {
		hold := h.suspendTimeout
		if live := b.liveConfig(); !live.LongPollingEnable {
			hold = ms(live.ShortPollingTimeMills)
		}
		if hold > 0 {
			req.MarkSuspended()
			b.pullHold.hold(&heldPull{conn: conn, req: req, topic: h.topic, group: h.group, queueID: h.queueID,
				offset: h.queueOffset, filter: mf, deadline: time.Now().Add(hold)})
			return nil
		}
	}
	return resp
}

// maxPullBytes bounds one pull answer; the store applies its own in-memory transfer limits below it.
const maxPullBytes = 4 << 20

// pullSubscription finds the subscription to filter with: from the request when it carries one, else from
// the group's heartbeat.
func (b *Broker) pullSubscription(h *pullHeader, group *protocol.SubscriptionGroupConfig) (*subscriptionInfo, *remoting.Command) {
	if h.expressionType != "" && h.expressionType != "TAG" && !b.cfg.EnablePropertyFilter {
		return nil, errResponse(remoting.SubscriptionParseFailed, "the broker does not support consumer to filter message by %s (enablePropertyFilter=false)", h.expressionType)
	}
	if h.sysFlag&remoting.PullFlagSubscription != 0 {
		sub := b.sqlCache.compile(&protocol.SubscriptionData{Topic: h.topic, SubString: h.subscription, ExpressionType: h.expressionType, SubVersion: h.subVersion})
		if sub.sqlErr != nil {
			return nil, errResponse(remoting.SubscriptionParseFailed, "the subscription %q of group %s on %s does not compile: %v", h.subscription, h.group, h.topic, sub.sqlErr)
		}
		return sub, nil
	}
	model, ok := b.clients.groupModel(h.group)
	if !ok {
		return nil, errResponse(remoting.SubscriptionNotExist, "the consumer group[%s]'s consumer is not online (no heartbeat)", h.group)
	}
	if model == "BROADCASTING" && !group.ConsumeBroadcastEnable {
		return nil, errResponse(remoting.NoPermission, "the consumer group[%s] can not consume by broadcast way", h.group)
	}
	sub := b.clients.subscription(h.group, h.topic)
	if sub == nil {
		return nil, errResponse(remoting.SubscriptionNotExist, "the consumer's subscription of topic %s does not exist in group %s", h.topic, h.group)
	}
	if sub.sqlErr != nil {
		return nil, errResponse(remoting.SubscriptionParseFailed, "the subscription %q of group %s on %s does not compile: %v", sub.data.SubString, h.group, h.topic, sub.sqlErr)
	}
	if sub.sql != nil && !b.cfg.EnablePropertyFilter {
		return nil, errResponse(remoting.SubscriptionParseFailed, "the broker does not support consumer to filter message by SQL92 (enablePropertyFilter=false)")
	}
	return sub, nil
}

// pullResponseCode maps a store read status to PULL_MESSAGE's answer, as RocketMQ's PullMessageProcessor.
func pullResponseCode(st store.GetStatus, requested int64) (remoting.ResponseCode, string) {
	switch st {
	case store.Found:
		return remoting.Success, ""
	case store.MessageWasRemoving, store.NoMatchedMessage:
		return remoting.PullRetryImmediately, ""
	case store.NoMatchedLogicQueue, store.NoMessageInQueue:
		if requested != 0 {
			return remoting.PullOffsetMoved, "the queue is empty and the requested offset is not 0"
		}
		return remoting.PullNotFound, ""
	case store.OffsetFoundNull, store.OffsetOverflowOne:
		return remoting.PullNotFound, ""
	case store.OffsetOverflowBadly:
		return remoting.PullOffsetMoved, "the requested offset is beyond the queue's max offset"
	case store.OffsetTooSmall:
		return remoting.PullOffsetMoved, "the requested offset is below the queue's min offset"
	default:
		return remoting.SystemError, "unexpected store status " + strings.TrimSpace(st.String())
	}
}

// suggestBrokerID is where the client should pull next (RocketMQ 4.9's PullMessageProcessor): with
// slaveReadEnable, the group's whichBrokerWhenConsumeSlowly when the consumer is so far behind that
// its data is likely out of memory (the store's accessMessageInMemoryMaxRatio rule), else the group's
// brokerId; without it, always the master (0).
func (b *Broker) suggestBrokerID(group *protocol.SubscriptionGroupConfig, res *store.GetResult) int64 {
	if !b.liveConfig().Replication.SlaveReadEnable {
		return 0
	}
	if res.SuggestPullingFromSlave {
		return group.WhichBrokerWhenConsumeSlowly
	}
	return group.BrokerID
}
