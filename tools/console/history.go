package console

import (
	"sort"
	"sync"
	"time"
)

// TPSPoint is one sample of a broker's throughput.
type TPSPoint struct {
	T   int64   `json:"t"` // ms since the epoch
	In  float64 `json:"in"`
	Out float64 `json:"out"`
}

// LagPoint is one sample of a consumer group's total lag.
type LagPoint struct {
	T   int64 `json:"t"`
	Lag int64 `json:"lag"`
}

// TPSSeries is a broker's throughput over the history window.
type TPSSeries struct {
	Cluster    string     `json:"cluster"`
	BrokerName string     `json:"brokerName"`
	BrokerID   int64      `json:"brokerId"`
	Addr       string     `json:"addr"`
	Points     []TPSPoint `json:"points"`
}

// LagSeries is a consumer group's total lag over the history window.
type LagSeries struct {
	Group  string     `json:"group"`
	Points []LagPoint `json:"points"`
}

// TopicTPSSeries is a topic's throughput (its one-minute rate) over the history window.
type TopicTPSSeries struct {
	Topic  string     `json:"topic"`
	Points []TPSPoint `json:"points"`
}

// topicSeriesShown is how many topic series the history answers: the busiest.
const topicSeriesShown = 8

// history keeps the samples of the last window in memory: throughput by broker address and by topic, lag by
// group. A series whose newest point left the window is dropped. Safe for concurrent use.
type history struct {
	window time.Duration
	mu     struct {
		sync.Mutex
		tps    map[string]*TPSSeries      // by broker address
		topics map[string]*TopicTPSSeries // by topic
		lag    map[string]*LagSeries      // by group
	}
}

func newHistory(window time.Duration) *history {
	h := &history{window: window}
	h.mu.tps = map[string]*TPSSeries{}
	h.mu.topics = map[string]*TopicTPSSeries{}
	h.mu.lag = map[string]*LagSeries{}
	return h
}

// addTopicTPS records the throughput of each topic.
func (h *history) addTopicTPS(now time.Time, topics []TopicTPS) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, t := range topics {
		s := h.mu.topics[t.Topic]
		if s == nil {
			s = &TopicTPSSeries{Topic: t.Topic}
			h.mu.topics[t.Topic] = s
		}
		s.Points = append(s.Points, TPSPoint{T: now.UnixMilli(), In: t.InTPS, Out: t.OutTPS})
	}
	h.trimLocked(now)
}

// topicSnapshot copies the series of the topicSeriesShown topics with the highest rate in the window (in
// plus out), busiest first.
func (h *history) topicSnapshot() []TopicTPSSeries {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]TopicTPSSeries, 0, len(h.mu.topics))
	peak := map[string]float64{}
	for name, s := range h.mu.topics {
		for _, p := range s.Points {
			peak[name] = max(peak[name], p.In+p.Out)
		}
		out = append(out, TopicTPSSeries{Topic: name, Points: append([]TPSPoint(nil), s.Points...)})
	}
	sort.Slice(out, func(i, j int) bool {
		if peak[out[i].Topic] != peak[out[j].Topic] {
			return peak[out[i].Topic] > peak[out[j].Topic]
		}
		return out[i].Topic < out[j].Topic
	})
	return out[:min(len(out), topicSeriesShown)]
}

// addTPS records the throughput of every broker that answered.
func (h *history) addTPS(now time.Time, brokers []Broker) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, b := range brokers {
		if b.Error != "" {
			continue
		}
		s := h.mu.tps[b.Addr]
		if s == nil {
			s = &TPSSeries{Addr: b.Addr}
			h.mu.tps[b.Addr] = s
		}
		s.Cluster, s.BrokerName, s.BrokerID = b.Cluster, b.BrokerName, b.BrokerID
		s.Points = append(s.Points, TPSPoint{T: now.UnixMilli(), In: b.InTPS, Out: b.OutTPS})
	}
	h.trimLocked(now)
}

// addLag records the total lag of each group.
func (h *history) addLag(now time.Time, lags map[string]int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for g, lag := range lags {
		s := h.mu.lag[g]
		if s == nil {
			s = &LagSeries{Group: g}
			h.mu.lag[g] = s
		}
		s.Points = append(s.Points, LagPoint{T: now.UnixMilli(), Lag: lag})
	}
	h.trimLocked(now)
}

// trimLocked drops the points older than the window, and the series left empty. h.mu must be held.
func (h *history) trimLocked(now time.Time) {
	oldest := now.Add(-h.window).UnixMilli()
	for k, s := range h.mu.tps {
		if s.Points = since(s.Points, oldest, func(p TPSPoint) int64 { return p.T }); len(s.Points) == 0 {
			delete(h.mu.tps, k)
		}
	}
	for k, s := range h.mu.lag {
		if s.Points = since(s.Points, oldest, func(p LagPoint) int64 { return p.T }); len(s.Points) == 0 {
			delete(h.mu.lag, k)
		}
	}
	for k, s := range h.mu.topics {
		if s.Points = since(s.Points, oldest, func(p TPSPoint) int64 { return p.T }); len(s.Points) == 0 {
			delete(h.mu.topics, k)
		}
	}
}

// since is the tail of points (sorted by time t) at or after oldest.
func since[P any](points []P, oldest int64, t func(P) int64) []P {
	return points[sort.Search(len(points), func(i int) bool { return t(points[i]) >= oldest }):]
}

// snapshot copies the series, sorted: brokers by cluster, name, id; groups by name. With group != "" only
// that group's lag.
func (h *history) snapshot(group string) ([]TPSSeries, []LagSeries) {
	h.mu.Lock()
	defer h.mu.Unlock()
	tps := make([]TPSSeries, 0, len(h.mu.tps))
	for _, s := range h.mu.tps {
		c := *s
		c.Points = append([]TPSPoint(nil), s.Points...)
		tps = append(tps, c)
	}
	sort.Slice(tps, func(i, j int) bool {
		a, b := tps[i], tps[j]
		if a.Cluster != b.Cluster {
			return a.Cluster < b.Cluster
		}
		if a.BrokerName != b.BrokerName {
			return a.BrokerName < b.BrokerName
		}
		return a.BrokerID < b.BrokerID
	})
	lag := make([]LagSeries, 0, len(h.mu.lag))
	for g, s := range h.mu.lag {
		if group != "" && g != group {
			continue
		}
		lag = append(lag, LagSeries{Group: g, Points: append([]LagPoint(nil), s.Points...)})
	}
	sort.Slice(lag, func(i, j int) bool { return lag[i].Group < lag[j].Group })
	return tps, lag
}
