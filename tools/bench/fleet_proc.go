package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/rocketraft/rocketraft/internal/freeport"
	"github.com/rocketraft/rocketraft/internal/metrics"
)

// pinned is the command bin args, under taskset -c cpu when cpu is set.
func pinned(cpu, bin string, args ...string) *exec.Cmd {
	if cpu == "" {
		return exec.Command(bin, args...)
	}
	return exec.Command("taskset", append([]string{"-c", cpu, bin}, args...)...)
}

// nsProc is a name server process the simulator started: on 127.0.0.1, with metrics on, its KV file and
// logs in a folder of its own that a restart keeps.
type nsProc struct {
	cfg     FleetConfig
	dir     string
	port    int
	metrics int
	cmd     *exec.Cmd
	exited  chan struct{}
	log     *slog.Logger
}

func startNamesrv(cfg FleetConfig, dir string, log *slog.Logger) (*nsProc, error) {
	port, err := freeport.One()
	if err != nil {
		return nil, err
	}
	mport, err := freeport.One()
	if err != nil {
		return nil, err
	}
	p := &nsProc{cfg: cfg, dir: dir, port: port, metrics: mport, log: log}
	return p, p.start()
}

func (p *nsProc) addr() string        { return "127.0.0.1:" + strconv.Itoa(p.port) }
func (p *nsProc) metricsAddr() string { return "127.0.0.1:" + strconv.Itoa(p.metrics) }

func (p *nsProc) start() error {
	args := []string{"--bindAddress=127.0.0.1", "--listenPort=" + strconv.Itoa(p.port),
		"--kvConfigPath=" + filepath.Join(p.dir, "kvConfig.json"), "--logDir=" + filepath.Join(p.dir, "logs"),
		"--metricsExporterType=PROM", "--metricsPromExporterHost=127.0.0.1",
		"--metricsPromExporterPort=" + strconv.Itoa(p.metrics)}
	if p.cfg.CPUProfile != "" {
		args = append(args, "--cpuprofile="+p.cfg.CPUProfile)
	}
	args = append(args, p.cfg.StartArgs...)
	p.cmd = pinned(p.cfg.CPU, p.cfg.Start, args...)
	p.cmd.Stdout, p.cmd.Stderr = io.Discard, os.Stderr
	if err := p.cmd.Start(); err != nil {
		return fmt.Errorf("start the name server %s: %w", p.cfg.Start, err)
	}
	p.exited = make(chan struct{})
	go func() {
		_ = p.cmd.Wait()
		close(p.exited)
	}()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-p.exited:
			return fmt.Errorf("the name server %s exited at start-up (%s): its log is in %s", p.cfg.Start,
				p.cmd.ProcessState, p.dir)
		default:
		}
		if c, err := net.DialTimeout("tcp", p.addr(), time.Second); err == nil {
			_ = c.Close()
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	p.kill()
	return fmt.Errorf("the name server %s did not listen on %s within 20 s", p.cfg.Start, p.addr())
}

// kill ends the process with SIGKILL and waits for it.
func (p *nsProc) kill() {
	_ = p.cmd.Process.Kill()
	<-p.exited
}

// stop ends the process with SIGTERM (it writes its CPU profile) and waits for it, at most 20 s.
func (p *nsProc) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(20 * time.Second):
		p.log.Warn("the name server did not stop within 20 s of SIGTERM: killed")
		p.kill()
	}
}

// startStandIn starts the stand-in (self namesrv-standin, pinned as the name server would be) and
// returns its address and a function that stops it.
func startStandIn(cfg FleetConfig, self string) (string, func(), error) {
	cmd := pinned(cfg.CPU, self, append([]string{StandInCommand}, StandInArgs(cfg)...)...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return "", nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return "", nil, err
	}
	if err := cmd.Start(); err != nil {
		return "", nil, fmt.Errorf("start the stand-in: %w", err)
	}
	stop := func() {
		_ = stdin.Close() // it ends on its input's end
		_ = cmd.Wait()
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		stop()
		return "", nil, fmt.Errorf("the stand-in printed no address: %w", err)
	}
	return strings.TrimSpace(line), stop, nil
}

// StandInCommand is the hidden mqbench command of the stand-in.
const StandInCommand = "namesrv-standin"

// nsSample is what one scrape of a name server's metrics says.
type nsSample struct {
	at      time.Time
	cpu     float64 // process CPU seconds
	rss     float64 // resident bytes
	mallocs float64 // heap objects allocated since start
	lock    *dto.Histogram
	ok      bool
}

// sampleNS scrapes a name server's metrics endpoint ("" or a failed scrape: not ok).
func sampleNS(ctx context.Context, addr string) nsSample {
	s := nsSample{at: time.Now()}
	if addr == "" {
		return s
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	fams, err := metrics.Scrape(ctx, addr)
	if err != nil {
		return s
	}
	s.cpu, _ = fams.Value("process_cpu_seconds_total")
	s.rss, _ = fams.Value("process_resident_memory_bytes")
	s.mallocs, _ = fams.Value("go_memstats_mallocs_total")
	if f := fams[lockHoldMetric]; f != nil && len(f.GetMetric()) == 1 {
		s.lock = f.GetMetric()[0].GetHistogram()
	}
	s.ok = true
	return s
}

// lockHoldMetric is the name server's histogram of how long it holds its routing tables' write lock.
const lockHoldMetric = "rocketmq_namesrv_route_write_lock_seconds"

// nsFigures are a name server's figures over a window: its CPU share of one core, its resident memory at
// the end, its allocations per answered query, and how long it held its write lock.
type nsFigures struct {
	Addr          string  `json:"addr"`
	CPU           float64 `json:"cpu_core_share"`
	RSSMB         float64 `json:"rss_mb"`
	AllocsPerQ    float64 `json:"allocs_per_query,omitempty"`
	LockP99Micros float64 `json:"write_lock_p99_us,omitempty"`
	LockMaxMicros float64 `json:"write_lock_max_us,omitempty"` // the upper bound of the highest bucket used (-1: above the highest)
	LockHolds     uint64  `json:"write_lock_holds,omitempty"`
}

func figures(addr string, a, b nsSample, answered int64) nsFigures {
	f := nsFigures{Addr: addr}
	if !a.ok || !b.ok {
		return f
	}
	if secs := b.at.Sub(a.at).Seconds(); secs > 0 {
		f.CPU = (b.cpu - a.cpu) / secs
	}
	f.RSSMB = b.rss / (1 << 20)
	if answered > 0 {
		f.AllocsPerQ = (b.mallocs - a.mallocs) / float64(answered)
	}
	if a.lock != nil && b.lock != nil {
		f.LockHolds, f.LockP99Micros, f.LockMaxMicros = histDelta(a.lock, b.lock, 0.99)
	}
	return f
}

// histDelta is the count of a Prometheus histogram between two scrapes, the upper bound of the bucket
// holding quantile q of them, and of the highest bucket that grew, in microseconds.
func histDelta(a, b *dto.Histogram, q float64) (n uint64, quantile, maxBound float64) {
	n = b.GetSampleCount() - a.GetSampleCount()
	if n == 0 {
		return 0, 0, 0
	}
	prev := map[float64]uint64{}
	for _, bk := range a.GetBucket() {
		prev[bk.GetUpperBound()] = bk.GetCumulativeCount()
	}
	want := uint64(math.Ceil(q * float64(n)))
	quantile = math.Inf(1)
	var below uint64
	bounds := []float64{}
	for _, bk := range b.GetBucket() {
		c := bk.GetCumulativeCount() - prev[bk.GetUpperBound()]
		if c >= want && math.IsInf(quantile, 1) {
			quantile = bk.GetUpperBound() * 1e6
		}
		if c > below {
			bounds = append(bounds, bk.GetUpperBound()*1e6)
		}
		below = c
	}
	if math.IsInf(quantile, 1) {
		quantile = -1 // above the highest bucket
	}
	if n > below {
		maxBound = -1
	} else if len(bounds) > 0 {
		maxBound = slices.Max(bounds)
	}
	return n, quantile, maxBound
}
