package chaos

import (
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rocketraft/rocketraft/internal/faultnet"
)

func testScheduleConfig(seed uint64, rounds int) ScheduleConfig {
	return ScheduleConfig{Seed: seed, Rounds: rounds, Kinds: Kinds, MinFor: time.Second, MaxFor: 5 * time.Second,
		MinGap: 2 * time.Second, MaxGap: 4 * time.Second, Delay: 100 * time.Millisecond, IOPS: DefaultSlowIOPS}
}

// TestScheduleIsSeededAndCoversEveryKind: the same seed draws the same schedule; each pass over the kinds
// takes every kind once before any repeats; lengths stay in their ranges.
func TestScheduleIsSeededAndCoversEveryKind(t *testing.T) {
	a, err := NewSchedule(testScheduleConfig(42, 2*len(Kinds)))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := NewSchedule(testScheduleConfig(42, 2*len(Kinds)))
	if a.String() != b.String() {
		t.Fatalf("same seed, two schedules:\n%s\n%s", a, b)
	}
	c, _ := NewSchedule(testScheduleConfig(43, 2*len(Kinds)))
	if a.String() == c.String() {
		t.Fatalf("seeds 42 and 43 drew the same schedule:\n%s", a)
	}
	for pass := range 2 {
		var got []string
		for _, f := range a.Faults[pass*len(Kinds) : (pass+1)*len(Kinds)] {
			got = append(got, f.Kind)
			if f.For < time.Second || f.For > 5*time.Second || f.Gap < 2*time.Second || f.Gap > 4*time.Second {
				t.Fatalf("fault %v out of its ranges", f)
			}
			if (f.Kind == DelayRepl) != (f.Delay > 0) {
				t.Fatalf("fault %v: delay set on the wrong kind", f)
			}
			if (f.Kind == DiskSlowWriter || f.Kind == DiskSlowFollower) != (f.IOPS > 0) {
				t.Fatalf("fault %v: IOPS set on the wrong kind", f)
			}
		}
		slices.Sort(got)
		want := slices.Sorted(slices.Values(Kinds))
		if !slices.Equal(got, want) {
			t.Fatalf("pass %d drew %v, want each of %v once", pass, got, want)
		}
	}
}

func TestScheduleConfigValidateNamesTheField(t *testing.T) {
	for _, tc := range []struct {
		mutate func(*ScheduleConfig)
		want   string
	}{
		{func(c *ScheduleConfig) { c.Kinds = []string{"kill-everything"} }, `unknown fault kind "kill-everything"`},
		{func(c *ScheduleConfig) { c.MaxFor = c.MinFor - 1 }, "fault length"},
		{func(c *ScheduleConfig) { c.MinGap = -1 }, "gap"},
		{func(c *ScheduleConfig) { c.Kinds = nil }, "no fault kinds"},
		{func(c *ScheduleConfig) { c.IOPS = 0 }, "IOPS"},
	} {
		c := testScheduleConfig(1, 3)
		tc.mutate(&c)
		if _, err := NewSchedule(c); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %v, want one naming %q", err, tc.want)
		}
	}
}

// TestOneWayDirection: the direction a one-way fault drops is the one into (or out of) the follower, from
// which end of each link it is: the dialer's bytes go Forward.
func TestOneWayDirection(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, tc := range []struct {
		proxy, node string
		inbound     bool
		want        faultnet.Direction
	}{
		{"ha:slave->master", "slave", true, faultnet.Back},
		{"ha:slave->master", "slave", false, faultnet.Forward},
		{"n0->n1", "n1", true, faultnet.Forward},
		{"n0->n1", "n1", false, faultnet.Back},
		{"n1->n2", "n1", true, faultnet.Back},
	} {
		p, err := faultnet.Listen(tc.proxy, "127.0.0.1:1", log)
		if err != nil {
			t.Fatal(err)
		}
		if got := oneWayDirection(p, &Node{Name: tc.node}, tc.inbound); got != tc.want {
			t.Errorf("%s, node %s, inbound %v: %v, want %v", tc.proxy, tc.node, tc.inbound, got, tc.want)
		}
		p.Close()
	}
}

// TestScheduleOneWayDrawsBothWays: a one-way fault's direction comes from the seed, and both are drawn.
func TestScheduleOneWayDrawsBothWays(t *testing.T) {
	c := testScheduleConfig(7, 40)
	c.Kinds = []string{OneWayRepl}
	s, err := NewSchedule(c)
	if err != nil {
		t.Fatal(err)
	}
	in := 0
	for _, f := range s.Faults {
		if f.Inbound {
			in++
		}
	}
	if in == 0 || in == len(s.Faults) {
		t.Fatalf("%d of %d one-way faults inbound: want both ways drawn", in, len(s.Faults))
	}
}
