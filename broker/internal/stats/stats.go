package stats

import (
	"strings"
	"sync/atomic"
	"time"

	"github.com/rocketraft/rocketraft/internal/metrics"
	"github.com/rocketraft/rocketraft/message"
	"github.com/rocketraft/rocketraft/protocol"
)

// Stats counts what passes through the processors: the totals behind the admin TPS figures, the
// counters of RocketMQ 5's metrics (read at scrape time: read.go), and RocketMQ's stats items that
// VIEW_BROKER_STATS_DATA answers (items.go). Every counter is one lock-free map read and a few atomic adds
// on its path; entries of deleted topics are dropped at the next scrape or sample. Every method is safe
// for concurrent use.
type Stats struct {
	boot     time.Time
	cluster  string // the key of the BROKER_PUT_NUMS and BROKER_GET_NUMS items
	putCount atomic.Int64
	putBytes atomic.Int64
	getCount atomic.Int64
	getBytes atomic.Int64

	out   metrics.PerKey[groupTopic, outStats] // handed to consumers, by group and topic
	items table                                // with the stored messages' counters by topic (topicPuts)
	// The holders of the two broker-wide items (key: the cluster), looked up once: never deleted.
	brokerPut, brokerGet *atomic.Pointer[item]
	// dlq counts the messages moved to a dead letter queue, by group and original topic.
	dlq metrics.PerKey[groupTopic, atomic.Int64]
	// pulled is each queue's pull offset: the next offset after what was handed to a group (RocketMQ's
	// pullOffsetTable), behind the inflight and ready figures.
	pulled metrics.PerKey[groupQueue, atomic.Int64]
	rpc    metrics.PerKey[RPCKey, valueHistogram]
	// Transactions by real topic: half messages stored, commits and rollbacks, and the time from a half
	// message's birth to its end, in seconds as RocketMQ records it.
	half, commits, rollbacks topicCounts
	finish                   metrics.PerKey[string, valueHistogram]
	// Timer messages by real topic: parked in the timer, and delivered from it; and how far ahead of their
	// birth they were set to be delivered, in seconds (rocketmq_delay_message_latency).
	timerIn, timerOut topicCounts
	timerSet          metrics.PerKey[string, valueHistogram]
	// Topic and subscription group creation times in milliseconds, by outcome (and is_system for topics).
	topicCreate, groupCreate metrics.PerKey[createKey, valueHistogram]
}

// topicCounts counts by topic.
type topicCounts = metrics.PerKey[string, atomic.Int64]

// createKey labels a creation time: invocation_status (success, failure) and, for topics, is_system.
type createKey struct {
	ok, system bool
}

// createTimeBounds are the creation time histograms' buckets in milliseconds.
var createTimeBounds = []float64{10, 100, 1000, 3000, 5000}

// delayLatencyBounds are rocketmq_delay_message_latency's buckets in seconds: 1 min, 10 min, 1 h, 12 h, 1 day,
// 3 days.
var delayLatencyBounds = []float64{60, 600, 3600, 12 * 3600, 24 * 3600, 3 * 24 * 3600}

// groupTopic keys the per group and topic counters.
type groupTopic struct{ group, topic string }

// groupQueue names a group's queue.
type groupQueue struct {
	group, topic string
	queueID      int32
}

// inStats are the stored messages of one topic and message type: count, record bytes, and the message size
// histogram (rocketmq_message_size).
type inStats struct {
	msgs, bytes atomic.Int64
	size        valueHistogram
}

type outStats struct{ msgs, bytes atomic.Int64 }

// valueHistogram counts values into fixed buckets (the bounds are the caller's; at most 10 of them).
type valueHistogram struct {
	counts [11]atomic.Int64
	sum    atomic.Int64
}

func (h *valueHistogram) observe(bounds []float64, v int64) {
	i := 0
	for i < len(bounds) && float64(v) > bounds[i] {
		i++
	}
	h.counts[i].Add(1)
	h.sum.Add(v)
}

// New returns the counters of a broker of cluster, born now.
func New(cluster string) *Stats {
	s := &Stats{boot: time.Now(), cluster: cluster}
	s.brokerPut = s.items.holder(brokerPutNums, cluster)
	s.brokerGet = s.items.holder(brokerGetNums, cluster)
	return s
}

// messageSizeBounds are rocketmq_message_size's buckets: 1 KiB, 4 KiB, 512 KiB, 1, 2 and 4 MiB.
var messageSizeBounds = []float64{1 << 10, 4 << 10, 512 << 10, 1 << 20, 2 << 20, 4 << 20}

// MessageType is RocketMQ 5's message_type label of a stored message.
type MessageType uint8

const (
	Normal MessageType = iota
	FIFO
	Delay
	Transaction
	numMessageTypes
)

var messageTypeNames = [numMessageTypes]string{"normal", "fifo", "delay", "transaction"}

func (t MessageType) String() string { return messageTypeNames[t] }

// TypeOf is RocketMQ's TopicMessageType of a send (its encoded properties): transaction when prepared,
// fifo with a sharding key, delay with any delivery-time property, else normal.
func TypeOf(props string) MessageType {
	if v, _ := message.FindProperty(props, message.PropertyTransactionPrepared); v == "true" {
		return Transaction
	}
	if message.HasProperty(props, message.PropertyShardingKey) {
		return FIFO
	}
	for _, k := range []string{message.PropertyDelayLevel, message.PropertyTimerDeliverMs, message.PropertyTimerDelaySec, message.PropertyTimerDelayMs, message.PropertyStartDeliverTime} {
		if message.HasProperty(props, k) {
			return Delay
		}
	}
	return Normal
}

// isRetryOrDLQ reports the topics RocketMQ 5 leaves out of its in and out counters.
func isRetryOrDLQ(topic string) bool {
	return strings.HasPrefix(topic, protocol.RetryGroupTopicPrefix) || strings.HasPrefix(topic, protocol.DLQGroupTopicPrefix)
}

// RecordPut counts one stored put of n messages (a batch is one put) of one message type: one map read
// (the topic's record) and atomic adds.
func (s *Stats) RecordPut(topic string, typ MessageType, n, bytes int) {
	s.putCount.Add(int64(n))
	s.putBytes.Add(int64(bytes))
	p := s.items.topicRecord(topic)
	if !isRetryOrDLQ(topic) && n > 0 {
		t := &p.in[typ]
		t.msgs.Add(int64(n))
		t.bytes.Add(int64(bytes))
		t.size.observe(messageSizeBounds, int64(bytes/n)) // RocketMQ: the put's bytes per message
	}
	addToItem(&p.nums, int64(n), 1)
	addToItem(&p.size, int64(bytes), 1)
	addToItem(s.brokerPut, int64(n), 0)
}

// RecordGet counts one pull (or pop) answer of n messages of queue to group, which continues at next.
func (s *Stats) RecordGet(topic, group string, queueID int32, n, bytes int, next int64) {
	s.getCount.Add(int64(n))
	s.getBytes.Add(int64(bytes))
	if !isRetryOrDLQ(topic) {
		o := s.out.Get(groupTopic{group, topic})
		o.msgs.Add(int64(n))
		o.bytes.Add(int64(bytes))
	}
	s.pulled.Get(groupQueue{group, topic, queueID}).Store(next)
	key := topicGroupKey(topic, group)
	s.items.add(groupGetNums, key, int64(n), 1)
	s.items.add(groupGetSize, key, int64(bytes), 1)
	addToItem(s.brokerGet, int64(n), 0)
}

// PullOffset is the group's pull offset on a queue, -1 when it never pulled messages there.
func (s *Stats) PullOffset(group, topic string, queueID int32) int64 {
	if p, ok := s.pulled.Lookup(groupQueue{group, topic, queueID}); ok {
		return p.Load()
	}
	return -1
}

// RecordSendBack counts one message group sent back for a retry or, with dlq, to its dead letter queue;
// topic is the topic it was first sent to.
func (s *Stats) RecordSendBack(topic, group string, dlq bool) {
	s.items.add(sendBackNums, topicGroupKey(topic, group), 1, 1)
	if dlq {
		s.dlq.Get(groupTopic{group, topic}).Add(1)
	}
}

// finishLatencyBounds are rocketmq_finish_message_latency's buckets, in seconds: 5 s, 1 min, 10 min, 1 h,
// 12 h, 24 h.
var finishLatencyBounds = []float64{5, 60, 600, 3600, 12 * 3600, 24 * 3600}

// RecordHalf counts a half message stored for topic.
func (s *Stats) RecordHalf(topic string) { s.half.Get(topic).Add(1) }

// RecordEnd counts the end of a transaction of topic whose half message was born at born.
func (s *Stats) RecordEnd(topic string, commit bool, born time.Time) {
	if h := s.half.Get(topic); h.Add(-1) < 0 {
		h.Store(0) // a half message of before a restart: not counted, so not uncounted
	}
	if commit {
		s.commits.Get(topic).Add(1)
		s.finish.Get(topic).observe(finishLatencyBounds, int64(time.Since(born).Seconds()))
	} else {
		s.rollbacks.Get(topic).Add(1)
	}
}

// RPCKey labels one rocketmq_rpc_latency series: the request and response codes, whether the request was
// held (long polling), and what became of its answer (remoting.ReplyResult's words).
type RPCKey struct {
	Request, Response int32
	LongPolling       bool
	Result            string
}

// rpcLatencyBounds are rocketmq_rpc_latency's buckets in milliseconds.
var rpcLatencyBounds = []float64{1, 3, 5, 7, 10, 100, 1000, 2000, 3000}

// ObserveRPC counts an answer of k that took elapsed from reading its request to queueing the answer, in
// whole milliseconds as RocketMQ records it (the remoting server's reply observer).
func (s *Stats) ObserveRPC(k RPCKey, elapsed time.Duration) {
	s.rpc.Get(k).observe(rpcLatencyBounds, elapsed.Milliseconds())
}

// RecordTimerIn counts a message of topic parked in the timer, due delaySeconds after its birth
// (rocketmq_delay_message_latency); known is false when its delivery time is not known.
func (s *Stats) RecordTimerIn(topic string, delaySeconds int64, known bool) {
	s.timerIn.Get(topic).Add(1)
	if known {
		s.timerSet.Get(topic).observe(delayLatencyBounds, delaySeconds)
	}
}

// RecordTimerOut counts a message of topic the timer delivered.
func (s *Stats) RecordTimerOut(topic string) { s.timerOut.Get(topic).Add(1) }

// RecordTopicCreate counts a topic creation that took elapsed: ok whether it succeeded, system whether
// the topic is a system topic.
func (s *Stats) RecordTopicCreate(ok, system bool, elapsed time.Duration) {
	s.topicCreate.Get(createKey{ok: ok, system: system}).observe(createTimeBounds, elapsed.Milliseconds())
}

// RecordGroupCreate counts a subscription group creation that took elapsed.
func (s *Stats) RecordGroupCreate(ok bool, elapsed time.Duration) {
	s.groupCreate.Get(createKey{ok: ok}).observe(createTimeBounds, elapsed.Milliseconds())
}

// Puts is how many messages were stored since the broker started.
func (s *Stats) Puts() int64 { return s.putCount.Load() }

// Gets is how many messages were handed to consumers since the broker started.
func (s *Stats) Gets() int64 { return s.getCount.Load() }

// Boot is when the broker started (New).
func (s *Stats) Boot() time.Time { return s.boot }
