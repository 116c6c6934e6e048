package broker

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rocketraft/rocketraft/internal/metrics"
)

// brokerMetrics is the broker's Prometheus endpoint (metricsExporterType=PROM, metricsPromExporterPort): a registry whose collectors read the
// broker's state at scrape time (this file, metrics_lag.go, metrics_ha.go) and the HTTP server. The HA series
// come with classic replication (b.ha, built in New); the Raft mode adds its own with registerRaft. With
// the endpoint off (DISABLE, the default) it is empty and every method does nothing; only brokerStats' per-topic counters still run.
type brokerMetrics struct {
	reg    *prometheus.Registry // nil when the endpoint is off
	server *metrics.Server
}

// newBrokerMetrics prepares the endpoint on the broker's listen host (all interfaces unless brokerIP1 is a
// loopback address, or metricsPromExporterHost) and port. Nothing listens until start.
func newBrokerMetrics(b *Broker) *brokerMetrics {
	if !b.cfg.ExporterConfig.On() {
		return &brokerMetrics{}
	}
	reg := metrics.NewRegistry()
	reg.MustRegister(b.metricsCollector())
	return &brokerMetrics{reg: reg, server: metrics.NewEndpoint(b.cfg.ExporterConfig, listenHost(b.cfg.BrokerIP1), reg, b.log.With("component", "metrics"))}
}

// start binds the port; the error of a port already taken names its key.
func (m *brokerMetrics) start() error { return m.server.Start() }

// close stops the endpoint and waits for the scrapes in flight: after it no collector reads the store.
func (m *brokerMetrics) close() error { return m.server.Close() }

// registerRaft adds the rocketmq_raft_* series. The Raft mode calls it once its node exists; only that
// mode does, so the series are absent otherwise.
func (m *brokerMetrics) registerRaft(src metrics.RaftSource) {
	if m.reg != nil {
		m.reg.MustRegister(metrics.NewRaftCollector(src))
	}
}

var (
	brokerInfoDesc = metrics.Desc("rocketmq_broker_info",
		"The broker's identity; always 1.", "cluster", "broker", "broker_id", "role")
	messagesInDesc = metrics.Desc("rocketmq_messages_in_total",
		"Messages stored for producers (SEND_MESSAGE, batches counted per message), by topic.", "topic")
	messagesOutDesc = metrics.Desc("rocketmq_messages_out_total",
		"Messages handed to consumers in pull answers, by topic.", "topic")
	bytesInDesc = metrics.Desc("rocketmq_throughput_in_bytes_total",
		"Bytes of the stored records of rocketmq_messages_in_total, by topic.", "topic")
	bytesOutDesc = metrics.Desc("rocketmq_throughput_out_bytes_total",
		"Bytes of the stored records of rocketmq_messages_out_total, by topic.", "topic")
	putLatencyDesc = metrics.Desc("rocketmq_storage_put_latency_seconds",
		"Time of each CommitLog append (lock, encode, copy), without the flush or replication wait.")
	flushLatencyDesc = metrics.Desc("rocketmq_storage_flush_latency_seconds",
		"Time of each CommitLog flush that wrote something.")
	flushBehindDesc = metrics.Desc("rocketmq_storage_flush_behind_bytes",
		"CommitLog bytes written but not yet flushed to disk.")
	commitBehindDesc = metrics.Desc("rocketmq_storage_commit_behind_bytes",
		"CommitLog bytes in the transient store pool not yet committed to the file (0 without the pool).")
	dispatchBehindDesc = metrics.Desc("rocketmq_storage_dispatch_behind_bytes",
		"CommitLog bytes not yet dispatched to ConsumeQueues and the index.")
	diskRatioDesc = metrics.Desc("rocketmq_storage_disk_used_ratio",
		"Used fraction (0..1) of the disk holding the CommitLog, as last measured.")
	writableDesc = metrics.Desc("rocketmq_storage_writable",
		"1 while the store accepts writes, 0 after a write or flush failure (or a full disk).")
	putFailuresDesc   = metrics.Desc("rocketmq_storage_put_failures_total", "Puts the store refused.")
	flushFailuresDesc = metrics.Desc("rocketmq_storage_flush_failures_total",
		"Failed CommitLog flushes (each one turns the store read-only).")
	pullsHeldDesc = metrics.Desc("rocketmq_pull_requests_held",
		"Long-polling pull requests parked until a message arrives or they time out.")
)

// metricsCollector reads the broker's numbers at scrape time.
func (b *Broker) metricsCollector() prometheus.Collector {
	return metrics.NewCollector(func(ch chan<- prometheus.Metric) {
		ch <- metrics.Gauge(brokerInfoDesc, 1, b.cfg.BrokerClusterName, b.cfg.BrokerName,
			strconv.FormatInt(b.brokerID(), 10), b.roleName())
		b.collectTopics(ch)
		st := b.store.Stats()
		ch <- metrics.Histogram(putLatencyDesc, st.PutLatency.Bounds, st.PutLatency.Counts, st.PutLatency.Sum)
		ch <- metrics.Histogram(flushLatencyDesc, st.FlushLatency.Bounds, st.FlushLatency.Counts, st.FlushLatency.Sum)
		ch <- metrics.Gauge(flushBehindDesc, float64(st.FlushLagBytes))
		ch <- metrics.Gauge(commitBehindDesc, float64(st.CommitLagBytes))
		ch <- metrics.Gauge(dispatchBehindDesc, float64(st.DispatchBehindBytes))
		ch <- metrics.Gauge(diskRatioDesc, st.DiskUsedRatio)
		ch <- metrics.Gauge(writableDesc, metrics.Bool(st.Writable && !st.DiskFull))
		ch <- metrics.Counter(putFailuresDesc, float64(st.PutFailures))
		ch <- metrics.Counter(flushFailuresDesc, float64(st.FlushFailures))
		ch <- metrics.Gauge(pullsHeldDesc, float64(b.pullHold.count()))
		b.collectConsumerLag(ch)
		b.collectHA(ch)
	}, brokerInfoDesc, messagesInDesc, messagesOutDesc, bytesInDesc, bytesOutDesc, putLatencyDesc, flushLatencyDesc,
		flushBehindDesc, commitBehindDesc, dispatchBehindDesc, diskRatioDesc, writableDesc, putFailuresDesc,
		flushFailuresDesc, pullsHeldDesc, consumerLagDesc, queueLagDesc, queueLagOmittedDesc,
		haConnectionsDesc, haSlaveLagDesc, haMasterConnectedDesc)
}

// collectTopics sends the per-topic counters, and drops those of topics this broker no longer has (their
// series end; a topic created again starts from zero, which Prometheus reads as a counter reset).
func (b *Broker) collectTopics(ch chan<- prometheus.Metric) {
	b.stats.topics.Range(func(topic string, t *topicStats) bool {
		if b.topics.get(topic) == nil {
			b.stats.topics.Delete(topic)
			return true
		}
		ch <- metrics.Counter(messagesInDesc, float64(t.inMsgs.Load()), topic)
		ch <- metrics.Counter(messagesOutDesc, float64(t.outMsgs.Load()), topic)
		ch <- metrics.Counter(bytesInDesc, float64(t.inBytes.Load()), topic)
		ch <- metrics.Counter(bytesOutDesc, float64(t.outBytes.Load()), topic)
		return true
	})
}
