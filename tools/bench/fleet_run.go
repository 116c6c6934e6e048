package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rocketraft/rocketraft/client"
	"github.com/rocketraft/rocketraft/remoting"
)

// FleetSummary is what `mqbench namesrv` found; --json prints it as one object.
type FleetSummary struct {
	Role     string  `json:"role"` // "namesrv"
	Groups   int     `json:"groups"`
	Replicas int     `json:"replicas"`
	Topics   int     `json:"topics_per_group"`
	Spread   int     `json:"groups_per_topic"`
	Clients  int     `json:"clients"`
	Rate     float64 `json:"rate"`
	Bodies   string  `json:"bodies"`
	// LoadBefore and LoadAfter are the machine's load averages (/proc/loadavg) when the run started and ended.
	LoadBefore string `json:"load_before,omitempty"`
	LoadAfter  string `json:"load_after,omitempty"`

	Floor   *FleetPhase `json:"floor,omitempty"` // the same load against the stand-in
	Namesrv *FleetPhase `json:"namesrv"`

	// FirstRoundMs is the name servers' first registration round, from the first registration sent to the
	// last answered; CompleteMs the time from its end until every topic's route listed all its groups on
	// every name server.
	FirstRoundMs float64 `json:"first_round_ms"`
	CompleteMs   float64 `json:"complete_ms"`
	// RegistrationsAlone is each name server's figures over one registration period with no queries.
	RegistrationsAlone []nsFigures `json:"registrations_alone,omitempty"`
	// IdleConnKiB is what each of IdleConns idle client connections added to the name server's resident
	// memory (the first one's).
	IdleConns   int     `json:"idle_conns,omitempty"`
	IdleConnKiB float64 `json:"idle_conn_kib,omitempty"`

	Restart *FleetRestart `json:"restart,omitempty"`
	Events  []string      `json:"events,omitempty"` // the churn of the measured phase, with its times
}

// FleetPhase is one measured phase: the load against the stand-in or against the name servers.
type FleetPhase struct {
	Target        string       `json:"target"`
	Seconds       float64      `json:"seconds"`
	Queries       querySummary `json:"queries"`
	Registrations regSummary   `json:"registrations"`
	Namesrvs      []nsFigures  `json:"namesrvs,omitempty"`
}

// FleetRestart is what a restart of the started name server under the load showed. Times are from the
// moment it was started again.
type FleetRestart struct {
	// CompleteMs: a sweep asking every topic's route, begun then, found every route complete (the
	// routes were complete from then on, at the latest); SweptMs: when that sweep was done.
	CompleteMs float64 `json:"complete_ms"`
	SweptMs    float64 `json:"swept_ms"`
	// FirstGoodMs and LastBadMs: the load's first answer that listed all its groups, and its last that
	// did not (an error code such as "name server not ready", or a group missing) before the sweep was
	// done (-1: none).
	FirstGoodMs float64      `json:"first_good_ms"`
	LastBadMs   float64      `json:"last_bad_ms"`
	Queries     querySummary `json:"queries"` // the queries due from the restart until the sweep was done
	// Registrations: the brokers' registrations from the restart until the sweep was done (a failed one
	// leaves the rest of its table, the other chunks of a split one, for the next period).
	Registrations regSummary `json:"registrations"`
}

// RunFleet runs the fleet simulator: the floor against the stand-in (self is mqbench's executable, which
// serves it as StandInCommand), then the name servers: a first registration round, a check that every route
// is complete, one period of registrations alone, the idle connections, then the query load with the churn,
// and the restart when asked.
func RunFleet(ctx context.Context, cfg FleetConfig, self string, opts Options) (*FleetSummary, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	r := &fleetRun{cfg: cfg, f: newFleet(cfg), out: opts.Report, log: log}
	if r.out == nil {
		r.out = io.Discard
	}
	sum := &FleetSummary{Role: "namesrv", Groups: cfg.Groups, Replicas: cfg.Replicas, Topics: cfg.Topics,
		Spread: cfg.Spread, Clients: cfg.Clients, Rate: cfg.Rate, Bodies: strings.Join(cfg.Bodies, ","),
		LoadBefore: loadAvg()}
	defer func() { sum.LoadAfter = loadAvg() }()
	if cfg.Floor > 0 {
		addr, stop, err := startStandIn(cfg, self)
		if err != nil {
			return nil, err
		}
		r.say("floor: %d queries/s against the stand-in at %s for %v", int(cfg.Rate), addr, cfg.Floor)
		// The floor runs on a fleet of its own, built alike: its churn (a topic added, a master changed)
		// must not be where the name servers' phase starts from.
		ns := r.f
		r.f = newFleet(cfg)
		sum.Floor, err = r.phase(ctx, "floor", []string{addr}, nil, cfg.Floor, nil)
		r.f = ns
		stop()
		if err != nil {
			return sum, err
		}
	}
	targets, mx := cfg.NamesrvAddrs, cfg.MetricsAddr
	if cfg.Start != "" {
		dir, err := os.MkdirTemp("", "mqbench-namesrv-")
		if err != nil {
			return sum, err
		}
		defer os.RemoveAll(dir)
		p, err := startNamesrv(cfg, dir, log)
		if err != nil {
			return sum, err
		}
		defer p.stop()
		r.proc = p
		targets, mx = []string{p.addr()}, []string{p.metricsAddr()}
		r.say("name server %s started at %s (metrics %s, cpu %q)", cfg.Start, p.addr(), p.metricsAddr(), cfg.CPU)
	}
	if len(mx) == 0 {
		mx = make([]string, len(targets))
	}
	var err error
	sum.Namesrv, err = r.phase(ctx, "namesrv", targets, mx, cfg.Duration, sum)
	return sum, err
}

// fleetRun is one run of the simulator.
type fleetRun struct {
	cfg  FleetConfig
	f    *fleet
	out  io.Writer
	log  *slog.Logger
	proc *nsProc // the started name server, or nil
	mu   sync.Mutex
}

func (r *fleetRun) say(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	fmt.Fprintf(r.out, format+"\n", args...)
}

func (r *fleetRun) samples(ctx context.Context, mx []string) []nsSample {
	out := make([]nsSample, len(mx))
	for i, a := range mx {
		out[i] = sampleNS(ctx, a)
	}
	return out
}

// phase runs the registrations and the query load against targets for d after the warm-up. With sum (the
// name servers' phase) it also measures the first round, the time to complete routes, the registrations
// alone and the idle connections, runs the churn, and the restart.
func (r *fleetRun) phase(ctx context.Context, name string, targets, mx []string, d time.Duration,
	sum *FleetSummary) (*FleetPhase, error) {
	cfg := r.cfg
	base := time.Now()
	var burst atomic.Int64
	br := newBrokers(r.f, func() []string { return targets }, &burst, base, r.log)
	defer br.close()
	first := br.registerAll(ctx)
	if rs := br.take(); rs.Failed > 0 {
		return nil, fmt.Errorf("%s: first registration round: %d of %d failed: %s", name, rs.Failed, rs.Failed+rs.OK, rs.First)
	}
	r.say("%s: first registration round of %d brokers (%s bodies) took %v", name, len(br.list),
		strings.Join(cfg.Bodies, ","), first.Round(time.Millisecond))
	if sum != nil {
		sum.FirstRoundMs = millis(first)
		took, err := r.waitComplete(ctx, targets, 30*time.Second)
		if err != nil {
			return nil, err
		}
		sum.CompleteMs = millis(took)
		r.say("%s: every route complete on every name server %v after the round at the latest (the sweep that found it so began then)",
			name, took.Round(time.Millisecond))
	}

	regCtx, stopRegs := context.WithCancel(ctx)
	var regsDone sync.WaitGroup
	regsDone.Add(1)
	firstRound := cfg.Every // the name servers: rounds every period from the first
	if sum == nil {
		firstRound = cfg.Warmup + d/2 // the floor: a round inside the measured window
	}
	go func() {
		defer regsDone.Done()
		br.run(regCtx, firstRound)
	}()
	defer func() {
		stopRegs()
		regsDone.Wait()
	}()

	if sum != nil && ctx.Err() == nil {
		a := r.samples(ctx, mx)
		sleepCtx(ctx, cfg.Every+cfg.Every/10)
		b := r.samples(ctx, mx)
		rs := br.take()
		for i := range mx {
			sum.RegistrationsAlone = append(sum.RegistrationsAlone, figures(targets[i], a[i], b[i], 0))
		}
		r.say("%s: registrations alone for %v: %d registrations, p99 %.1f ms; name server CPU %s", name,
			cfg.Every+cfg.Every/10, rs.OK, rs.Latency.P99, cpuList(sum.RegistrationsAlone))
		if cfg.IdleConns > 0 && mx[0] != "" {
			kib, err := r.idleConns(ctx, targets[0], mx[0])
			if err != nil {
				return nil, err
			}
			sum.IdleConns, sum.IdleConnKiB = cfg.IdleConns, kib
			r.say("%s: %d idle client connections: %.1f KiB of resident memory each", name, cfg.IdleConns, kib)
		}
	}

	ql := newQueryLoad(r.f, base, &burst)
	if err := ql.connect(ctx, targets); err != nil {
		return nil, err
	}
	defer ql.close()
	loadCtx, stopLoad := context.WithCancel(ctx)
	var loadDone sync.WaitGroup
	loadDone.Add(1)
	go func() {
		defer loadDone.Done()
		ql.run(loadCtx, time.Now())
	}()
	stopped := false
	stopQueries := func() {
		if !stopped {
			stopped = true
			stopLoad()
			loadDone.Wait()
		}
	}
	defer stopQueries()

	tick := time.NewTicker(cfg.Interval)
	defer tick.Stop()
	start := time.Now()
	report := func(now time.Time) {
		n, errs, p := ql.tick()
		line := fmt.Sprintf("[%s %5s] answered/s: %.0f | errors: %d | RT(ms) %s", name,
			now.Sub(start).Round(time.Second), float64(n)/cfg.Interval.Seconds(), errs, p)
		for i, s := range r.samples(ctx, mx) {
			if s.ok {
				line += fmt.Sprintf(" | ns%d rss %.0f MB", i, s.rss/(1<<20))
			}
		}
		r.say("%s", line)
	}
	wait := func(until time.Time) {
		for ctx.Err() == nil {
			left := time.Until(until)
			if left <= 0 {
				return
			}
			t := time.NewTimer(left)
			select {
			case <-ctx.Done():
			case <-t.C:
			case now := <-tick.C:
				report(now)
			}
			t.Stop()
		}
	}
	wait(start.Add(cfg.Warmup))

	br.take()
	a := r.samples(ctx, mx)
	measured := time.Now()
	ql.counting.Store(true)
	var events sync.WaitGroup
	// The floor runs the same churn (not the restart): the simulator's own part of it (a thousand dials in a
	// second, connections cut and registered again) then weighs on both sides of the comparison.
	var notes *[]string
	if sum != nil {
		notes = &sum.Events
	}
	r.churn(ctx, measured, d, br, ql, notes, &events)
	wait(measured.Add(d))
	ql.counting.Store(false)
	secs := time.Since(measured).Seconds()
	b := r.samples(ctx, mx)
	events.Wait()
	phase := &FleetPhase{Target: strings.Join(targets, ";"), Seconds: secs}
	if sum == nil || !cfg.churns(ChurnRestart) {
		stopQueries()
	}
	ql.drain()
	phase.Queries = ql.summary(secs)
	phase.Registrations = br.take()
	for i := range mx {
		phase.Namesrvs = append(phase.Namesrvs, figures(targets[i], a[i], b[i], phase.Queries.Answered))
	}
	r.say("%s: %s", name, phase.line())
	if sum != nil && cfg.churns(ChurnRestart) && ctx.Err() == nil {
		rs, err := r.restart(ctx, targets, ql, br)
		sum.Restart = rs
		if err != nil {
			return phase, err
		}
	}
	return phase, ctx.Err()
}

// churn schedules the measured phase's events, spread over it, and notes each in notes (nil: printed only).
func (r *fleetRun) churn(ctx context.Context, start time.Time, d time.Duration, br *brokers, ql *queryLoad,
	notes *[]string, wg *sync.WaitGroup) {
	var kinds []string
	for _, k := range r.cfg.Churn {
		if k != ChurnRestart {
			kinds = append(kinds, k)
		}
	}
	var mu sync.Mutex
	note := func(format string, args ...any) {
		line := fmt.Sprintf("[%5s] ", time.Since(start).Round(100*time.Millisecond)) + fmt.Sprintf(format, args...)
		if notes != nil {
			mu.Lock()
			*notes = append(*notes, line)
			mu.Unlock()
		}
		r.say("event %s", line)
	}
	for i, k := range kinds {
		at := d * time.Duration(i+1) / time.Duration(len(kinds)+1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if !sleepCtx(ctx, time.Until(start.Add(at))) {
				return
			}
			switch k {
			case ChurnTopicCreate:
				name := fmt.Sprintf("FleetNew_%d", i)
				t0 := time.Now()
				br.createTopic(ctx, 0, name)
				note("topic %s created on the %d groups of set 0, registered in %v", name, r.cfg.Spread,
					time.Since(t0).Round(time.Millisecond))
			case ChurnMasterChange:
				g := r.f.groups[len(r.f.groups)/2]
				t0 := time.Now()
				br.changeMaster(ctx, g)
				note("master of %s changed: old master's connections cut, next broker registered as master in %v",
					g.name, time.Since(t0).Round(time.Millisecond))
			case ChurnBrokerKill:
				g := r.f.groups[len(r.f.groups)-1]
				addr := br.killSlave(g)
				note("slave %s of %s killed (connections cut); back at the next round", addr, g.name)
			case ChurnReconnect:
				n := len(ql.conns)
				for j, c := range ql.conns {
					time.AfterFunc(time.Second*time.Duration(j)/time.Duration(n), c.reconnect)
				}
				note("all %d client connections closed and re-dialled within 1 s", n)
			}
		}()
	}
}

// restart kills the started name server and starts it again on the same port and folder while the load
// goes on, and measures the time until every route is complete again and the answers in between.
func (r *fleetRun) restart(ctx context.Context, targets []string, ql *queryLoad, br *brokers) (*FleetRestart, error) {
	ql.summary(0) // the restart window starts afresh
	br.take()
	ql.counting.Store(true)
	r.say("restart: SIGKILL of the name server, then started again on %s", r.proc.addr())
	r.proc.kill()
	if err := r.proc.start(); err != nil {
		return nil, err
	}
	t0 := time.Now()
	ql.firstGood.Store(0)
	ql.lastBad.Store(0)
	base := int64(t0.Sub(ql.base))
	limit := 2*r.cfg.Every + 30*time.Second
	complete, err := r.waitComplete(ctx, targets, limit)
	swept := time.Since(t0)
	ql.counting.Store(false)
	since := func(at int64) float64 {
		if at == 0 {
			return -1
		}
		return millis(time.Duration(at - base))
	}
	rs := &FleetRestart{CompleteMs: millis(complete), SweptMs: millis(swept), FirstGoodMs: since(ql.firstGood.Load()),
		LastBadMs: since(ql.lastBad.Load())}
	ql.drain()
	rs.Queries = ql.summary(swept.Seconds())
	rs.Registrations = br.take()
	if err != nil {
		return rs, fmt.Errorf("restart: %w", err)
	}
	r.say("restart: every route complete from %v after the restart at the latest (the sweep that found it so began then, "+
		"done at %v); the load's first complete answer at %.0f ms, its last not complete at %.0f ms; %d queries answered, "+
		"%d incomplete, codes %v, %d lost, %d failed dials; registrations %d, failed %d (%s)", complete.Round(time.Millisecond),
		swept.Round(time.Millisecond), rs.FirstGoodMs, rs.LastBadMs, rs.Queries.Answered, rs.Queries.Incomplete,
		rs.Queries.Codes, rs.Queries.Lost, rs.Queries.Dials, rs.Registrations.OK, rs.Registrations.Failed,
		rs.Registrations.First)
	return rs, nil
}

// waitComplete asks every name server for every topic's route until all list every group of their topic,
// and returns when the sweep that found them so began (from the call); it gives up after limit.
func (r *fleetRun) waitComplete(ctx context.Context, targets []string, limit time.Duration) (time.Duration, error) {
	start := time.Now()
	cl := client.New(client.Config{Timeout: 5 * time.Second, ConnsPerAddr: 4, Log: r.log})
	defer cl.Close()
	for {
		began := time.Since(start)
		missing := 0
		var example string
		for _, ns := range targets {
			n, ex := r.sweep(ctx, cl, ns)
			if n > 0 && example == "" {
				example = ex
			}
			missing += n
		}
		if missing == 0 {
			return began, nil
		}
		if time.Since(start) > limit || ctx.Err() != nil {
			return time.Since(start), fmt.Errorf("%d routes still incomplete after %v (%s)",
				missing, limit, example)
		}
		sleepCtx(ctx, 200*time.Millisecond)
	}
}

// sweep asks ns for every topic's route and returns how many are incomplete (or not answered), with an
// example.
func (r *fleetRun) sweep(ctx context.Context, cl *client.Client, ns string) (int, string) {
	var (
		missing atomic.Int64
		mu      sync.Mutex
		example string
		wg      sync.WaitGroup
	)
	next := atomic.Int64{}
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= len(r.f.topics) || ctx.Err() != nil {
					return
				}
				topic := r.f.topics[i]
				rd, err := cl.RouteAt(ctx, ns, topic)
				why := ""
				switch {
				case err != nil:
					why = err.Error()
				case len(rd.BrokerDatas) != r.cfg.Spread || len(rd.QueueDatas) != r.cfg.Spread:
					why = fmt.Sprintf("%d broker datas, %d queue datas of %d groups", len(rd.BrokerDatas),
						len(rd.QueueDatas), r.cfg.Spread)
				}
				if why != "" {
					missing.Add(1)
					mu.Lock()
					if example == "" {
						example = topic + " at " + ns + ": " + why
					}
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	return int(missing.Load()), example
}

// idleConns opens IdleConns connections to ns, each asking one route, and returns what each added to the
// name server's resident memory while they are open and idle.
func (r *fleetRun) idleConns(ctx context.Context, ns, mx string) (float64, error) {
	before := sampleNS(ctx, mx)
	conns := make([]net.Conn, 0, r.cfg.IdleConns)
	defer func() {
		for _, c := range conns {
			_ = c.Close()
		}
	}()
	for i := 0; i < r.cfg.IdleConns; i++ {
		c, err := net.DialTimeout("tcp", ns, 5*time.Second)
		if err != nil {
			return 0, fmt.Errorf("idle connection %d: %w", i, err)
		}
		conns = append(conns, c)
		cmd := remoting.NewRequest(remoting.GetRouteInfoByTopic, map[string]string{"topic": r.f.topics[i%len(r.f.topics)]}, nil)
		frame, err := remoting.EncodeFrame(nil, cmd)
		if err != nil {
			return 0, err
		}
		if _, err := c.Write(frame); err != nil {
			return 0, err
		}
		if _, err := remoting.ReadFrame(c, remoting.MaxFrameSize, nil); err != nil {
			return 0, fmt.Errorf("idle connection %d: its route: %w", i, err)
		}
	}
	sleepCtx(ctx, 2*time.Second)
	after := sampleNS(ctx, mx)
	if !before.ok || !after.ok {
		return 0, errors.New("idle connections: the name server's metrics do not answer")
	}
	return (after.rss - before.rss) / float64(r.cfg.IdleConns) / 1024, nil
}

// sleepCtx sleeps d or until ctx ends; it reports whether the whole d passed.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

func millis(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func cpuList(fs []nsFigures) string {
	var parts []string
	for _, f := range fs {
		part := fmt.Sprintf("%.1f%%", 100*f.CPU)
		if f.LockHolds > 0 {
			part += fmt.Sprintf(" (write lock p99 <= %.0f us over %d holds)", f.LockP99Micros, f.LockHolds)
		}
		parts = append(parts, part)
	}
	return strings.Join(parts, ", ")
}

// loadAvg is the machine's load averages, "" where /proc/loadavg is not.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

// line is a phase's one-line summary.
func (p *FleetPhase) line() string {
	q := p.Queries
	s := fmt.Sprintf("asked %.0f/s, answered %.0f/s, RT(ms) %s; in bursts %s; busy %d, not found %d, other codes %d, "+
		"lost %d, overflow %d; checked %d: incomplete %d, masterless %d; registrations %d (p99 %.1f ms, failed %d)",
		q.AskedPS, q.AnsweredPS, q.Latency, q.Burst, q.Busy, q.NotFound, q.OtherCode, q.Lost, q.Overflow, q.Checked,
		q.Incomplete, q.Masterless, p.Registrations.OK, p.Registrations.Latency.P99, p.Registrations.Failed)
	for _, n := range p.Namesrvs {
		s += fmt.Sprintf("; ns %s: CPU %.1f%% of a core, RSS %.0f MB, %.1f allocs/query", n.Addr, 100*n.CPU, n.RSSMB,
			n.AllocsPerQ)
		if n.LockHolds > 0 {
			s += fmt.Sprintf(", write lock p99 <= %.0f us (max bucket %.0f us, %d holds)", n.LockP99Micros,
				n.LockMaxMicros, n.LockHolds)
		}
	}
	return s
}

// WriteJSON writes s as one line of JSON.
func (s *FleetSummary) WriteJSON(w io.Writer) error {
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// WriteText writes the closing lines: each phase, and the name servers' latency over the floor.
func (s *FleetSummary) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "[Complete] fleet: %d groups x %d brokers, %d topics each on %d groups (%s bodies), %d clients at %.0f queries/s; load %s -> %s\n",
		s.Groups, s.Replicas, s.Topics, s.Spread, s.Bodies, s.Clients, s.Rate, s.LoadBefore, s.LoadAfter)
	if s.Floor != nil {
		fmt.Fprintf(&b, "[Complete] floor (stand-in): %s\n", s.Floor.line())
	}
	if s.Namesrv != nil {
		fmt.Fprintf(&b, "[Complete] name servers: %s\n", s.Namesrv.line())
		fmt.Fprintf(&b, "[Complete] first registration round %.0f ms, every route complete %.0f ms later; registrations alone: CPU %s\n",
			s.FirstRoundMs, s.CompleteMs, cpuList(s.RegistrationsAlone))
		if s.Floor != nil {
			f, n := s.Floor.Queries, s.Namesrv.Queries
			fmt.Fprintf(&b, "[Complete] over the floor (ms): p50 %+.3f p99 %+.3f p999 %+.3f max %+.3f; in bursts p99 %+.3f p999 %+.3f max %+.3f\n",
				n.Latency.P50-f.Latency.P50, n.Latency.P99-f.Latency.P99, n.Latency.P999-f.Latency.P999,
				n.Latency.Max-f.Latency.Max, n.Burst.P99-f.Burst.P99, n.Burst.P999-f.Burst.P999, n.Burst.Max-f.Burst.Max)
		}
	}
	if s.IdleConns > 0 {
		fmt.Fprintf(&b, "[Complete] %d idle client connections: %.1f KiB each\n", s.IdleConns, s.IdleConnKiB)
	}
	if s.Restart != nil {
		q := s.Restart.Queries
		fmt.Fprintf(&b, "[Complete] restart: every route complete from %.0f ms at the latest (sweep done at %.0f ms); first complete answer %.0f ms, last not complete %.0f ms; %d answered, %d incomplete, codes %v, %d lost; registrations %d, failed %d\n",
			s.Restart.CompleteMs, s.Restart.SweptMs, s.Restart.FirstGoodMs, s.Restart.LastBadMs, q.Answered, q.Incomplete, q.Codes, q.Lost,
			s.Restart.Registrations.OK, s.Restart.Registrations.Failed)
	}
	for _, e := range s.Events {
		fmt.Fprintf(&b, "[Complete] event %s\n", e)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
