package broker

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rocketraft/rocketraft/broker/internal/stats"
	"github.com/rocketraft/rocketraft/internal/metrics"
	"github.com/rocketraft/rocketraft/remoting"
)

// brokerMetrics is the broker's Prometheus endpoint (metricsExporterType=PROM, metricsPromExporterPort): a registry whose collectors read the
// broker's state at scrape time (this file, metrics_lag.go, metrics_ha.go) and the HTTP server. The HA series
// come with classic replication (its roles collect them, role_classic.go); the Raft mode adds its own with registerRaft. With
// the endpoint off (DISABLE, the default) it is empty and every method does nothing; only the stats engine's per-topic counters still run.
type brokerMetrics struct {
	reg *prometheus.Registry // nil when the endpoint is off
	// rmq registers into reg with the labels RocketMQ 5 puts on every broker series (cluster, node_type,
	// node_id); nil when the endpoint is off.
	rmq    prometheus.Registerer
	server *metrics.Server
}

// newBrokerMetrics prepares the endpoint on the broker's listen host (all interfaces unless brokerIP1 is a
// loopback address, or metricsPromExporterHost) and port. Nothing listens until start.
func newBrokerMetrics(b *Broker) *brokerMetrics {
	if !b.cfg.ExporterConfig.On() {
		return &brokerMetrics{}
	}
	reg := metrics.NewRegistry()
	// RocketMQ 5 puts cluster, node_type and node_id on every series of a broker (BrokerMetricsManager's
	// labelMap); so do we, on ours as well.
	rmq := prometheus.WrapRegistererWith(prometheus.Labels{labelCluster: b.cfg.BrokerClusterName,
		labelNodeType: nodeTypeBroker, labelNodeID: b.cfg.BrokerName}, reg)
	rmq.MustRegister(b.metricsCollector(), b.rmq5Collector(), metrics.NewCollector(func(ch chan<- prometheus.Metric) {
		b.pop.collect(ch, b.popPoll.heldCount())
	}, popDescs...))
	b.server.AddReplyObserver("rpc_latency", b.observeReply)
	return &brokerMetrics{reg: reg, rmq: rmq,
		server: metrics.NewEndpoint(b.cfg.ExporterConfig, listenHost(b.cfg.BrokerIP1), reg, b.log.With("component", "metrics"))}
}

// start binds the port; the error of a port already taken names its key.
func (m *brokerMetrics) start() error { return m.server.Start() }

// close stops the endpoint and waits for the scrapes in flight: after it no collector reads the store.
func (m *brokerMetrics) close() error { return m.server.Close() }

// registerRaft adds the rocketmq_raft_* series, with the broker's cluster, node_type and node_id labels. The
// Raft mode calls it once its node exists; only that mode does, so the series are absent otherwise.
func (m *brokerMetrics) registerRaft(src metrics.RaftSource) {
	if m.rmq != nil {
		m.rmq.MustRegister(metrics.NewRaftCollector(src))
	}
}

var (
	brokerInfoDesc = metrics.Desc("rocketmq_broker_info",
		"The broker's identity (its cluster in the cluster label); always 1.", "broker", "broker_id", "role")
	putLatencyDesc = metrics.Desc("rocketmq_storage_put_latency_seconds",
		"Time of each CommitLog append (lock, encode, copy), without the flush or replication wait.")
	flushLatencyDesc = metrics.Desc("rocketmq_storage_flush_latency_seconds",
		"Time of each CommitLog flush that wrote something.")
	commitBehindDesc = metrics.Desc("rocketmq_storage_commit_behind_bytes",
		"CommitLog bytes in the transient store pool not yet committed to the file (0 without the pool).")
	diskRatioDesc = metrics.Desc("rocketmq_storage_disk_used_ratio",
		"Used fraction (0..1) of the disk holding the CommitLog, as last measured.")
	writableDesc = metrics.Desc("rocketmq_storage_writable",
		"1 while the store accepts writes, 0 after a write or flush failure (or a full disk).")
	putFailuresDesc   = metrics.Desc("rocketmq_storage_put_failures_total", "Puts the store refused.")
	flushFailuresDesc = metrics.Desc("rocketmq_storage_flush_failures_total",
		"Failed CommitLog flushes (each one turns the store read-only).")
	warmBytesDesc = metrics.Desc("rocketmq_storage_warm_bytes_total",
		"Zeros written (and synced) to keep SYNC_FLUSH CommitLog files warm ahead of the writes.")
	warmStallsDesc = metrics.Desc("rocketmq_storage_warm_stalls_total",
		"SYNC_FLUSH flushes that found the warm frontier behind their records and warmed first.")
	queueOffsetsWrittenDesc = metrics.Desc("rocketmq_storage_queue_offsets_written_total",
		"Raft mode: records the state machine had to write a queue offset into at apply, because the one the log store wrote before the sync was missing or wrong (0 while its predictions hold).")
	coldReadBytesDesc = metrics.Desc("rocketmq_storage_cold_read_bytes_total",
		"CommitLog bytes read for consumers with O_DIRECT, around the page cache (coldReadEnable).")
	coldReadNoBufferDesc = metrics.Desc("rocketmq_storage_cold_read_no_buffer_total",
		"Cold CommitLog chunks read through the page cache because every cold-read buffer was held (coldReadBufferBytes).")
	coldReadFailuresDesc = metrics.Desc("rocketmq_storage_cold_read_failures_total",
		"Direct reads of cold CommitLog chunks that failed (the page cache served them).")
	pullsHeldDesc = metrics.Desc("rocketmq_pull_requests_held",
		"Long-polling pull requests parked until a message arrives or they time out.")
)

// metricsCollector reads the broker's numbers at scrape time.
func (b *Broker) metricsCollector() prometheus.Collector {
	return metrics.NewCollector(func(ch chan<- prometheus.Metric) {
		ch <- metrics.Gauge(brokerInfoDesc, 1, b.cfg.BrokerName, strconv.FormatInt(b.role.brokerID(), 10), b.role.name())
		st := b.store.Stats()
		ch <- metrics.Histogram(putLatencyDesc, st.PutLatency.Bounds, st.PutLatency.Counts, st.PutLatency.Sum)
		ch <- metrics.Histogram(flushLatencyDesc, st.FlushLatency.Bounds, st.FlushLatency.Counts, st.FlushLatency.Sum)
		ch <- metrics.Gauge(commitBehindDesc, float64(st.CommitLagBytes))
		ch <- metrics.Gauge(diskRatioDesc, st.DiskUsedRatio)
		ch <- metrics.Gauge(writableDesc, metrics.Bool(st.Writable && !st.DiskFull))
		ch <- metrics.Counter(putFailuresDesc, float64(st.PutFailures))
		ch <- metrics.Counter(flushFailuresDesc, float64(st.FlushFailures))
		ch <- metrics.Counter(warmBytesDesc, float64(st.WarmBytes))
		ch <- metrics.Counter(warmStallsDesc, float64(st.WarmStalls))
		ch <- metrics.Counter(queueOffsetsWrittenDesc, float64(st.QueueOffsetsWritten))
		ch <- metrics.Counter(coldReadBytesDesc, float64(st.ColdReadBytes))
		ch <- metrics.Counter(coldReadNoBufferDesc, float64(st.ColdReadNoBuffer))
		ch <- metrics.Counter(coldReadFailuresDesc, float64(st.ColdReadFailures))
		ch <- metrics.Gauge(pullsHeldDesc, float64(b.pullHold.count()))
		b.collectConsumerLag(ch)
		b.role.collect(ch) // classic replication's series (role_classic.go)
	}, brokerInfoDesc, putLatencyDesc, flushLatencyDesc, commitBehindDesc, diskRatioDesc, writableDesc, putFailuresDesc,
		flushFailuresDesc, warmBytesDesc, warmStallsDesc, queueOffsetsWrittenDesc, coldReadBytesDesc, coldReadNoBufferDesc, coldReadFailuresDesc, pullsHeldDesc, consumerLagDesc, consumerLagLatencyDesc, consumerInflightDesc,
		consumerQueueingDesc, consumerReadyDesc, queueLagDesc, queueLagOmittedDesc,
		haConnectionsDesc, haSlaveLagDesc, haMasterConnectedDesc)
}

// observeReply is the remoting server's reply observer: the time from reading a request to queueing its
// answer (rocketmq_rpc_latency).
func (b *Broker) observeReply(req *remoting.Command, respCode int32, result remoting.ReplyResult) {
	if at := req.Received(); !at.IsZero() {
		b.stats.ObserveRPC(stats.RPCKey{Request: req.Code, Response: respCode, LongPolling: req.Suspended(),
			Result: string(result)}, time.Since(at))
	}
}
