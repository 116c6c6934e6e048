package proxy

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/rocketraft/rocketraft/client"
	"github.com/rocketraft/rocketraft/protocol"
	"github.com/rocketraft/rocketraft/proxy/v2pb"
	"github.com/rocketraft/rocketraft/remoting"
)

// popper is what receiving, acking and renewing need of a broker: its pop consumption (brokers is one, over
// remoting or in process).
type popper interface {
	// PopMessage pops up to p.MaxNums messages of p.Group at the broker at addr, holding the call up to
	// p.Poll when none is there; the messages stay hidden from other pops for p.Invisible.
	PopMessage(ctx context.Context, addr string, p *client.Pop) (*client.PopResult, error)
	// AckMessage acks the message of handle; NO_MESSAGE when it is no longer in flight under handle.
	AckMessage(ctx context.Context, addr, group, topic, handle string) error
	// BatchAckInfos acks the messages of handles in one request and answers one error per handle
	// (NO_MESSAGE for one no longer in flight); the error alone is the request's.
	BatchAckInfos(ctx context.Context, addr, group, topic string, handles []protocol.ExtraInfo) ([]error, error)
	// ChangeInvisibleTime hides the message of handle for invisible from now and returns its new handle.
	ChangeInvisibleTime(ctx context.Context, addr, group, topic, handle string, invisible time.Duration) (string, error)
}

// The bounds of a receive, as RocketMQ 5's proxy has them (its minimum invisible time is 10 s; 1 s here,
// so that redelivery can be shown in tests without long waits).
const (
	minInvisible  = time.Second
	maxInvisible  = 12 * time.Hour
	maxReceive    = 32
	pollingMargin = 500 * time.Millisecond // answered this long before the caller's deadline
)

// The receipt handle the proxy hands out is the broker's (protocol.ExtraInfo, eight fields) and the
// message's CommitLog offset as a ninth, as RocketMQ 5's proxy makes it: ForwardMessageToDeadLetterQueue
// needs the offset, acks need the rest.
func receiptHandle(extra string, commitLogOffset int64) string {
	return extra + " " + strconv.FormatInt(commitLogOffset, 10)
}

// parseHandle splits a receipt handle into the broker's part (a substring of h), its ExtraInfo and the
// CommitLog offset (-1 when a client hands back a bare broker handle). It reads h once.
func parseHandle(h string) (extra string, info protocol.ExtraInfo, commitLogOffset int64, err error) {
	extra, commitLogOffset = h, -1
	if strings.Count(h, " ") == 8 {
		i := strings.LastIndexByte(h, ' ')
		if commitLogOffset, err = strconv.ParseInt(h[i+1:], 10, 64); err != nil {
			return "", info, 0, fail(v2pb.Code_INVALID_RECEIPT_HANDLE, "receipt handle %q: the CommitLog offset is not a number", h)
		}
		extra = h[:i]
	}
	if info, err = protocol.ParseExtraInfo(extra); err != nil {
		return "", info, 0, fail(v2pb.Code_INVALID_RECEIPT_HANDLE, "%v", err)
	}
	return extra, info, commitLogOffset, nil
}

// groupCache keeps the consumer groups' configs (GET_ALL_SUBSCRIPTIONGROUP_CONFIG of a broker) for RouteTTL,
// for whether a group consumes in order.
type groupCache struct {
	c   *client.Client
	ttl time.Duration
	mu  sync.Mutex
	m   map[string]groupEntry // by broker address; guarded by mu
}

type groupEntry struct {
	table   map[string]*protocol.SubscriptionGroupConfig
	fetched time.Time
}

// get returns group's config at the broker at addr, or nil when the broker has none or cannot be asked.
func (g *groupCache) get(ctx context.Context, addr, group string) *protocol.SubscriptionGroupConfig {
	g.mu.Lock()
	e, ok := g.m[addr]
	g.mu.Unlock()
	if !ok || time.Since(e.fetched) > g.ttl {
		var body struct {
			Table map[string]*protocol.SubscriptionGroupConfig `json:"subscriptionGroupTable"`
		}
		resp, err := g.c.Call(ctx, addr, remoting.GetAllSubscriptionGroupConfig, nil, nil)
		if err == nil {
			err = json.Unmarshal(resp.Body, &body)
		}
		if err != nil {
			return e.table[group] // the table before, if any
		}
		e = groupEntry{table: body.Table, fetched: time.Now()}
		g.mu.Lock()
		g.m[addr] = e
		g.mu.Unlock()
	}
	return e.table[group]
}

// orderly reports whether group consumes in order at the broker at addr (false when it cannot be told).
func (g *groupCache) orderly(ctx context.Context, addr, group string) bool {
	sg := g.get(ctx, addr, group)
	return sg != nil && sg.ConsumeMessageOrderly
}

// ReceiveMessage pops messages of the group from the broker group the message queue names (every queue of
// the topic there: RocketMQ 5's proxy pops with queue id -1), holding the call up to long_polling_timeout
// (bounded by the call's deadline) when none is there. The stream answers a status, then the messages,
// each with its receipt handle, invisible duration and delivery attempt. A group that consumes in order
// (consumeMessageOrderly) pops in order: a queue's next message only once the ones before are acked.
func (s *Server) ReceiveMessage(req *v2pb.ReceiveMessageRequest, stream v2pb.MessagingService_ReceiveMessageServer) error {
	ctx := stream.Context()
	answer := func(st *v2pb.Status) error {
		return stream.Send(&v2pb.ReceiveMessageResponse{Content: &v2pb.ReceiveMessageResponse_Status{Status: st}})
	}
	group, topic := req.GetGroup().GetName(), req.GetMessageQueue().GetTopic().GetName()
	if err := checkGroup(group); err != nil {
		return answer(toStatus(err))
	}
	if err := checkTopic(topic); err != nil {
		return answer(toStatus(err))
	}
	expType, exp := "TAG", req.GetFilterExpression().GetExpression()
	if req.GetFilterExpression().GetType() == v2pb.FilterType_SQL {
		expType = "SQL92"
	}
	invisible := req.GetInvisibleDuration().AsDuration()
	if req.GetAutoRenew() {
		invisible = s.opts.AutoRenewInvisible // renewed by the proxy until acked (renew.go)
	} else if req.InvisibleDuration == nil || invisible < minInvisible || invisible > maxInvisible {
		return answer(st(v2pb.Code_ILLEGAL_INVISIBLE_TIME, "invisible_duration %v is outside [%v, %v]", invisible, minInvisible, maxInvisible))
	}
	batch := int(req.GetBatchSize())
	if batch <= 0 || batch > maxReceive {
		return answer(st(v2pb.Code_BAD_REQUEST, "batch_size %d is outside [1, %d]", batch, maxReceive))
	}
	poll := s.opts.MaxLongPolling
	if req.LongPollingTimeout != nil {
		poll = min(req.GetLongPollingTimeout().AsDuration(), poll)
	}
	if dl, ok := ctx.Deadline(); ok {
		poll = min(poll, time.Until(dl)-s.c.Timeout()/2-pollingMargin)
	}
	poll = max(poll, 0)
	broker := req.GetMessageQueue().GetBroker().GetName()
	r, err := s.routes.get(ctx, topic)
	if err != nil {
		return answer(toStatus(err))
	}
	addr := r.master(broker)
	if addr == "" {
		return answer(st(v2pb.Code_NOT_FOUND, "broker %s serves topic %s from no master now", broker, topic))
	}
	p := &client.Pop{Group: group, Topic: topic, BrokerName: broker, QueueID: -1, MaxNums: batch, Invisible: invisible,
		Poll: poll, ExpType: expType, Exp: exp, Order: s.groups.orderly(ctx, addr, group), AttemptID: req.GetAttemptId(),
		// A group new to a queue starts at its first message, as RocketMQ 5 does while the queue's messages are
		// still in memory (initPopOffsetByCheckMsgInMem): v5 consumers started after their producer see
		// everything it sent.
		FromStart: true}
	res, err := s.pop.PopMessage(ctx, addr, p)
	if err != nil {
		return answer(toStatus(err))
	}
	if res.Release != nil {
		defer res.Release() // each message is encoded by its stream.Send, which returns before this
	}
	switch res.Status {
	case client.PopFound:
	case client.PopPollingFull:
		return answer(st(v2pb.Code_TOO_MANY_REQUESTS, "too many receives wait at broker %s", broker))
	default:
		return answer(st(v2pb.Code_MESSAGE_NOT_FOUND, "no new message for %s on %s", group, broker))
	}
	if err := answer(ok()); err != nil {
		return err
	}
	invisibleDuration := durationpb.New(invisible) // read by each Send's encoding only: shared
	for _, pm := range res.Msgs {
		m := fromMessageExt(pm.MessageExt, topic)
		sp := m.SystemProperties
		h := receiptHandle(pm.ReceiptHandle, pm.PhysicalOffset)
		sp.ReceiptHandle = &h
		if req.GetAutoRenew() {
			s.renew.add(h, &renewal{client: clientID(ctx), group: group, topic: topic, addr: addr, current: pm.ReceiptHandle,
				phy: pm.PhysicalOffset})
		}
		sp.InvisibleDuration = invisibleDuration
		*sp.DeliveryAttempt = pm.Attempt
		if err := stream.Send(&v2pb.ReceiveMessageResponse{Content: &v2pb.ReceiveMessageResponse_Message{Message: m}}); err != nil {
			return err
		}
	}
	return nil
}

// currentHandle parses a client's receipt handle; for a message the proxy renews (auto_renew) it stops the
// renewal and returns the broker's handle now in force.
func (s *Server) currentHandle(h string) (extra string, info protocol.ExtraInfo, commitLogOffset int64, err error) {
	extra, info, commitLogOffset, err = parseHandle(h)
	if err != nil {
		return
	}
	if cur := s.renew.take(h); cur != "" {
		extra = cur
		info, err = protocol.ParseExtraInfo(cur)
	}
	return
}

// ackAddr is the master address of the broker a receipt handle names.
func (s *Server) ackAddr(ctx context.Context, topic string, info protocol.ExtraInfo) (string, error) {
	r, err := s.routes.get(ctx, topic)
	if err != nil {
		return "", err
	}
	addr := r.master(info.BrokerName)
	if addr == "" {
		return "", fail(v2pb.Code_NOT_FOUND, "broker %s of the receipt handle has no master now", info.BrokerName)
	}
	return addr, nil
}

// AckMessage acks the entries' messages: one BATCH_ACK_MESSAGE per broker the receipt handles name (one
// record per pop there), with one answer per entry; a handle no longer in flight is INVALID_RECEIPT_HANDLE.
func (s *Server) AckMessage(ctx context.Context, req *v2pb.AckMessageRequest) (*v2pb.AckMessageResponse, error) {
	group, topic := req.GetGroup().GetName(), req.GetTopic().GetName()
	if err := checkGroup(group); err != nil {
		return &v2pb.AckMessageResponse{Status: toStatus(err)}, nil
	}
	if err := checkTopic(topic); err != nil {
		return &v2pb.AckMessageResponse{Status: toStatus(err)}, nil
	}
	entries := req.GetEntries()
	if len(entries) == 0 {
		return &v2pb.AckMessageResponse{Status: st(v2pb.Code_BAD_REQUEST, "no entry to ack")}, nil
	}
	statuses := make([]*v2pb.Status, len(entries))
	type brokerAcks struct {
		addr    string
		handles []protocol.ExtraInfo
		entries []int
	}
	var byBroker []*brokerAcks
	for i, e := range entries {
		_, info, _, err := s.currentHandle(e.GetReceiptHandle())
		var addr string
		if err == nil {
			addr, err = s.ackAddr(ctx, topic, info)
		}
		if err != nil {
			statuses[i] = toStatus(err)
			continue
		}
		j := slices.IndexFunc(byBroker, func(b *brokerAcks) bool { return b.addr == addr })
		if j < 0 {
			j = len(byBroker)
			byBroker = append(byBroker, &brokerAcks{addr: addr})
		}
		byBroker[j].handles = append(byBroker[j].handles, info)
		byBroker[j].entries = append(byBroker[j].entries, i)
	}
	ack := func(b *brokerAcks) {
		errs, err := s.pop.BatchAckInfos(ctx, b.addr, group, topic, b.handles)
		for k, i := range b.entries {
			e := err
			if e == nil {
				e = errs[k]
			}
			statuses[i] = ackStatus(e)
		}
	}
	if len(byBroker) == 1 {
		ack(byBroker[0])
	} else { // one request per broker, side by side
		var wg sync.WaitGroup
		for _, b := range byBroker {
			wg.Go(func() { ack(b) })
		}
		wg.Wait()
	}
	resp := &v2pb.AckMessageResponse{Status: ok(), Entries: make([]*v2pb.AckMessageResultEntry, len(entries))}
	for i, e := range entries {
		if statuses[i].Code != v2pb.Code_OK {
			resp.Status = statuses[i]
		}
		resp.Entries[i] = &v2pb.AckMessageResultEntry{MessageId: e.GetMessageId(), ReceiptHandle: e.GetReceiptHandle(), Status: statuses[i]}
	}
	return resp, nil
}

// ackStatus is an ack's answer: INVALID_RECEIPT_HANDLE for a message no longer in flight under the handle.
func ackStatus(err error) *v2pb.Status {
	switch {
	case err == nil:
		return ok()
	case client.HasCode(err, remoting.NoMessage):
		return st(v2pb.Code_INVALID_RECEIPT_HANDLE, "receipt handle expired or already used: %v", err)
	}
	return toStatus(err)
}

// ChangeInvisibleDuration hides a received message for invisible_duration from now and answers its new
// receipt handle (the old one is spent).
func (s *Server) ChangeInvisibleDuration(ctx context.Context, req *v2pb.ChangeInvisibleDurationRequest) (*v2pb.ChangeInvisibleDurationResponse, error) {
	group, topic := req.GetGroup().GetName(), req.GetTopic().GetName()
	if err := checkGroup(group); err != nil {
		return &v2pb.ChangeInvisibleDurationResponse{Status: toStatus(err)}, nil
	}
	if err := checkTopic(topic); err != nil {
		return &v2pb.ChangeInvisibleDurationResponse{Status: toStatus(err)}, nil
	}
	// A consumer's nack asks for its retry delay here, which may be 0 (redeliver at once): no lower bound.
	d := req.GetInvisibleDuration().AsDuration()
	if req.InvisibleDuration == nil || d < 0 || d > maxInvisible {
		return &v2pb.ChangeInvisibleDurationResponse{Status: st(v2pb.Code_ILLEGAL_INVISIBLE_TIME, "invisible_duration %v is outside [0, %v]", d, maxInvisible)}, nil
	}
	extra, info, phy, err := s.currentHandle(req.GetReceiptHandle())
	if err != nil {
		return &v2pb.ChangeInvisibleDurationResponse{Status: toStatus(err)}, nil
	}
	addr, err := s.ackAddr(ctx, topic, info)
	var next string
	if err == nil {
		next, err = s.pop.ChangeInvisibleTime(ctx, addr, group, topic, extra, max(d, time.Millisecond)) // the broker wants > 0 ms
	}
	if client.HasCode(err, remoting.NoMessage) {
		return &v2pb.ChangeInvisibleDurationResponse{Status: st(v2pb.Code_INVALID_RECEIPT_HANDLE, "receipt handle expired or already used: %v", err)}, nil
	}
	if err != nil {
		return &v2pb.ChangeInvisibleDurationResponse{Status: toStatus(err)}, nil
	}
	if phy >= 0 {
		next = receiptHandle(next, phy)
	}
	return &v2pb.ChangeInvisibleDurationResponse{Status: ok(), ReceiptHandle: next}, nil
}

// ForwardMessageToDeadLetterQueue moves a received message to the group's dead-letter queue %DLQ%<group>
// (CONSUMER_SEND_MSG_BACK with delay level -1) and acks it; a push consumer does this once the message used
// up its attempts.
func (s *Server) ForwardMessageToDeadLetterQueue(ctx context.Context, req *v2pb.ForwardMessageToDeadLetterQueueRequest) (*v2pb.ForwardMessageToDeadLetterQueueResponse, error) {
	group, topic := req.GetGroup().GetName(), req.GetTopic().GetName()
	answer := func(st *v2pb.Status) (*v2pb.ForwardMessageToDeadLetterQueueResponse, error) {
		return &v2pb.ForwardMessageToDeadLetterQueueResponse{Status: st}, nil
	}
	if err := checkGroup(group); err != nil {
		return answer(toStatus(err))
	}
	if err := checkTopic(topic); err != nil {
		return answer(toStatus(err))
	}
	extra, info, phy, err := s.currentHandle(req.GetReceiptHandle())
	if err != nil {
		return answer(toStatus(err))
	}
	if phy < 0 {
		return answer(st(v2pb.Code_INVALID_RECEIPT_HANDLE, "receipt handle %q carries no CommitLog offset", req.GetReceiptHandle()))
	}
	addr, err := s.ackAddr(ctx, topic, info)
	if err == nil {
		err = s.c.SendMessageBack(ctx, addr, &client.SendBack{Group: group, CommitLogOffset: phy, OriginMsgID: req.GetMessageId(),
			OriginTopic: topic, DelayLevel: -1, MaxReconsume: req.GetMaxDeliveryAttempts()})
	}
	if err != nil {
		return answer(toStatus(err))
	}
	if err := s.pop.AckMessage(ctx, addr, group, topic, extra); err != nil && !client.HasCode(err, remoting.NoMessage) {
		return answer(toStatus(err))
	}
	return answer(ok())
}

// RecallMessage withdraws a timed message before its delivery time: RECALL_MESSAGE to the master of the
// broker the handle names (protocol.RecallHandle; a send of a timed message hands it out).
func (s *Server) RecallMessage(ctx context.Context, req *v2pb.RecallMessageRequest) (*v2pb.RecallMessageResponse, error) {
	answer := func(status *v2pb.Status, id string) (*v2pb.RecallMessageResponse, error) {
		return &v2pb.RecallMessageResponse{Status: status, MessageId: id}, nil
	}
	topic := req.GetTopic().GetName()
	if err := checkTopic(topic); err != nil {
		return answer(toStatus(err), "")
	}
	h, err := protocol.ParseRecallHandle(req.GetRecallHandle())
	if err != nil {
		return answer(st(v2pb.Code_BAD_REQUEST, "%v", err), "")
	}
	r, err := s.routes.get(ctx, topic)
	if err != nil {
		return answer(toStatus(err), "")
	}
	addr := r.master(h.BrokerName)
	if addr == "" {
		return answer(st(v2pb.Code_NOT_FOUND, "the recall handle's broker %s has no master serving topic %s here", h.BrokerName, topic), "")
	}
	id, err := s.c.RecallMessage(ctx, addr, "", topic, req.GetRecallHandle())
	if err != nil {
		return answer(toStatus(err), "")
	}
	return answer(ok(), id)
}
