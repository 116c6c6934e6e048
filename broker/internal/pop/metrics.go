package pop

import (
	"strconv"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rocketraft/rocketraft/internal/metrics"
	"github.com/rocketraft/rocketraft/protocol"
)

// RocketMQ 5's pop series (PopMetricsConstant, PopMetricsManager): the check-point and ack records put into
// the revive log, the messages the revive service put back for another delivery, and each revive queue's
// lag. The pop groups' lag and inflight counts are in the consumer progress series (metrics_lag.go).
var (
	popReviveInDesc = metrics.Desc("rocketmq_pop_revive_in_message_total",
		"Check-point (CK) and ack (ACK) records put into the revive log, by put status.",
		"consumer_group", "topic", "revive_message_type", "put_status")
	popReviveRetryDesc = metrics.Desc("rocketmq_pop_revive_retry_messages_total",
		"Messages the revive service put back (retry or dead-letter topic) after their invisible time passed unacked.",
		"consumer_group", "topic", "put_status")
	popReviveLagDesc = metrics.Desc("rocketmq_pop_revive_lag",
		"Records of a revive queue from its revive offset (its oldest pending check point) to its end.", "queue_id")
	popHeldDesc = metrics.Desc("rocketmq_pop_polling_held_requests",
		"Pops and notifications held for their pollTime (ours).")
)

// popMetricKey labels a revive-log put.
type popMetricKey struct {
	group, topic, kind, status string
}

// popCounters are the pop service's counters; the zero value is ready.
type popCounters struct {
	reviveIn    metrics.PerKey[popMetricKey, atomic.Int64]
	reviveRetry metrics.PerKey[popMetricKey, atomic.Int64]
}

// putStatus is RocketMQ's PutMessageStatus name of a put's outcome, as the pop series label it.
func putStatus(err error) string {
	if err != nil {
		return "PUT_FAILED" // RocketMQ's catch-all; the log has the cause
	}
	return "PUT_OK"
}

// collect sends the pop series.
func (s *Engine) Collect(ch chan<- prometheus.Metric, held int) {
	s.counters.reviveIn.Range(func(k popMetricKey, n *atomic.Int64) bool {
		ch <- metrics.Counter(popReviveInDesc, float64(n.Load()), k.group, k.topic, k.kind, k.status)
		return true
	})
	s.counters.reviveRetry.Range(func(k popMetricKey, n *atomic.Int64) bool {
		ch <- metrics.Counter(popReviveRetryDesc, float64(n.Load()), k.group, k.topic, k.status)
		return true
	})
	if s.running() {
		for q := range s.rlog.queues {
			end := s.o.Store.MaxOffsetInQueue(s.rlog.topic, q)
			from := s.o.Offsets.Query(protocol.ReviveGroup, s.rlog.topic, q)
			ch <- metrics.Gauge(popReviveLagDesc, float64(max(end-max(from, 0), 0)), strconv.Itoa(int(q)))
		}
	}
	ch <- metrics.Gauge(popHeldDesc, float64(held))
}

// Descs are the descriptions collect sends.
var Descs = []*prometheus.Desc{popReviveInDesc, popReviveRetryDesc, popReviveLagDesc, popHeldDesc}
