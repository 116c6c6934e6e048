package stats

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
	topicPutNums  = "TOPIC_PUT_NUMS"  // key topic: messages stored; times = puts (a batch is one)
	topicPutSize  = "TOPIC_PUT_SIZE"  // key topic: record bytes stored
	groupGetNums  = "GROUP_GET_NUMS"  // key topic@group: messages handed to the group
	groupGetSize  = "GROUP_GET_SIZE"  // key topic@group: record bytes handed to the group
	sendBackNums  = "SNDBCK_PUT_NUMS" // key topic@group: messages the group sent back (topic: the original)
	brokerPutNums = "BROKER_PUT_NUMS" // key cluster: messages stored
	brokerGetNums = "BROKER_GET_NUMS" // key cluster: messages handed to consumers
)

// itemID names one stats item.
type itemID struct{ name, key string }

// topicGroupKey is RocketMQ's buildStatsKey: "topic@group".
func topicGroupKey(topic, group string) string { return topic + "@" + group }

// The three windows of a stats item, as RocketMQ's StatsItem keeps them: a snapshot every 10 s (7 kept: the
// last minute), every 10 minutes (7: the last hour) and every hour (25: the last day).
const (
	minuteEvery, minuteKeep = 10 * time.Second, 7
	hourEvery, hourKeep     = 10 * time.Minute, 7
	dayEvery, dayKeep       = time.Hour, 25
)

// item is one counter of the table: a value and a number of calls, added to on the hot path with two
// atomic adds, and three rings of snapshots taken by the broker's sampler.
type item struct {
	value, times atomic.Int64

	mu struct {
		sync.Mutex
		minute, hour, day ring
	}
}

// snapshot is the item's counters at one time.
type snapshot struct {
	at           time.Time
	value, times int64
}

// ring keeps the newest keep snapshots, oldest first.
type ring struct{ snaps []snapshot }

func (r *ring) add(s snapshot, keep int) {
	r.snaps = append(r.snaps, s)
	if len(r.snaps) > keep {
		r.snaps = append(r.snaps[:0], r.snaps[len(r.snaps)-keep:]...)
	}
}

// newItem starts an item born at now with a zero snapshot in every window, so that its first minute
// already has a rate (RocketMQ seeds an empty window the same way).
func newItem(now time.Time) *item {
	it := &item{}
	zero := snapshot{at: now}
	it.mu.minute.add(zero, minuteKeep)
	it.mu.hour.add(zero, hourKeep)
	it.mu.day.add(zero, dayKeep)
	return it
}

func (it *item) add(value, times int64) {
	it.value.Add(value)
	it.times.Add(times)
}

// data computes the three windows at now: from the oldest snapshot kept to the current counters (RocketMQ
// ends at its newest snapshot, up to one sampling period old; ending at now is fresher and measures the
// same thing).
func (it *item) data(now time.Time) protocol.BrokerStatsData {
	cur := snapshot{at: now, value: it.value.Load(), times: it.times.Load()}
	it.mu.Lock()
	defer it.mu.Unlock()
	return protocol.BrokerStatsData{StatsMinute: window(it.mu.minute, cur), StatsHour: window(it.mu.hour, cur),
		StatsDay: window(it.mu.day, cur)}
}

func window(r ring, cur snapshot) protocol.BrokerStatsItem {
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
func (it *item) sample(now time.Time) {
	cur := snapshot{at: now, value: it.value.Load(), times: it.times.Load()}
	it.mu.Lock()
	defer it.mu.Unlock()
	for _, w := range []struct {
		r     *ring
		every time.Duration
		keep  int
	}{{&it.mu.minute, minuteEvery, minuteKeep}, {&it.mu.hour, hourEvery, hourKeep},
		{&it.mu.day, dayEvery, dayKeep}} {
		if last := w.r.snaps[len(w.r.snaps)-1]; now.Sub(last.at) >= w.every {
			w.r.add(cur, w.keep)
		}
	}
}

// table is the broker's BrokerStatsManager: items created on first use, one lock-free map read per
// add once created. The two items a put adds to (TOPIC_PUT_NUMS, TOPIC_PUT_SIZE) live in the topic's
// topicPuts record, beside its RocketMQ 5 in counters, so that a put to one of thousands of topics reads
// one map (keyed by the topic's name) instead of four (measured: the four reads were 1.7 of the broker's
// 21 CPU seconds with 1,000 topics x 8 queues, against 0.3 with one topic). Every method may be called
// concurrently.
type table struct {
	items  metrics.PerKey[itemID, atomic.Pointer[item]] // every item but the topics' put items
	topics metrics.PerKey[string, topicPuts]
}

// topicPuts is everything a put to one topic counts: the in counters by message type, and the
// TOPIC_PUT_NUMS and TOPIC_PUT_SIZE items (nil until the first put).
type topicPuts struct {
	in         [numMessageTypes]inStats
	nums, size atomic.Pointer[item]
}

// isTopicPutItem reports the item names kept in a topic's topicPuts record rather than in items.
func isTopicPutItem(name string) bool { return name == topicPutNums || name == topicPutSize }

// item is the holder of a topic's put item named name, or nil for the other names.
func (p *topicPuts) item(name string) *atomic.Pointer[item] {
	switch name {
	case topicPutNums:
		return &p.nums
	case topicPutSize:
		return &p.size
	}
	return nil
}

func (t *table) add(name, key string, value, times int64) {
	addToItem(t.holder(name, key), value, times)
}

// holder is where the item of name and key is kept, made (empty) on first use; the pointer stays valid
// until the item's topic is forgotten (sample), and for ever for the broker-wide items.
func (t *table) holder(name, key string) *atomic.Pointer[item] {
	if isTopicPutItem(name) {
		return t.topicRecord(key).item(name)
	}
	return t.items.Get(itemID{name, key})
}

// topicRecord is the topic's record, made on first use with its own copy of the name, not the
// caller's (a request's substring: the key would keep its frame alive, and every later lookup
// would compare with its bytes from a cold line).
func (t *table) topicRecord(topic string) *topicPuts {
	if p, ok := t.topics.Lookup(topic); ok {
		return p
	}
	return t.topics.Get(strings.Clone(topic))
}

// addToItem adds to the item in p, creating the item on the first add.
func addToItem(p *atomic.Pointer[item], value, times int64) {
	it := p.Load()
	if it == nil {
		p.CompareAndSwap(nil, newItem(time.Now())) // a concurrent first add may win; its item is used
		it = p.Load()
	}
	it.add(value, times)
}

// get returns the item, or nil when nothing was ever added under name and key (RocketMQ then answers "not
// exist").
func (t *table) get(name, key string) *item {
	if isTopicPutItem(name) {
		if p, ok := t.topics.Lookup(key); ok {
			return p.item(name).Load()
		}
		return nil
	}
	p, ok := t.items.Lookup(itemID{name, key})
	if !ok {
		return nil
	}
	return p.Load()
}

// each calls f for every item that was added to, in no particular order.
func (t *table) each(f func(k itemID, it *item)) {
	t.items.Range(func(k itemID, p *atomic.Pointer[item]) bool {
		if it := p.Load(); it != nil {
			f(k, it)
		}
		return true
	})
	t.topics.Range(func(topic string, p *topicPuts) bool {
		for _, name := range [...]string{topicPutNums, topicPutSize} {
			if it := p.item(name).Load(); it != nil {
				f(itemID{name, topic}, it)
			}
		}
		return true
	})
}

// sample snapshots every item, and forgets those whose topic no longer exists (items keyed by topic or by
// topic@group, and the topics' records with their in counters; the cluster-wide items stay).
func (t *table) sample(now time.Time, topicExists func(string) bool) {
	t.items.Range(func(k itemID, _ *atomic.Pointer[item]) bool {
		if k.name != brokerPutNums && k.name != brokerGetNums && !topicExists(topicOf(k)) {
			t.items.Delete(k)
		}
		return true
	})
	t.topics.Range(func(topic string, _ *topicPuts) bool {
		if !topicExists(topic) {
			t.topics.Delete(topic)
		}
		return true
	})
	t.each(func(_ itemID, it *item) { it.sample(now) })
}

// topicOf is the topic an item counts for: its key, or the part before the last '@' of a topic@group key.
func topicOf(k itemID) string {
	switch k.name {
	case groupGetNums, groupGetSize, sendBackNums:
		if i := strings.LastIndexByte(k.key, '@'); i >= 0 {
			return k.key[:i]
		}
	}
	return k.key
}

// ItemData is the item named name under key (TOPIC_PUT_NUMS and the others above; key a topic,
// topic@group or the cluster) over the last minute, hour and day at now (VIEW_BROKER_STATS_DATA); false
// when nothing was ever counted under them.
func (s *Stats) ItemData(name, key string, now time.Time) (protocol.BrokerStatsData, bool) {
	it := s.items.get(name, key)
	if it == nil {
		return protocol.BrokerStatsData{}, false
	}
	return it.data(now), true
}

// Sample snapshots every item at now (the broker's sampler, every second) and forgets those whose topic
// topicExists denies (the cluster-wide ones stay).
func (s *Stats) Sample(now time.Time, topicExists func(string) bool) {
	s.items.sample(now, topicExists)
}
