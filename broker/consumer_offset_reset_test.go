package broker

import (
	"testing"
	"time"
)

// TestPendingResetsExpire: a reset no consumer takes up stops holding commits after resetHold, and a new
// reset replaces a pending one.
func TestPendingResetsExpire(t *testing.T) {
	now := time.Unix(1700000000, 0)
	p := pendingResets{now: func() time.Time { return now }}
	p.hold("G", "T", 0, 10)
	p.hold("G", "T", 0, 7) // replaces
	if !p.blocks("G", "T", 0, 10) || p.blocks("G", "T", 0, 7) || p.blocks("G", "T", 1, 10) || p.blocks("H", "T", 0, 10) {
		t.Fatal("blocks: want only the held queue's other offsets blocked")
	}
	if p.pulled("G", "T", 0, 10, 10) || !p.pulled("G", "T", 0, 10, 7) { // a pull elsewhere: only the reset's offset may be committed
		t.Fatal("a pull elsewhere: its commit of another offset allowed, or of the reset's refused")
	}
	now = now.Add(resetHold)
	if !p.blocks("G", "T", 0, 10) {
		t.Fatal("the reset ended before its hold or a pull at its offset")
	}
	now = now.Add(time.Millisecond)
	if p.blocks("G", "T", 0, 10) || p.count.Load() != 0 {
		t.Fatalf("past resetHold the reset still holds (%d pending)", p.count.Load())
	}
	p.hold("G", "T", 0, 3)
	if !p.pulled("G", "T", 0, 3, 9) || p.blocks("G", "T", 0, 9) || p.count.Load() != 0 {
		t.Fatal("a pull at the reset offset did not end it")
	}
}
