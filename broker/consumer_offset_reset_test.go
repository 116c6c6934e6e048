package broker

import (
	"testing"
	"time"
)

// TestPendingResetsExpire: a reset no consumer takes up stops holding commits after resetHold, and a new
// reset replaces a pending one.
func TestPendingResetsExpire(t *testing.T) {
	var p pendingResets
	now := time.Unix(1700000000, 0)
	p.hold("G", "T", 0, 10, now)
	p.hold("G", "T", 0, 7, now) // replaces
	if !p.blocks("G", "T", 0, 10, now) || p.blocks("G", "T", 0, 7, now) || p.blocks("G", "T", 1, 10, now) || p.blocks("H", "T", 0, 10, now) {
		t.Fatal("blocks: want only the held queue's other offsets blocked")
	}
	p.pulled("G", "T", 0, 10, now) // not the reset's offset
	if !p.blocks("G", "T", 0, 10, now.Add(resetHold)) {
		t.Fatal("the reset ended before its hold or a pull at its offset")
	}
	if p.blocks("G", "T", 0, 10, now.Add(resetHold+time.Millisecond)) || p.count.Load() != 0 {
		t.Fatalf("past resetHold the reset still holds (%d pending)", p.count.Load())
	}
	p.hold("G", "T", 0, 3, now)
	p.pulled("G", "T", 0, 3, now)
	if p.blocks("G", "T", 0, 9, now) || p.count.Load() != 0 {
		t.Fatal("a pull at the reset offset did not end it")
	}
}
