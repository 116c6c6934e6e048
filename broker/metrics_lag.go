package broker

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rocketraft/rocketraft/broker/internal/pop"
	"github.com/rocketraft/rocketraft/internal/metrics"
)

// The consumer progress series: RocketMQ 5's per group and topic figures (ConsumerLagCalculator's lag,
// lag latency, inflight, queueing latency and ready messages), and our per-queue lag.
var (
	consumerLagDesc = metrics.Desc("rocketmq_consumer_lag_messages",
		"Messages a consumer group has not committed on a topic here: the sum over the topic's queues of the max "+
			"offset minus the committed offset.", progressLabels...)
	consumerLagLatencyDesc = metrics.Desc("rocketmq_consumer_lag_latency_milliseconds",
		"Age of the oldest message the group has not committed (now minus its store time); 0 without one.",
		progressLabels...)
	consumerInflightDesc = metrics.Desc("rocketmq_consumer_inflight_messages",
		"Messages handed to the group but not committed yet: pull offset minus committed offset, summed.",
		progressLabels...)
	consumerQueueingDesc = metrics.Desc("rocketmq_consumer_queueing_latency_milliseconds",
		"Age of the oldest message ready but not pulled yet (now minus its store time); 0 without one.",
		progressLabels...)
	consumerReadyDesc = metrics.Desc("rocketmq_consumer_ready_messages",
		"Messages stored but not yet handed to the group: max offset minus pull offset, summed.", progressLabels...)
	queueLagDesc = metrics.Desc("rocketmq_consumer_queue_lag_messages",
		"Messages a consumer group has not committed yet on one queue (max offset minus committed offset); at most "+
			"metricsQueueLagSeriesLimit series, in group, topic, queue order.", "consumer_group", "topic", "queue_id")
	queueLagOmittedDesc = metrics.Desc("rocketmq_consumer_queue_lag_series_omitted",
		"Per-queue lag series left out of this scrape by metricsQueueLagSeriesLimit.")
)

// progressLabels are RocketMQ 5's labels of the consumer progress gauges.
var progressLabels = []string{labelConsumerGroup, labelTopic, labelIsRetry, labelIsSystem}

// groupProgress is one group's progress on one topic here.
type groupProgress struct {
	group, topic string
	lag          int64
	oldestLag    int64 // store time of the oldest uncommitted message, 0 when none
	inflight     int64
	ready        int64
	oldestReady  int64 // store time of the oldest message not pulled yet, 0 when none
	queues       []queueLag
}

// queueLag is one group's lag on one queue, for the queues the group has committed an offset on.
type queueLag struct {
	group, topic string
	queueID      int32
	lag          int64
}

// groupTopic names a group's topic.
type groupTopic struct{ group, topic string }

// progressPairs lists the (group, topic) pairs the progress is reported for, sorted: the topics online
// groups subscribe to (RocketMQ's set; retry topics aside), and every pair with committed offsets, so that
// a group that went offline keeps showing what it left unconsumed.
func (b *Broker) progressPairs() []groupTopic {
	set := map[groupTopic]bool{}
	for _, group := range b.clients.consumerGroups() {
		for topic := range b.clients.subscribedTopics(group) {
			set[groupTopic{group, topic}] = true
		}
	}
	for key := range b.offsets.snapshot().OffsetTable {
		if topic, group, ok := strings.Cut(key, offsetKeySep); ok {
			set[groupTopic{group, topic}] = true
		}
	}
	out := make([]groupTopic, 0, len(set))
	for p := range set {
		if !strings.HasPrefix(p.topic, RetryGroupPrefix) {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(x, y groupTopic) int {
		if c := strings.Compare(x.group, y.group); c != 0 {
			return c
		}
		return strings.Compare(x.topic, y.topic)
	})
	return out
}

// consumerProgress computes every pair's progress over the topic's write queues, as ConsumerLagCalculator
// does: a queue the group never committed on counts as consumed to its end, one it never pulled from as
// pulled up to its committed offset. A pop group's messages popped and not acked are its inflight ones and
// count into its lag, from the first of them. Counts are never negative (an offset past a queue's end, after a reset
// or on a slave behind its master, counts as 0).
func (b *Broker) consumerProgress() []groupProgress {
	pairs := b.progressPairs()
	pops := b.pop.InFlight()
	out := make([]groupProgress, 0, len(pairs))
	for _, p := range pairs {
		tc := b.topics.get(p.topic)
		if tc == nil {
			continue
		}
		g := groupProgress{group: p.group, topic: p.topic}
		for q := range tc.WriteQueueNums {
			end := max(b.store.MaxOffsetInQueue(p.topic, q), 0)
			committed := b.offsets.query(p.group, p.topic, q)
			if committed >= 0 {
				g.queues = append(g.queues, queueLag{p.group, p.topic, q, max(end-committed, 0)})
			} else {
				committed = end
			}
			pulled := b.stats.PullOffset(p.group, p.topic, q)
			if pulled < 0 {
				pulled = committed
			}
			inflight := max(pulled-committed, 0)
			if f, ok := pops[pop.GroupQueue{Group: p.group, Topic: p.topic, QueueID: q}]; ok {
				// A pop group's offset is its pop offset: what it popped and has not acked is in flight
				// (RocketMQ 5 counts it into the lag as well), from the first such message on.
				next := committed
				if f.Next >= 0 {
					next = f.Next // the committed pop offset may be behind while pops are in the merge buffer
				}
				pulled, committed, inflight = max(next, pulled), min(next, f.First), f.Count
				if n := len(g.queues); n > 0 && g.queues[n-1].queueID == q {
					g.queues[n-1].lag = max(end-committed, 0)
				}
			}
			g.lag += max(end-committed, 0)
			g.inflight += inflight
			g.ready += max(end-pulled, 0)
			if committed < end {
				g.oldestLag = oldest(g.oldestLag, b.storeTime(p.topic, q, committed))
			}
			if pulled < end {
				g.oldestReady = oldest(g.oldestReady, b.storeTime(p.topic, q, pulled))
			}
		}
		out = append(out, g)
	}
	return out
}

// storeTime is the store time of the message at offset of a queue, 0 when it cannot be read.
func (b *Broker) storeTime(topic string, q int32, offset int64) int64 {
	t, err := b.store.MessageStoreTime(topic, q, offset)
	if err != nil {
		return 0
	}
	return t
}

// oldest is the earlier of two store times, 0 meaning none.
func oldest(a, b int64) int64 {
	switch {
	case a == 0:
		return b
	case b == 0:
		return a
	}
	return min(a, b)
}

// age is now minus a store time in milliseconds, 0 for none.
func age(now time.Time, storeTime int64) float64 {
	if storeTime <= 0 {
		return 0
	}
	return float64(max(now.UnixMilli()-storeTime, 0))
}

// collectConsumerLag sends the progress of every pair and the per-queue lags, at most
// metricsQueueLagSeriesLimit of those: groups times queues can be large, and a scrape must stay bounded.
func (b *Broker) collectConsumerLag(ch chan<- prometheus.Metric) {
	now := time.Now()
	limit := b.cfg.MetricsQueueLagSeriesLimit
	perQueue := 0
	for _, g := range b.consumerProgress() {
		labels := []string{g.group, g.topic, "false", strconv.FormatBool(isSystem(g.topic, g.group, b.cfg.BrokerClusterName))}
		ch <- metrics.Gauge(consumerLagDesc, float64(g.lag), labels...)
		ch <- metrics.Gauge(consumerLagLatencyDesc, age(now, g.oldestLag), labels...)
		ch <- metrics.Gauge(consumerInflightDesc, float64(g.inflight), labels...)
		ch <- metrics.Gauge(consumerQueueingDesc, age(now, g.oldestReady), labels...)
		ch <- metrics.Gauge(consumerReadyDesc, float64(g.ready), labels...)
		for _, q := range g.queues {
			if perQueue < limit {
				ch <- metrics.Gauge(queueLagDesc, float64(q.lag), q.group, q.topic, strconv.Itoa(int(q.queueID)))
			}
			perQueue++
		}
	}
	ch <- metrics.Gauge(queueLagOmittedDesc, float64(max(perQueue-limit, 0)))
}
