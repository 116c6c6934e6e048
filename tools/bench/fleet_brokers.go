package bench

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/rocketraft/rocketraft/client"
	"github.com/rocketraft/rocketraft/remoting"
)

// brokers are the simulated brokers: each on its own connection to every name server, registering its
// group's topic table every period (all at once with Burst, else spread over the period), and sending
// BROKER_HEARTBEAT between registrations when asked.
type brokers struct {
	f       *fleet
	targets func() []string // the name servers to register with (they change when the stand-in phase ends)
	log     *slog.Logger
	epoch   int64 // the data version timestamp of every group

	// burst is when the registration round in progress started (monotonic ns since base; 0: none).
	burst *atomic.Int64
	base  time.Time

	mu struct {
		sync.Mutex
		regs   *hdrhistogram.Histogram // one broker's registration with one name server, all chunks
		ok     int64
		failed int64
		first  string
		rounds []time.Duration // how long each burst round took, first registration sent to last answered
	}

	list []*simBroker
}

// simBroker is one broker process of a group.
type simBroker struct {
	g   *group
	idx int // replica index in the group
	cl  *client.Client
	// down: the broker is "dead" (its connections were cut) until the round after the one it died in.
	down atomic.Bool
}

func newBrokers(f *fleet, targets func() []string, burst *atomic.Int64, base time.Time, log *slog.Logger) *brokers {
	b := &brokers{f: f, targets: targets, log: log, epoch: time.Now().UnixMilli(), burst: burst, base: base}
	b.mu.regs = newHist()
	for _, g := range f.groups {
		for r := range g.addrs {
			b.list = append(b.list, &simBroker{g: g, idx: r, cl: client.New(client.Config{Timeout: 10 * time.Second,
				Log: log.With("component", "fleet-broker")})})
		}
	}
	return b
}

// brokerID is the id broker r of g registers with: 0 for the master; a slave keeps its index, except the
// first master, which comes back as slave Replicas.
func brokerID(g *group, r int) int64 {
	switch {
	case r == g.masterIdx:
		return 0
	case r == 0:
		return int64(len(g.addrs))
	default:
		return int64(r)
	}
}

// registration returns g's current registration, encoding it when its table or version changed.
func (b *brokers) registration(g *group) (registration, error) {
	b.f.mu.Lock()
	defer b.f.mu.Unlock()
	reg, ok := b.f.regs[g]
	if !ok {
		var err error
		if reg, err = b.f.encode(g, b.epoch); err != nil {
			return reg, err
		}
		b.f.regs[g] = reg
	}
	return reg, nil
}

// register sends one broker's registration (every chunk) to one name server and records how long it took.
func (b *brokers) register(ctx context.Context, sb *simBroker, ns string) error {
	reg, err := b.registration(sb.g)
	if err != nil {
		return err
	}
	b.f.mu.Lock()
	id := brokerID(sb.g, sb.idx)
	b.f.mu.Unlock()
	start := time.Now()
	for _, body := range reg.bodies {
		ext := map[string]string{
			"brokerName":         sb.g.name,
			"brokerAddr":         sb.g.addrs[sb.idx],
			"clusterName":        b.f.cfg.Cluster,
			"haServerAddr":       sb.g.haAddrs[sb.idx],
			"brokerId":           strconv.FormatInt(id, 10),
			"compressed":         strconv.FormatBool(reg.compressed),
			"bodyCrc32":          bodyCRC(body),
			"enableActingMaster": "false",
		}
		if b.f.cfg.Heartbeat > 0 {
			ext["heartbeatTimeoutMillis"] = strconv.FormatInt(b.f.cfg.HeartbeatTimeout.Milliseconds(), 10)
		}
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		resp, err := sb.cl.Invoke(cctx, ns, sb.cl.Request(remoting.RegisterBroker, ext, body))
		cancel()
		if err == nil && resp.Code != int32(remoting.Success) {
			err = fmt.Errorf("REGISTER_BROKER of %s at %s: code %d %s", sb.g.addrs[sb.idx], ns, resp.Code, resp.Remark)
		}
		if err != nil {
			if sb.down.Load() {
				return err // its connections were cut on purpose (churn): not a failure of the name server
			}
			b.mu.Lock()
			b.mu.failed++
			if b.mu.first == "" {
				b.mu.first = err.Error()
			}
			b.mu.Unlock()
			return err
		}
	}
	d := time.Since(start)
	b.mu.Lock()
	b.mu.ok++
	record(b.mu.regs, d)
	b.mu.Unlock()
	return nil
}

// registerAll has every broker that is up register with every name server once, concurrently, and
// returns how long the round took.
func (b *brokers) registerAll(ctx context.Context) time.Duration {
	start := time.Now()
	b.burst.Store(int64(time.Since(b.base)) | 1)
	var wg sync.WaitGroup
	targets := b.targets()
	for _, sb := range b.list {
		if sb.down.Load() {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, ns := range targets {
				_ = b.register(ctx, sb, ns)
			}
		}()
	}
	wg.Wait()
	b.burst.Store(0)
	d := time.Since(start)
	b.mu.Lock()
	b.mu.rounds = append(b.mu.rounds, d)
	b.mu.Unlock()
	return d
}

// run registers every period until ctx ends, the first round after first: all brokers at once (Burst), or
// each at its own offset. BROKER_HEARTBEAT goes out every Heartbeat meanwhile.
func (b *brokers) run(ctx context.Context, first time.Duration) {
	var wg sync.WaitGroup
	if b.f.cfg.Heartbeat > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b.heartbeats(ctx)
		}()
	}
	if b.f.cfg.Burst {
		round := func() {
			d := b.registerAll(ctx)
			b.log.Debug("registration round", "took", d)
			for _, sb := range b.list {
				sb.down.Store(false) // a killed broker is back from the next round on
			}
		}
		if sleepCtx(ctx, first) {
			round()
		}
		t := time.NewTicker(b.f.cfg.Every)
		for ctx.Err() == nil {
			select {
			case <-ctx.Done():
			case <-t.C:
				round()
			}
		}
		t.Stop()
		wg.Wait()
		return
	}
	for i, sb := range b.list {
		wg.Add(1)
		go func() {
			defer wg.Done()
			offset := b.f.cfg.Every * time.Duration(i) / time.Duration(len(b.list))
			select {
			case <-ctx.Done():
				return
			case <-time.After(offset):
			}
			t := time.NewTicker(b.f.cfg.Every)
			defer t.Stop()
			for {
				if !sb.down.Swap(false) {
					for _, ns := range b.targets() {
						_ = b.register(ctx, sb, ns)
					}
				}
				select {
				case <-ctx.Done():
					return
				case <-t.C:
				}
			}
		}()
	}
	wg.Wait()
}

// heartbeats sends RocketMQ 5's BROKER_HEARTBEAT (oneway) from every live broker every Heartbeat.
func (b *brokers) heartbeats(ctx context.Context) {
	t := time.NewTicker(b.f.cfg.Heartbeat)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for _, sb := range b.list {
			if sb.down.Load() {
				continue
			}
			b.f.mu.Lock()
			id := brokerID(sb.g, sb.idx)
			b.f.mu.Unlock()
			ext := map[string]string{"clusterName": b.f.cfg.Cluster, "brokerAddr": sb.g.addrs[sb.idx],
				"brokerName": sb.g.name, "brokerId": strconv.FormatInt(id, 10)}
			for _, ns := range b.targets() {
				_ = sb.cl.InvokeOneway(ctx, ns, sb.cl.Request(remoting.BrokerHeartbeat, ext, nil))
			}
		}
	}
}

// createTopic adds a topic to every group of set s and has each group's master register at once, as a
// Java broker does after UPDATE_AND_CREATE_TOPIC. The new topic is not among the topics clients ask for.
func (b *brokers) createTopic(ctx context.Context, set int, name string) {
	for _, g := range b.f.groupsOf(set) {
		b.f.mu.Lock()
		g.topics = append(g.topics[:len(g.topics):len(g.topics)], name)
		g.counter++
		delete(b.f.regs, g)
		master := g.masterIdx
		b.f.mu.Unlock()
		for _, sb := range b.list {
			if sb.g == g && sb.idx == master {
				for _, ns := range b.targets() {
					_ = b.register(ctx, sb, ns)
				}
			}
		}
	}
}

// changeMaster cuts the connections of g's master (as its process dying would) and has the next broker
// register as master at once (as a controller or a Raft election would make it). The old master comes
// back as a slave at the next round.
func (b *brokers) changeMaster(ctx context.Context, g *group) {
	b.f.mu.Lock()
	old := g.masterIdx
	next := (old + 1) % len(g.addrs)
	b.f.mu.Unlock()
	for _, sb := range b.list {
		if sb.g == g && sb.idx == old {
			sb.down.Store(true)
			for _, ns := range b.targets() {
				sb.cl.CloseAddr(ns)
			}
		}
	}
	b.f.mu.Lock()
	g.masterIdx = next
	b.f.mu.Unlock()
	for _, sb := range b.list {
		if sb.g == g && sb.idx == next {
			for _, ns := range b.targets() {
				_ = b.register(ctx, sb, ns)
			}
		}
	}
}

// killSlave cuts the connections of one slave of g; it registers again from the next round on.
func (b *brokers) killSlave(g *group) string {
	b.f.mu.Lock()
	victim := (g.masterIdx + 1) % len(g.addrs)
	b.f.mu.Unlock()
	for _, sb := range b.list {
		if sb.g == g && sb.idx == victim {
			sb.down.Store(true)
			for _, ns := range b.targets() {
				sb.cl.CloseAddr(ns)
			}
		}
	}
	return g.addrs[victim]
}

// closeConns cuts every broker's connections (the name servers changed).
func (b *brokers) closeConns(addrs []string) {
	for _, sb := range b.list {
		for _, ns := range addrs {
			sb.cl.CloseAddr(ns)
		}
	}
}

func (b *brokers) close() {
	for _, sb := range b.list {
		_ = sb.cl.Close()
	}
}

// regSummary is the registrations' part of a phase's summary.
type regSummary struct {
	OK      int64        `json:"ok"`
	Failed  int64        `json:"failed"`
	First   string       `json:"first_error,omitempty"`
	Latency *Percentiles `json:"latency_ms,omitempty"`
	// Rounds is how long each burst round took: its first registration sent to its last answered (ms).
	Rounds []float64 `json:"rounds_ms,omitempty"`
}

// take returns the registrations since the last take and starts anew.
func (b *brokers) take() regSummary {
	b.mu.Lock()
	defer b.mu.Unlock()
	p := percentiles(b.mu.regs)
	s := regSummary{OK: b.mu.ok, Failed: b.mu.failed, First: b.mu.first, Latency: &p}
	for _, r := range b.mu.rounds {
		s.Rounds = append(s.Rounds, float64(r.Microseconds())/1000)
	}
	b.mu.regs.Reset()
	b.mu.ok, b.mu.failed, b.mu.first, b.mu.rounds = 0, 0, "", nil
	return s
}
