package admin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/rocketraft/rocketraft/client"
	"github.com/rocketraft/rocketraft/protocol"
	"github.com/rocketraft/rocketraft/remoting"
	"github.com/rocketraft/rocketraft/tools/console"
)

// consoleCmd is mqadmin console: the web console of tools/console, answered by the same requests as the
// other commands (NewConsoleSource). It serves until interrupted.
func consoleCmd() *command {
	desc := "Serve the web console (cluster, topics, consumer groups, messages, producers) over HTTP until interrupted"
	return &command{name: "console", desc: desc, setup: func(f *flags) runFunc {
		cfg := console.DefaultConfig()
		f.String(&cfg.Listen, "", "listen", "host:port to serve the console on (port 0 picks a free one)", false)
		f.Duration(&cfg.SampleInterval, "", "sampleInterval", "how often the plots sample throughput and lag (the pages refresh as often)")
		f.Duration(&cfg.History, "", "history", "how far back the plots go (the samples are kept in memory)")
		f.String(&cfg.AclFile, "", "aclFile", "plain_acl.yml whose accounts may log in (needed when a login is required)", false)
		f.Switch(&cfg.RequireLogin, "", "login", "require a login on a loopback --listen too (always required beyond loopback)")
		f.String(&cfg.TLSCertPath, "", "tlsCertPath", "PEM certificate to serve HTTPS with (the session cookie is then Secure)", false)
		f.String(&cfg.TLSKeyPath, "", "tlsKeyPath", "its PEM private key", false)
		return func(ctx context.Context, r *runner) (result, error) {
			if len(r.c.Namesrvs()) == 0 {
				return nil, errNoNamesrv
			}
			cfg.Source = NewConsoleSource(r.c, r.env.Logger)
			cfg.Logger = r.env.Logger
			srv, err := console.New(cfg)
			if err != nil {
				return nil, usagef("%v", err)
			}
			if err := srv.Start(); err != nil {
				return nil, err
			}
			fmt.Fprintf(r.env.Stdout, "console: serving %s for the name servers %s, %s (interrupt to stop)\n",
				srv.URL(), strings.Join(r.c.Namesrvs(), ";"), srv.LoginStatus())
			if w := srv.Warning(); w != "" {
				fmt.Fprintf(r.env.Stderr, "console: warning: %s\n", w)
			}
			<-ctx.Done()
			return nil, srv.Close()
		}
	}}
}

// consoleSource answers the console's pages with mqadmin's requests.
type consoleSource struct {
	r   *runner
	log *slog.Logger
}

var _ console.Source = (*consoleSource)(nil)

// NewConsoleSource is the console's Source over c: the requests of mqadmin's commands. Changes made through
// Admin with credentials use a new client with the same name servers and timeout. A nil logger discards.
func NewConsoleSource(c *client.Client, log *slog.Logger) console.Source {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &consoleSource{r: &runner{c: c}, log: log}
}

// sentinelError keeps an error's message and makes it match one of the console's sentinels too.
type sentinelError struct{ err, is error }

func (e *sentinelError) Error() string   { return e.err.Error() }
func (e *sentinelError) Unwrap() []error { return []error{e.err, e.is} }

// consoleErr marks err with the console sentinel its cause calls for.
func consoleErr(err error) error {
	var (
		re *client.ResponseError
		ue *usageError
		nf *notFoundError
		is error
	)
	switch {
	case err == nil:
		return nil
	case errors.As(err, &nf):
		is = console.ErrNotFound
	case errors.As(err, &ue), errors.Is(err, client.ErrNoNamesrv):
		is = console.ErrInvalid
	case errors.As(err, &re):
		switch re.Code {
		case remoting.TopicNotExist, remoting.QueryNotFound, remoting.SubscriptionGroupNotExist:
			is = console.ErrNotFound
		case remoting.NoPermission:
			is = console.ErrDenied
		case remoting.InvalidParameter, remoting.MessageIllegal, remoting.UpdateAndCreateACLConfigFailed,
			remoting.DeleteACLConfigFailed, remoting.UpdateGlobalWhiteAddrsConfigFailed:
			is = console.ErrInvalid
		}
	}
	if is == nil {
		return err
	}
	return &sentinelError{err: err, is: is}
}

// Brokers reads each broker's runtime info, config (for aclEnable) and Raft status (GET_RAFT_STATUS, as
// getRaftStatus; a classic broker does not know the request and its Broker.Raft stays nil).
func (s *consoleSource) Brokers(ctx context.Context) ([]console.Broker, error) {
	ci, err := s.r.c.ClusterInfo(ctx)
	if err != nil {
		return nil, consoleErr(err)
	}
	refs, _ := brokers(ci, "", false)
	now := time.Now().UnixMilli()
	out := make([]console.Broker, 0, len(refs))
	for _, ref := range refs {
		row, kv, err := s.r.brokerRow(ctx, ref, now)
		b := console.Broker{Cluster: row.Cluster, BrokerName: row.BrokerName, BrokerID: row.BrokerID, Addr: row.Addr,
			Version: row.Version, InTPS: row.InTPS, OutTPS: row.OutTPS, DiskRatio: row.Space, Error: row.Unreachable}
		if err != nil {
			b.ACL = client.HasCode(err, remoting.NoPermission)
			out = append(out, b)
			continue
		}
		b.Role = kv["brokerRole"]
		resp, err := s.r.c.Call(ctx, ref.addr, remoting.GetBrokerConfig, nil, nil)
		switch {
		case err == nil:
			b.ACL = parseProperties(resp.Body)["aclEnable"] == "true"
		case client.HasCode(err, remoting.NoPermission):
			b.ACL = true
		}
		b.Raft = s.raftNode(ctx, ref.addr)
		out = append(out, b)
	}
	return out, nil
}

// raftNode is the Raft status of the broker at addr; nil when it runs the classic mode or does not answer
// (a failure other than the classic mode's is logged).
func (s *consoleSource) raftNode(ctx context.Context, addr string) *console.RaftNode {
	var st raftStatus
	err := s.r.c.CallJSON(ctx, addr, remoting.GetRaftStatus, nil, &st)
	switch {
	case client.HasCode(err, remoting.RequestCodeNotSupported):
		return nil
	case err != nil:
		s.log.Warn("console: Raft status", "broker", addr, "err", err)
		return nil
	}
	return &console.RaftNode{Group: st.Group, SelfID: st.SelfID, Role: st.Role, Master: st.Master, Term: st.Term,
		LeaderID: st.LeaderID, Leader: st.LeaderAddr, CommitIndex: st.CommitIndex, AppliedIndex: st.AppliedIndex}
}

func (s *consoleSource) TopicNames(ctx context.Context) ([]string, error) {
	names, err := s.r.c.TopicList(ctx)
	return names, consoleErr(err)
}

func (s *consoleSource) Topic(ctx context.Context, name string) (*console.Topic, error) {
	route, err := s.r.c.Route(ctx, name)
	if err != nil {
		return nil, consoleErr(err)
	}
	st, err := s.r.topicStatus(ctx, routeBrokers(route), name)
	if err != nil {
		return nil, consoleErr(err)
	}
	t := &console.Topic{Name: name, Order: route.OrderTopicConf != "", Brokers: []console.TopicBroker{},
		Queues: []console.QueueStatus{}, Groups: []string{}}
	for _, bd := range route.BrokerDatas {
		tb := console.TopicBroker{Cluster: bd.Cluster, BrokerName: bd.BrokerName, Addrs: bd.BrokerAddrs}
		for _, qd := range route.QueueDatas {
			if qd.BrokerName == bd.BrokerName {
				tb.ReadQueues, tb.WriteQueues, tb.Perm = qd.ReadQueueNums, qd.WriteQueueNums, qd.Perm
			}
		}
		t.Brokers = append(t.Brokers, tb)
	}
	sort.Slice(t.Brokers, func(i, j int) bool { return t.Brokers[i].BrokerName < t.Brokers[j].BrokerName })
	for _, q := range st.Queues {
		t.Queues = append(t.Queues, console.QueueStatus{BrokerName: q.BrokerName, QueueID: q.QueueID,
			MinOffset: q.MinOffset, MaxOffset: q.MaxOffset, LastUpdated: q.LastUpdateTimestamp})
	}
	if refs := routeBrokers(route); len(refs) > 0 {
		if groups, err := s.r.consumersOf(ctx, refs[0].addr, name); err == nil {
			t.Groups = append(t.Groups, groups...)
		}
	}
	return t, nil
}

func (s *consoleSource) Groups(ctx context.Context) ([]console.GroupSummary, error) {
	res, err := s.r.groupsProgress(ctx)
	if err != nil {
		return nil, consoleErr(err)
	}
	out := make([]console.GroupSummary, 0, len(res.Groups))
	for _, g := range res.Groups {
		out = append(out, console.GroupSummary{Group: g.Group, Members: g.Count, Version: g.Version, Type: g.Type,
			Model: g.Model, TPS: float64(g.TPS), Lag: g.DiffTotal})
	}
	return out, nil
}

func (s *consoleSource) Group(ctx context.Context, name string) (*console.Group, error) {
	prog, err := s.r.consumerProgress(ctx, name, true)
	if err != nil {
		return nil, consoleErr(err)
	}
	g := &console.Group{Name: name, Members: []console.Connection{}, Subscriptions: []console.Subscription{},
		Queues: []console.QueueLag{}, TPS: prog.ConsumeTps, BrokerOffset: prog.BrokerOffsetTotal,
		ConsumerOffset: prog.ConsumerOffsetTotal, Lag: prog.DiffTotal}
	for _, q := range prog.Queues {
		g.Queues = append(g.Queues, console.QueueLag{Topic: q.Topic, BrokerName: q.BrokerName, QueueID: q.QueueID,
			BrokerOffset: q.BrokerOffset, ConsumerOffset: q.ConsumerOffset, Lag: q.Diff, Client: q.ClientIP,
			LastTimestamp: q.LastTimestamp})
	}
	cc, err := s.r.consumerConnection(ctx, name, "")
	if err != nil {
		if len(g.Queues) == 0 {
			return nil, &sentinelError{err: fmt.Errorf("consumer group %s has no member online and no committed offset: %w", name, err),
				is: console.ErrNotFound}
		}
		return g, nil // known by its offsets, offline
	}
	g.Online = len(cc.ConnectionSet) > 0
	g.ConsumeType, g.MessageModel, g.ConsumeFromWhere = cc.ConsumeType, cc.MessageModel, cc.ConsumeFromWhere
	for _, c := range cc.ConnectionSet {
		g.Members = append(g.Members, connection(c.row()))
	}
	for _, topic := range sortedKeys(cc.SubscriptionTable) {
		g.Subscriptions = append(g.Subscriptions, console.Subscription{Topic: topic, Expression: cc.SubscriptionTable[topic].SubString})
	}
	return g, nil
}

// onlyNoProducer reports whether every error joined in err is a broker answering that it knows no producer of
// the group.
func onlyNoProducer(err error) bool {
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	for _, e := range errs {
		var re *client.ResponseError
		if !errors.As(e, &re) || re.Code != remoting.SystemError || !strings.Contains(re.Remark, "] not exist") {
			return false
		}
	}
	return true
}

func connection(c connectionRow) console.Connection {
	return console.Connection{ClientID: c.ClientID, ClientAddr: c.ClientAddr, Language: c.Language, Version: c.Version}
}

// Producers answers an empty list when no producer of the group is connected and every broker answered (a
// broker that knows no producer of the group answers SYSTEM_ERROR "the producer group[G] not exist", as
// RocketMQ's does).
func (s *consoleSource) Producers(ctx context.Context, group, topic string) ([]console.Connection, error) {
	res, err := s.r.producerConnections(ctx, group, topic)
	if err != nil && res != nil && onlyNoProducer(err) {
		err = nil
	}
	if res == nil || (err != nil && len(res.Connections) == 0) {
		return nil, consoleErr(err)
	}
	out := make([]console.Connection, 0, len(res.Connections))
	for _, c := range res.Connections {
		out = append(out, connection(c))
	}
	return out, nil
}

func (s *consoleSource) MessagesByKey(ctx context.Context, topic, key string, max int) ([]console.Message, error) {
	msgs, err := s.r.queryMessages(ctx, topic, "", key, false, max, 0, math.MaxInt64)
	if err != nil && len(msgs) == 0 {
		return nil, consoleErr(err)
	}
	out := make([]console.Message, 0, len(msgs))
	for _, m := range msgs {
		out = append(out, consoleMessage(newMessageView(m)))
	}
	return out, nil
}

// MessagesByTime reads the oldest max messages of the window from each readable queue, as consumeMessage
// does (pulls that commit nothing), and returns them by store time.
func (s *consoleSource) MessagesByTime(ctx context.Context, topic string, begin, end int64, max int) ([]console.Message, error) {
	route, err := s.r.c.Route(ctx, topic)
	if err != nil {
		return nil, consoleErr(err)
	}
	out := []console.Message{}
	for _, q := range client.RouteQueues(route, topic, "", false) {
		left := int64(max)
		cq, err := s.r.consumeQueue(ctx, toolsConsumerGroup, q, timeWindow{begin: begin, end: end}, -1, &left)
		if err != nil {
			return nil, consoleErr(err)
		}
		for _, v := range cq.Messages {
			out = append(out, consoleMessage(v))
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].StoreTimestamp < out[j].StoreTimestamp })
	return out, nil
}

func (s *consoleSource) Message(ctx context.Context, topic, id string) (*console.Message, error) {
	m, err := s.r.findByID(ctx, id, topic, "")
	if err != nil {
		return nil, consoleErr(err)
	}
	v := newMessageView(m)
	cm := consoleMessage(v)
	cm.Trace = []console.Delivery{}
	for _, t := range s.r.tracks(ctx, v) {
		d := console.Delivery{Group: t.ConsumerGroup, State: t.TrackType, ConsumerOffset: t.groupOffset, Detail: t.ExceptionDesc}
		if t.noRetryTopic && t.TrackType == "UNKNOWN" {
			d.State = "NOT_ONLINE" // mqadmin says UNKNOWN, as RocketMQ; the page says what it means
			d.Detail = fmt.Sprintf("no push consumer of %s has been online: it has no retry topic %s%s", t.ConsumerGroup,
				retryTopicPrefix, t.ConsumerGroup)
		}
		cm.Trace = append(cm.Trace, d)
	}
	return &cm, nil
}

func consoleMessage(v *messageView) console.Message {
	return console.Message{MsgID: v.MsgID, OffsetMsgID: v.OffsetMsgID, Topic: v.Topic, Tags: v.Tags, Keys: v.Keys,
		QueueID: v.QueueID, QueueOffset: v.QueueOffset, CommitLogOffset: v.CommitLogOffset, BornTimestamp: v.BornTimestamp,
		StoreTimestamp: v.StoreTimestamp, BornHost: v.BornHost, StoreHost: v.StoreHost, ReconsumeTimes: v.ReconsumeTimes,
		SysFlag: v.SysFlag, StoreSize: v.StoreSize, Properties: v.Properties, Body: v.body}
}

// Admin signs with creds through a client of its own, or with the source's client for zero credentials.
func (s *consoleSource) Admin(creds remoting.Credentials) console.Admin {
	if creds.AccessKey == "" {
		return &consoleAdmin{r: s.r}
	}
	c := NewClient(s.r.c.Namesrvs(), s.r.c.Timeout(), creds, s.log)
	return &consoleAdmin{r: &runner{c: c}, own: c}
}

// consoleAdmin makes the console's changes with mqadmin's requests.
type consoleAdmin struct {
	r   *runner
	own *client.Client // closed by Close; nil when r's client is the source's
}

func (a *consoleAdmin) UpdateTopic(ctx context.Context, spec console.TopicSpec) ([]string, error) {
	refs, err := a.r.targets(ctx, spec.BrokerAddr, spec.Cluster, true)
	if err != nil {
		return nil, consoleErr(err)
	}
	tc := protocol.TopicConfig{TopicName: spec.Topic, ReadQueueNums: int32(spec.ReadQueues),
		WriteQueueNums: int32(spec.WriteQueues), Perm: int32(spec.Perm), TopicFilterType: "SINGLE_TAG", Order: spec.Order}
	res, err := a.r.updateTopic(ctx, refs, tc, "")
	return res.Brokers, consoleErr(err)
}

func (a *consoleAdmin) DeleteTopic(ctx context.Context, topic, cluster string) ([]string, error) {
	res, err := a.r.deleteTopic(ctx, topic, cluster)
	if err != nil {
		return nil, consoleErr(err)
	}
	return res.Brokers, nil
}

func (a *consoleAdmin) ResetOffset(ctx context.Context, group, topic string, timestamp int64) ([]console.QueueOffset, error) {
	res, err := a.r.resetOffset(ctx, group, topic, "", strconv.FormatInt(timestamp, 10), timestamp, true)
	if res == nil {
		return nil, consoleErr(err)
	}
	out := make([]console.QueueOffset, 0, len(res.Queues))
	for _, q := range res.Queues {
		out = append(out, console.QueueOffset{BrokerName: q.BrokerName, QueueID: q.QueueID, Offset: q.Offset})
	}
	return out, consoleErr(err)
}

func (a *consoleAdmin) Close() error {
	if a.own == nil {
		return nil
	}
	return a.own.Close()
}
