package broker

import (
	"testing"
	"time"
)

// TestDelayLevelDueAt: a delay-level message that arrived while the service ran is due its level's delay
// after its arrival on the monotonic clock, whatever its tag code says; one that did not (loaded after a
// restart) is due by its tag code, never more than the delay ahead — the wall clock went back after it was
// stored — and never in the past. The head's due is computed once (levelLoop), so the bound holds: it used
// to be recomputed on every wake-up, which put the message off again and again until the wall clock caught
// up with its tag code (an hour, for a clock that went back an hour).
func TestDelayLevelDueAt(t *testing.T) {
	b := newLoopbackBroker(t, func(*Config) {})
	s := b.schedule
	const delay = 5 * time.Second
	now, mono := b.clock.Now().UnixMilli(), b.clock.Elapsed()

	// Stored an hour "ahead": at most the delay from now.
	if d := s.dueAt(1, 0, now+time.Hour.Milliseconds(), delay) - mono; d > delay+time.Second || d < delay-time.Second {
		t.Fatalf("tag code an hour ahead: due in %v, want about the level's %v", d, delay)
	}
	// Stored an hour "behind" (not seen arriving): due now.
	if d := s.dueAt(1, 1, now-time.Hour.Milliseconds(), delay) - b.clock.Elapsed(); d > 0 {
		t.Fatalf("tag code an hour behind: due in %v, want now", d)
	}
	// Seen arriving: the arrival decides, the tag code does not.
	s.arrived(1, 5)
	s.arrived(1, 6)
	at, ok := s.arrivalOf(1, 5)
	if !ok {
		t.Fatal("arrival of offset 5 not remembered")
	}
	if got := s.dueAt(1, 6, now-time.Hour.Milliseconds(), delay); got < at+delay {
		t.Fatalf("arrived at %v, due at %v: before its delay %v", at, got, delay)
	}
	if _, ok := s.arrivalOf(1, 5); ok {
		t.Fatal("arrival of offset 5 still remembered after offset 6 became the head")
	}
}
