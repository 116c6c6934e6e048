package namesrv

import (
	"context"
	"net"
	"strconv"
	"strings"
	"testing"

	"github.com/rocketraft/rocketraft/internal/metrics"
	"github.com/rocketraft/rocketraft/internal/testutil"
	"github.com/rocketraft/rocketraft/remoting"
)

func scrapeNamesrv(t *testing.T, port int) metrics.Families {
	t.Helper()
	f, err := metrics.Scrape(context.Background(), net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// The endpoint shows the brokers and topics of the routing tables and counts requests by code.
func TestMetricsEndpoint(t *testing.T) {
	port := testutil.FreePort(t)
	f := newFixture(t, func(c *Config) { c.MetricsPort = port })
	before := scrapeNamesrv(t, port)
	if v, ok := before.Value("rocketmq_namesrv_topics"); !ok || v != 0 {
		t.Fatalf("topics before any registration: %v, %v", v, ok)
	}
	f.register(f.cl, broker{cluster: "c1", name: "broker-a", addr: "10.0.0.5:10911", topics: topicsOf("T1", "T2"), version: 1})
	f.register(f.cl, broker{cluster: "c1", name: "broker-a", addr: "10.0.0.6:10911", id: 1})
	f.register(f.cl, broker{cluster: "c2", name: "broker-b", addr: "10.0.0.7:10911", topics: topicsOf("T3"), version: 1})
	for range 3 {
		f.call(remoting.GetRouteInfoByTopic, map[string]string{"topic": "T1"}, nil)
	}
	got := scrapeNamesrv(t, port)
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"rocketmq_namesrv_brokers", []string{"cluster", "c1", "role", "master"}, 1},
		{"rocketmq_namesrv_brokers", []string{"cluster", "c1", "role", "slave"}, 1},
		{"rocketmq_namesrv_brokers", []string{"cluster", "c2", "role", "master"}, 1},
		{"rocketmq_namesrv_topics", nil, 3},
		{"rocketmq_namesrv_requests_total", []string{"request", "REGISTER_BROKER", "code", "103"}, 3},
		{"rocketmq_namesrv_requests_total", []string{"request", "GET_ROUTEINFO_BY_TOPIC"}, 3},
		{"rocketmq_namesrv_route_write_lock_seconds", nil, 4}, // raftMasterHoldMillis set at start, three registrations
		{"rocketmq_namesrv_route_rebuilds_total", nil, 1},     // T1 encoded once, then answered from the cache
	} {
		if v, ok := got.Value(c.name, c.labels...); !ok || v != c.want {
			t.Errorf("%s%v = %v, %v; want %v", c.name, c.labels, v, ok, c.want)
		}
	}
	if err := f.ns.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := metrics.Scrape(context.Background(), net.JoinHostPort("127.0.0.1", strconv.Itoa(port))); err == nil {
		t.Fatal("the endpoint answers after Close")
	}
}

func TestMetricsPortTakenStopsStart(t *testing.T) {
	port := testutil.FreePort(t)
	newFixture(t, func(c *Config) { c.MetricsPort = port })
	cfg := testConfig(t)
	cfg.MetricsPort = port
	s, err := New(cfg, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Start(); err == nil || !strings.Contains(err.Error(), "config key metricsPort") {
		t.Fatalf("Start with a taken metricsPort: %v; want an error naming metricsPort", err)
	}
	if s.Addr() != "" {
		t.Fatal("the remoting port listens although Start failed")
	}
	cfg.MetricsPort = 70000
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "config key metricsPort") {
		t.Fatalf("metricsPort 70000: %v", err)
	}
}
