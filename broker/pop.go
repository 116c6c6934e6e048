package broker

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rocketraft/rocketraft/broker/internal/pop"
	"github.com/rocketraft/rocketraft/message"
	"github.com/rocketraft/rocketraft/protocol"
	"github.com/rocketraft/rocketraft/remoting"
)

// The handlers of RocketMQ 5's pop family: POP_MESSAGE, ACK_MESSAGE, BATCH_ACK_MESSAGE,
// CHANGE_MESSAGE_INVISIBLETIME. They check the request (topic, group, permissions, filter) and hand it
// to the pop engine (package broker/internal/pop), which runs on the master.

// PopConfig are RocketMQ 5's keys of pop consumption (pop.Config).
type PopConfig = pop.Config

// DefaultPopConfig is RocketMQ 5's.
func DefaultPopConfig() PopConfig { return pop.DefaultConfig() }

// popEngine is the pop engine as the broker runs it: a master service (startStopper), and the pop series'
// collector.
type popEngine struct{ *pop.Engine }

func (p popEngine) collect(ch chan<- prometheus.Metric, held int) { p.Collect(ch, held) }

// popDescs are the descriptions of the pop series.
var popDescs = pop.Descs

// popMaxMsgNums is the most messages one pop hands out (RocketMQ refuses more than 32).
const popMaxMsgNums = 32

// processPopMessage is POP_MESSAGE: a pop that finds nothing is held up to its pollTime (pop_poll.go).
func (b *Broker) processPopMessage(ctx context.Context, conn *remoting.Conn, req *remoting.Command) *remoting.Command {
	return b.popMessage(ctx, conn, req, time.Time{})
}

// popMessage runs a pop. deadline is zero for a new request (its pollTime sets it), else the deadline of
// a held one run again; a pop that finds nothing before its deadline is held (nil is returned).
func (b *Broker) popMessage(ctx context.Context, conn *remoting.Conn, req *remoting.Command, deadline time.Time) *remoting.Command {
	h, err := protocol.ParsePopMessageRequestHeader(req.ExtFields)
	if err != nil {
		return errResponse(remoting.InvalidParameter, "bad POP_MESSAGE header: %v", err)
	}
	r, resp := b.popRequest(h, conn.RemoteAddr())
	if resp != nil {
		return resp
	}
	a, err := b.pop.Pop(ctx, r)
	if err != nil {
		return popErrResponse(err)
	}
	if a.Count == 0 {
		a.Release()
		switch b.holdPop(conn, req, r, h.PollTime, deadline) {
		case popHeld:
			return nil
		case popPollFull:
			// The 5.x clients decode the answer header of POLLING_FULL too (its fields are required).
			resp := errResponse(remoting.PollingFull, "too many pops held on %s (popPollingSize %d, maxPopPollingSize %d)",
				h.Topic, b.cfg.Pop.PopPollingSize, b.cfg.Pop.MaxPopPollingSize)
			resp.ExtFields = a.Header.Ext()
			return resp
		}
		resp := remoting.NewResponse(remoting.PollingTimeout, "NO_MESSAGE_IN_QUEUE")
		resp.ExtFields = a.Header.Ext()
		return resp
	}
	resp = remoting.NewResponse(remoting.Success, "FOUND")
	resp.ExtFields = a.Header.Ext()
	resp.BodyParts = a.Parts
	resp.Release = a.Release
	return resp
}

// popRequest checks a POP_MESSAGE of the consumer at remote and returns the engine's request, or the
// refusal.
func (b *Broker) popRequest(h *protocol.PopMessageRequestHeader, remote string) (*pop.Request, *remoting.Command) {
	if h.MaxMsgNums <= 0 || h.MaxMsgNums > popMaxMsgNums {
		return nil, errResponse(remoting.InvalidParameter, "maxMsgNums %d is not in [1, %d]", h.MaxMsgNums, popMaxMsgNums)
	}
	if h.InvisibleTime <= 0 {
		return nil, errResponse(remoting.InvalidParameter, "invisibleTime %d must be positive (ms)", h.InvisibleTime)
	}
	if b.permission()&protocol.PermRead == 0 {
		return nil, errResponse(remoting.NoPermission, "the broker[%s] pulling message is forbidden (brokerPermission %d)", b.addr, b.permission())
	}
	tc := b.topics.get(h.Topic)
	if tc == nil {
		return nil, errResponse(remoting.TopicNotExist, "topic[%s] not exist, apply first please!", h.Topic)
	}
	if tc.Perm&protocol.PermRead == 0 {
		return nil, errResponse(remoting.NoPermission, "the topic[%s] peeking message is forbidden (perm %d)", h.Topic, tc.Perm)
	}
	if h.QueueID >= tc.ReadQueueNums {
		return nil, errResponse(remoting.InvalidParameter, "queueId[%d] is illegal, topic:[%s] topicConfig.readQueueNums:[%d] consumer:[%s]",
			h.QueueID, h.Topic, tc.ReadQueueNums, remote)
	}
	group := b.groups.find(h.ConsumerGroup)
	if group == nil {
		return nil, errResponse(remoting.SubscriptionGroupNotExist, "subscription group [%s] does not exist", h.ConsumerGroup)
	}
	if !group.ConsumeEnable {
		return nil, errResponse(remoting.NoPermission, "subscription group [%s] has consumeEnable=false", h.ConsumerGroup)
	}
	expType := h.ExpType
	if expType == "" {
		expType = "TAG"
	}
	if expType != "TAG" && !b.cfg.EnablePropertyFilter {
		return nil, errResponse(remoting.SubscriptionParseFailed, "the broker does not support consumer to filter message by %s (enablePropertyFilter=false)", expType)
	}
	exp := h.Exp
	if exp == "" {
		exp = "*"
	}
	sub := b.sqlCache.compile(&protocol.SubscriptionData{Topic: h.Topic, SubString: exp, ExpressionType: expType})
	if sub.sqlErr != nil {
		return nil, errResponse(remoting.SubscriptionParseFailed, "the expression %q of group %s on %s does not compile: %v", exp, h.ConsumerGroup, h.Topic, sub.sqlErr)
	}
	return &pop.Request{Group: h.ConsumerGroup, Topic: h.Topic, QueueID: h.QueueID, ReadQueues: tc.ReadQueueNums,
		Max: int(h.MaxMsgNums), Invisible: h.InvisibleTime, InitMode: h.InitMode, Filter: sub.messageFilter(),
		Order: h.Order, AttemptID: h.AttemptID}, nil
}

// processAckMessage is ACK_MESSAGE.
func (b *Broker) processAckMessage(ctx context.Context, conn *remoting.Conn, req *remoting.Command) *remoting.Command {
	h, err := protocol.ParseAckMessageRequestHeader(req.ExtFields)
	if err != nil {
		return errResponse(remoting.InvalidParameter, "bad ACK_MESSAGE header: %v", err)
	}
	ei, resp := b.popHandle(h.Topic, h.ExtraInfo)
	if resp != nil {
		return resp
	}
	if err := b.pop.Ack(ctx, h.ConsumerGroup, h.Topic, h.QueueID, h.Offset, ei); err != nil {
		return popErrResponse(err)
	}
	return remoting.NewResponse(remoting.Success, "")
}

// processBatchAckMessage is BATCH_ACK_MESSAGE.
func (b *Broker) processBatchAckMessage(ctx context.Context, conn *remoting.Conn, req *remoting.Command) *remoting.Command {
	var body protocol.BatchAckMessageRequestBody
	if len(req.Body) == 0 || json.Unmarshal(req.Body, &body) != nil || len(body.Acks) == 0 {
		return errResponse(remoting.NoMessage, "BATCH_ACK_MESSAGE carries no acks (JSON body BatchAckMessageRequestBody)")
	}
	results, err := b.pop.BatchAck(ctx, body.Acks)
	if err != nil {
		return popErrResponse(err)
	}
	resp := remoting.NewResponse(remoting.Success, "")
	resp.Body = batchAckResultBody(results)
	return resp
}

// batchAckResultBody is the answer body of a BATCH_ACK_MESSAGE (protocol.BatchAckResultBody), or nil when
// every offset was acked.
func batchAckResultBody(results []pop.BatchAckResult) []byte {
	var out protocol.BatchAckResultBody
	for i, r := range results {
		if len(r.NotInFlight) == 0 && r.Err == nil {
			continue
		}
		e := protocol.BatchAckEntryResult{Index: i, NotInFlight: r.NotInFlight}
		if r.Err != nil {
			e.Code, e.Remark = popErrResponse(r.Err).Code, r.Err.Error()
		}
		out.Entries = append(out.Entries, e)
	}
	if len(out.Entries) == 0 {
		return nil
	}
	b, _ := json.Marshal(&out) // plain values: cannot fail
	return b
}

// processChangeInvisibleTime is CHANGE_MESSAGE_INVISIBLETIME.
func (b *Broker) processChangeInvisibleTime(ctx context.Context, conn *remoting.Conn, req *remoting.Command) *remoting.Command {
	h, err := protocol.ParseChangeInvisibleTimeRequestHeader(req.ExtFields)
	if err != nil {
		return errResponse(remoting.InvalidParameter, "bad CHANGE_MESSAGE_INVISIBLETIME header: %v", err)
	}
	if h.InvisibleTime <= 0 {
		return errResponse(remoting.InvalidParameter, "invisibleTime %d must be positive (ms)", h.InvisibleTime)
	}
	ei, resp := b.popHandle(h.Topic, h.ExtraInfo)
	if resp != nil {
		return resp
	}
	popTime, err := b.pop.ChangeInvisible(ctx, h.ConsumerGroup, h.Topic, h.QueueID, h.Offset, ei, h.InvisibleTime)
	if err != nil {
		return popErrResponse(err)
	}
	resp = remoting.NewResponse(remoting.Success, "")
	resp.ExtFields = (&protocol.ChangeInvisibleTimeResponseHeader{PopTime: popTime, InvisibleTime: h.InvisibleTime,
		ReviveQid: ei.ReviveQueueID}).Ext()
	return resp
}

// popHandle decodes a receipt handle of an ack or change on topic.
func (b *Broker) popHandle(topic, extraInfo string) (protocol.ExtraInfo, *remoting.Command) {
	ei, err := protocol.ParseExtraInfo(extraInfo)
	if err != nil {
		return ei, errResponse(remoting.InvalidParameter, "%v", err)
	}
	return ei, b.checkHandle(topic, ei)
}

// checkHandle checks that a receipt handle of topic names this broker, and that the topic is here.
func (b *Broker) checkHandle(topic string, ei protocol.ExtraInfo) *remoting.Command {
	if b.topics.get(topic) == nil {
		return errResponse(remoting.TopicNotExist, "topic[%s] not exist, apply first please!", topic)
	}
	if ei.BrokerName != "" && ei.BrokerName != b.cfg.BrokerName {
		return errResponse(remoting.InvalidParameter, "the receipt handle is of broker %s, not of %s", ei.BrokerName, b.cfg.BrokerName)
	}
	return nil
}

// popErrResponse answers a pop engine error: NO_MESSAGE for a handle not in flight, SERVICE_NOT_AVAILABLE
// off the master, SYSTEM_ERROR for a failed read or write.
func popErrResponse(err error) *remoting.Command {
	switch {
	case errors.Is(err, pop.ErrHandleNotInFlight):
		return errResponse(remoting.NoMessage, "%v", err)
	case errors.Is(err, pop.ErrNotRunning):
		return errResponse(remoting.ServiceNotAvailable, "%v", err)
	}
	return errResponse(remoting.SystemError, "%v", err)
}

// popOptions wires the pop engine to the broker's store, offsets, put path and tables.
func (b *Broker) popOptions() pop.Options {
	return pop.Options{Store: openedStore{&b.store}, Offsets: engineOffsets{b.offsets}, Put: b.putRaw, Clock: b.clock,
		Log: b.log.With("component", "pop"), Config: b.cfg.Pop, Cluster: b.cfg.BrokerClusterName, Broker: b.cfg.BrokerName,
		Host: b.storeHost, RecordGet: b.stats.RecordGet,
		Unblocked: func(topic string, q int32) { b.popPoll.arrived(topic, q) },
		HasTopic:  func(topic string) bool { return b.topics.get(topic) != nil },
		EnsureTopic: func(topic string, queues int32) error {
			_, err := b.topics.createIfAbsent(topic, queues, protocol.PermRead|protocol.PermWrite, 0)
			return err
		},
		MaxAttempts: func(group string) int32 {
			if sg := b.groups.find(group); sg != nil {
				return sg.RetryMaxTimes
			}
			return 16
		},
		DeadLetter: func(group string, m *message.MessageExt) (*message.Message, error) {
			sg := b.groups.find(group)
			if sg == nil {
				sg = &protocol.SubscriptionGroupConfig{GroupName: group, RetryQueueNums: 1, RetryMaxTimes: 16}
			}
			out, resp := b.retryOrDLQ(group, sg, &m.Message, m.ReconsumeTimes, -1, 0, "",
				message.CreateOffsetMsgID(m.StoreHost, m.PhysicalOffset))
			if resp != nil {
				return nil, errors.New(resp.Remark)
			}
			return out, nil
		},
	}
}

// processNotification is NOTIFICATION: whether a pop of the group would find a message, waiting up to
// pollTime for one.
func (b *Broker) processNotification(ctx context.Context, conn *remoting.Conn, req *remoting.Command) *remoting.Command {
	return b.notification(conn, req, time.Time{})
}

func (b *Broker) notification(conn *remoting.Conn, req *remoting.Command, deadline time.Time) *remoting.Command {
	h, err := protocol.ParseNotificationRequestHeader(req.ExtFields)
	if err != nil {
		return errResponse(remoting.InvalidParameter, "bad NOTIFICATION header: %v", err)
	}
	tc := b.topics.get(h.Topic)
	if tc == nil {
		return errResponse(remoting.TopicNotExist, "topic[%s] not exist, apply first please!", h.Topic)
	}
	if h.QueueID >= tc.ReadQueueNums {
		return errResponse(remoting.InvalidParameter, "queueId[%d] is illegal, topic:[%s] topicConfig.readQueueNums:[%d]", h.QueueID, h.Topic, tc.ReadQueueNums)
	}
	if b.groups.find(h.ConsumerGroup) == nil {
		return errResponse(remoting.SubscriptionGroupNotExist, "subscription group [%s] does not exist", h.ConsumerGroup)
	}
	r := &pop.Request{Group: h.ConsumerGroup, Topic: h.Topic, QueueID: h.QueueID, ReadQueues: tc.ReadQueueNums,
		Order: h.Order, AttemptID: h.AttemptID}
	has := b.pop.HasMessage(r)
	if !has {
		switch b.holdPop(conn, req, r, h.PollTime, deadline) {
		case popHeld:
			return nil
		case popPollFull:
			resp := remoting.NewResponse(remoting.Success, "")
			resp.ExtFields = (&protocol.NotificationResponseHeader{PollingFull: true}).Ext()
			return resp
		}
	}
	resp := remoting.NewResponse(remoting.Success, "")
	resp.ExtFields = (&protocol.NotificationResponseHeader{HasMsg: has}).Ext()
	return resp
}

// processPollingInfo is POLLING_INFO: how many pops and notifications of the group are held on a queue.
func (b *Broker) processPollingInfo(ctx context.Context, conn *remoting.Conn, req *remoting.Command) *remoting.Command {
	h, err := protocol.ParsePollingInfoRequestHeader(req.ExtFields)
	if err != nil {
		return errResponse(remoting.InvalidParameter, "bad POLLING_INFO header: %v", err)
	}
	tc := b.topics.get(h.Topic)
	if tc == nil {
		return errResponse(remoting.TopicNotExist, "topic[%s] not exist, apply first please!", h.Topic)
	}
	if h.QueueID >= tc.ReadQueueNums { // -1: the pops held for any queue
		return errResponse(remoting.InvalidParameter, "queueId[%d] is illegal, topic:[%s] topicConfig.readQueueNums:[%d]", h.QueueID, h.Topic, tc.ReadQueueNums)
	}
	if b.groups.find(h.ConsumerGroup) == nil {
		return errResponse(remoting.SubscriptionGroupNotExist, "subscription group [%s] does not exist", h.ConsumerGroup)
	}
	resp := remoting.NewResponse(remoting.Success, "")
	resp.ExtFields = (&protocol.PollingInfoResponseHeader{PollingNum: int32(b.popPoll.heldOn(h.ConsumerGroup, h.Topic, h.QueueID))}).Ext()
	return resp
}

// popHold is what holdPop did.
type popHold int

const (
	popPollOver popHold = iota // the poll time is over: answer now
	popHeld                    // held: answer later
	popPollFull                // not held, the limits are reached: answer POLLING_FULL
)

// holdPop holds a pop or notification of r that found nothing, unless its poll time is over: deadline, or
// for a new request (zero deadline) pollTime ms from now. A message that arrived between the read and the
// hold wakes it at once.
func (b *Broker) holdPop(conn *remoting.Conn, req *remoting.Command, r *pop.Request, pollTime int64, deadline time.Time) popHold {
	if deadline.IsZero() {
		deadline = time.Now().Add(ms(pollTime))
	}
	if !time.Now().Before(deadline) {
		return popPollOver
	}
	p := &heldPop{conn: conn, req: req, group: r.Group, topics: []string{r.Topic}, queueID: r.QueueID, deadline: deadline}
	if !r.Order {
		p.topics = append(p.topics, b.pop.RetryTopic(r.Topic, r.Group))
	}
	if !b.popPoll.hold(p) {
		return popPollFull
	}
	req.MarkSuspended()
	if b.pop.HasMessage(r) {
		b.popPoll.arrived(r.Topic, r.QueueID)
	}
	return popHeld
}

// rerunHeldPop answers a held pop or notification: it runs it again (held again for the time it has
// left if it still finds nothing) on the pop pool.
func (b *Broker) rerunHeldPop(p *heldPop) {
	if p.wake != nil { // a local-mode pop waits for this itself
		select {
		case p.wake <- struct{}{}:
		default:
		}
		return
	}
	b.rerunOn(b.popPool, p.conn, p.req, "held pop", func() *remoting.Command {
		if p.req.Code == int32(remoting.Notification) {
			return b.notification(p.conn, p.req, p.deadline)
		}
		return b.popMessage(context.Background(), p.conn, p.req, p.deadline)
	})
}
