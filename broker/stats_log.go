package broker

import (
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"time"

	"github.com/rocketraft/rocketraft/internal/logging"
)

// stats.log: RocketMQ's BrokerStatsManager prints, once a minute, one line per stats item with what it
// counted in that minute; operators read them and scripts grep them. The same lines here, from the counters
// the processors keep anyway (stats.go), on a logger tagged component=stats, which mqbroker routes to
// stats.log alone (internal/logging):
//
//	[TOPIC_PUT_NUMS] [TopicTest] Stats In One Minute, SUM: 120 TPS: 2.00 AVGPT: 1.00
//
//	item            key          SUM                              AVGPT = SUM / events
//	TOPIC_PUT_NUMS  topic        messages stored                  messages per put request
//	TOPIC_PUT_SIZE  topic        bytes of those records           bytes per put request
//	GROUP_GET_NUMS  topic@group  messages handed to the group     messages per pull answer
//	GROUP_GET_SIZE  topic@group  bytes of those records           bytes per pull answer
//	BROKER_PUT_NUMS cluster      messages stored, all topics      messages per put request
//	BROKER_GET_NUMS cluster      messages handed out, all groups  messages per pull answer
//
// TPS is SUM per second over the time since the previous line (a minute; since start-up for the first).
// Every item seen since start-up is printed each time, with SUM 0 when it was idle, as RocketMQ does.
// Options.StatsLogInterval shortens the minute for tests.

// statsLogState is what the last print saw, so the next prints the difference. Only the stats goroutine
// touches it.
type statsLogState struct {
	last time.Time
	prev map[string]statsSnap // "ITEM key" -> counters at the last print
}

type statsSnap struct{ sum, events int64 }

// startStatsLog prints the stats lines every Options.StatsLogInterval (a minute) until Close.
func (b *Broker) startStatsLog() {
	interval := b.opts.StatsLogInterval
	if interval <= 0 {
		interval = time.Minute
	}
	b.stats.statsLog = statsLogState{last: b.stats.boot, prev: map[string]statsSnap{}}
	log := b.log.With(logging.ComponentKey, logging.ComponentStats)
	runEvery(b.stop, &b.wg, interval, func() { b.printStats(log, time.Now()) })
}

// printStats writes one line per item: what it counted since the previous call.
func (b *Broker) printStats(log *slog.Logger, now time.Time) {
	st := &b.stats.statsLog
	elapsed := now.Sub(st.last)
	if elapsed <= 0 {
		return
	}
	cur := map[string]statsSnap{}
	var putMsgs, putReqs, getMsgs, getReqs int64
	b.stats.topics.Range(func(topic string, t *topicStats) bool {
		puts := t.puts.Load()
		if puts == 0 {
			return true // only pulled here (a slave, a topic without sends yet)
		}
		msgs := t.inMsgs.Load()
		cur["TOPIC_PUT_NUMS "+topic] = statsSnap{msgs, puts}
		cur["TOPIC_PUT_SIZE "+topic] = statsSnap{t.inBytes.Load(), puts}
		putMsgs += msgs
		putReqs += puts
		return true
	})
	b.stats.groups.Range(func(key string, g *groupGetStats) bool {
		gets, msgs := g.gets.Load(), g.msgs.Load()
		cur["GROUP_GET_NUMS "+key] = statsSnap{msgs, gets}
		cur["GROUP_GET_SIZE "+key] = statsSnap{g.bytes.Load(), gets}
		getMsgs += msgs
		getReqs += gets
		return true
	})
	cur["BROKER_PUT_NUMS "+b.cfg.BrokerClusterName] = statsSnap{putMsgs, putReqs}
	cur["BROKER_GET_NUMS "+b.cfg.BrokerClusterName] = statsSnap{getMsgs, getReqs}

	keys := make([]string, 0, len(cur))
	for k := range cur {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		item, key, _ := strings.Cut(k, " ")
		c, p := cur[k], st.prev[k]
		sum, events := c.sum-p.sum, c.events-p.events
		avg := 0.0
		if events > 0 {
			avg = float64(sum) / float64(events)
		}
		log.Info(fmt.Sprintf("[%s] [%s] Stats In One Minute, SUM: %d TPS: %.2f AVGPT: %.2f",
			item, key, sum, float64(sum)/elapsed.Seconds(), avg))
	}
	st.prev, st.last = cur, now
}
