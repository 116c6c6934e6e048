package broker

import (
	"sync/atomic"
	"time"

	"github.com/rocketraft/rocketraft/internal/metrics"
)

// brokerStats counts what passes through the processors: the totals behind the admin TPS figures and, per
// topic, the counters of the metrics endpoint (metrics.go).
type brokerStats struct {
	boot     time.Time
	putCount atomic.Int64
	putBytes atomic.Int64
	getCount atomic.Int64
	getBytes atomic.Int64
	// topics: one lock-free map read and two atomic adds per put or get answer; entries of deleted
	// topics are dropped at the next scrape.
	topics metrics.PerKey[string, topicStats]
	// groups: messages and bytes handed to each consumer group, keyed "topic@group" (stats.log's
	// GROUP_GET_NUMS and GROUP_GET_SIZE; stats_log.go).
	groups metrics.PerKey[string, groupGetStats]
	// statsLog is what stats_log.go printed last; only its goroutine touches it.
	statsLog statsLogState
}

// topicStats are one topic's message and byte counters (bytes of the stored records).
type topicStats struct {
	inMsgs, inBytes, outMsgs, outBytes atomic.Int64
	puts                               atomic.Int64 // put requests (a batch is one): stats.log's AVGPT
}

// groupGetStats are what one consumer group got from one topic: messages, bytes, pull answers.
type groupGetStats struct {
	msgs, bytes, gets atomic.Int64
}

func newBrokerStats() *brokerStats { return &brokerStats{boot: time.Now()} }

func (s *brokerStats) recordPut(topic string, n, bytes int) {
	s.putCount.Add(int64(n))
	s.putBytes.Add(int64(bytes))
	t := s.topics.Get(topic)
	t.inMsgs.Add(int64(n))
	t.inBytes.Add(int64(bytes))
	t.puts.Add(1)
}

// recordGroupGet counts a pull answer of n messages for group on topic (stats.log).
func (s *brokerStats) recordGroupGet(topic, group string, n, bytes int) {
	g := s.groups.Get(topic + "@" + group)
	g.msgs.Add(int64(n))
	g.bytes.Add(int64(bytes))
	g.gets.Add(1)
}

func (s *brokerStats) recordGet(topic string, n, bytes int) {
	s.getCount.Add(int64(n))
	s.getBytes.Add(int64(bytes))
	t := s.topics.Get(topic)
	t.outMsgs.Add(int64(n))
	t.outBytes.Add(int64(bytes))
}
