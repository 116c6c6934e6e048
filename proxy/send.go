package proxy

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/rocketraft/rocketraft/client"
	"github.com/rocketraft/rocketraft/message"
	"github.com/rocketraft/rocketraft/protocol"
	"github.com/rocketraft/rocketraft/proxy/v2pb"
	"github.com/rocketraft/rocketraft/remoting"
)

// SendMessage sends each message to a queue of its topic (a message group's by the hash of the group,
// others round robin): SEND_MESSAGE_V2 through the native client to the queue's master. Delivery times,
// message groups and the transaction flag travel as the properties the broker reads (convert.go).
func (s *Server) SendMessage(ctx context.Context, req *v2pb.SendMessageRequest) (*v2pb.SendMessageResponse, error) {
	msgs := req.GetMessages()
	if len(msgs) == 0 {
		return &v2pb.SendMessageResponse{Status: st(v2pb.Code_BAD_REQUEST, "no message to send")}, nil
	}
	topic := msgs[0].GetTopic().GetName()
	outs := make([]*outgoing, len(msgs))
	for i, m := range msgs {
		o, err := toOutgoing(m, maxBodySize)
		if err == nil && o.topic != topic {
			err = fail(v2pb.Code_BAD_REQUEST, "a batch goes to one topic: %s and %s", topic, o.topic)
		}
		if err != nil {
			return &v2pb.SendMessageResponse{Status: toStatus(err)}, nil
		}
		outs[i] = o
	}
	r, err := s.routes.get(ctx, topic)
	if err != nil {
		return &v2pb.SendMessageResponse{Status: toStatus(err)}, nil
	}
	resp := &v2pb.SendMessageResponse{Status: ok()}
	for _, o := range outs {
		e := s.sendOne(ctx, r, o)
		if e.Status.Code != v2pb.Code_OK {
			resp.Status = e.Status
		}
		resp.Entries = append(resp.Entries, e)
	}
	return resp, nil
}

// sendOne sends one message and returns its result entry.
func (s *Server) sendOne(ctx context.Context, r *route, o *outgoing) *v2pb.SendResultEntry {
	q, found := r.pick(o.topic, o.group)
	if !found {
		return &v2pb.SendResultEntry{Status: st(v2pb.Code_FORBIDDEN, "topic %s has no writable queue", o.topic), MessageId: o.id}
	}
	res, err := s.pop.SendMessage(ctx, q.Addr, &client.Send{Group: txGroup(o.topic), Topic: o.topic, BrokerName: q.BrokerName,
		QueueID: q.QueueID, Born: o.born, Properties: o.properties, Body: o.body, SysFlag: o.sysFlag})
	if err != nil {
		var re *client.ResponseError
		if !errors.As(err, &re) || re.Code == remoting.SlaveNotAvailable || re.Code == remoting.ServiceNotAvailable {
			s.routes.invalidate(o.topic) // the master may have moved: the client's retry asks the name servers
		}
		return &v2pb.SendResultEntry{Status: toStatus(err), MessageId: o.id}
	}
	e := &v2pb.SendResultEntry{Status: ok(), MessageId: o.id, Offset: res.QueueOffset, RecallHandle: res.RecallHandle}
	switch res.SendStatus {
	case "FLUSH_DISK_TIMEOUT":
		e.Status = st(v2pb.Code_MASTER_PERSISTENCE_TIMEOUT, "stored on %s but not flushed in time", q.BrokerName)
	case "FLUSH_SLAVE_TIMEOUT":
		e.Status = st(v2pb.Code_SLAVE_PERSISTENCE_TIMEOUT, "stored on %s but no slave acknowledged it in time", q.BrokerName)
	case "SLAVE_NOT_AVAILABLE":
		e.Status = st(v2pb.Code_HA_NOT_AVAILABLE, "stored on %s but no slave is available", q.BrokerName)
	}
	if o.sysFlag == message.SysFlagTransactionPrepared {
		_, phy, err := message.DecodeOffsetMsgID(res.OffsetMsgID)
		if err != nil {
			return &v2pb.SendResultEntry{Status: st(v2pb.Code_INTERNAL_SERVER_ERROR, "the broker's answer has no usable offset id %q: %v", res.OffsetMsgID, err), MessageId: o.id}
		}
		e.TransactionId = encodeTxID(txID{broker: q.BrokerName, commitLogOffset: phy, tranStateOffset: res.QueueOffset})
	}
	return e
}

// txID is what EndTransaction needs of a half message: the transaction id the proxy hands out carries it,
// so any proxy can end any transaction and the proxy keeps no table.
type txID struct {
	broker          string
	commitLogOffset int64 // the half message's CommitLog offset
	tranStateOffset int64 // its offset in the half queue
}

// encodeTxID is "commitLogOffset:tranStateOffset:brokerName".
func encodeTxID(t txID) string {
	return strconv.FormatInt(t.commitLogOffset, 10) + ":" + strconv.FormatInt(t.tranStateOffset, 10) + ":" + t.broker
}

func decodeTxID(s string) (txID, error) {
	phy, rest, ok1 := strings.Cut(s, ":")
	qo, broker, ok2 := strings.Cut(rest, ":")
	var t txID
	var err1, err2 error
	t.commitLogOffset, err1 = strconv.ParseInt(phy, 10, 64)
	t.tranStateOffset, err2 = strconv.ParseInt(qo, 10, 64)
	if !ok1 || !ok2 || err1 != nil || err2 != nil || broker == "" {
		return t, fail(v2pb.Code_INVALID_TRANSACTION_ID, "transaction id %q was not made by this proxy", s)
	}
	t.broker = broker
	return t, nil
}

// EndTransaction commits or rolls back a half message (END_TRANSACTION to its broker's master).
func (s *Server) EndTransaction(ctx context.Context, req *v2pb.EndTransactionRequest) (*v2pb.EndTransactionResponse, error) {
	topic := req.GetTopic().GetName()
	if err := checkTopic(topic); err != nil {
		return &v2pb.EndTransactionResponse{Status: toStatus(err)}, nil
	}
	t, err := decodeTxID(req.GetTransactionId())
	if err != nil {
		return &v2pb.EndTransactionResponse{Status: toStatus(err)}, nil
	}
	e := &client.EndTransaction{Group: txGroup(topic), TranStateTableOffset: t.tranStateOffset, CommitLogOffset: t.commitLogOffset,
		FromCheck: req.GetSource() == v2pb.TransactionSource_SOURCE_SERVER_CHECK, MsgID: req.GetMessageId(), TransactionID: req.GetTransactionId()}
	switch req.GetResolution() {
	case v2pb.TransactionResolution_COMMIT:
		e.Commit = true
	case v2pb.TransactionResolution_ROLLBACK:
		e.Rollback = true
	default:
		return &v2pb.EndTransactionResponse{Status: st(v2pb.Code_BAD_REQUEST, "resolution %s is neither COMMIT nor ROLLBACK", req.GetResolution())}, nil
	}
	r, err := s.routes.get(ctx, topic)
	if err != nil {
		return &v2pb.EndTransactionResponse{Status: toStatus(err)}, nil
	}
	addr := r.master(t.broker)
	if addr == "" {
		return &v2pb.EndTransactionResponse{Status: st(v2pb.Code_HA_NOT_AVAILABLE, "broker %s of transaction %s has no master now", t.broker, req.GetTransactionId())}, nil
	}
	if err := s.c.EndTransaction(ctx, addr, e); err != nil {
		return &v2pb.EndTransactionResponse{Status: toStatus(err)}, nil
	}
	return &v2pb.EndTransactionResponse{Status: ok()}, nil
}

// relayCheck passes a broker's CHECK_TRANSACTION_STATE to a producer of the half message's topic, as a
// RecoverOrphanedTransactionCommand on its Telemetry stream; the producer answers with EndTransaction
// (source SERVER_CHECK). With no producer connected the check is dropped: the broker asks again later.
func (s *Server) relayCheck(ct *client.CheckTransaction) {
	props := message.ParseProperties(ct.Msg.Properties)
	topic := props[message.PropertyRealTopic]
	if topic == "" {
		topic = ct.Msg.Topic
	}
	out := s.clients.producerStream(topic)
	if out == nil {
		s.log.Info("transaction check dropped: no producer of the topic has a Telemetry stream here", "topic", topic, "msgId", ct.MsgID)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.c.Timeout())
	defer cancel()
	r, err := s.routes.get(ctx, topic)
	if err != nil {
		s.log.Warn("transaction check dropped: no route", "topic", topic, "err", err)
		return
	}
	broker := r.brokerOf(ct.Msg.StoreHost.String())
	if broker == "" {
		s.log.Warn("transaction check dropped: no broker of the route stored it", "topic", topic, "storeHost", ct.Msg.StoreHost)
		return
	}
	m := fromMessageExt(ct.Msg, topic)
	m.SystemProperties.MessageType = v2pb.MessageType_TRANSACTION
	id := encodeTxID(txID{broker: broker, commitLogOffset: ct.CommitLogOffset, tranStateOffset: ct.TranStateTableOffset})
	cmd := &v2pb.TelemetryCommand{Command: &v2pb.TelemetryCommand_RecoverOrphanedTransactionCommand{
		RecoverOrphanedTransactionCommand: &v2pb.RecoverOrphanedTransactionCommand{Message: m, TransactionId: id}}}
	select {
	case out <- cmd:
	case <-ctx.Done():
		s.log.Warn("transaction check dropped: the producer's stream is full", "topic", topic, "msgId", ct.MsgID)
	}
}

// clientIdle is how long a client without a Telemetry stream may stay silent before the proxy forgets it
// (v5 clients heartbeat every 10 s; RocketMQ drops a channel silent for 120 s).
const clientIdle = 2 * time.Minute

// heartbeater sends the proxy's producer groups (one per topic with transactions: txGroup) to the brokers,
// so their transaction check-backs reach the proxy's connections, and registers the v5 consumers there
// (consumers.go), every interval and at once when the producers' topics change or a consumer comes or goes.
type heartbeater struct {
	c        *client.Client
	routes   *routeCache
	clients  *registry
	id       string
	interval time.Duration
	expired  func(ids []string) // told the clients the registry forgot for silence (clientIdle)
	// registered is where each v5 consumer was registered last (consumers.go); the loop's goroutine only.
	registered map[string]registered
	log        *slog.Logger
	stop       chan struct{}
	done       chan struct{}
}

func newHeartbeater(c *client.Client, routes *routeCache, clients *registry, interval time.Duration, log *slog.Logger) *heartbeater {
	return &heartbeater{c: c, routes: routes, clients: clients, interval: interval, log: log, registered: map[string]registered{},
		id: "rmq-proxy@" + newNonce()[:8], stop: make(chan struct{}), done: make(chan struct{})}
}

func (h *heartbeater) start() { go h.loop() }

func (h *heartbeater) close() {
	select {
	case <-h.stop:
		return
	default:
	}
	close(h.stop)
	<-h.done
}

func (h *heartbeater) loop() {
	defer close(h.done)
	t := time.NewTicker(h.interval)
	defer t.Stop()
	for {
		select {
		case <-h.stop:
			return
		case <-t.C:
		case <-h.clients.changed:
		}
		if gone := h.clients.expire(clientIdle); len(gone) > 0 && h.expired != nil {
			h.expired(gone)
		}
		h.beat()
	}
}

// beat heartbeats every broker of the producers' topics, and registers the v5 consumers (consumers.go).
func (h *heartbeater) beat() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*h.c.Timeout())
	defer cancel()
	h.beatConsumers(ctx)
	topics := h.clients.producerTopics()
	hb := &protocol.HeartbeatData{ClientID: h.id}
	for _, t := range topics {
		hb.ProducerDataSet = append(hb.ProducerDataSet, &protocol.ProducerData{GroupName: txGroup(t)})
		if _, err := h.routes.get(ctx, t); err != nil {
			h.log.Debug("heartbeat: no route", "topic", t, "err", err)
		}
	}
	if len(topics) == 0 {
		return
	}
	for _, addr := range h.routes.addrs() {
		if err := h.c.Heartbeat(ctx, addr, hb); err != nil {
			h.log.Warn("heartbeat to broker failed", "broker", addr, "err", err)
		}
	}
}
