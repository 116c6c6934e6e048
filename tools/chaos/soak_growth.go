package chaos

import (
	"fmt"
	"time"
)

// Sample is one reading of one server process's resources (soak_sample.go takes them). A figure that
// could not be read is -1 (the metrics endpoint of a paused process does not answer).
type Sample struct {
	At   time.Time `json:"at"`
	Proc string    `json:"proc"` // "namesrv", "master", "n0", ...
	Pid  int       `json:"pid"`
	// Role is "writer" or "follower" for a broker (as the cluster named its writer when sampled), "" for the
	// name server. A writer serves every client, a follower few: their figures are compared apart.
	Role string `json:"role,omitempty"`
	// RSSAnon is /proc/PID/status RssAnon (bytes): the heap, stacks and other private memory. RSSFile
	// (mapped file pages: CommitLog and ConsumeQueue pages touched, which grow with the data) is shown,
	// not judged.
	RSSAnon int64 `json:"rss_anon"`
	RSSFile int64 `json:"rss_file"`
	// Heap is go_memstats_heap_inuse_bytes and Goroutines go_goroutines from the process's /metrics.
	Heap       int64 `json:"heap"`
	Goroutines int64 `json:"goroutines"`
	// FDs counts /proc/PID/fd entries, and Maps the lines of /proc/PID/maps, except those naming a file of
	// the process's data folder that still exists: a store maps and opens one more file per CommitLog or
	// ConsumeQueue file it fills, which is growth by design. A deleted file still open or mapped counts.
	// StoreFDs and StoreMaps are the left-out ones, shown, not judged.
	FDs       int64 `json:"fds"`
	Maps      int64 `json:"maps"`
	StoreFDs  int64 `json:"store_fds"`
	StoreMaps int64 `json:"store_maps"`
}

// Bound is how far a figure may rise over its baseline: the larger of Pct percent of the baseline and Abs.
type Bound struct {
	Pct float64
	Abs int64
}

// Limit is the highest value within the bound of base.
func (b Bound) Limit(base int64) int64 {
	return base + max(int64(float64(base)*b.Pct/100), b.Abs)
}

func (b Bound) String() string {
	switch {
	case b.Pct == 0:
		return fmt.Sprintf("+%d", b.Abs)
	case b.Abs == 0:
		return fmt.Sprintf("+%g%%", b.Pct)
	}
	return fmt.Sprintf("+max(%g%%, %d)", b.Pct, b.Abs)
}

// GrowthBounds say how a run's samples are judged (JudgeGrowth).
type GrowthBounds struct {
	// Warmup: an incarnation's samples before its start plus Warmup are not judged; the first one at or
	// after it is the baseline. (The first incarnations start with the run; a restarted process starts again.)
	Warmup time.Duration
	// Last: a figure grew when each of the incarnation's Last last samples exceeds its bound over the
	// baseline (one high reading is a burst, not growth).
	Last int
	// MinAfter: an incarnation is judged only with at least MinAfter samples after its baseline (at least Last).
	MinAfter int

	RSSAnon    Bound
	Goroutines Bound
	FDs        Bound
	Maps       Bound
}

// DefaultGrowthBounds are make soak's bounds; docs/soak.md says where they come from (a measured run's
// spread, with room for what a fault leaves behind for a while: reconnecting clients, a slave's catch-up).
func DefaultGrowthBounds() GrowthBounds {
	return GrowthBounds{Warmup: 2 * time.Minute, Last: 3, MinAfter: 4,
		RSSAnon:    Bound{Pct: 30, Abs: 32 << 20},
		Goroutines: Bound{Pct: 20, Abs: 30},
		FDs:        Bound{Abs: 50},
		Maps:       Bound{Abs: 40}}
}

// Metric names of Growth.Metric.
const (
	MetricRSSAnon    = "rss-anon"
	MetricGoroutines = "goroutines"
	MetricFDs        = "fds"
	MetricMaps       = "maps"
)

// Incarnation is one process's life between two (re)starts, as the samples saw it, and its verdict.
type Incarnation struct {
	Proc     string
	Pid      int
	From, To time.Time // first and last sample
	Samples  int
	Judged   bool   // enough samples after the baseline
	Why      string // why not judged
	Baseline Sample
	LastAt   Sample // the last sample
	Growth   []Growth
}

// Growth is one figure of a judged incarnation.
type Growth struct {
	Metric string
	Base   int64 // the baseline sample's value
	Last   int64 // the lowest of the Last last samples
	Max    int64 // the highest after the baseline
	Limit  int64
	Grew   bool // Last > Limit
	Read   bool // false: too few readings of this figure to judge it (the endpoint did not answer)
}

// Grew lists the figures that grew beyond their bound, as "proc(pid) metric base->last (limit L)".
func (in Incarnation) Grew() []string {
	var out []string
	for _, g := range in.Growth {
		if g.Grew {
			out = append(out, fmt.Sprintf("%s(%d) %s %d->%d (limit %d)", in.Proc, in.Pid, g.Metric, g.Base, g.Last, g.Limit))
		}
	}
	return out
}

// Sample roles.
const (
	RoleWriter   = "writer"
	RoleFollower = "follower"
)

// JudgeGrowth splits samples (in time order) into incarnations by process and pid and judges each with
// enough samples. Only the samples from the incarnation's first plus b.Warmup on, in the role of its last
// sample, are compared (a Raft follower that became the leader serves every client now: its goroutines and
// connections are a leader's, to be compared with its own as leader): per figure, the baseline is the first
// of them, and the figure grew when every one of the b.Last last of them exceeds b's limit over it.
// Incarnations are returned in the order of their first sample.
func JudgeGrowth(samples []Sample, b GrowthBounds) []Incarnation {
	type key struct {
		proc string
		pid  int
	}
	var order []key
	by := map[key][]Sample{}
	for _, s := range samples {
		k := key{s.Proc, s.Pid}
		if _, ok := by[k]; !ok {
			order = append(order, k)
		}
		by[k] = append(by[k], s)
	}
	out := make([]Incarnation, 0, len(order))
	for _, k := range order {
		out = append(out, judgeIncarnation(by[k], b))
	}
	return out
}

func judgeIncarnation(ss []Sample, b GrowthBounds) Incarnation {
	in := Incarnation{Proc: ss[0].Proc, Pid: ss[0].Pid, From: ss[0].At, To: ss[len(ss)-1].At, Samples: len(ss),
		LastAt: ss[len(ss)-1]}
	role := ss[len(ss)-1].Role
	var comparable []Sample
	for _, s := range ss {
		if !s.At.Before(ss[0].At.Add(b.Warmup)) && s.Role == role {
			comparable = append(comparable, s)
		}
	}
	need := max(b.MinAfter, b.Last, 1)
	if len(comparable)-1 < need {
		in.Why = fmt.Sprintf("%d samples after the warm-up's baseline, %d needed", max(len(comparable)-1, 0), need)
		if role != "" {
			in.Why = fmt.Sprintf("%d samples as %s after the warm-up's baseline, %d needed", max(len(comparable)-1, 0), role, need)
		}
		return in
	}
	in.Judged, in.Baseline = true, comparable[0]
	after := comparable
	for _, m := range []struct {
		name  string
		get   func(Sample) int64
		bound Bound
	}{
		{MetricRSSAnon, func(s Sample) int64 { return s.RSSAnon }, b.RSSAnon},
		{MetricGoroutines, func(s Sample) int64 { return s.Goroutines }, b.Goroutines},
		{MetricFDs, func(s Sample) int64 { return s.FDs }, b.FDs},
		{MetricMaps, func(s Sample) int64 { return s.Maps }, b.Maps},
	} {
		in.Growth = append(in.Growth, judgeFigure(m.name, after, m.get, m.bound, max(b.Last, 1)))
	}
	return in
}

// judgeFigure judges one figure over the samples from the baseline on, skipping unread (-1) values: the
// baseline is the first value read, and at least last values after it are needed.
func judgeFigure(name string, ss []Sample, get func(Sample) int64, bound Bound, last int) Growth {
	g := Growth{Metric: name}
	var vals []int64
	for _, s := range ss {
		if v := get(s); v >= 0 {
			vals = append(vals, v)
		}
	}
	if len(vals) < 1+last {
		return g
	}
	g.Read, g.Base = true, vals[0]
	g.Limit = bound.Limit(g.Base)
	g.Last, g.Max = vals[len(vals)-1], vals[0]
	for _, v := range vals[1:] {
		g.Max = max(g.Max, v)
	}
	for _, v := range vals[len(vals)-last:] {
		g.Last = min(g.Last, v)
	}
	g.Grew = g.Last > g.Limit
	return g
}
