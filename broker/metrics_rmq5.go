package broker

import (
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rocketraft/rocketraft/broker/internal/delay"
	"github.com/rocketraft/rocketraft/broker/internal/stats"
	"github.com/rocketraft/rocketraft/internal/metrics"
	"github.com/rocketraft/rocketraft/remoting"
)

// RocketMQ 5's broker metrics, under the names its Prometheus exporter gives them.
//
// RocketMQ 5 (BrokerMetricsManager, DefaultStoreMetricsManager, RemotingMetricsManager) defines OpenTelemetry
// instruments and exports them through OpenTelemetry's Prometheus exporter (opentelemetry-java 1.29 since
// RocketMQ 5.1.4). That exporter turns an instrument's name and unit into the Prometheus name: dots become
// underscores, the unit is appended unless the name already holds it ("milliseconds" -> _milliseconds, "bytes"
// -> _bytes, "ms" -> _milliseconds, "seconds" -> _seconds), and a counter gets _total unless its name holds
// "total". So rocketmq_rpc_latency (unit milliseconds) is scraped as rocketmq_rpc_latency_milliseconds_bucket,
// rocketmq_consumer_lag_latency as rocketmq_consumer_lag_latency_milliseconds, rocketmq_storage_size as
// rocketmq_storage_size_bytes, while rocketmq_messages_in_total and rocketmq_storage_flush_behind_bytes keep
// their names. otelPromName below is that rule; the names here are its results (metrics_rmq5_test.go checks).
//
// Every series carries cluster, node_type ("broker") and node_id (the broker name), added by the registry
// (metrics.go). Label values are RocketMQ's: booleans "true"/"false", message_type normal / fifo / delay /
// transaction, request and response codes by their lower-case RocketMQ names.

// Label names, as RocketMQ spells them.
const (
	labelCluster       = "cluster"
	labelNodeType      = "node_type"
	labelNodeID        = "node_id"
	labelTopic         = "topic"
	labelConsumerGroup = "consumer_group"
	labelIsRetry       = "is_retry"
	labelIsSystem      = "is_system"
	labelMessageType   = "message_type"
	labelLanguage      = "language"
	labelVersion       = "version"
	labelConsumeMode   = "consume_mode"
	labelProtocolType  = "protocol_type"
	labelProcessor     = "processor"
	labelStorageType   = "storage_type"
	labelStorageMedium = "storage_medium"

	nodeTypeBroker   = "broker"
	protocolRemoting = "remoting"
)

// otelPromName is the name OpenTelemetry's Prometheus exporter (1.29) gives an instrument: the unit's
// Prometheus word appended unless the name contains it, then _total for a counter whose name lacks "total".
func otelPromName(name, unit string, counter bool) string {
	words := map[string]string{"ms": "milliseconds", "s": "seconds", "By": "bytes", "1": ""}
	u, ok := words[unit]
	if !ok {
		u = unit
	}
	if u != "" && !strings.Contains(name, u) {
		name += "_" + u
	}
	if counter && !strings.Contains(name, "total") {
		name += "_total"
	}
	return name
}

var (
	inLabels  = []string{labelTopic, labelMessageType, labelIsSystem}
	outLabels = []string{labelTopic, labelConsumerGroup, labelIsSystem}

	messagesInDesc = metrics.Desc("rocketmq_messages_in_total",
		"Messages stored for producers (a batch counts each message), retry and dead letter topics aside.", inLabels...)
	messagesOutDesc = metrics.Desc("rocketmq_messages_out_total",
		"Messages handed to consumers in pull answers, retry and dead letter topics aside.", outLabels...)
	throughputInDesc = metrics.Desc("rocketmq_throughput_in_total",
		"Bytes of the stored records of rocketmq_messages_in_total.", inLabels...)
	throughputOutDesc = metrics.Desc("rocketmq_throughput_out_total",
		"Bytes of the records of rocketmq_messages_out_total.", outLabels...)
	messageSizeDesc = metrics.Desc("rocketmq_message_size",
		"Size of stored messages in bytes (a put's bytes per message).", inLabels...)
	producerConnectionsDesc = metrics.Desc("rocketmq_producer_connections",
		"Producer client channels, by client language and version.", labelLanguage, labelVersion, labelProtocolType)
	consumerConnectionsDesc = metrics.Desc("rocketmq_consumer_connections",
		"Consumer client channels, by group, language, version and consume mode (push, pull).",
		labelConsumerGroup, labelLanguage, labelVersion, labelConsumeMode, labelProtocolType, labelIsSystem)
	sendToDLQDesc = metrics.Desc("rocketmq_send_to_dlq_messages_total",
		"Messages moved to a group's dead letter queue after their last retry, by the topic they were sent to.",
		labelConsumerGroup, labelTopic, labelIsSystem)
	topicNumberDesc         = metrics.Desc("rocketmq_topic_number", "Topics configured on this broker.")
	consumerGroupNumberDesc = metrics.Desc("rocketmq_consumer_group_number", "Subscription groups on this broker.")
	brokerPermissionDesc    = metrics.Desc("rocketmq_broker_permission", "brokerPermission (6 read and write, 4 read only, 2 write only).")
	processorWatermarkDesc  = metrics.Desc("rocketmq_processor_watermark",
		"Requests waiting in a processor's queue.", labelProcessor)
	rpcLatencyDesc = metrics.Desc(otelPromName("rocketmq_rpc_latency", "milliseconds", false),
		"Time from reading a request to queueing its answer, in milliseconds (held pulls included).",
		labelProtocolType, "request_code", "response_code", "is_long_polling", "result")
	storageSizeDesc = metrics.Desc(otelPromName("rocketmq_storage_size", "bytes", false),
		"Bytes used on the partition of storePathRootDir.", labelStorageType, labelStorageMedium)
	flushBehindDesc = metrics.Desc(otelPromName("rocketmq_storage_flush_behind_bytes", "bytes", false),
		"CommitLog bytes written but not yet flushed to disk.", labelStorageType, labelStorageMedium)
	dispatchBehindDesc = metrics.Desc(otelPromName("rocketmq_storage_dispatch_behind_bytes", "bytes", false),
		"CommitLog bytes not yet dispatched to ConsumeQueues and the index.", labelStorageType, labelStorageMedium)
	reserveTimeDesc = metrics.Desc(otelPromName("rocketmq_storage_message_reserve_time", "milliseconds", false),
		"Age of the oldest message kept (now minus its store time); absent while the CommitLog is empty.",
		labelStorageType, labelStorageMedium)
	halfMessagesDesc = metrics.Desc("rocketmq_half_messages",
		"Transaction half messages stored and not yet committed or rolled back, by real topic (counted since start).",
		labelTopic)
	commitMessagesDesc   = metrics.Desc("rocketmq_commit_messages_total", "Transaction messages committed.", labelTopic)
	rollbackMessagesDesc = metrics.Desc("rocketmq_rollback_messages_total", "Transaction messages rolled back.", labelTopic)
	finishLatencyDesc    = metrics.Desc(otelPromName("rocketmq_finish_message_latency", "ms", false),
		"Time from a committed transaction message's birth to its commit. As RocketMQ 5 records it, in seconds "+
			"despite the unit in the name.", labelTopic)
	timerEnqueueDesc = metrics.Desc("rocketmq_timer_enqueue_total",
		"Messages with a delivery time (timer messages) parked until due.", labelTopic)
	timerDequeueDesc = metrics.Desc("rocketmq_timer_dequeue_total",
		"Timer messages delivered to their topic once due.", labelTopic)
	timerDequeueLagDesc = metrics.Desc("rocketmq_timer_dequeue_lag",
		"Timer messages due but not yet delivered.")
	timerDequeueLatencyDesc = metrics.Desc(otelPromName("rocketmq_timer_dequeue_latency", "milliseconds", false),
		"How late the most overdue undelivered timer message is; 0 when none is due.")
	timerEnqueueLagDesc = metrics.Desc("rocketmq_timer_enqueue_lag",
		"Timer messages stored but not yet loaded by the timer.")
	timingMessagesDesc = metrics.Desc("rocketmq_timing_messages",
		"Timer messages loaded and waiting for their delivery time.")
	timerSnapshotDesc = metrics.Desc("rocketmq_timer_message_snapshot",
		"Timer messages due within timer_bound_s seconds from now and after the next smaller bound (24 h at most).",
		"timer_bound_s")
	timerEnqueueLatencyDesc = metrics.Desc(otelPromName("rocketmq_timer_enqueue_latency", "milliseconds", false),
		"Age of the oldest timer message stored but not yet loaded by the timer; 0 when none waits.")
	delayLatencyDesc = metrics.Desc(otelPromName("rocketmq_delay_message_latency", "seconds", false),
		"How far after its birth a timer message is set to be delivered, in seconds.", labelTopic)
	topicCreateDesc = metrics.Desc(otelPromName("rocketmq_topic_create_execution_time", "milliseconds", false),
		"Time to create or update a topic (UPDATE_AND_CREATE_TOPIC), by outcome.", "invocation_status", labelIsSystem)
	groupCreateDesc = metrics.Desc(otelPromName("rocketmq_consumer_group_create_execution_time", "milliseconds", false),
		"Time to create or update a subscription group, by outcome.", "invocation_status")
)

// invocationStatus is RocketMQ's invocation_status value.
func invocationStatus(ok bool) string {
	if ok {
		return "success"
	}
	return "failure"
}

// storeLabels are the store series' fixed labels (DefaultStoreMetricsManager's).
var storeLabels = []string{"local", "disk"}

// rmq5Collector reads RocketMQ 5's series at scrape time.
func (b *Broker) rmq5Collector() prometheus.Collector {
	return metrics.NewCollector(func(ch chan<- prometheus.Metric) {
		b.collectInOut(ch)
		b.collectConnections(ch)
		b.collectRPC(ch)
		b.collectStore(ch)
		b.collectTransactions(ch)
		b.collectTimer(ch)
		ch <- metrics.Gauge(topicNumberDesc, float64(b.topics.size()))
		ch <- metrics.Gauge(consumerGroupNumberDesc, float64(b.groups.size()))
		ch <- metrics.Gauge(brokerPermissionDesc, float64(b.permission()))
		for _, p := range b.pools {
			ch <- metrics.Gauge(processorWatermarkDesc, float64(p.Queued()), processorName(p.Name()))
		}
		b.stats.TopicCreates(func(ok, system bool, h stats.Histogram) {
			ch <- histogramMetric(topicCreateDesc, h, invocationStatus(ok), strconv.FormatBool(system))
		})
		b.stats.GroupCreates(func(ok bool, h stats.Histogram) {
			ch <- histogramMetric(groupCreateDesc, h, invocationStatus(ok))
		})
		b.stats.DLQ(func(group, topic string, n int64) {
			ch <- metrics.Counter(sendToDLQDesc, float64(n), group, topic,
				strconv.FormatBool(isSystem(topic, group, b.cfg.BrokerClusterName)))
		})
	}, messagesInDesc, messagesOutDesc, throughputInDesc, throughputOutDesc, messageSizeDesc, producerConnectionsDesc,
		consumerConnectionsDesc, sendToDLQDesc, topicNumberDesc, consumerGroupNumberDesc, brokerPermissionDesc,
		processorWatermarkDesc, rpcLatencyDesc, storageSizeDesc, flushBehindDesc, dispatchBehindDesc, reserveTimeDesc,
		halfMessagesDesc, commitMessagesDesc, rollbackMessagesDesc, finishLatencyDesc, timerEnqueueDesc,
		timerDequeueDesc, timerDequeueLagDesc, timerDequeueLatencyDesc, timerEnqueueLagDesc, timingMessagesDesc,
		timerEnqueueLatencyDesc, delayLatencyDesc, topicCreateDesc, groupCreateDesc, timerSnapshotDesc)
}

// processorName is RocketMQ's processor label of one of our pools.
func processorName(pool string) string {
	switch pool {
	case "query":
		return "query_message"
	case "client":
		return "client_manager"
	case "consumer":
		return "consumer_manager"
	case "transaction", "end_transaction":
		return "transaction"
	}
	return pool
}

// isSystem is RocketMQ's is_system: a system topic, or a group named CID_RMQ_SYS_* (any case).
func isSystem(topic, group, cluster string) bool {
	return isSystemTopic(topic, cluster) || strings.HasPrefix(strings.ToLower(group), "cid_rmq_sys_")
}

// collectInOut sends the in and out counters and the message size histogram, and forgets the counters of
// topics this broker no longer has (their series end; a topic created again starts from zero, which
// Prometheus reads as a counter reset).
func (b *Broker) collectInOut(ch chan<- prometheus.Metric) {
	cluster := b.cfg.BrokerClusterName
	exists := func(topic string) bool { return b.topics.get(topic) != nil }
	b.stats.In(exists, func(topic string, typ stats.MessageType, msgs, bytes int64, size stats.Histogram) {
		sys := strconv.FormatBool(isSystemTopic(topic, cluster))
		ch <- metrics.Counter(messagesInDesc, float64(msgs), topic, typ.String(), sys)
		ch <- metrics.Counter(throughputInDesc, float64(bytes), topic, typ.String(), sys)
		ch <- histogramMetric(messageSizeDesc, size, topic, typ.String(), sys)
	})
	b.stats.Out(exists, func(group, topic string, msgs, bytes int64) {
		sys := strconv.FormatBool(isSystem(topic, group, cluster))
		ch <- metrics.Counter(messagesOutDesc, float64(msgs), topic, group, sys)
		ch <- metrics.Counter(throughputOutDesc, float64(bytes), topic, group, sys)
	})
}

// histogramMetric is a histogram sample of h.
func histogramMetric(d *prometheus.Desc, h stats.Histogram, labels ...string) prometheus.Metric {
	buckets := make(map[float64]uint64, len(h.Bounds))
	var cum uint64
	for i, bound := range h.Bounds {
		cum += uint64(max(h.Counts[i], 0))
		buckets[bound] = cum
	}
	cum += uint64(max(h.Counts[len(h.Bounds)], 0))
	return prometheus.MustNewConstHistogram(d, cum, float64(h.Sum), buckets, labels...)
}

// collectConnections counts the client channels as RocketMQ does: a producer channel once per group it
// produces for, a consumer channel per group.
func (b *Broker) collectConnections(ch chan<- prometheus.Metric) {
	producers, consumers := b.clients.connectionCounts()
	for k, n := range producers {
		ch <- metrics.Gauge(producerConnectionsDesc, float64(n), strings.ToLower(k.language), mqVersionDesc(k.version),
			protocolRemoting)
	}
	for k, n := range consumers {
		ch <- metrics.Gauge(consumerConnectionsDesc, float64(n), k.group, strings.ToLower(k.language),
			mqVersionDesc(k.version), consumeMode(k.consumeType), protocolRemoting,
			strconv.FormatBool(isSystem("", k.group, b.cfg.BrokerClusterName)))
	}
}

// consumeMode is ConsumeType's lower-cased Chinese-era name RocketMQ puts in consume_mode.
func consumeMode(consumeType string) string {
	switch consumeType {
	case "CONSUME_ACTIVELY":
		return "pull"
	case "CONSUME_PASSIVELY":
		return "push"
	case "CONSUME_POP":
		return "pop"
	}
	return strings.ToLower(consumeType)
}

// clientKey groups client channels for the connection gauges.
type clientKey struct {
	group, language, consumeType string
	version                      int32
}

// connectionCounts counts producer channels by language and version, consumer channels by group, language,
// version and consume type.
func (m *clientManager) connectionCounts() (producers, consumers map[clientKey]int) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	producers, consumers = map[clientKey]int{}, map[clientKey]int{}
	for _, chans := range m.producers {
		for _, c := range chans {
			producers[clientKey{language: c.language, version: c.version}]++
		}
	}
	for name, g := range m.consumers {
		for _, c := range g.channels {
			consumers[clientKey{group: name, language: c.language, version: c.version, consumeType: g.consumeType}]++
		}
	}
	return producers, consumers
}

// consumerGroups lists the groups with live consumers, sorted.
func (m *clientManager) consumerGroups() []string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]string, 0, len(m.consumers))
	for name, g := range m.consumers {
		if len(g.channels) > 0 {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// collectRPC sends rocketmq_rpc_latency per request code, response code, long polling and result.
func (b *Broker) collectRPC(ch chan<- prometheus.Metric) {
	b.stats.RPC(func(k stats.RPCKey, h stats.Histogram) {
		ch <- histogramMetric(rpcLatencyDesc, h, protocolRemoting,
			strings.ToLower(remoting.RequestCode(k.Request).String()),
			strings.ToLower(remoting.ResponseCode(k.Response).String()), strconv.FormatBool(k.LongPolling),
			k.Result)
	})
}

// collectStore sends the store series of DefaultStoreMetricsManager.
func (b *Broker) collectStore(ch chan<- prometheus.Metric) {
	st := b.store.Stats()
	if d, err := b.store.RootDisk(); err == nil {
		ch <- metrics.Gauge(storageSizeDesc, float64(d.Total-d.Free), storeLabels...)
	}
	ch <- metrics.Gauge(flushBehindDesc, float64(st.FlushLagBytes), storeLabels...)
	ch <- metrics.Gauge(dispatchBehindDesc, float64(st.DispatchBehindBytes), storeLabels...)
	if first, err := b.store.LookMessageByOffset(b.store.MinPhyOffset()); err == nil && first.StoreTimestamp > 0 {
		ch <- metrics.Gauge(reserveTimeDesc, age(time.Now(), first.StoreTimestamp), storeLabels...)
	}
}

// collectTransactions sends the transaction series.
func (b *Broker) collectTransactions(ch chan<- prometheus.Metric) {
	exists := func(topic string) bool { return b.topics.get(topic) != nil }
	b.stats.Counts(stats.HalfMessages, exists, func(topic string, n int64) {
		ch <- metrics.Gauge(halfMessagesDesc, float64(max(n, 0)), topic)
	})
	b.stats.Counts(stats.Commits, exists, func(topic string, n int64) {
		ch <- metrics.Counter(commitMessagesDesc, float64(n), topic)
	})
	b.stats.Counts(stats.Rollbacks, exists, func(topic string, n int64) {
		ch <- metrics.Counter(rollbackMessagesDesc, float64(n), topic)
	})
	b.stats.Histograms(stats.FinishLatency, func(topic string, h stats.Histogram) {
		ch <- histogramMetric(finishLatencyDesc, h, topic)
	})
}

// collectTimer sends the timer series: the counters by topic, and the timer's backlog.
func (b *Broker) collectTimer(ch chan<- prometheus.Metric) {
	for _, c := range []struct {
		d *prometheus.Desc
		c stats.Counter
	}{{timerEnqueueDesc, stats.TimerEnqueued}, {timerDequeueDesc, stats.TimerDequeued}} {
		b.stats.Counts(c.c, nil, func(topic string, n int64) {
			ch <- metrics.Counter(c.d, float64(n), topic)
		})
	}
	b.stats.Histograms(stats.DelayLatency, func(topic string, h stats.Histogram) {
		ch <- histogramMetric(delayLatencyDesc, h, topic)
	})
	if b.timer == nil {
		return
	}
	now := time.Now()
	st := b.timer.Status(b.clock.Now()) // the timer's due times are on the steady clock (clock.go)
	var enqueueLatency float64
	if st.Unloaded > 0 {
		enqueueLatency = age(now, b.storeTime(TopicTimer, 0, st.Scanned))
	}
	ch <- metrics.Gauge(timerEnqueueLatencyDesc, enqueueLatency)
	for i, bound := range delay.TimerDistBounds {
		ch <- metrics.Gauge(timerSnapshotDesc, float64(st.Ahead[i]), strconv.FormatInt(bound, 10))
	}
	ch <- metrics.Gauge(timerDequeueLagDesc, float64(st.Due))
	ch <- metrics.Gauge(timerDequeueLatencyDesc, float64(st.LateMillis))
	ch <- metrics.Gauge(timerEnqueueLagDesc, float64(st.Unloaded))
	ch <- metrics.Gauge(timingMessagesDesc, float64(st.Waiting))
}
