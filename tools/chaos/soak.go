package chaos

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/rocketraft/rocketraft/internal/freeport"
)

// SoakConfig configures a soak (Soak): a chaos run (Run) held for Duration with faults every few minutes,
// the mixed workload beside it, and every server process sampled every Every.
type SoakConfig struct {
	// Run is the chaos run: topology, modes, the native load, Bin, Dir, Out, Log. Soak sets its Schedule,
	// Warmup, Settle, During and the metrics arguments of its processes.
	Run      RunConfig
	Duration time.Duration // the whole load, warm-up included
	Every    time.Duration // one sample of every process
	Bounds   GrowthBounds  // Bounds.Warmup is also the load before the first fault
	// Faults draws the faults (its Rounds is left out: faults are drawn while they fit), between the warm-up
	// and the last Quiet of the run, in which no fault is applied, so the last samples are of a healed group.
	Faults     ScheduleConfig
	Quiet      time.Duration
	MixedRate  float64       // mixed sends per second, every kind in turn
	AdminEvery time.Duration // a round of mqadmin calls
	MixedDrain time.Duration // how long the mixed consumers may take to catch up at the end
}

// DefaultSoakConfig is make soak's: an hour, a sample every 30 s, a fault every 2 to 4 minutes lasting 5 to
// 30 s, drawn from every kind, the last 2 minutes quiet, 20 mixed sends a second, admin calls every 20 s.
func DefaultSoakConfig() SoakConfig {
	return SoakConfig{Run: DefaultRunConfig(), Duration: time.Hour, Every: 30 * time.Second, Bounds: DefaultGrowthBounds(),
		Faults: ScheduleConfig{Kinds: Kinds, MinFor: 5 * time.Second, MaxFor: 30 * time.Second,
			MinGap: 2 * time.Minute, MaxGap: 4 * time.Minute, Delay: 200 * time.Millisecond, IOPS: DefaultSlowIOPS},
		Quiet: 2 * time.Minute, MixedRate: 20, AdminEvery: 20 * time.Second, MixedDrain: 2 * time.Minute}
}

// Validate names the first bad field.
func (c SoakConfig) Validate() error {
	switch {
	case c.Every <= 0:
		return fmt.Errorf("chaos: soak: sample interval %v must be positive", c.Every)
	case c.Bounds.Last < 1 || c.Bounds.MinAfter < c.Bounds.Last:
		return fmt.Errorf("chaos: soak: bounds: last %d must be at least 1 and min-after %d at least last", c.Bounds.Last, c.Bounds.MinAfter)
	case c.Duration < c.Bounds.Warmup+c.Quiet+time.Duration(c.Bounds.MinAfter)*c.Every:
		return fmt.Errorf("chaos: soak: duration %v is shorter than the warm-up %v, the quiet end %v and %d samples of %v",
			c.Duration, c.Bounds.Warmup, c.Quiet, c.Bounds.MinAfter, c.Every)
	case c.MixedRate <= 0 || c.AdminEvery <= 0:
		return fmt.Errorf("chaos: soak: mixed rate %v and admin interval %v must be positive", c.MixedRate, c.AdminEvery)
	}
	f := c.Faults
	f.Rounds = 0
	return f.Validate()
}

// SoakSchedule draws faults from c.Faults while their gaps and lengths fit between the warm-up and the quiet end.
func (c SoakConfig) SoakSchedule() (Schedule, error) {
	window := c.Duration - c.Bounds.Warmup - c.Quiet
	f := c.Faults
	f.Rounds = max(1, int(window/max(f.MinGap+f.MinFor, time.Second))+1)
	s, err := NewSchedule(f)
	if err != nil {
		return s, err
	}
	var used time.Duration
	for i, x := range s.Faults {
		if used+x.Gap+x.For > window {
			s.Faults = s.Faults[:i]
			break
		}
		used += x.Gap + x.For
	}
	return s, nil
}

// SoakReport is a soak's verdict: the chaos checker's report, the mixed workload's, and the growth of
// every process incarnation.
type SoakReport struct {
	Chaos        *Report
	Mixed        *MixedReport
	Incarnations []Incarnation
	Bounds       GrowthBounds
	Duration     time.Duration
	Errors       []string // the sampler's own (samples.jsonl not written)
}

// SamplesFile holds every Sample of a soak, JSON lines, in the run's folder; SoakReportFile its report.
const (
	SamplesFile    = "samples.jsonl"
	SoakReportFile = "soak.txt"
)

// Failures lists every failure: the checker's, the mixed workload's, each figure that grew beyond its
// bound, and a soak in which no process was sampled long enough to judge.
func (r *SoakReport) Failures() []string {
	var out []string
	if r.Chaos != nil {
		out = append(out, r.Chaos.Failures()...)
	}
	if r.Mixed == nil {
		out = append(out, "mixed: the workload did not run")
	} else {
		out = append(out, r.Mixed.Failures()...)
	}
	judged := 0
	for _, in := range r.Incarnations {
		if in.Judged {
			judged++
		}
		for _, g := range in.Grew() {
			out = append(out, "growth: "+g)
		}
	}
	if judged == 0 {
		out = append(out, "growth: no process was sampled long enough to judge")
	}
	return append(out, r.Errors...)
}

// Summary is one line: PASS or FAIL, the mode, the chaos counts, the mixed counts, and the largest rise of
// each figure over its baseline among the judged incarnations.
func (r *SoakReport) Summary() string {
	verdict := "PASS"
	if len(r.Failures()) > 0 {
		verdict = "FAIL"
	}
	judged, grew := 0, 0
	rise := map[string]int64{}
	for _, in := range r.Incarnations {
		if !in.Judged {
			continue
		}
		judged++
		grew += len(in.Grew())
		for _, g := range in.Growth {
			if g.Read {
				rise[g.Metric] = max(rise[g.Metric], g.Last-g.Base)
			}
		}
	}
	s := fmt.Sprintf("%s soak %v", verdict, r.Duration.Round(time.Second))
	if r.Chaos != nil {
		s += " | " + r.Chaos.Summary()
	}
	if r.Mixed != nil {
		s += " | " + r.Mixed.Summary()
	}
	return s + fmt.Sprintf(" | judged=%d/%d grew=%d rise: rss-anon=%s goroutines=%+d fds=%+d maps=%+d", judged,
		len(r.Incarnations), grew, mib(rise[MetricRSSAnon]), rise[MetricGoroutines], rise[MetricFDs], rise[MetricMaps])
}

func mib(b int64) string { return fmt.Sprintf("%+.1fMiB", float64(b)/(1<<20)) }

// String is the whole report: the checker's, the mixed workload's, the resource table, the summary line.
func (r *SoakReport) String() string {
	var b strings.Builder
	if r.Chaos != nil {
		b.WriteString(r.Chaos.String())
	}
	if m := r.Mixed; m != nil {
		fmt.Fprintf(&b, "mixed: drained %v; admin ok %v, failed %v; send errors %v\n", m.Drained, m.AdminOK, m.AdminErr, m.Errors)
		var slow []string
		for _, k := range MixedKinds {
			slow = append(slow, fmt.Sprintf("%s %v", k, m.Slowest[k].Round(time.Millisecond)))
		}
		fmt.Fprintf(&b, "mixed: slowest send by kind: %s\n", strings.Join(slow, ", "))
		for _, e := range m.AdminErrors {
			fmt.Fprintf(&b, "  admin error: %s\n", e)
		}
	}
	bd := r.Bounds
	fmt.Fprintf(&b, "resources (baseline: the first sample %v after a start, in the role the process ended in; each figure judged on the lowest of the last %d samples; bounds rss-anon %v, goroutines %v, fds %v, maps %v):\n",
		bd.Warmup, bd.Last, bd.RSSAnon, bd.Goroutines, bd.FDs, bd.Maps)
	tw := tabwriter.NewWriter(&b, 2, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "process\tpid\tsamples\tspan\trss-anon MiB\theap MiB\tgoroutines\tfds\tmaps\tstore fds\tstore maps\trss-file MiB\tverdict\t")
	for _, in := range r.Incarnations {
		l := in.LastAt
		proc := in.Proc
		if l.Role != "" {
			proc += " (" + l.Role + ")"
		}
		if !in.Judged {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%v\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%s\tnot judged: %s\t\n", proc, in.Pid, in.Samples,
				in.To.Sub(in.From).Round(time.Second), mibs(l.RSSAnon), mibs(l.Heap), l.Goroutines, l.FDs, l.Maps, l.StoreFDs,
				l.StoreMaps, mibs(l.RSSFile), in.Why)
			continue
		}
		bs := in.Baseline
		verdict := "ok"
		if g := in.Grew(); len(g) > 0 {
			verdict = "GREW " + strings.Join(g, "; ")
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%v\t%s->%s\t%s->%s\t%d->%d\t%d->%d\t%d->%d\t%d->%d\t%d->%d\t%s->%s\t%s\t\n", proc, in.Pid,
			in.Samples, in.To.Sub(in.From).Round(time.Second), mibs(bs.RSSAnon), mibs(l.RSSAnon), mibs(bs.Heap), mibs(l.Heap),
			bs.Goroutines, l.Goroutines, bs.FDs, l.FDs, bs.Maps, l.Maps, bs.StoreFDs, l.StoreFDs, bs.StoreMaps, l.StoreMaps,
			mibs(bs.RSSFile), mibs(l.RSSFile), verdict)
	}
	_ = tw.Flush()
	for _, f := range r.Failures() {
		fmt.Fprintf(&b, "FAIL: %s\n", f)
	}
	b.WriteString(r.Summary() + "\n")
	return b.String()
}

func mibs(b int64) string {
	if b < 0 {
		return "?"
	}
	return strconv.FormatFloat(float64(b)/(1<<20), 'f', 1, 64)
}

// Soak runs cfg.Run for cfg.Duration with the soak's schedule, the mixed workload and the sampler, checks
// the history, judges the samples, and writes the report to Run.Dir/soak.txt (the samples to samples.jsonl).
func Soak(ctx context.Context, cfg SoakConfig) (*SoakReport, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	sched, err := cfg.SoakSchedule()
	if err != nil {
		return nil, err
	}
	rc := cfg.Run
	rc.Schedule = sched
	rc.Warmup = cfg.Bounds.Warmup
	rc.Settle = max(cfg.Duration-cfg.Bounds.Warmup-sched.Length(), cfg.Quiet)
	if err := os.MkdirAll(rc.Dir, 0o755); err != nil {
		return nil, err
	}
	ports := &metricsPorts{ports: map[string]int{}}
	nsPort, err := ports.port("namesrv")
	if err != nil {
		return nil, err
	}
	rc.NamesrvArgs = append(rc.NamesrvArgs, metricsArgs(nsPort)...)
	brokerArgs := rc.BrokerArgs
	rc.BrokerArgs = func(node string) []string {
		var more []string
		if brokerArgs != nil {
			more = brokerArgs(node)
		}
		p, err := ports.port(node)
		if err != nil {
			return more // the node runs without its endpoint: its goroutines are not read, and not judged
		}
		return append(more, metricsArgs(p)...)
	}
	s := &soaker{cfg: cfg, dir: rc.Dir, ports: ports, powerLoss: sched.hasPowerLoss()}
	if s.out = rc.Out; s.out == nil {
		s.out = io.Discard
	}
	rc.During = s.during
	rep := &SoakReport{Bounds: cfg.Bounds, Duration: cfg.Duration}
	if rep.Chaos, err = Run(ctx, rc); err != nil {
		return nil, err
	}
	rep.Mixed, rep.Errors = s.mixed, s.errs
	rep.Incarnations = JudgeGrowth(s.samples, cfg.Bounds)
	if err := os.WriteFile(filepath.Join(rc.Dir, SoakReportFile), []byte(rep.String()), 0o644); err != nil {
		return nil, err
	}
	return rep, nil
}

func metricsArgs(port int) []string {
	return []string{"--metricsExporterType=PROM", "--metricsPromExporterHost=127.0.0.1",
		"--metricsPromExporterPort=" + strconv.Itoa(port)}
}

// metricsPorts gives each process name its /metrics port, the same across restarts.
type metricsPorts struct {
	mu    sync.Mutex
	ports map[string]int
}

func (m *metricsPorts) port(name string) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if p, ok := m.ports[name]; ok {
		return p, nil
	}
	p, err := freeport.One()
	if err != nil {
		return 0, err
	}
	m.ports[name] = p
	return p, nil
}

func (m *metricsPorts) addr(name string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if p, ok := m.ports[name]; ok {
		return net.JoinHostPort("127.0.0.1", strconv.Itoa(p))
	}
	return ""
}

// soaker is the soak's part of a run: RunConfig.During.
type soaker struct {
	cfg   SoakConfig
	dir   string
	ports *metricsPorts
	out   io.Writer
	// powerLoss: the schedule holds a power-loss fault, which may take what ASYNC_FLUSH acknowledged.
	powerLoss bool

	// written by during, read after Run returned
	samples []Sample
	mixed   *MixedReport
	errs    []string
}

func (s *soaker) printf(format string, args ...any) {
	fmt.Fprintf(s.out, "%s  %s\n", time.Now().UTC().Format("15:04:05.000"), fmt.Sprintf(format, args...))
}

// during runs the mixed workload and samples every process every cfg.Every until ctx ends, then waits for
// the mixed workload's drain and checks.
func (s *soaker) during(ctx context.Context, cl Cluster) {
	var ri RunInfo
	cl.Info(&ri)
	// The checker's rule (powerLosses): loss after a power loss is reported, not failed, where the flush
	// type does not promise synced acknowledgements; the mixed workload follows it.
	durable := ri.Durable && !(s.powerLoss && powerLossLoses(ri.Flush))
	m := newMixed(mixedConfig{namesrv: cl.NamesrvAddr(), topic: "SoakMixed", queues: 4, rate: s.cfg.MixedRate,
		adminEvery: s.cfg.AdminEvery, drain: s.cfg.MixedDrain, durable: durable, log: s.cfg.Run.Log, out: s.printf})
	mixedDone := make(chan *MixedReport, 1)
	go func() { mixedDone <- m.run(ctx) }()

	procs := []sampled{{name: "namesrv", proc: cl.Namesrv(), dataDir: filepath.Join(s.dir, "namesrv"), metrics: s.ports.addr("namesrv")}}
	for _, n := range cl.Nodes() {
		procs = append(procs, sampled{name: n.Name, node: n, proc: n.Proc, dataDir: filepath.Join(s.dir, n.Name), metrics: s.ports.addr(n.Name)})
	}
	rec, err := newRecorder(filepath.Join(s.dir, SamplesFile))
	if err != nil {
		s.errs = append(s.errs, err.Error())
	}
	hc := &http.Client{}
	t := time.NewTicker(s.cfg.Every)
	defer t.Stop()
	for {
		now := time.Now()
		var line []string
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		writer := cl.Writer(wctx)
		cancel()
		for _, p := range procs {
			pid := p.proc.Pid()
			if pid == 0 {
				line = append(line, p.name+" down")
				continue
			}
			smp := sampleProc(context.WithoutCancel(ctx), hc, p, pid, now)
			if p.node != nil {
				smp.Role = RoleFollower
				if p.node == writer {
					smp.Role = RoleWriter
				}
			}
			s.samples = append(s.samples, smp)
			rec.add(smp)
			line = append(line, fmt.Sprintf("%s rss=%s g=%d fds=%d maps=%d", p.name, mibs(smp.RSSAnon), smp.Goroutines, smp.FDs, smp.Maps))
		}
		s.printf("sample: %s", strings.Join(line, "; "))
		select {
		case <-ctx.Done():
			if rec != nil {
				if err := rec.Close(); err != nil {
					s.errs = append(s.errs, "samples: "+err.Error())
				}
			}
			s.mixed = <-mixedDone
			s.printf("mixed: %s", s.mixed.Summary())
			return
		case <-t.C:
		}
	}
}
