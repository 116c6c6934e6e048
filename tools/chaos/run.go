package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rocketraft/rocketraft/client"
	"github.com/rocketraft/rocketraft/internal/faultnet"
)

// RunConfig configures a run: the cluster, the load, the schedule.
type RunConfig struct {
	Bin      string // folder holding mqnamesrv and mqbroker
	Dir      string // output folder: history files, report, the processes' data and logs
	Mode     string // ModeMasterSlave or ModeRaft (a group of three)
	Role     string // masterslave: the master's brokerRole, SYNC_MASTER or ASYNC_MASTER
	Flush    string // flushDiskType: SYNC_FLUSH or ASYNC_FLUSH
	FileSize int64  // mappedFileSizeCommitLog

	Topic       string
	Queues      int
	Workers     int     // producer goroutines; worker w sends to queue w % Queues
	Rate        float64 // messages per second over all workers
	Size        int     // message body size
	Retries     int     // more attempts of a send that was not acknowledged
	RetryPause  time.Duration
	SendTimeout time.Duration

	// PopWorkers are the goroutines of the pop consumer (pop.go; 0: none).
	PopWorkers int

	Warmup   time.Duration // load before the first fault
	Settle   time.Duration // load after the last fault healed
	Schedule Schedule

	Out io.Writer    // progress lines; nil: none
	Log *slog.Logger // the suite's own log (proxies, retries)
	// BrokerArgs, when set, gives more arguments of each broker node by name (GroupConfig.BrokerArgs).
	BrokerArgs func(node string) []string
	// NamesrvArgs are more arguments of the name server (GroupConfig.NamesrvArgs).
	NamesrvArgs []string
	// During, when set, runs beside the load (soak.go: the mixed workload and the resource sampler): from
	// the start of the load until the last fault's settle time has passed, when its ctx ends; the run
	// waits for it to return before stopping the producer.
	During func(ctx context.Context, cl Cluster)
}

// DefaultRunConfig is a SYNC_MASTER + SYNC_FLUSH group under a light load with an empty schedule.
func DefaultRunConfig() RunConfig {
	return RunConfig{Mode: ModeMasterSlave, Role: "SYNC_MASTER", Flush: "SYNC_FLUSH", FileSize: 16 << 20,
		Topic: "ChaosTopic", Queues: 4, Workers: 4, Rate: 200, Size: 256, Retries: 2, PopWorkers: 2,
		RetryPause: 200 * time.Millisecond, SendTimeout: 3 * time.Second,
		Warmup: 5 * time.Second, Settle: 5 * time.Second}
}

// Validate names the first bad field.
func (c RunConfig) Validate() error {
	switch {
	case c.Bin == "" || c.Dir == "":
		return errors.New("chaos: run: Bin and Dir are required")
	case c.Mode != ModeMasterSlave && c.Mode != ModeRaft:
		return fmt.Errorf("chaos: run: mode %q unknown (%s, %s)", c.Mode, ModeMasterSlave, ModeRaft)
	case c.Mode == ModeMasterSlave && c.Role != "SYNC_MASTER" && c.Role != "ASYNC_MASTER":
		return fmt.Errorf("chaos: run: brokerRole %q: want SYNC_MASTER or ASYNC_MASTER", c.Role)
	case c.Flush != "SYNC_FLUSH" && c.Flush != "ASYNC_FLUSH":
		return fmt.Errorf("chaos: run: flushDiskType %q: want SYNC_FLUSH or ASYNC_FLUSH", c.Flush)
	case c.Queues < 1 || c.Workers < 1:
		return fmt.Errorf("chaos: run: queues %d and workers %d must be at least 1", c.Queues, c.Workers)
	case c.PopWorkers < 0:
		return fmt.Errorf("chaos: run: pop workers %d is negative", c.PopWorkers)
	case c.Rate <= 0:
		return fmt.Errorf("chaos: run: rate %v must be positive", c.Rate)
	case c.Size < 32:
		return fmt.Errorf("chaos: run: size %d must be at least 32 (the body starts with the id)", c.Size)
	case c.Retries < 0 || c.SendTimeout <= 0:
		return fmt.Errorf("chaos: run: retries %d, send timeout %v", c.Retries, c.SendTimeout)
	}
	return nil
}

// Run starts the cluster, runs the load and the schedule, heals, drains, scans every broker, and checks the
// history. The report is also written to Dir/report.txt; the error is for a run that could not start or
// record (a run that went wrong after starting is a report with Info.Errors, and so a FAIL).
func Run(ctx context.Context, cfg RunConfig) (*Report, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.Out == nil {
		cfg.Out = io.Discard
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, err
	}
	if cfg.Schedule.hasDiskFault() {
		if err := DiskSupport(); err != nil {
			return nil, fmt.Errorf("%w (leave the disk kinds out of the schedule)", err)
		}
	}
	info := RunInfo{Queues: cfg.Queues, Workers: cfg.Workers, Retries: cfg.Retries, Schedule: cfg.Schedule.String(),
		Started: time.Now(), LoadAvg: loadAvg(), Signature: strings.Join(os.Args, " "), PopRan: cfg.PopWorkers > 0}
	fmt.Fprint(cfg.Out, info.Schedule)
	cl, err := startCluster(ctx, cfg)
	if err != nil {
		return nil, err
	}
	cl.Info(&info)
	if err := writeJSON(filepath.Join(cfg.Dir, RunFile), info); err != nil {
		return nil, errors.Join(err, cl.Close())
	}
	r := &runner{cfg: cfg, cl: cl, info: &info, rng: rand.New(rand.NewPCG(cfg.Schedule.Seed, 1))}
	runErr := r.run(ctx)
	if err := cl.Close(); err != nil {
		info.Errors = append(info.Errors, "close: "+err.Error())
	}
	if runErr != nil {
		return nil, runErr
	}
	info.Ended = time.Now()
	if err := writeJSON(filepath.Join(cfg.Dir, RunFile), info); err != nil {
		return nil, err
	}
	return CheckDir(cfg.Dir)
}

// startCluster starts the topology cfg.Mode names.
func startCluster(ctx context.Context, cfg RunConfig) (Cluster, error) {
	gc := GroupConfig{Bin: cfg.Bin, Dir: cfg.Dir, Flush: cfg.Flush, FileSize: cfg.FileSize, Log: cfg.Log, BrokerArgs: cfg.BrokerArgs,
		PowerLoss:   cfg.Schedule.hasPowerLoss(),
		Disks:       cfg.Schedule.hasDiskFault(),
		NamesrvArgs: cfg.NamesrvArgs}
	if cfg.Mode == ModeRaft {
		return StartRaftGroup(ctx, RaftGroupConfig{GroupConfig: gc, Nodes: 3})
	}
	return StartMasterSlave(ctx, MasterSlaveConfig{GroupConfig: gc, Role: cfg.Role})
}

// CheckDir checks the history in dir and writes dir/report.txt.
func CheckDir(dir string) (*Report, error) {
	h, err := LoadHistory(dir)
	if err != nil {
		return nil, err
	}
	rep := Check(h)
	if err := os.WriteFile(filepath.Join(dir, ReportFile), []byte(rep.String()), 0o644); err != nil {
		return nil, err
	}
	return rep, nil
}

// runner is one run in progress.
type runner struct {
	cfg  RunConfig
	cl   Cluster
	info *RunInfo
	rng  *rand.Rand // picks among followers; seeded by the schedule

	wire   *client.Client
	sends  *recorder
	reads  *recorder
	faults *recorder
	pops   *recorder
}

func (r *runner) errorf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	r.info.Errors = append(r.info.Errors, msg)
	r.printf("ERROR %s", msg)
}

func (r *runner) printf(format string, args ...any) {
	fmt.Fprintf(r.cfg.Out, "%s  %s\n", time.Now().UTC().Format("15:04:05.000"), fmt.Sprintf(format, args...))
}

// run records into the history files; it returns an error only when they cannot be written.
func (r *runner) run(ctx context.Context) (err error) {
	cfg := r.cfg
	for _, x := range []struct {
		rec  **recorder
		file string
	}{{&r.sends, SendsFile}, {&r.reads, ReadsFile}, {&r.faults, FaultsFile}, {&r.pops, PopsFile}} {
		if *x.rec, err = newRecorder(filepath.Join(cfg.Dir, x.file)); err != nil {
			return err
		}
		defer func(rec *recorder) { err = errors.Join(err, rec.Close()) }(*x.rec)
	}
	r.wire = newWire(r.cl.NamesrvAddr(), 10*time.Second, cfg.Log)
	defer r.wire.Close()
	if _, err := r.wire.EnsureTopic(ctx, cfg.Topic, cfg.Queues, cfg.Log); err != nil {
		r.errorf("create topic: %v", err)
		return nil
	}
	for _, n := range r.cl.Nodes() {
		if err := r.waitTopic(ctx, n); err != nil {
			r.errorf("%v", err)
			return nil
		}
	}

	rt := &routes{wire: r.wire, topic: cfg.Topic, group: r.cl.BrokerName()}
	nodes := newNodeSet(r.cl.Nodes())
	// The producer and the consumers have clients of their own: a connection one of them drops (a failed
	// send, a pull cut short) must not fail the other's requests in flight on it.
	prodWire := newWire(r.cl.NamesrvAddr(), 10*time.Second, cfg.Log)
	defer prodWire.Close()
	consWire := newWire(r.cl.NamesrvAddr(), 10*time.Second, cfg.Log)
	defer consWire.Close()
	prod := &producer{cfg: &r.cfg, wire: prodWire, routes: rt, nodes: nodes, sends: r.sends, log: cfg.Log}
	cons := &consumer{cfg: &r.cfg, wire: consWire, routes: rt, nodes: nodes, reads: r.reads, log: cfg.Log,
		next: map[int32]int64{}}
	popWire := newWire(r.cl.NamesrvAddr(), 10*time.Second, cfg.Log)
	defer popWire.Close()
	pop := newPopConsumer(&r.cfg, popWire, rt, nodes, r.pops, cfg.Log)
	var wg sync.WaitGroup
	routeCtx, stopRoutes := context.WithCancel(ctx)
	prodCtx, stopProd := context.WithCancel(ctx)
	consCtx, stopCons := context.WithCancel(ctx)
	popCtx, stopPop := context.WithCancel(ctx)
	progCtx, stopProg := context.WithCancel(ctx)
	defer func() {
		stopProd()
		stopCons()
		stopPop()
		stopRoutes()
		stopProg()
		wg.Wait()
	}()
	wg.Go(func() { rt.run(routeCtx) })
	prodDone := make(chan struct{})
	wg.Go(func() { defer close(prodDone); prod.run(prodCtx) })
	wg.Go(func() { cons.run(consCtx) })
	wg.Go(func() { pop.run(popCtx) })
	started := time.Now()
	wg.Go(func() {
		t := time.NewTicker(10 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-progCtx.Done():
				return
			case <-t.C:
				r.printf("load: %v in, %d acknowledged, %d read, %d popped", time.Since(started).Round(time.Second), prod.acked.Load(),
					cons.read.Load(), pop.read.Load())
			}
		}
	})
	r.printf("load started: %d workers, %.0f msg/s, %d queues", cfg.Workers, cfg.Rate, cfg.Queues)
	duringCtx, stopDuring := context.WithCancel(ctx)
	duringDone := make(chan struct{})
	go func() {
		defer close(duringDone)
		if cfg.During != nil {
			cfg.During(duringCtx, r.cl)
		}
	}()
	defer func() { stopDuring(); <-duringDone }()

	if sleepCtx(ctx, cfg.Warmup) != nil {
		return ctx.Err()
	}
	for i, f := range cfg.Schedule.Faults {
		if sleepCtx(ctx, f.Gap) != nil {
			return ctx.Err()
		}
		r.apply(ctx, i, f)
	}
	if sleepCtx(ctx, cfg.Settle) != nil {
		return ctx.Err()
	}
	stopDuring()
	<-duringDone
	stopProd()
	<-prodDone // its sends in flight are answered (or time out) before the followers are compared
	r.printf("load stopped: %d acknowledged, %d read; waiting for the followers", prod.acked.Load(), cons.read.Load())
	for _, p := range r.links() {
		p.Heal()
	}
	if err := r.cl.WaitCaughtUp(ctx, cfg.Topic, cfg.Queues); err != nil {
		r.errorf("%v", err)
	}
	writer := r.writer(ctx)
	if writer == nil {
		r.errorf("no writer at the end")
		return nil
	}
	r.info.Writer = writer.Name
	r.info.Drained = r.drain(ctx, writer, cons)
	stopCons()
	r.printf("consumers stopped: %d read, drained %v", cons.read.Load(), r.info.Drained)
	if cfg.PopWorkers > 0 {
		r.info.PopDrained = r.drainPop(ctx, prod, pop)
		r.printf("pop consumer stopped: %d deliveries, drained %v", pop.read.Load(), r.info.PopDrained)
	}
	stopPop()
	for _, n := range r.cl.Nodes() {
		got, err := scan(ctx, r.wire, n, cfg.Topic, cfg.Queues, PhaseFinal, 0, r.reads)
		if err != nil {
			r.errorf("final scan: %v", err)
			continue
		}
		r.printf("final scan of %s: %d messages", n.Name, got)
	}
	return nil
}

// links are every replication proxy of the cluster.
func (r *runner) links() []*faultnet.Proxy {
	seen := map[*faultnet.Proxy]bool{}
	var out []*faultnet.Proxy
	for _, n := range r.cl.Nodes() {
		for _, p := range r.cl.ReplicationLinks(n) {
			if !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
		}
	}
	return out
}

// waitTopic waits until n serves pulls of the topic (a slave learns topics from its master's metadata).
func (r *runner) waitTopic(ctx context.Context, n *Node) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	nodes := nodeSet{n.Addr: n}
	for {
		_, err := pullOnce(ctx, r.wire, nodes, n.Addr, r.cfg.Topic, 0, 0, 0, PhaseFinal, 0, nil, nil)
		if err == nil {
			return nil
		}
		if sleepCtx(ctx, 100*time.Millisecond) != nil {
			return fmt.Errorf("chaos: %s does not serve topic %s: %v", n.Name, r.cfg.Topic, err)
		}
	}
}

// drain lets the consumers read up to the writer's max offset of every queue (at most a minute).
func (r *runner) drain(ctx context.Context, writer *Node, cons *consumer) bool {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	want := make([]int64, r.cfg.Queues)
	for q := range want {
		var err error
		if want[q], err = maxOffset(ctx, r.wire, writer.Addr, r.cfg.Topic, int32(q)); err != nil {
			r.errorf("drain: max offset of queue %d: %v", q, err)
			return false
		}
	}
	for {
		done := true
		for q, w := range want {
			if cons.offset(int32(q)) < w {
				done = false
			}
		}
		if done {
			return true
		}
		if sleepCtx(ctx, 100*time.Millisecond) != nil {
			return false
		}
	}
}

// popDrainWait bounds the pop consumer's drain: every held message waits popInvisible and the revive
// interval to come back, and a new master reads the revive log first.
const popDrainWait = 90 * time.Second

// drainPop lets the pop consumer go on until it got every acknowledged message and every message it held
// came back (at most popDrainWait).
func (r *runner) drainPop(ctx context.Context, prod *producer, pop *popConsumer) bool {
	ctx, cancel := context.WithTimeout(ctx, popDrainWait)
	defer cancel()
	acked := func(yield func(string) bool) {
		prod.ids.Range(func(k, _ any) bool { return yield(k.(string)) })
	}
	for !pop.drained(acked) {
		if sleepCtx(ctx, 200*time.Millisecond) != nil {
			return false
		}
	}
	return true
}

// apply runs fault i and records it.
func (r *runner) apply(ctx context.Context, i int, f Fault) {
	rec := FaultRecord{Index: i, Kind: f.Kind}
	var notes []string
	note := func(format string, args ...any) { notes = append(notes, fmt.Sprintf(format, args...)) }
	var target *Node
	switch f.Kind {
	case KillWriter, PauseWriter, CutClientWriter, PowerLossWriter, PowerLossAll, DiskEIOWriter, DiskFullWriter, DiskSlowWriter:
		target = r.writer(ctx)
	default:
		target = r.follower(ctx)
	}
	if target == nil {
		if rec.Target == "" {
			rec.Target = "-"
		}
		rec.Note = "skipped: no target (no writer, or no replication link the topology routes through a proxy)"
		rec.Start = micros(time.Now())
		rec.Healed = rec.Start
		r.faults.add(rec)
		r.printf("fault %d %s: no target, skipped", i, f.Kind)
		return
	}
	rec.Target = target.Name
	if f.Kind == PowerLossAll {
		rec.Target = "all"
	}
	var links []*faultnet.Proxy
	if f.Kind == PartitionRepl || f.Kind == DelayRepl || f.Kind == CutRepl || f.Kind == OneWayRepl || f.Kind == LossyRepl {
		links = r.cl.ReplicationLinks(target)
		var names []string
		for _, p := range links {
			names = append(names, p.Name())
		}
		rec.Target = strings.Join(names, ",")
		if len(links) == 0 {
			rec.Target = target.Name
			target = nil
		}
	}
	r.printf("fault %d: %s %s for %v", i, f.Kind, rec.Target, f.For)
	start := time.Now()
	rec.Start = micros(start)
	switch f.Kind {
	case KillWriter, KillFollower:
		if err := target.Proc.Kill(); err != nil {
			r.errorf("fault %d: %v", i, err)
		}
		if f.Kind == KillWriter && !r.cl.Elects() {
			// What a lost master disk would lose. (A Raft group's followers hold every acknowledged entry by
			// construction, and its new leader's final scan is checked like any writer's.)
			rec.Scanned = r.outageScan(ctx, i, target, note)
		}
		_ = sleepCtx(ctx, time.Until(start.Add(f.For)))
		restart := time.Now()
		if err := r.cl.Restart(target); err != nil {
			r.errorf("fault %d: restart %s: %v", i, target.Name, err)
		}
		note("restart to listening %v", time.Since(restart).Round(time.Millisecond))
	case PauseWriter, PauseFollower:
		if err := target.Proc.Pause(); err != nil {
			r.errorf("fault %d: %v", i, err)
		}
		_ = sleepCtx(ctx, f.For)
		if err := target.Proc.Resume(); err != nil {
			r.errorf("fault %d: %v", i, err)
		}
	case PartitionRepl:
		for _, p := range links {
			p.Blackhole()
		}
		_ = sleepCtx(ctx, f.For)
		for _, p := range links {
			p.Heal()
		}
	case DelayRepl:
		for _, p := range links {
			p.SetDelay(f.Delay)
		}
		_ = sleepCtx(ctx, f.For)
		for _, p := range links {
			p.Heal()
		}
	case CutRepl:
		n := 0
		for _, p := range links {
			n += p.Cut()
		}
		note("%d connections cut", n)
		_ = sleepCtx(ctx, f.For)
	case OneWayRepl:
		var ways []string
		for _, p := range links {
			d := oneWayDirection(p, target, f.Inbound)
			p.BlackholeOneWay(d)
			ways = append(ways, p.Name()+" "+d.String())
		}
		note("%s: %s", f.way(), strings.Join(ways, ", "))
		_ = sleepCtx(ctx, f.For)
		for _, p := range links {
			p.Heal()
		}
	case LossyRepl:
		for j, p := range links {
			lc := lossyRepl
			lc.Seed = r.cfg.Schedule.Seed ^ uint64(i)<<16 ^ uint64(j)
			if err := p.SetLoss(lc); err != nil {
				r.errorf("fault %d: %v", i, err)
			}
		}
		_ = sleepCtx(ctx, f.For)
		resets := 0
		for _, p := range links {
			resets += p.Resets()
			p.Heal()
		}
		note("%d connections reset", resets)
	case CutClientWriter:
		rec.Target = target.Client.Name()
		target.Client.Blackhole()
		_ = sleepCtx(ctx, f.For)
		target.Client.Heal()
	case PowerLossWriter, PowerLossFollower, PowerLossAll:
		targets := []*Node{target}
		if f.Kind == PowerLossAll {
			targets = r.cl.Nodes()
		}
		r.powerLoss(ctx, i, f, targets, start, &rec, note)
	case DiskEIOWriter, DiskEIOFollower, DiskFullWriter, DiskFullFollower, DiskSlowWriter, DiskSlowFollower:
		r.diskFault(ctx, i, f, target, start, &rec, note)
	}
	rec.Healed = micros(time.Now())
	rec.Note = strings.Join(notes, "; ")
	r.faults.add(rec)
	r.printf("fault %d healed after %v%s", i, time.Since(start).Round(time.Millisecond), noteOf(rec.Note))
}

// lossyRepl is what lossy-repl does to each chunk of a replication link (faultnet.LossConfig): one in 20
// waits 200 ms to 1 s (a lost segment's retransmission timeouts, once or a few times doubled), every one up
// to 20 ms more (reordering), and one in 500 resets its connection.
var lossyRepl = faultnet.LossConfig{Stall: 0.05, StallMin: 200 * time.Millisecond, StallMax: time.Second,
	Jitter: 20 * time.Millisecond, Reset: 0.002}

// oneWayDirection is the direction of p that carries bytes to n (inbound) or from n (not inbound). Proxies
// of a replication link are named "[prefix:]dialer->target" by the topologies (masterslave.go, raft.go):
// from the dialer is faultnet.Forward.
func oneWayDirection(p *faultnet.Proxy, n *Node, inbound bool) faultnet.Direction {
	name := p.Name()
	if _, after, ok := strings.Cut(name, ":"); ok {
		name = after
	}
	dialer, _, _ := strings.Cut(name, "->")
	fromN := faultnet.Forward
	if dialer != n.Name {
		fromN = faultnet.Back
	}
	if !inbound {
		return fromN
	}
	return 1 - fromN
}

// writer waits up to 30 s for the cluster to name a writer (a Raft group may be electing one).
func (r *runner) writer(ctx context.Context) *Node { return waitWriter(ctx, r.cl, 30*time.Second) }

// follower picks one of the nodes that are not the writer.
func (r *runner) follower(ctx context.Context) *Node {
	w := r.writer(ctx)
	var fs []*Node
	for _, n := range r.cl.Nodes() {
		if n != w {
			fs = append(fs, n)
		}
	}
	if len(fs) == 0 {
		return nil
	}
	return fs[r.rng.IntN(len(fs))]
}

// outageScan reads every queue of the nodes that survive the writer's kill, once their stores have settled
// (their max offsets no longer move: what they received is dispatched), recording under PhaseKill; false
// when a scan failed (the checker then leaves this kill out).
func (r *runner) outageScan(ctx context.Context, fault int, killed *Node, note func(string, ...any)) bool {
	t0 := time.Now()
	ok := true
	for _, n := range r.cl.Nodes() {
		if n == killed || !n.Proc.Running() {
			continue
		}
		if err := r.settle(ctx, n); err != nil {
			r.errorf("fault %d: %v", fault, err)
			ok = false
			continue
		}
		got, err := scan(ctx, r.wire, n, r.cfg.Topic, r.cfg.Queues, PhaseKill, fault, r.reads)
		if err != nil {
			r.errorf("fault %d: outage scan: %v", fault, err)
			ok = false
			continue
		}
		note("%s held %d messages", n.Name, got)
	}
	note("outage scan %v", time.Since(t0).Round(time.Millisecond))
	return ok
}

// settle polls n's max offsets until two readings 300 ms apart agree (at most 30 s).
func (r *runner) settle(ctx context.Context, n *Node) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var last []int64
	for {
		cur := make([]int64, r.cfg.Queues)
		for q := range cur {
			var err error
			if cur[q], err = maxOffset(ctx, r.wire, n.Addr, r.cfg.Topic, int32(q)); err != nil {
				return fmt.Errorf("settle %s: %w", n.Name, err)
			}
		}
		if last != nil && slices.Equal(last, cur) {
			return nil
		}
		last = cur
		if sleepCtx(ctx, 300*time.Millisecond) != nil {
			return fmt.Errorf("settle %s: max offsets still moving after 30s", n.Name)
		}
	}
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
