package broker

import (
	"context"
	"log/slog"
	"net"
	"net/netip"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rocketraft/rocketraft/broker/internal/stats"
	"github.com/rocketraft/rocketraft/ha"
	"github.com/rocketraft/rocketraft/internal/metrics"
	"github.com/rocketraft/rocketraft/internal/testutil"
	"github.com/rocketraft/rocketraft/message"
	"github.com/rocketraft/rocketraft/protocol"
	"github.com/rocketraft/rocketraft/store"
)

// metricsTestConfig is a broker on loopback with no name server, small files and a metrics port.
func metricsTestConfig(t *testing.T) Config {
	cfg := DefaultConfig()
	cfg.BrokerName = "broker-m"
	cfg.BrokerIP1 = "127.0.0.1"
	cfg.ListenPort = testutil.FreePort(t)
	cfg.Replication.HAListenPort = testutil.FreePort(t)
	cfg.MetricsPort = testutil.FreePort(t)
	cfg.StorePathRootDir = filepath.Join(t.TempDir(), "store")
	cfg.MappedFileSizeCommitLog = 4 << 20
	cfg.MaxMessageSize = 64 << 10
	cfg.MappedFileSizeConsumeQueue = 1000 * 20
	return cfg
}

func startMetricsBroker(t *testing.T, cfg Config) *Broker {
	t.Helper()
	b, err := New(cfg, Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(); err != nil {
		_ = b.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

func scrapeBroker(t *testing.T, b *Broker) metrics.Families {
	t.Helper()
	f, err := metrics.Scrape(context.Background(), b.metrics.server.Addr())
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// gather reads a registry the way an endpoint would.
func gather(t *testing.T, reg *prometheus.Registry) metrics.Families {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	f := metrics.Families{}
	for _, mf := range mfs {
		f[mf.GetName()] = mf
	}
	return f
}

func putN(t *testing.T, st *store.Store, topic string, queue int32, n int) {
	t.Helper()
	for i := range n {
		m := &message.Message{Topic: topic, QueueID: queue, Body: []byte("m" + strconv.Itoa(i)),
			BornTimestamp: time.Now().UnixMilli(), BornHost: netip.MustParseAddrPort("127.0.0.1:5000")}
		if _, err := st.PutMessage(context.Background(), m); err != nil {
			t.Fatal(err)
		}
	}
}

// Per-queue lag series stop at metricsQueueLagSeriesLimit (in group, topic, queue order) and say how many
// were left out; the per group and topic sums stay complete.
func TestConsumerLagSeriesAreBounded(t *testing.T) {
	cfg := metricsTestConfig(t)
	cfg.MetricsQueueLagSeriesLimit = 3
	b := startMetricsBroker(t, cfg)
	const topic = "LagTopic"
	if _, err := b.topics.createIfAbsent(topic, 4, protocol.PermRead|protocol.PermWrite, 0); err != nil {
		t.Fatal(err)
	}
	for q := range int32(4) {
		putN(t, b.store, topic, q, int(q)+1) // queue q holds q+1 messages
	}
	testutil.WaitFor(t, 20*time.Second, "dispatch of queue 3", func() bool { return b.store.MaxOffsetInQueue(topic, 3) == 4 })
	for q := range int32(4) {
		b.offsets.commit("G1", topic, q, 0)
	}
	b.offsets.commit("G2", topic, 0, 1)
	b.offsets.commit("G2", topic, 1, 1)

	f := scrapeBroker(t, b)
	if v, _ := f.Value("rocketmq_consumer_lag_messages", "consumer_group", "G1", "topic", topic); v != 10 {
		t.Errorf("G1 lag %v, want 1+2+3+4", v)
	}
	if v, _ := f.Value("rocketmq_consumer_lag_messages", "consumer_group", "G2", "topic", topic); v != 1 {
		t.Errorf("G2 lag %v, want 0+1", v)
	}
	if n := f.Count("rocketmq_consumer_queue_lag_messages"); n != 3 {
		t.Errorf("%d per-queue series, want the limit 3", n)
	}
	for q, want := range []float64{1, 2, 3} {
		if v, ok := f.Value("rocketmq_consumer_queue_lag_messages", "consumer_group", "G1", "queue_id", strconv.Itoa(q)); !ok || v != want {
			t.Errorf("G1 queue %d lag %v, %v; want %v", q, v, ok, want)
		}
	}
	if v, _ := f.Value("rocketmq_consumer_queue_lag_series_omitted"); v != 3 {
		t.Errorf("omitted %v, want 3", v)
	}
	// The group consumes: its lag falls.
	b.offsets.commit("G1", topic, 3, 4)
	if v, _ := scrapeBroker(t, b).Value("rocketmq_consumer_lag_messages", "consumer_group", "G1", "topic", topic); v != 6 {
		t.Errorf("G1 lag after committing queue 3: %v, want 6", v)
	}
}

// The store's numbers reach the endpoint: puts show in the put latency histogram, flushes in the flush
// histogram, and the per-topic counters of a deleted topic disappear.
func TestStoreSeriesAndTopicCounters(t *testing.T) {
	b := startMetricsBroker(t, metricsTestConfig(t))
	const topic = "CountTopic"
	if _, err := b.topics.createIfAbsent(topic, 1, protocol.PermRead|protocol.PermWrite, 0); err != nil {
		t.Fatal(err)
	}
	putN(t, b.store, topic, 0, 5)
	b.stats.RecordPut(topic, stats.Normal, 5, 500)
	b.stats.RecordGet(topic, "G", 0, 2, 200, 2)
	if err := b.store.Flush(); err != nil {
		t.Fatal(err)
	}
	f := scrapeBroker(t, b)
	for _, c := range []struct {
		name string
		want float64
	}{
		{"rocketmq_messages_in_total", 5}, {"rocketmq_throughput_in_total", 500},
		{"rocketmq_messages_out_total", 2}, {"rocketmq_throughput_out_total", 200},
	} {
		if v, ok := f.Value(c.name, "topic", topic); !ok || v != c.want {
			t.Errorf("%s{topic=%s} = %v, %v; want %v", c.name, topic, v, ok, c.want)
		}
	}
	if v, _ := f.Value("rocketmq_storage_put_latency_seconds"); v < 5 {
		t.Errorf("put latency histogram counts %v puts, want at least 5", v)
	}
	if v, _ := f.Value("rocketmq_storage_flush_latency_seconds"); v < 1 {
		t.Errorf("flush latency histogram counts %v flushes after a flush", v)
	}
	if v, ok := f.Value("rocketmq_storage_writable"); !ok || v != 1 {
		t.Errorf("rocketmq_storage_writable %v, %v", v, ok)
	}
	if v, ok := f.Value("rocketmq_broker_info", "broker", "broker-m", "role", RoleAsyncMaster, "cluster", "DefaultCluster",
		"node_type", "broker", "node_id", "broker-m"); !ok || v != 1 {
		t.Errorf("rocketmq_broker_info %v, %v", v, ok)
	}
	for _, name := range []string{"rocketmq_storage_flush_behind_bytes", "rocketmq_storage_dispatch_behind_bytes",
		"rocketmq_storage_disk_used_ratio", "rocketmq_pull_requests_held", "go_goroutines",
		"rocketmq_storage_cold_read_bytes_total", "rocketmq_storage_cold_read_no_buffer_total",
		"rocketmq_storage_cold_read_failures_total"} {
		if f.Count(name) != 1 {
			t.Errorf("%s missing", name)
		}
	}
	if f.Count("rocketmq_raft_role") != 0 {
		t.Error("Raft series without the Raft mode")
	}
	// Every master runs the HA service (as RocketMQ): no slave yet.
	if v, ok := f.Value("rocketmq_ha_slave_connections"); !ok || v != 0 || f.Count("rocketmq_ha_slave_lag_bytes") != 0 {
		t.Errorf("rocketmq_ha_slave_connections %v, %v and %d lag series on a master without slaves", v, ok,
			f.Count("rocketmq_ha_slave_lag_bytes"))
	}
	if _, err := b.topics.delete(topic); err != nil {
		t.Fatal(err)
	}
	if n := scrapeBroker(t, b).Count("rocketmq_messages_in_total", "topic", topic); n != 0 {
		t.Errorf("a deleted topic still has %d series", n)
	}
}

// The endpoint starts with the broker and stops with it; a port already taken stops Start naming the key.
func TestMetricsEndpointLifecycle(t *testing.T) {
	cfg := metricsTestConfig(t)
	b := startMetricsBroker(t, cfg)
	scrapeBroker(t, b)
	other := metricsTestConfig(t)
	other.MetricsPort = cfg.MetricsPort
	b2, err := New(other, Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	err = b2.Start()
	if err == nil || !strings.Contains(err.Error(), "config key metricsPort") {
		t.Errorf("a second broker on the same metricsPort: %v; want an error naming metricsPort", err)
	}
	_ = b2.Close()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := metrics.Scrape(context.Background(), net.JoinHostPort("127.0.0.1", strconv.Itoa(cfg.MetricsPort))); err == nil {
		t.Fatal("the endpoint still answers after Close")
	}

	cfg = metricsTestConfig(t)
	cfg.MetricsPort = cfg.ListenPort
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "config key metricsPort") {
		t.Errorf("metricsPort = listenPort: %v", err)
	}
	cfg.MetricsPort, cfg.MetricsQueueLagSeriesLimit = 70000, -1
	err = cfg.Validate()
	for _, key := range []string{"metricsPort", "metricsQueueLagSeriesLimit"} {
		if err == nil || !strings.Contains(err.Error(), "config key "+key) {
			t.Errorf("%v does not name %s", err, key)
		}
	}
}

type fakeSlaves struct {
	mu    sync.Mutex
	conns []ha.ConnectionInfo
}

func (f *fakeSlaves) Connections() []ha.ConnectionInfo {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]ha.ConnectionInfo(nil), f.conns...)
}

func TestHASlaveLagSeries(t *testing.T) {
	reg := prometheus.NewRegistry()
	var end int64 = 1000
	src := &fakeSlaves{conns: []ha.ConnectionInfo{
		{RemoteAddr: "10.0.0.2:40001", RequestOffset: 0, AckOffset: 400},
		{RemoteAddr: "10.0.0.3:40002", RequestOffset: -1, AckOffset: -1}, // not reported yet
	}}
	reg.MustRegister(metrics.NewCollector(func(ch chan<- prometheus.Metric) { collectSlaves(ch, src, end) },
		haConnectionsDesc, haSlaveLagDesc))
	f := gather(t, reg)
	if v, _ := f.Value("rocketmq_ha_slave_connections"); v != 2 {
		t.Errorf("connections %v, want 2", v)
	}
	if v, ok := f.Value("rocketmq_ha_slave_lag_bytes", "slave", "10.0.0.2:40001"); !ok || v != 600 {
		t.Errorf("lag %v, %v; want 1000-400", v, ok)
	}
	if f.Count("rocketmq_ha_slave_lag_bytes") != 1 {
		t.Error("a slave that never reported has a lag series")
	}
	src.mu.Lock()
	src.conns[0].AckOffset = 1000
	src.mu.Unlock()
	if v, _ := gather(t, reg).Value("rocketmq_ha_slave_lag_bytes", "slave", "10.0.0.2:40001"); v != 0 {
		t.Errorf("lag %v after the slave caught up", v)
	}
}

type fixedRaft struct{ st protocol.RaftStatus }

func (f fixedRaft) RaftStatus() protocol.RaftStatus { return f.st }

func TestRaftSeriesOnlyWhenRegistered(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := &brokerMetrics{reg: reg, rmq: prometheus.WrapRegistererWith(prometheus.Labels{"cluster": "C"}, reg)}
	if gather(t, m.reg).Count("rocketmq_raft_term") != 0 {
		t.Fatal("Raft series before the mode registered them")
	}
	m.registerRaft(fixedRaft{protocol.RaftStatus{Role: "Candidate", Term: 7, CommitIndex: 3, AppliedIndex: 3, Failovers: 2}})
	f := gather(t, m.reg)
	if v, _ := f.Value("rocketmq_raft_term"); v != 7 {
		t.Errorf("term %v", v)
	}
	if v, _ := f.Value("rocketmq_raft_role", "role", "candidate", "cluster", "C"); v != 1 {
		t.Errorf("role candidate %v", v)
	}
	(&brokerMetrics{}).registerRaft(fixedRaft{}) // metricsPort=0: nothing to register with, no panic
}

// A SYNC_FLUSH broker reports the zeros written to keep its CommitLog warm (its first file,
// smaller than the warm distance, is warmed in full at start) and the flushes that had to
// warm first.
func TestWarmSeriesWithSyncFlush(t *testing.T) {
	cfg := metricsTestConfig(t)
	cfg.FlushDiskType = store.SyncFlush
	b := startMetricsBroker(t, cfg)
	putN(t, b.store, "WarmTopic", 0, 5)
	f := scrapeBroker(t, b)
	if v, _ := f.Value("rocketmq_storage_warm_bytes_total"); v < float64(cfg.MappedFileSizeCommitLog) {
		t.Errorf("rocketmq_storage_warm_bytes_total %v, want at least the first file, %d", v, cfg.MappedFileSizeCommitLog)
	}
	if f.Count("rocketmq_storage_warm_stalls_total") != 1 {
		t.Error("rocketmq_storage_warm_stalls_total missing")
	}
}
