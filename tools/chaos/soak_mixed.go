package chaos

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	rmqconsumer "github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	rmqproducer "github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/rocketraft/rocketraft/tools/admin"
)

// The mixed workload's send kinds (soak_mixed.go), each a tag of the mixed topic.
const (
	KindNormal     = "normal"      // SendSync, one message
	KindOneway     = "oneway"      // SendOneWay: no answer, not checked for loss
	KindBatch      = "batch"       // SendSync of mixedBatch messages in one request
	KindDelay      = "delay"       // delay level 3 (10 s): must not be delivered earlier
	KindTxCommit   = "tx-commit"   // a transaction committed by the local transaction
	KindTxRollback = "tx-rollback" // a transaction rolled back: must never be delivered
	KindOrdered    = "ordered"     // SendSync with a sharding key (hash queue selector), read by an orderly consumer
)

// MixedKinds lists the kinds in the order the mixed producer takes turns.
var MixedKinds = []string{KindNormal, KindOneway, KindBatch, KindDelay, KindTxCommit, KindTxRollback, KindOrdered}

const (
	mixedBatch      = 3
	mixedDelayLevel = 3 // "1s 5s 10s ...": 10 s
	mixedDelay      = 10 * time.Second
	mixedShards     = 4 // sharding keys of the ordered kind
	mixedCluster    = "DefaultCluster"
	// a delayed message read this much before its due time is early (the broker's timer ticks, clock reads)
	mixedEarlySlack = 500 * time.Millisecond
)

// mixedConfig configures the mixed workload.
type mixedConfig struct {
	namesrv    string
	topic      string
	queues     int
	rate       float64       // sends per second over every kind
	adminEvery time.Duration // one round of admin calls
	drain      time.Duration // how long the consumers may take to catch up after the sends stop
	durable    bool          // the mode promises no loss of an acknowledged send
	log        *slog.Logger
	out        func(format string, args ...any)
}

// MixedReport is what the mixed workload did and what its checks found.
type MixedReport struct {
	Sent     map[string]int           // by kind: messages sent (a batch counts its messages)
	Acked    map[string]int           // by kind: acknowledged (oneway: handed to the client without error)
	Errors   map[string]int           // by kind: send errors
	Slowest  map[string]time.Duration // by kind: the longest send (to its answer or error)
	Pushed   int                      // distinct keys the concurrent push consumer read
	Ordered  int                      // distinct keys the orderly push consumer read
	Pulled   int                      // distinct keys the pull consumer read
	AdminOK  map[string]int           // by mqadmin command
	AdminErr map[string]int
	// Checks:
	Missing     []string // acknowledged (not oneway, not rolled back), never read by the push consumer
	RolledBack  []string // rolled-back transactions that were delivered
	Early       []string // delayed messages read before their due time
	OrderBroken []string // ordered keys read (first time) after a later key of the same shard
	Drained     bool     // the push consumer read every acknowledged key before the drain time ran out
	Durable     bool
	AdminErrors []string // the first few admin failures, for the report
}

// Failures lists what fails the soak: loss of an acknowledged message only where the mode promises none;
// a rolled-back transaction or an early delayed message, an order violation, or consumers that read
// nothing, always.
func (m *MixedReport) Failures() []string {
	var out []string
	if m.Durable && len(m.Missing) > 0 {
		out = append(out, fmt.Sprintf("mixed: %d acknowledged messages never consumed: %v", len(m.Missing), capList(m.Missing)))
	}
	if len(m.RolledBack) > 0 {
		out = append(out, fmt.Sprintf("mixed: %d rolled-back transactions delivered: %v", len(m.RolledBack), capList(m.RolledBack)))
	}
	if len(m.Early) > 0 {
		out = append(out, fmt.Sprintf("mixed: %d delayed messages delivered early: %v", len(m.Early), capList(m.Early)))
	}
	if m.Durable && len(m.OrderBroken) > 0 {
		out = append(out, fmt.Sprintf("mixed: %d ordered messages out of order: %v", len(m.OrderBroken), capList(m.OrderBroken)))
	}
	if m.Pushed == 0 || m.Ordered == 0 || m.Pulled == 0 {
		out = append(out, fmt.Sprintf("mixed: a consumer read nothing (push %d, orderly %d, pull %d)", m.Pushed, m.Ordered, m.Pulled))
	}
	return out
}

func capList(l []string) []string { return l[:min(len(l), listCap)] }

// Summary is one line: the counts by kind and the checks.
func (m *MixedReport) Summary() string {
	var b strings.Builder
	for _, k := range MixedKinds {
		fmt.Fprintf(&b, "%s=%d/%d ", k, m.Acked[k], m.Sent[k])
	}
	adminOK, adminErr := 0, 0
	for _, n := range m.AdminOK {
		adminOK += n
	}
	for _, n := range m.AdminErr {
		adminErr += n
	}
	fmt.Fprintf(&b, "push=%d orderly=%d pull=%d missing=%d rolled-back-seen=%d early=%d order=%d admin=%d/%d",
		m.Pushed, m.Ordered, m.Pulled, len(m.Missing), len(m.RolledBack), len(m.Early), len(m.OrderBroken), adminOK, adminOK+adminErr)
	return b.String()
}

// mixed is the workload in progress. Its maps are guarded by mu: the clients call back on their own goroutines.
type mixed struct {
	cfg mixedConfig
	seq atomic.Int64

	mu       sync.Mutex
	rep      MixedReport
	acked    map[string]string    // key -> kind, acknowledged sends of the checked kinds
	delayDue map[string]time.Time // delayed key -> not to be read before
	rollback map[string]bool
	pushed   map[string]bool
	ordered  map[string]bool
	pulled   map[string]bool
	shardMax map[string]int64 // ordered: highest seq read per shard
}

func newMixed(cfg mixedConfig) *mixed {
	return &mixed{cfg: cfg, acked: map[string]string{}, delayDue: map[string]time.Time{}, rollback: map[string]bool{},
		pushed: map[string]bool{}, ordered: map[string]bool{}, pulled: map[string]bool{}, shardMax: map[string]int64{},
		rep: MixedReport{Sent: map[string]int{}, Acked: map[string]int{}, Errors: map[string]int{}, Slowest: map[string]time.Duration{},
			AdminOK: map[string]int{}, AdminErr: map[string]int{}, Durable: cfg.durable}}
}

func mixedInstance(role string) string {
	return fmt.Sprintf("soak-%s-%d", role, os.Getpid())
}

// run creates the topic, starts the clients, sends until ctx ends, then lets the consumers drain and checks.
func (m *mixed) run(ctx context.Context) *MixedReport {
	ns := primitive.NewPassthroughResolver([]string{m.cfg.namesrv})
	if !m.adminCall(ctx, "updateTopic", "-c", mixedCluster, "-t", m.cfg.topic, "-r", strconv.Itoa(m.cfg.queues),
		"-w", strconv.Itoa(m.cfg.queues)) {
		return m.report()
	}
	if err := m.waitRoute(ctx); err != nil {
		m.adminFail("topicRoute", err)
		return m.report()
	}
	p, err := rocketmq.NewProducer(rmqproducer.WithNsResolver(ns), rmqproducer.WithGroupName("soak_producer"),
		rmqproducer.WithInstanceName(mixedInstance("producer")), rmqproducer.WithRetry(2),
		rmqproducer.WithSendMsgTimeout(3*time.Second), rmqproducer.WithQueueSelector(rmqproducer.NewHashQueueSelector()))
	if err != nil {
		m.adminFail("client", err)
		return m.report()
	}
	tp, err := rocketmq.NewTransactionProducer(txListener{}, rmqproducer.WithNsResolver(ns),
		rmqproducer.WithGroupName("soak_tx_producer"), rmqproducer.WithInstanceName(mixedInstance("tx")), rmqproducer.WithRetry(2),
		rmqproducer.WithSendMsgTimeout(3*time.Second))
	if err != nil {
		m.adminFail("client", err)
		return m.report()
	}
	var stops []func() error
	defer func() {
		for _, stop := range slices.Backward(stops) {
			_ = stop()
		}
	}()
	for _, c := range []struct {
		name  string
		start func() error
		stop  func() error
	}{
		{"producer", p.Start, p.Shutdown},
		{"tx producer", tp.Start, tp.Shutdown},
		{"push consumer", func() error { return m.startPush(ns, false, &stops) }, nil},
		{"orderly consumer", func() error { return m.startPush(ns, true, &stops) }, nil},
		{"pull consumer", func() error { return m.startPull(ctx, ns, &stops) }, nil},
	} {
		if err := c.start(); err != nil {
			m.adminFail(c.name, err)
			return m.report()
		}
		if c.stop != nil {
			stops = append(stops, c.stop)
		}
	}
	var wg sync.WaitGroup
	wg.Go(func() { m.admin(ctx) })
	m.send(ctx, p, tp)
	wg.Wait()
	m.drain()
	return m.report()
}

// txListener decides a transaction by its tag, and answers a check-back the same way.
type txListener struct{}

func (txListener) ExecuteLocalTransaction(msg *primitive.Message) primitive.LocalTransactionState {
	if msg.GetTags() == KindTxRollback {
		return primitive.RollbackMessageState
	}
	return primitive.CommitMessageState
}

func (txListener) CheckLocalTransaction(msg *primitive.MessageExt) primitive.LocalTransactionState {
	if msg.GetTags() == KindTxRollback {
		return primitive.RollbackMessageState
	}
	return primitive.CommitMessageState
}

// send takes the kinds in turn at cfg.rate until ctx ends.
func (m *mixed) send(ctx context.Context, p rocketmq.Producer, tp rocketmq.TransactionProducer) {
	t := time.NewTicker(time.Duration(float64(time.Second) / m.cfg.rate))
	defer t.Stop()
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		kind := MixedKinds[i%len(MixedKinds)]
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		m.sendOne(sctx, p, tp, kind)
		cancel()
	}
}

func (m *mixed) message(kind string) (*primitive.Message, string) {
	n := m.seq.Add(1)
	key := fmt.Sprintf("m-%s-%08d", kind, n)
	msg := primitive.NewMessage(m.cfg.topic, []byte(key)).WithTag(kind).WithKeys([]string{key})
	if kind == KindOrdered {
		msg.WithShardingKey("shard-" + strconv.FormatInt(n%mixedShards, 10))
	}
	if kind == KindDelay {
		msg.WithDelayTimeLevel(mixedDelayLevel)
	}
	return msg, key
}

func (m *mixed) sendOne(ctx context.Context, p rocketmq.Producer, tp rocketmq.TransactionProducer, kind string) {
	var keys []string
	var err error
	start := time.Now()
	switch kind {
	case KindOneway:
		msg, key := m.message(kind)
		keys = []string{key}
		err = p.SendOneWay(ctx, msg)
	case KindBatch:
		var msgs []*primitive.Message
		for range mixedBatch {
			msg, key := m.message(kind)
			msgs, keys = append(msgs, msg), append(keys, key)
		}
		err = sendOK(p.SendSync(ctx, msgs...))
	case KindTxCommit, KindTxRollback:
		msg, key := m.message(kind)
		keys = []string{key}
		var res *primitive.TransactionSendResult
		res, err = tp.SendMessageInTransaction(ctx, msg)
		if err == nil && res.Status != primitive.SendOK {
			err = fmt.Errorf("half message: status %d", res.Status)
		}
	default: // normal, delay, ordered
		msg, key := m.message(kind)
		keys = []string{key}
		err = sendOK(p.SendSync(ctx, msg))
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.rep.Sent[kind] += len(keys)
	m.rep.Slowest[kind] = max(m.rep.Slowest[kind], time.Since(start))
	if err != nil {
		m.rep.Errors[kind]++
		m.cfg.log.Debug("mixed send", "kind", kind, "err", err)
		return
	}
	m.rep.Acked[kind] += len(keys)
	for _, k := range keys {
		switch kind {
		case KindOneway:
		case KindTxRollback:
			m.rollback[k] = true
		default:
			m.acked[k] = kind
		}
		if kind == KindDelay {
			m.delayDue[k] = start.Add(mixedDelay)
		}
	}
}

// sendOK is a send's error, or an error for an answer other than SEND_OK.
func sendOK(res *primitive.SendResult, err error) error {
	if err != nil {
		return err
	}
	if res.Status != primitive.SendOK {
		return fmt.Errorf("status %d", res.Status)
	}
	return nil
}

// startPush starts the concurrent push consumer (every tag) or the orderly one (the ordered tag).
func (m *mixed) startPush(ns primitive.NsResolver, orderly bool, stops *[]func() error) error {
	group, sel := "soak_push", rmqconsumer.MessageSelector{}
	if orderly {
		group, sel = "soak_orderly", rmqconsumer.MessageSelector{Type: rmqconsumer.TAG, Expression: KindOrdered}
	}
	c, err := rocketmq.NewPushConsumer(rmqconsumer.WithNsResolver(ns), rmqconsumer.WithGroupName(group),
		rmqconsumer.WithInstance(mixedInstance(group)), rmqconsumer.WithConsumerOrder(orderly),
		rmqconsumer.WithConsumeFromWhere(rmqconsumer.ConsumeFromFirstOffset))
	if err != nil {
		return err
	}
	err = c.Subscribe(m.cfg.topic, sel, func(_ context.Context, msgs ...*primitive.MessageExt) (rmqconsumer.ConsumeResult, error) {
		m.read(orderly, msgs)
		return rmqconsumer.ConsumeSuccess, nil
	})
	if err != nil {
		return err
	}
	if err := c.Start(); err != nil {
		return err
	}
	*stops = append(*stops, c.Shutdown)
	return nil
}

// read records what a push consumer read and checks it.
func (m *mixed) read(orderly bool, msgs []*primitive.MessageExt) {
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, msg := range msgs {
		key := string(msg.Body)
		if orderly {
			if !m.ordered[key] {
				m.ordered[key] = true
				n, _ := strconv.ParseInt(key[strings.LastIndexByte(key, '-')+1:], 10, 64)
				shard := msg.GetShardingKey()
				if n < m.shardMax[shard] {
					m.rep.OrderBroken = append(m.rep.OrderBroken, fmt.Sprintf("%s after %d (%s)", key, m.shardMax[shard], shard))
				}
				m.shardMax[shard] = max(m.shardMax[shard], n)
			}
			continue
		}
		if m.pushed[key] {
			continue
		}
		m.pushed[key] = true
		if m.rollback[key] || msg.GetTags() == KindTxRollback {
			m.rep.RolledBack = append(m.rep.RolledBack, key)
		}
		if due, ok := m.delayDue[key]; ok && now.Add(mixedEarlySlack).Before(due) {
			m.rep.Early = append(m.rep.Early, fmt.Sprintf("%s %v early", key, due.Sub(now).Round(time.Millisecond)))
		}
	}
}

// startPull starts the lite pull consumer and a goroutine polling it until ctx ends.
func (m *mixed) startPull(ctx context.Context, ns primitive.NsResolver, stops *[]func() error) error {
	c, err := rocketmq.NewPullConsumer(rmqconsumer.WithNsResolver(ns), rmqconsumer.WithGroupName("soak_pull"),
		rmqconsumer.WithInstance(mixedInstance("pull")), rmqconsumer.WithConsumeFromWhere(rmqconsumer.ConsumeFromFirstOffset))
	if err != nil {
		return err
	}
	if err := c.Subscribe(m.cfg.topic, rmqconsumer.MessageSelector{}); err != nil {
		return err
	}
	if err := c.Start(); err != nil {
		return err
	}
	done := make(chan struct{})
	pctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	go func() {
		defer close(done)
		for pctx.Err() == nil {
			cr, err := c.Poll(pctx, time.Second)
			if err != nil {
				continue // ErrNoNewMsg, or the end
			}
			m.mu.Lock()
			for _, msg := range cr.GetMsgList() {
				m.pulled[string(msg.Body)] = true
			}
			m.mu.Unlock()
			c.ACK(pctx, cr, rmqconsumer.ConsumeSuccess)
		}
	}()
	*stops = append(*stops, func() error { cancel(); <-done; return c.Shutdown() })
	return nil
}

// admin runs a round of mqadmin calls every adminEvery until ctx ends: clusterList, consumerProgress of the
// push group, and a topic created and deleted again.
func (m *mixed) admin(ctx context.Context) {
	t := time.NewTicker(m.cfg.adminEvery)
	defer t.Stop()
	for round := 1; ; round++ {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		actx := context.WithoutCancel(ctx)
		m.adminCall(actx, "clusterList")
		m.adminCall(actx, "consumerProgress", "-g", "soak_push")
		topic := fmt.Sprintf("SoakAdmin%d", round)
		if m.adminCall(actx, "updateTopic", "-c", mixedCluster, "-t", topic, "-r", "2", "-w", "2") {
			m.adminCall(actx, "deleteTopic", "-c", mixedCluster, "-t", topic)
		}
	}
}

// adminRun runs one mqadmin command against the name server; its stderr when it failed.
func (m *mixed) adminRun(ctx context.Context, args ...string) (bool, string) {
	var out, errb bytes.Buffer
	argv := append([]string{args[0], "-n", m.cfg.namesrv}, args[1:]...)
	code := admin.Run(ctx, argv, admin.Env{Stdout: &out, Stderr: &errb})
	return code == admin.ExitOK, strings.TrimSpace(errb.String())
}

// adminCall runs one mqadmin command and counts its outcome.
func (m *mixed) adminCall(ctx context.Context, args ...string) bool {
	ok, stderr := m.adminRun(ctx, args...)
	m.mu.Lock()
	defer m.mu.Unlock()
	if ok {
		m.rep.AdminOK[args[0]]++
		return true
	}
	m.rep.AdminErr[args[0]]++
	if len(m.rep.AdminErrors) < 10 {
		m.rep.AdminErrors = append(m.rep.AdminErrors, stderr)
	}
	return false
}

// waitRoute polls the name server (mqadmin topicRoute) until it routes the topic: the clients look the
// route up once when they start.
func (m *mixed) waitRoute(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		ok, stderr := m.adminRun(ctx, "topicRoute", "-t", m.cfg.topic)
		if ok {
			return nil
		}
		if sleepCtx(ctx, 200*time.Millisecond) != nil {
			return fmt.Errorf("no route of %s: %s", m.cfg.topic, stderr)
		}
	}
}

func (m *mixed) adminFail(what string, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.rep.AdminErr[what]++
	m.rep.AdminErrors = append(m.rep.AdminErrors, what+": "+err.Error())
}

// drain waits (at most cfg.drain) until the push consumer has read every acknowledged key.
func (m *mixed) drain() {
	deadline := time.Now().Add(m.cfg.drain)
	for {
		m.mu.Lock()
		missing := 0
		for k := range m.acked {
			if !m.pushed[k] {
				missing++
			}
		}
		m.mu.Unlock()
		if missing == 0 {
			m.mu.Lock()
			m.rep.Drained = true
			m.mu.Unlock()
			return
		}
		if time.Now().After(deadline) {
			m.cfg.out("mixed: %d acknowledged keys still unread after %v", missing, m.cfg.drain)
			return
		}
		_ = sleepCtx(context.Background(), 500*time.Millisecond)
	}
}

// report fills the checks' lists from what was acknowledged and read.
func (m *mixed) report() *MixedReport {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.rep
	r.Missing = nil
	for k := range m.acked {
		if !m.pushed[k] {
			r.Missing = append(r.Missing, k)
		}
	}
	slices.Sort(r.Missing)
	r.Pushed, r.Ordered, r.Pulled = len(m.pushed), len(m.ordered), len(m.pulled)
	return &r
}
