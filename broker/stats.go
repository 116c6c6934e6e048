package broker

import (
	"sync/atomic"
	"time"
)

// brokerStats counts what passes through the processors (the metrics issue builds on it).
type brokerStats struct {
	boot     time.Time
	putCount atomic.Int64
	putBytes atomic.Int64
	getCount atomic.Int64
	getBytes atomic.Int64
}

func newBrokerStats() *brokerStats { return &brokerStats{boot: time.Now()} }

func (s *brokerStats) recordPut(topic string, n, bytes int) {
	s.putCount.Add(int64(n))
	s.putBytes.Add(int64(bytes))
}

func (s *brokerStats) recordGet(topic string, n, bytes int) {
	s.getCount.Add(int64(n))
	s.getBytes.Add(int64(bytes))
}
