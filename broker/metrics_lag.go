package broker

import (
	"slices"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rocketraft/rocketraft/internal/metrics"
)

var (
	consumerLagDesc = metrics.Desc("rocketmq_consumer_lag_messages",
		"Messages a consumer group has not committed yet on a topic here: the sum over its queues of the queue's "+
			"max offset minus the group's committed offset.", "group", "topic")
	queueLagDesc = metrics.Desc("rocketmq_consumer_queue_lag_messages",
		"Messages a consumer group has not committed yet on one queue (max offset minus committed offset); at most "+
			"metricsQueueLagSeriesLimit series, in group, topic, queue order.", "group", "topic", "queue_id")
	queueLagOmittedDesc = metrics.Desc("rocketmq_consumer_queue_lag_series_omitted",
		"Per-queue lag series left out of this scrape by metricsQueueLagSeriesLimit.")
)

// queueLag is one group's lag on one queue.
type queueLag struct {
	group, topic string
	queueID      int32
	lag          int64
}

// consumerLags computes every committed offset's lag, sorted by group, topic and queue. Only queues a group
// has committed an offset for count (as in RocketMQ's consumerProgress); a lag is never negative (an offset
// past the queue's end, after a reset or on a slave behind its master, counts as 0).
func (b *Broker) consumerLags() []queueLag {
	table := b.offsets.snapshot().OffsetTable
	out := make([]queueLag, 0, len(table))
	for key, queues := range table {
		topic, group, ok := strings.Cut(key, offsetKeySep)
		if !ok {
			continue
		}
		for q, committed := range queues {
			lag := max(b.store.MaxOffsetInQueue(topic, q)-committed, 0)
			out = append(out, queueLag{group: group, topic: topic, queueID: q, lag: lag})
		}
	}
	slices.SortFunc(out, func(x, y queueLag) int {
		if c := strings.Compare(x.group, y.group); c != 0 {
			return c
		}
		if c := strings.Compare(x.topic, y.topic); c != 0 {
			return c
		}
		return int(x.queueID) - int(y.queueID)
	})
	return out
}

// collectConsumerLag sends the per group and topic sums (all of them) and the per-queue lags, at most
// metricsQueueLagSeriesLimit of those: groups times queues can be large, and a scrape must stay bounded.
func (b *Broker) collectConsumerLag(ch chan<- prometheus.Metric) {
	lags := b.consumerLags()
	limit := b.cfg.MetricsQueueLagSeriesLimit
	for i := 0; i < len(lags); {
		j, sum := i, int64(0)
		for ; j < len(lags) && lags[j].group == lags[i].group && lags[j].topic == lags[i].topic; j++ {
			sum += lags[j].lag
			if j < limit {
				ch <- metrics.Gauge(queueLagDesc, float64(lags[j].lag), lags[j].group, lags[j].topic,
					strconv.Itoa(int(lags[j].queueID)))
			}
		}
		ch <- metrics.Gauge(consumerLagDesc, float64(sum), lags[i].group, lags[i].topic)
		i = j
	}
	ch <- metrics.Gauge(queueLagOmittedDesc, float64(max(len(lags)-limit, 0)))
}
