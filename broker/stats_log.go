package broker

import (
	"cmp"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/rocketraft/rocketraft/internal/logging"
	"github.com/rocketraft/rocketraft/internal/loop"
)

// stats.log: RocketMQ's BrokerStatsManager prints, once a minute, one line per stats item with what it
// counted in that minute; operators read them and scripts grep them. The same lines here, from the stats
// items VIEW_BROKER_STATS_DATA answers from (stats_items.go), on a logger tagged component=stats, which
// mqbroker routes to stats.log alone (internal/logging):
//
//	[TOPIC_PUT_NUMS] [TopicTest] Stats In One Minute, SUM: 120 TPS: 2.00 AVGPT: 1.00
//
//	item             key          SUM                                AVGPT = SUM / times
//	TOPIC_PUT_NUMS   topic        messages stored                    messages per put request
//	TOPIC_PUT_SIZE   topic        bytes of those records             bytes per put request
//	GROUP_GET_NUMS   topic@group  messages handed to the group       messages per pull answer
//	GROUP_GET_SIZE   topic@group  bytes of those records             bytes per pull answer
//	SNDBCK_PUT_NUMS  topic@group  messages the group sent back       1
//	BROKER_PUT_NUMS  cluster      messages stored, all topics        0 (counts no calls, as RocketMQ)
//	BROKER_GET_NUMS  cluster      messages handed out, all groups    0
//
// TPS is SUM per second over the time since the previous line (a minute; since start-up for the first).
// Every item seen since start-up is printed each time, with SUM 0 when it was idle, as RocketMQ does; items
// of deleted topics go with the stats table's next sample. Options.StatsLogInterval shortens the minute for
// tests.

// statsLogCount is an item's counters at the last print.
type statsLogCount struct{ value, times int64 }

// startStatsLog prints the stats lines every Options.StatsLogInterval (a minute) until Close.
func (b *Broker) startStatsLog() {
	interval := b.opts.StatsLogInterval
	if interval <= 0 {
		interval = time.Minute
	}
	log := b.log.With(logging.ComponentKey, logging.ComponentStats)
	last, prev := b.stats.boot, map[statsKey]statsLogCount{} // only the stats goroutine touches them
	loop.Every(b.stop, &b.wg, interval, func() {
		now := time.Now()
		prev = b.printStats(log, now.Sub(last), prev)
		last = now
	})
}

// printStats writes one line per item: what it counted since the previous call (elapsed ago), whose
// counters were prev. It returns the counters now.
func (b *Broker) printStats(log *slog.Logger, elapsed time.Duration, prev map[statsKey]statsLogCount) map[statsKey]statsLogCount {
	if elapsed <= 0 {
		return prev
	}
	cur := map[statsKey]statsLogCount{}
	b.stats.items.each(func(k statsKey, it *statsItem) {
		cur[k] = statsLogCount{it.value.Load(), it.times.Load()}
	})
	keys := make([]statsKey, 0, len(cur))
	for k := range cur {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(x, y statsKey) int { return cmp.Or(cmp.Compare(x.name, y.name), cmp.Compare(x.key, y.key)) })
	for _, k := range keys {
		c, p := cur[k], prev[k]
		sum, times := c.value-p.value, c.times-p.times
		avg := 0.0
		if times > 0 {
			avg = float64(sum) / float64(times)
		}
		log.Info(fmt.Sprintf("[%s] [%s] Stats In One Minute, SUM: %d TPS: %.2f AVGPT: %.2f",
			k.name, k.key, sum, float64(sum)/elapsed.Seconds(), avg))
	}
	return cur
}
