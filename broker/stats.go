package broker

import (
	"sync/atomic"
	"time"

	"github.com/rocketraft/rocketraft/internal/metrics"
)

// brokerStats counts what passes through the processors: the totals behind the admin TPS figures, per
// topic the counters of the metrics endpoint (metrics.go), and RocketMQ's stats items that
// VIEW_BROKER_STATS_DATA answers (stats_items.go).
type brokerStats struct {
	boot     time.Time
	cluster  string // the key of the BROKER_PUT_NUMS and BROKER_GET_NUMS items
	putCount atomic.Int64
	putBytes atomic.Int64
	getCount atomic.Int64
	getBytes atomic.Int64
	// topics: one lock-free map read and two atomic adds per put or get answer; entries of deleted
	// topics are dropped at the next scrape.
	topics metrics.PerKey[string, topicStats]
	items  statsTable
	// dlq counts the messages moved to a dead letter queue, by group and original topic.
	dlq metrics.PerKey[groupTopic, atomic.Int64]
}

// topicStats are one topic's message and byte counters (bytes of the stored records).
type topicStats struct {
	inMsgs, inBytes, outMsgs, outBytes atomic.Int64
}

func newBrokerStats(cluster string) *brokerStats {
	return &brokerStats{boot: time.Now(), cluster: cluster}
}

// recordPut counts one stored put of n messages (a batch is one put).
func (s *brokerStats) recordPut(topic string, n, bytes int) {
	s.putCount.Add(int64(n))
	s.putBytes.Add(int64(bytes))
	t := s.topics.Get(topic)
	t.inMsgs.Add(int64(n))
	t.inBytes.Add(int64(bytes))
	s.items.add(statsTopicPutNums, topic, int64(n), 1)
	s.items.add(statsTopicPutSize, topic, int64(bytes), 1)
	s.items.add(statsBrokerPutNums, s.cluster, int64(n), 0)
}

// recordGet counts one pull answer of n messages to group.
func (s *brokerStats) recordGet(topic, group string, n, bytes int) {
	s.getCount.Add(int64(n))
	s.getBytes.Add(int64(bytes))
	t := s.topics.Get(topic)
	t.outMsgs.Add(int64(n))
	t.outBytes.Add(int64(bytes))
	key := statsItemKey(topic, group)
	s.items.add(statsGroupGetNums, key, int64(n), 1)
	s.items.add(statsGroupGetSize, key, int64(bytes), 1)
	s.items.add(statsBrokerGetNums, s.cluster, int64(n), 0)
}

// recordSendBack counts one message group sent back for a retry or, with dlq, to its dead letter queue;
// topic is the topic it was first sent to.
func (s *brokerStats) recordSendBack(topic, group string, dlq bool) {
	s.items.add(statsSendBackNums, statsItemKey(topic, group), 1, 1)
	if dlq {
		s.dlq.Get(groupTopic{group, topic}).Add(1)
	}
}

// groupTopic keys the per group and topic counters.
type groupTopic struct{ group, topic string }
