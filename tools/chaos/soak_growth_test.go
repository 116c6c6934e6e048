package chaos

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

// series makes one incarnation's samples, one every 30 s from t0, with goroutines from gs and the other
// figures flat (rss 100 MiB, 40 fds, 300 maps) unless tweak changes them.
func series(proc string, pid int, t0 time.Time, gs []int64, tweak func(i int, s *Sample)) []Sample {
	var out []Sample
	for i, g := range gs {
		s := Sample{At: t0.Add(time.Duration(i) * 30 * time.Second), Proc: proc, Pid: pid,
			RSSAnon: 100 << 20, Heap: 20 << 20, Goroutines: g, FDs: 40, Maps: 300}
		if tweak != nil {
			tweak(i, &s)
		}
		out = append(out, s)
	}
	return out
}

func TestBoundLimit(t *testing.T) {
	for _, c := range []struct {
		b    Bound
		base int64
		want int64
	}{
		{Bound{Pct: 20, Abs: 30}, 100, 130},   // 20 % is 20: the absolute floor wins
		{Bound{Pct: 20, Abs: 30}, 1000, 1200}, // 20 % is 200
		{Bound{Abs: 50}, 7, 57},
		{Bound{Pct: 10}, 0, 0},
	} {
		if got := c.b.Limit(c.base); got != c.want {
			t.Errorf("%v.Limit(%d) = %d, want %d", c.b, c.base, got, c.want)
		}
	}
}

func TestJudgeGrowth(t *testing.T) {
	t0 := time.Date(2026, 12, 3, 4, 0, 0, 0, time.UTC)
	b := GrowthBounds{Warmup: time.Minute, Last: 3, MinAfter: 4,
		RSSAnon: Bound{Pct: 30, Abs: 32 << 20}, Goroutines: Bound{Pct: 20, Abs: 30}, FDs: Bound{Abs: 50}, Maps: Bound{Abs: 40}}
	type want struct {
		judged bool
		grew   []string // metrics that grew
	}
	for _, c := range []struct {
		name    string
		samples []Sample
		want    []want // per incarnation, in order
	}{
		{"flat", series("n0", 1, t0, []int64{100, 150, 200, 200, 201, 199, 200}, nil),
			[]want{{judged: true}}},
		{"warm-up growth is not growth", series("n0", 1, t0, []int64{10, 90, 200, 200, 200, 200, 200}, nil),
			[]want{{judged: true}}},
		{"steady goroutine growth", series("n0", 1, t0, []int64{100, 100, 200, 230, 260, 290, 320}, nil),
			[]want{{judged: true, grew: []string{MetricGoroutines}}}},
		{"one spike at the end is not growth", series("n0", 1, t0, []int64{100, 100, 200, 200, 200, 200, 900}, nil),
			[]want{{judged: true}}},
		{"growth that came back down", series("n0", 1, t0, []int64{100, 100, 200, 400, 400, 200, 200, 200}, nil),
			[]want{{judged: true}}},
		{"exactly at the limit", series("n0", 1, t0, []int64{100, 100, 200, 240, 240, 240, 240}, nil),
			[]want{{judged: true}}},
		{"one past the limit", series("n0", 1, t0, []int64{100, 100, 200, 241, 241, 241, 241}, nil),
			[]want{{judged: true, grew: []string{MetricGoroutines}}}},
		{"fds and maps leak", series("n0", 1, t0, []int64{100, 100, 100, 100, 100, 100, 100}, func(i int, s *Sample) {
			s.FDs += int64(i) * 30
			s.Maps += int64(i) * 30
		}), []want{{judged: true, grew: []string{MetricFDs, MetricMaps}}}},
		{"rss grows by 40 %", series("n0", 1, t0, []int64{100, 100, 100, 100, 100, 100, 100}, func(i int, s *Sample) {
			if i >= 4 {
				s.RSSAnon = 140 << 20
			}
		}), []want{{judged: true, grew: []string{MetricRSSAnon}}}},
		{"too short to judge", series("n0", 1, t0, []int64{100, 100, 100, 100, 100}, nil),
			[]want{{judged: false}}},
		{"unread goroutines are skipped", series("n0", 1, t0, []int64{100, 100, 200, -1, 300, -1, 300, 300}, nil),
			[]want{{judged: true, grew: []string{MetricGoroutines}}}},
		{"a restart is a new incarnation with its own baseline",
			append(series("master", 1, t0, []int64{100, 100, 200, 200, 200, 200, 200}, nil),
				series("master", 2, t0.Add(4*time.Minute), []int64{10, 50, 120, 120, 120, 120, 120}, nil)...),
			[]want{{judged: true}, {judged: true}}},
		{"a follower that became the writer is compared with its samples as writer",
			series("n1", 1, t0, []int64{100, 100, 100, 100, 140, 140, 140, 141, 140}, func(i int, s *Sample) {
				s.Role = RoleFollower
				if i >= 4 {
					s.Role = RoleWriter
				}
			}), []want{{judged: true}}},
		{"the same figures with no role are growth",
			series("n1", 1, t0, []int64{100, 100, 100, 100, 140, 140, 140, 141, 140}, nil),
			[]want{{judged: true, grew: []string{MetricGoroutines}}}},
		{"a writer's leak is seen across a spell as follower",
			series("n1", 1, t0, []int64{100, 100, 140, 140, 100, 100, 180, 180, 180}, func(i int, s *Sample) {
				s.Role = RoleWriter
				if i == 4 || i == 5 {
					s.Role = RoleFollower
				}
			}), []want{{judged: true, grew: []string{MetricGoroutines}}}},
		{"the writer's role came too late to judge",
			series("n1", 1, t0, []int64{100, 100, 100, 100, 100, 100, 140, 140, 140}, func(i int, s *Sample) {
				s.Role = RoleFollower
				if i >= 6 {
					s.Role = RoleWriter
				}
			}), []want{{judged: false}}},
		{"a leak in the restarted incarnation only",
			append(series("master", 1, t0, []int64{100, 100, 200, 200, 200, 200, 200}, nil),
				series("master", 2, t0.Add(4*time.Minute), []int64{10, 50, 120, 200, 250, 300, 350}, nil)...),
			[]want{{judged: true}, {judged: true, grew: []string{MetricGoroutines}}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := JudgeGrowth(c.samples, b)
			if len(got) != len(c.want) {
				t.Fatalf("%d incarnations, want %d: %+v", len(got), len(c.want), got)
			}
			for i, in := range got {
				var grew []string
				for _, g := range in.Growth {
					if g.Grew {
						grew = append(grew, g.Metric)
					}
				}
				if in.Judged != c.want[i].judged || !reflect.DeepEqual(grew, c.want[i].grew) {
					t.Errorf("incarnation %d (%s pid %d): judged %v (%s), grew %v; want judged %v, grew %v",
						i, in.Proc, in.Pid, in.Judged, in.Why, grew, c.want[i].judged, c.want[i].grew)
				}
				if len(grew) > 0 && !strings.Contains(strings.Join(in.Grew(), " "), grew[0]) {
					t.Errorf("Grew() = %v does not name %s", in.Grew(), grew[0])
				}
			}
		})
	}
}
