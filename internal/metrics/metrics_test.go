package metrics

import (
	"context"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/rocketraft/rocketraft/protocol"
)

func startServer(t *testing.T, cs ...prometheus.Collector) *Server {
	t.Helper()
	reg := NewRegistry()
	reg.MustRegister(cs...)
	s := NewServer("127.0.0.1:0", reg, nil)
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func scrape(t *testing.T, s *Server) Families {
	t.Helper()
	f, err := Scrape(context.Background(), s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestServerServesCollectorsAndRuntime(t *testing.T) {
	var n atomic.Int64
	d := Desc("test_things", "Things.", "kind")
	s := startServer(t, NewCollector(func(ch chan<- prometheus.Metric) {
		ch <- Gauge(d, float64(n.Load()), "a")
		ch <- Gauge(d, 2*float64(n.Load()), "b")
	}, d))
	n.Store(3)
	f := scrape(t, s)
	if v, ok := f.Value("test_things", "kind", "b"); !ok || v != 6 {
		t.Fatalf("test_things{kind=b} = %v, %v; want 6", v, ok)
	}
	if got := f.Sum("test_things"); got != 9 {
		t.Fatalf("sum %v, want 9", got)
	}
	if f.Count("go_goroutines") != 1 || f.Count("process_start_time_seconds") != 1 {
		t.Fatal("the Go and process collectors are missing")
	}
	n.Store(5)
	if v, _ := scrape(t, s).Value("test_things", "kind", "a"); v != 5 {
		t.Fatalf("second scrape read %v, want 5: values must be read at scrape time", v)
	}
}

func TestServerPortInUseNamesTheAddress(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	p, _ := strconv.Atoi(port)
	for _, tc := range []struct {
		cfg ExporterConfig
		key string
	}{
		{ExporterConfig{MetricsExporterType: ExporterProm, MetricsPromExporterPort: p}, "metricsPromExporterPort"},
		{ExporterConfig{MetricsExporterType: ExporterDisable, MetricsPort: p}, "metricsPort"},
	} {
		s := NewEndpoint(tc.cfg, "127.0.0.1", NewRegistry(), nil)
		err = s.Start()
		if err == nil || !strings.Contains(err.Error(), ln.Addr().String()) || !strings.Contains(err.Error(), "config key "+tc.key) {
			t.Fatalf("Start on a used port: %v; want an error naming %s and %s", err, ln.Addr(), tc.key)
		}
		if err := s.Close(); err != nil {
			t.Fatalf("Close after a failed Start: %v", err)
		}
	}
}

// RocketMQ 5's keys: off by default, PROM turns the endpoint on, metricsPort is a synonym that turns it on.
func TestExporterConfig(t *testing.T) {
	def := DefaultExporterConfig(DefaultBrokerPort)
	if def.On() || NewEndpoint(def, "127.0.0.1", NewRegistry(), nil) != nil {
		t.Fatal("the default config serves metrics; RocketMQ 5's default is DISABLE")
	}
	if err := def.Validate(map[string]int{"listenPort": DefaultBrokerPort}); err != nil {
		t.Fatalf("a disabled endpoint clashes with listenPort: %v", err)
	}
	prom := def
	prom.MetricsExporterType = "prom"
	if !prom.On() || prom.Addr("0.0.0.0") != "0.0.0.0:5557" {
		t.Fatalf("PROM: on %v at %s, want on at 0.0.0.0:5557", prom.On(), prom.Addr("0.0.0.0"))
	}
	prom.MetricsPromExporterHost = "127.0.0.2"
	if prom.Addr("0.0.0.0") != "127.0.0.2:5557" {
		t.Fatalf("metricsPromExporterHost ignored: %s", prom.Addr("0.0.0.0"))
	}
	legacy := def
	legacy.MetricsPort = 6001
	if !legacy.On() || legacy.Addr("h") != "h:6001" || legacy.PortKey() != "metricsPort" {
		t.Fatalf("metricsPort=6001: on %v at %s (key %s)", legacy.On(), legacy.Addr("h"), legacy.PortKey())
	}
	for _, tc := range []struct {
		cfg  ExporterConfig
		want string
	}{
		{ExporterConfig{MetricsExporterType: "OTLP_GRPC"}, "metricsExporterType: OTLP_GRPC is RocketMQ's but not supported"},
		{ExporterConfig{MetricsExporterType: "YES"}, "metricsExporterType"},
		{ExporterConfig{MetricsExporterType: ExporterProm, MetricsPromExporterPort: 70000}, "metricsPromExporterPort"},
		{ExporterConfig{MetricsExporterType: ExporterDisable, MetricsPort: -1}, "metricsPort"},
		{ExporterConfig{MetricsExporterType: ExporterProm, MetricsPromExporterPort: 10911}, "metricsPromExporterPort: 10911 is also listenPort"},
	} {
		err := tc.cfg.Validate(map[string]int{"listenPort": 10911})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want an error with %q", tc.cfg, err, tc.want)
		}
	}
}

// Close waits for a scrape in flight: no collector runs after it returns.
func TestCloseWaitsForScrapeInFlight(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	var calls atomic.Int64
	d := Desc("test_slow", "Slow.")
	s := startServer(t, NewCollector(func(ch chan<- prometheus.Metric) {
		if calls.Add(1) == 1 {
			close(entered)
			<-release
		}
		ch <- Gauge(d, 1)
	}, d))
	addr := s.Addr()
	scraped := make(chan error, 1)
	go func() {
		_, err := Scrape(context.Background(), addr)
		scraped <- err
	}()
	<-entered
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) while a collector was still running", err)
	case err := <-scraped:
		t.Fatalf("the scrape ended (%v) before its collector did", err)
	default:
	}
	close(release)
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if err := <-scraped; err != nil {
		t.Fatalf("the scrape in flight was cut: %v", err)
	}
	before := calls.Load()
	if _, err := Scrape(context.Background(), addr); err == nil {
		t.Fatal("scrape after Close succeeded")
	}
	if calls.Load() != before {
		t.Fatal("a collector ran after Close")
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := s.Start(); err == nil {
		t.Fatal("Start after Close succeeded")
	}
}

func TestHistogramIsCumulativeInSeconds(t *testing.T) {
	d := Desc("test_latency_seconds", "Latency.")
	m := Histogram(d, []time.Duration{time.Millisecond, 10 * time.Millisecond}, []int64{2, 3, 1}, 40*time.Millisecond)
	var out dto.Metric
	if err := m.Write(&out); err != nil {
		t.Fatal(err)
	}
	h := out.GetHistogram()
	if h.GetSampleCount() != 6 || h.GetSampleSum() != 0.04 {
		t.Fatalf("count %d sum %v, want 6 and 0.04", h.GetSampleCount(), h.GetSampleSum())
	}
	want := map[float64]uint64{0.001: 2, 0.01: 5}
	for _, b := range h.GetBucket() {
		if want[b.GetUpperBound()] != b.GetCumulativeCount() {
			t.Errorf("bucket le=%v holds %d, want %d", b.GetUpperBound(), b.GetCumulativeCount(), want[b.GetUpperBound()])
		}
	}
}

type fakeRaft struct {
	mu sync.Mutex
	st protocol.RaftStatus
}

func (f *fakeRaft) RaftStatus() protocol.RaftStatus {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.st
}

func (f *fakeRaft) set(st protocol.RaftStatus) {
	f.mu.Lock()
	f.st = st
	f.mu.Unlock()
}

func TestRaftSeriesFollowTheSource(t *testing.T) {
	src := &fakeRaft{st: protocol.RaftStatus{Role: "Follower", Term: 2, CommitIndex: 10, AppliedIndex: 9}}
	s := startServer(t, NewRaftCollector(src))
	f := scrape(t, s)
	for _, r := range RaftRoles {
		want := Bool(r == "follower")
		if v, ok := f.Value("rocketmq_raft_role", "role", r); !ok || v != want {
			t.Errorf("rocketmq_raft_role{role=%s} = %v, %v; want %v", r, v, ok, want)
		}
	}
	src.set(protocol.RaftStatus{Role: "Leader", Term: 3, CommitIndex: 25, AppliedIndex: 24, Failovers: 1})
	f = scrape(t, s)
	for name, want := range map[string]float64{"rocketmq_raft_term": 3, "rocketmq_raft_commit_index": 25,
		"rocketmq_raft_applied_index": 24, "rocketmq_raft_failovers_total": 1} {
		if v, ok := f.Value(name); !ok || v != want {
			t.Errorf("%s = %v, %v; want %v", name, v, ok, want)
		}
	}
	if v, _ := f.Value("rocketmq_raft_role", "role", "leader"); v != 1 {
		t.Error("the new leader is not shown as leader")
	}
	if f["rocketmq_raft_failovers_total"].GetType() != dto.MetricType_COUNTER {
		t.Error("rocketmq_raft_failovers_total is not a counter")
	}
}

func TestPerKeyCountsConcurrently(t *testing.T) {
	var p PerKey[string, atomic.Int64]
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := range 1000 {
				p.Get([]string{"a", "b"}[(w+i)%2]).Add(1)
			}
		})
	}
	wg.Wait()
	got := map[string]int64{}
	p.Range(func(k string, v *atomic.Int64) bool { got[k] = v.Load(); return true })
	if got["a"] != 4000 || got["b"] != 4000 || len(got) != 2 {
		t.Fatalf("counted %v, want a and b at 4000", got)
	}
	p.Delete("a")
	if p.Get("a").Load() != 0 {
		t.Fatal("a Get after Delete does not start from zero")
	}
}
