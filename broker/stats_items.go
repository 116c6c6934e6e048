package broker

import (
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rocketraft/rocketraft/internal/metrics"
	"github.com/rocketraft/rocketraft/protocol"
)

// The stats names of RocketMQ's BrokerStatsManager that VIEW_BROKER_STATS_DATA (315) answers for, and the key
// each is kept under: a topic, "topic@group", or the cluster name for the two broker-wide ones.
// rocketmq-exporter asks for exactly these.
const (
	statsTopicPutNums  = "TOPIC_PUT_NUMS"  // key topic: messages stored; times = puts (a batch is one)
	statsTopicPutSize  = "TOPIC_PUT_SIZE"  // key topic: record bytes stored
	statsGroupGetNums  = "GROUP_GET_NUMS"  // key topic@group: messages handed to the group
	statsGroupGetSize  = "GROUP_GET_SIZE"  // key topic@group: record bytes handed to the group
	statsSendBackNums  = "SNDBCK_PUT_NUMS" // key topic@group: messages the group sent back (topic: the original)
	statsBrokerPutNums = "BROKER_PUT_NUMS" // key cluster: messages stored
	statsBrokerGetNums = "BROKER_GET_NUMS" // key cluster: messages handed to consumers
)

// statsKey names one stats item.
type statsKey struct{ name, key string }

// statsItemKey is RocketMQ's buildStatsKey: "topic@group".
func statsItemKey(topic, group string) string { return topic + "@" + group }

// The three windows of a stats item, as RocketMQ's StatsItem keeps them: a snapshot every 10 s (7 kept: the
// last minute), every 10 minutes (7: the last hour) and every hour (25: the last day).
const (
	statsMinuteEvery, statsMinuteKeep = 10 * time.Second, 7
	statsHourEvery, statsHourKeep     = 10 * time.Minute, 7
	statsDayEvery, statsDayKeep       = time.Hour, 25
)

// statsItem is one counter of the table: a value and a number of calls, added to on the hot path with two
// atomic adds, and three rings of snapshots taken by the broker's sampler.
type statsItem struct {
	value, times atomic.Int64

	mu struct {
		sync.Mutex
		minute, hour, day statsRing
	}
}

// statsSnap is the item's counters at one time.
type statsSnap struct {
	at           time.Time
	value, times int64
}

// statsRing keeps the newest keep snapshots, oldest first.
type statsRing struct{ snaps []statsSnap }

func (r *statsRing) add(s statsSnap, keep int) {
	r.snaps = append(r.snaps, s)
	if len(r.snaps) > keep {
		r.snaps = append(r.snaps[:0], r.snaps[len(r.snaps)-keep:]...)
	}
}

// newStatsItem starts an item born at now with a zero snapshot in every window, so that its first minute
// already has a rate (RocketMQ seeds an empty window the same way).
func newStatsItem(now time.Time) *statsItem {
	it := &statsItem{}
	zero := statsSnap{at: now}
	it.mu.minute.add(zero, statsMinuteKeep)
	it.mu.hour.add(zero, statsHourKeep)
	it.mu.day.add(zero, statsDayKeep)
	return it
}

func (it *statsItem) add(value, times int64) {
	it.value.Add(value)
	it.times.Add(times)
}

// data computes the three windows at now: from the oldest snapshot kept to the current counters (RocketMQ
// ends at its newest snapshot, up to one sampling period old; ending at now is fresher and measures the
// same thing).
func (it *statsItem) data(now time.Time) protocol.BrokerStatsData {
	cur := statsSnap{at: now, value: it.value.Load(), times: it.times.Load()}
	it.mu.Lock()
	defer it.mu.Unlock()
	return protocol.BrokerStatsData{StatsMinute: window(it.mu.minute, cur), StatsHour: window(it.mu.hour, cur),
		StatsDay: window(it.mu.day, cur)}
}

func window(r statsRing, cur statsSnap) protocol.BrokerStatsItem {
	if len(r.snaps) == 0 {
		return protocol.BrokerStatsItem{}
	}
	first := r.snaps[0]
	out := protocol.BrokerStatsItem{Sum: cur.value - first.value}
	if secs := cur.at.Sub(first.at).Seconds(); secs > 0 {
		out.Tps = float64(out.Sum) / secs
	}
	if calls := cur.times - first.times; calls > 0 {
		out.Avgpt = float64(out.Sum) / float64(calls)
	}
	return out
}

// sample takes the snapshots that are due at now.
func (it *statsItem) sample(now time.Time) {
	cur := statsSnap{at: now, value: it.value.Load(), times: it.times.Load()}
	it.mu.Lock()
	defer it.mu.Unlock()
	for _, w := range []struct {
		r     *statsRing
		every time.Duration
		keep  int
	}{{&it.mu.minute, statsMinuteEvery, statsMinuteKeep}, {&it.mu.hour, statsHourEvery, statsHourKeep},
		{&it.mu.day, statsDayEvery, statsDayKeep}} {
		if last := w.r.snaps[len(w.r.snaps)-1]; now.Sub(last.at) >= w.every {
			w.r.add(cur, w.keep)
		}
	}
}

// statsTable is the broker's BrokerStatsManager: items created on first use, one lock-free map read per
// add once created. Every method may be called concurrently.
type statsTable struct {
	items metrics.PerKey[statsKey, atomic.Pointer[statsItem]]
}

func (t *statsTable) add(name, key string, value, times int64) {
	p := t.items.Get(statsKey{name, key})
	it := p.Load()
	if it == nil {
		p.CompareAndSwap(nil, newStatsItem(time.Now())) // a concurrent first add may win; its item is used
		it = p.Load()
	}
	it.add(value, times)
}

// get returns the item, or nil when nothing was ever added under name and key (RocketMQ then answers "not
// exist").
func (t *statsTable) get(name, key string) *statsItem {
	p, ok := t.items.Lookup(statsKey{name, key})
	if !ok {
		return nil
	}
	return p.Load()
}

// sample snapshots every item, and forgets those whose topic no longer exists (items keyed by topic or by
// topic@group; the cluster-wide items stay).
func (t *statsTable) sample(now time.Time, topicExists func(string) bool) {
	t.items.Range(func(k statsKey, p *atomic.Pointer[statsItem]) bool {
		if k.name != statsBrokerPutNums && k.name != statsBrokerGetNums && !topicExists(statsTopicOf(k)) {
			t.items.Delete(k)
			return true
		}
		if it := p.Load(); it != nil {
			it.sample(now)
		}
		return true
	})
}

// statsTopicOf is the topic an item counts for: its key, or the part before the last '@' of a topic@group key.
func statsTopicOf(k statsKey) string {
	switch k.name {
	case statsGroupGetNums, statsGroupGetSize, statsSendBackNums:
		if i := strings.LastIndexByte(k.key, '@'); i >= 0 {
			return k.key[:i]
		}
	}
	return k.key
}
