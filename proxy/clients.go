package proxy

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"slices"
	"sync"
	"time"

	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/rocketraft/rocketraft/protocol"
	"github.com/rocketraft/rocketraft/proxy/v2pb"
)

// The metadata headers of every v5 call (rocketmq-clients' transport.md).
const (
	headerClientID  = "x-mq-client-id"
	headerDateTime  = "x-mq-date-time"
	headerAuth      = "authorization"
	headerNamespace = "x-mq-namespace"
)

// maxBodySize is the body limit handed to producers: the broker's maxMessageSize default.
const maxBodySize = 4 << 20

// clientState is one v5 client (by its client id) as the proxy knows it.
type clientState struct {
	id       string
	typ      v2pb.ClientType
	group    string   // consumer group
	topics   []string // a producer's published topics
	settings *v2pb.Settings
	out      chan *v2pb.TelemetryCommand // the open Telemetry stream's sends; nil when none
	answer   *v2pb.TelemetryCommand      // the settings answer last sent on out; nil when none
	repeated bool                        // answer was sent again on a heartbeat
	seen     time.Time
}

// registry is the v5 clients and the telemetry answers awaited from them.
type registry struct {
	mu      sync.Mutex
	m       map[string]*clientState                // guarded by mu
	waiting map[string]chan *v2pb.TelemetryCommand // nonce -> waiter; guarded by mu
	changed chan struct{}                          // capacity 1: the producers' topics changed
}

func newRegistry() *registry {
	return &registry{m: map[string]*clientState{}, waiting: map[string]chan *v2pb.TelemetryCommand{},
		changed: make(chan struct{}, 1)}
}

// getLocked returns id's state, made on first use. Lock should be held.
func (r *registry) getLocked(id string) *clientState {
	cs := r.m[id]
	if cs == nil {
		cs = &clientState{id: id}
		r.m[id] = cs
	}
	cs.seen = time.Now()
	return cs
}

func (r *registry) wakeup() {
	select {
	case r.changed <- struct{}{}:
	default:
	}
}

// heartbeat records a client's type and group.
func (r *registry) heartbeat(id string, typ v2pb.ClientType, group string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	cs := r.getLocked(id)
	cs.typ = typ
	if group != "" {
		cs.group = group
	}
}

// setSettings records a client's settings (from its Telemetry stream).
func (r *registry) setSettings(id string, s *v2pb.Settings) {
	r.mu.Lock()
	defer r.mu.Unlock()
	cs := r.getLocked(id)
	if t := s.GetClientType(); cs.settings == nil && (t == v2pb.ClientType_PUSH_CONSUMER || t == v2pb.ClientType_SIMPLE_CONSUMER) {
		r.wakeup() // a new consumer: registered at the brokers now, not at the next beat
	}
	cs.settings = s
	cs.typ = s.GetClientType()
	if g := s.GetSubscription().GetGroup().GetName(); g != "" {
		cs.group = g
	}
	var topics []string
	for _, t := range s.GetPublishing().GetTopics() {
		topics = append(topics, t.GetName())
	}
	slices.Sort(topics)
	if !slices.Equal(topics, cs.topics) {
		cs.topics = topics
		r.wakeup()
	}
}

// attach makes out the sends of id's Telemetry stream.
func (r *registry) attach(id string, out chan *v2pb.TelemetryCommand) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.getLocked(id).out = out
}

// answered records reply as the settings answer sent on id's stream out.
func (r *registry) answered(id string, out chan *v2pb.TelemetryCommand, reply *v2pb.TelemetryCommand) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if cs := r.getLocked(id); cs.out == out {
		cs.answer, cs.repeated = reply, false
	}
}

// repeatAnswer returns id's stream and its settings answer when that answer has not been sent again yet,
// and marks it sent again; nil when there is nothing to repeat.
func (r *registry) repeatAnswer(id string) (chan *v2pb.TelemetryCommand, *v2pb.TelemetryCommand) {
	r.mu.Lock()
	defer r.mu.Unlock()
	cs := r.m[id]
	if cs == nil || cs.out == nil || cs.answer == nil || cs.repeated {
		return nil, nil
	}
	cs.repeated = true
	return cs.out, cs.answer
}

// detach forgets id's stream out, unless a newer stream replaced it.
func (r *registry) detach(id string, out chan *v2pb.TelemetryCommand) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if cs := r.m[id]; cs != nil && cs.out == out {
		cs.out, cs.answer = nil, nil
	}
}

// remove forgets a client (NotifyClientTermination).
func (r *registry) remove(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if cs := r.m[id]; cs != nil {
		delete(r.m, id)
		if len(cs.topics) > 0 || cs.group != "" {
			r.wakeup()
		}
	}
}

// expire forgets the clients without an open Telemetry stream not heard of for idle (they went away without
// NotifyClientTermination) and returns their ids.
func (r *registry) expire(idle time.Duration) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var gone []string
	for id, cs := range r.m {
		if cs.out == nil && time.Since(cs.seen) > idle {
			delete(r.m, id)
			gone = append(gone, id)
			if len(cs.topics) > 0 || cs.group != "" {
				r.wakeup()
			}
		}
	}
	return gone
}

// closeAll forgets every client.
func (r *registry) closeAll() {
	r.mu.Lock()
	defer r.mu.Unlock()
	clear(r.m)
}

// producerTopics lists the topics the connected producers publish.
func (r *registry) producerTopics() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, cs := range r.m {
		for _, t := range cs.topics {
			if !slices.Contains(out, t) {
				out = append(out, t)
			}
		}
	}
	slices.Sort(out)
	return out
}

// producerStream returns the Telemetry sends of a producer of topic with an open stream (the one seen
// last), or nil.
func (r *registry) producerStream(topic string) chan *v2pb.TelemetryCommand {
	r.mu.Lock()
	defer r.mu.Unlock()
	var best *clientState
	for _, cs := range r.m {
		if cs.out != nil && slices.Contains(cs.topics, topic) && (best == nil || cs.seen.After(best.seen)) {
			best = cs
		}
	}
	if best == nil {
		return nil
	}
	return best.out
}

// ask sends cmd (carrying nonce) on id's Telemetry stream and waits for the answer with that nonce.
func (r *registry) ask(ctx context.Context, id, nonce string, cmd *v2pb.TelemetryCommand) (*v2pb.TelemetryCommand, error) {
	ch := make(chan *v2pb.TelemetryCommand, 1)
	r.mu.Lock()
	cs := r.m[id]
	if cs == nil || cs.out == nil {
		r.mu.Unlock()
		return nil, fail(v2pb.Code_NOT_FOUND, "client %s has no Telemetry stream open here", id)
	}
	out := cs.out
	r.waiting[nonce] = ch
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		delete(r.waiting, nonce)
		r.mu.Unlock()
	}()
	select {
	case out <- cmd:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case ans := <-ch:
		return ans, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// answer hands a client's answer to the waiter of its nonce; false when nobody waits for it.
func (r *registry) answer(nonce string, cmd *v2pb.TelemetryCommand) bool {
	r.mu.Lock()
	ch := r.waiting[nonce]
	r.mu.Unlock()
	if ch == nil {
		return false
	}
	select {
	case ch <- cmd:
	default:
	}
	return true
}

// clientID is the caller's x-mq-client-id, or "".
func clientID(ctx context.Context) string {
	md, _ := metadata.FromIncomingContext(ctx)
	if v := md.Get(headerClientID); len(v) > 0 {
		return v[0]
	}
	return ""
}

// Heartbeat records the client; producers and consumers heartbeat every 10 s.
func (s *Server) Heartbeat(ctx context.Context, req *v2pb.HeartbeatRequest) (*v2pb.HeartbeatResponse, error) {
	id := clientID(ctx)
	if id == "" {
		return &v2pb.HeartbeatResponse{Status: st(v2pb.Code_CLIENT_ID_REQUIRED, "the %s header is missing", headerClientID)}, nil
	}
	switch req.GetClientType() {
	case v2pb.ClientType_PRODUCER, v2pb.ClientType_PUSH_CONSUMER, v2pb.ClientType_SIMPLE_CONSUMER, v2pb.ClientType_PULL_CONSUMER:
	default:
		return &v2pb.HeartbeatResponse{Status: st(v2pb.Code_UNRECOGNIZED_CLIENT_TYPE, "client type %s is not served", req.GetClientType())}, nil
	}
	if req.GetClientType() != v2pb.ClientType_PRODUCER {
		if err := checkGroup(req.GetGroup().GetName()); err != nil {
			return &v2pb.HeartbeatResponse{Status: toStatus(err)}, nil
		}
	}
	s.clients.heartbeat(id, req.GetClientType(), req.GetGroup().GetName())
	// The client's first heartbeat after its settings were answered gets that answer again on its
	// Telemetry stream. The Node.js client (rocketmq-client-nodejs 1.x) starts waiting for the answer only
	// after it has fetched the routes of all its topics, and drops an answer that comes while it still
	// fetches them: without this its startup hangs until its 5-minute settings sync whenever a route
	// query is slower than the answer. Its heartbeats start before it waits (every 10 s). A repeated
	// answer carries the same settings, which every client applies again without effect.
	if out, answer := s.clients.repeatAnswer(id); out != nil {
		select {
		case out <- answer:
		default: // the stream's queue is full: it is busy, and its client is not waiting for this
		}
	}
	return &v2pb.HeartbeatResponse{Status: ok()}, nil
}

// NotifyClientTermination forgets the client: a producer's transactions are no longer asked of it.
func (s *Server) NotifyClientTermination(ctx context.Context, req *v2pb.NotifyClientTerminationRequest) (*v2pb.NotifyClientTerminationResponse, error) {
	id := clientID(ctx)
	if id == "" {
		return &v2pb.NotifyClientTerminationResponse{Status: st(v2pb.Code_CLIENT_ID_REQUIRED, "the %s header is missing", headerClientID)}, nil
	}
	s.clients.remove(id)
	s.renew.dropClient(id)
	return &v2pb.NotifyClientTerminationResponse{Status: ok()}, nil
}

// Telemetry is the client's two-way stream: its settings in, the server's settings out; the server's
// commands out (transaction check-backs, thread stacks, verify message) and their answers in.
func (s *Server) Telemetry(stream v2pb.MessagingService_TelemetryServer) error {
	ctx := stream.Context()
	id := clientID(ctx)
	if id == "" {
		return stream.Send(&v2pb.TelemetryCommand{Status: st(v2pb.Code_CLIENT_ID_REQUIRED, "the %s header is missing", headerClientID)})
	}
	out := make(chan *v2pb.TelemetryCommand, 16)
	s.clients.attach(id, out)
	defer s.clients.detach(id, out)
	sendErr := make(chan error, 1)
	done := make(chan struct{})
	defer close(done)
	go func() { // the one writer of the stream
		for {
			select {
			case cmd := <-out:
				if err := stream.Send(cmd); err != nil {
					sendErr <- err
					return
				}
			case <-done:
				return
			}
		}
	}()
	for {
		cmd, err := stream.Recv()
		if err != nil {
			return nil // the client closed its side, or the call ended
		}
		select {
		case err := <-sendErr:
			return err
		default:
		}
		switch c := cmd.GetCommand().(type) {
		case *v2pb.TelemetryCommand_Settings:
			s.clients.setSettings(id, c.Settings)
			sg := s.subscriptionGroup(ctx, c.Settings.GetSubscription())
			reply := &v2pb.TelemetryCommand{Status: ok(), Command: &v2pb.TelemetryCommand_Settings{
				Settings: serverSettings(c.Settings, sg, s.opts.MaxLongPolling)}}
			s.clients.answered(id, out, reply)
			select {
			case out <- reply:
			case <-ctx.Done():
				return nil
			}
		case *v2pb.TelemetryCommand_ThreadStackTrace:
			s.clients.answer(c.ThreadStackTrace.GetNonce(), cmd)
		case *v2pb.TelemetryCommand_VerifyMessageResult:
			s.clients.answer(c.VerifyMessageResult.GetNonce(), cmd)
		case *v2pb.TelemetryCommand_VerifyMessageCommand: // the Node.js client answers NOT_IMPLEMENTED this way
			s.clients.answer(c.VerifyMessageCommand.GetNonce(), cmd)
		default:
			s.log.Debug("telemetry command ignored", "client", id, "command", cmd.String())
		}
	}
}

// serverSettings is the server's answer to a client's settings: its own echoed with the retry policy,
// the request timeout, the publishing limits or the subscription's batch size and long polling time
// (polling). A
// consumer's group config sg (nil: RocketMQ's defaults) gives its FIFO flag and its attempts
// (retryMaxTimes + 1).
func serverSettings(in *v2pb.Settings, sg *protocol.SubscriptionGroupConfig, polling time.Duration) *v2pb.Settings {
	out := &v2pb.Settings{ClientType: in.ClientType, AccessPoint: in.AccessPoint, RequestTimeout: durationpb.New(3 * time.Second),
		UserAgent: in.UserAgent, Metric: &v2pb.Metric{On: false}}
	switch ps := in.GetPubSub().(type) {
	case *v2pb.Settings_Publishing:
		attempts := in.GetBackoffPolicy().GetMaxAttempts()
		if attempts <= 0 {
			attempts = 3
		}
		out.BackoffPolicy = &v2pb.RetryPolicy{MaxAttempts: attempts, Strategy: &v2pb.RetryPolicy_ExponentialBackoff{
			ExponentialBackoff: &v2pb.ExponentialBackoff{Initial: durationpb.New(10 * time.Millisecond),
				Max: durationpb.New(time.Second), Multiplier: 2}}}
		out.PubSub = &v2pb.Settings_Publishing{Publishing: &v2pb.Publishing{Topics: ps.Publishing.GetTopics(),
			MaxBodySize: maxBodySize, ValidateMessageType: true}}
	case *v2pb.Settings_Subscription:
		// The group's retry budget: retryMaxTimes (RocketMQ's default 16) + 1 attempts, spaced 1 s, 2 s, 4 s ..
		// up to 2 h. (RocketMQ 5's proxy hands push consumers its delay levels as a customized back-off; the
		// Node.js client knows only the exponential one.)
		attempts, fifo := int32(17), false
		if sg != nil {
			attempts, fifo = sg.RetryMaxTimes+1, sg.ConsumeMessageOrderly
		}
		out.BackoffPolicy = &v2pb.RetryPolicy{MaxAttempts: attempts, Strategy: &v2pb.RetryPolicy_ExponentialBackoff{
			ExponentialBackoff: &v2pb.ExponentialBackoff{Initial: durationpb.New(time.Second), Max: durationpb.New(2 * time.Hour),
				Multiplier: 2}}}
		sub := ps.Subscription
		batch := int32(32)
		out.PubSub = &v2pb.Settings_Subscription{Subscription: &v2pb.Subscription{Group: sub.Group, Subscriptions: sub.Subscriptions,
			Fifo: &fifo, ReceiveBatchSize: &batch, LongPollingTimeout: durationpb.New(polling)}}
	}
	return out
}

// subscriptionGroup is a consumer's group config, as the master of a broker of its first routed subscribed
// topic has it (nil for no subscription, or when it cannot be told).
func (s *Server) subscriptionGroup(ctx context.Context, sub *v2pb.Subscription) *protocol.SubscriptionGroupConfig {
	if sub == nil {
		return nil
	}
	for _, e := range sub.GetSubscriptions() {
		r, err := s.routes.get(ctx, e.GetTopic().GetName())
		if err != nil {
			continue
		}
		for _, bd := range r.data.BrokerDatas {
			if addr := r.master(bd.BrokerName); addr != "" {
				return s.groups.get(ctx, addr, sub.GetGroup().GetName())
			}
		}
	}
	return nil
}

// newNonce is a random nonce for a command that awaits an answer.
func newNonce() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// ThreadStack asks the client id (over its Telemetry stream) for its threads' stacks.
func (s *Server) ThreadStack(ctx context.Context, id string) (string, error) {
	nonce := newNonce()
	ans, err := s.clients.ask(ctx, id, nonce, &v2pb.TelemetryCommand{Command: &v2pb.TelemetryCommand_PrintThreadStackTraceCommand{
		PrintThreadStackTraceCommand: &v2pb.PrintThreadStackTraceCommand{Nonce: nonce}}})
	if err != nil {
		return "", err
	}
	if c := ans.GetStatus().GetCode(); c != v2pb.Code_OK && c != v2pb.Code_CODE_UNSPECIFIED {
		return "", &statusError{ans.GetStatus()}
	}
	return ans.GetThreadStackTrace().GetThreadStackTrace(), nil
}

// VerifyMessage has the client id consume m once as a test (its listener's answer), over its Telemetry
// stream; nil when the client consumed it.
func (s *Server) VerifyMessage(ctx context.Context, id string, m *v2pb.Message) error {
	nonce := newNonce()
	ans, err := s.clients.ask(ctx, id, nonce, &v2pb.TelemetryCommand{Command: &v2pb.TelemetryCommand_VerifyMessageCommand{
		VerifyMessageCommand: &v2pb.VerifyMessageCommand{Nonce: nonce, Message: m}}})
	if err != nil {
		return err
	}
	if c := ans.GetStatus().GetCode(); c != v2pb.Code_OK && c != v2pb.Code_CODE_UNSPECIFIED {
		return &statusError{ans.GetStatus()}
	}
	if ans.GetVerifyMessageResult() == nil {
		return errors.New("proxy: the client answered the verify command without a result")
	}
	return nil
}
