package delay

import (
	"log/slog"
	"testing"
	"time"

	"github.com/rocketraft/rocketraft/internal/testutil"
)

// TestDelayLevelDueAt: a delay-level message that arrived while the service ran is due its level's delay
// after its arrival on the monotonic clock, whatever its tag code says; one that did not (loaded after a
// restart) is due by its tag code, never more than the delay ahead — the wall clock went back after it was
// stored — and never in the past. The head's due is computed once (levelLoop), so the bound holds: it used
// to be recomputed on every wake-up, which put the message off again and again until the wall clock caught
// up with its tag code (an hour, for a clock that went back an hour).
func TestDelayLevelDueAt(t *testing.T) {
	clock := newTestClock()
	clock.advance(time.Minute)
	s := NewSchedule(ScheduleOptions{Clock: clock, Log: testutil.Logger(t, slog.LevelInfo), Levels: testLevels,
		Dir: t.TempDir(), PersistEvery: time.Hour}) // not started: dueAt and Arrived read no store
	const delay = 5 * time.Second
	now, mono := clock.nowMillis(), clock.Elapsed()

	// Stored an hour "ahead": at most the delay from now.
	if d := s.dueAt(1, 0, now+time.Hour.Milliseconds(), delay) - mono; d != delay {
		t.Fatalf("tag code an hour ahead: due in %v, want the level's %v", d, delay)
	}
	// Stored 2 s ago, not seen arriving: due by its tag code (the store time plus the delay), 3 s from now.
	if d := s.dueAt(1, 1, now+3000, delay) - mono; d != 3*time.Second {
		t.Fatalf("tag code 3 s ahead: due in %v, want 3s", d)
	}
	// Stored an hour "behind": due now.
	if d := s.dueAt(1, 2, now-time.Hour.Milliseconds(), delay) - mono; d != 0 {
		t.Fatalf("tag code an hour behind: due in %v, want now", d)
	}
	// Seen arriving: the arrival decides, the tag code does not.
	s.Arrived(1, 5)
	at := clock.Elapsed()
	clock.advance(time.Second)
	s.Arrived(1, 6)
	if got, ok := s.arrivalOf(1, 5); !ok || got != at {
		t.Fatalf("arrival of offset 5: %v %v, want %v", got, ok, at)
	}
	clock.advance(time.Hour) // the wall clock goes with it: the tag code would make it due at once
	if got := s.dueAt(1, 6, now-time.Hour.Milliseconds(), delay); got != at+time.Second+delay {
		t.Fatalf("arrived at %v, due at %v: want its delay %v after the arrival", at+time.Second, got, delay)
	}
	if _, ok := s.arrivalOf(1, 5); ok {
		t.Fatal("arrival of offset 5 still remembered after offset 6 became the head")
	}
}
