package stats

import (
	"cmp"
	"fmt"
	"log/slog"
	"slices"
	"time"
)

// stats.log: RocketMQ's BrokerStatsManager prints, once a minute, one line per stats item with what it
// counted in that minute; operators read them and scripts grep them. The same lines here (LogWriter), from
// the stats items VIEW_BROKER_STATS_DATA answers from (items.go), on the logger the broker gives, tagged
// component=stats, which mqbroker routes to stats.log alone (internal/logging):
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
// of deleted topics go with the stats table's next sample. The broker's Options.StatsLogInterval shortens
// the minute for tests.

// logCount is an item's counters at the last print.
type logCount struct{ value, times int64 }

// LogWriter writes the stats.log lines: each Write, one line per item with what it counted since the
// previous Write (since the broker started, for the first). One goroutine calls Write.
type LogWriter struct {
	s    *Stats
	log  *slog.Logger
	last time.Time
	prev map[itemID]logCount
}

// NewLogWriter returns a LogWriter that prints on log.
func (s *Stats) NewLogWriter(log *slog.Logger) *LogWriter {
	return &LogWriter{s: s, log: log, last: s.boot, prev: map[itemID]logCount{}}
}

// Write prints the lines at now.
func (w *LogWriter) Write(now time.Time) {
	w.prev = w.print(now.Sub(w.last), w.prev)
	w.last = now
}

// print writes one line per item: what it counted since the previous call (elapsed ago), whose counters
// were prev. It returns the counters now.
func (w *LogWriter) print(elapsed time.Duration, prev map[itemID]logCount) map[itemID]logCount {
	if elapsed <= 0 {
		return prev
	}
	cur := map[itemID]logCount{}
	w.s.items.each(func(k itemID, it *item) {
		cur[k] = logCount{it.value.Load(), it.times.Load()}
	})
	keys := make([]itemID, 0, len(cur))
	for k := range cur {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(x, y itemID) int { return cmp.Or(cmp.Compare(x.name, y.name), cmp.Compare(x.key, y.key)) })
	for _, k := range keys {
		c, p := cur[k], prev[k]
		sum, times := c.value-p.value, c.times-p.times
		avg := 0.0
		if times > 0 {
			avg = float64(sum) / float64(times)
		}
		w.log.Info(fmt.Sprintf("[%s] [%s] Stats In One Minute, SUM: %d TPS: %.2f AVGPT: %.2f",
			k.name, k.key, sum, float64(sum)/elapsed.Seconds(), avg))
	}
	return cur
}
