package delay

import (
	"container/heap"
	"testing"
	"time"

	"github.com/rocketraft/rocketraft/internal/testutil"
)

// TestTimerSkipsRecordNoLongerStored: a timer message whose CommitLog record is gone (its file expired or
// was cleaned under disk pressure after the service loaded the unit) is skipped with a warning; it does not
// hold back the message due after it, which used to wait behind it for ever (retried at the head of the heap).
func TestTimerSkipsRecordNoLongerStored(t *testing.T) {
	h := newHarness(t)
	h.start()
	const topic = "TimerGone"
	loaded := func(queueOffset int64) func() bool {
		return func() bool {
			h.timer.mu.Lock()
			defer h.timer.mu.Unlock()
			for _, e := range h.timer.pending {
				if e.queueOffset == queueOffset {
					return true
				}
			}
			return false
		}
	}

	due := h.clock.nowMillis() + 10_000 // the clock stands still until the test moves it
	h.park(topic, 0, due)
	testutil.WaitFor(t, 20*time.Second, "the first timer message in the heap", loaded(0))
	// Its record goes: point the loaded unit at a position the CommitLog does not hold, as after the file
	// holding it was deleted (LookMessageByOffset answers store.ErrNotFound for both).
	gone := h.st.MaxPhyOffset() + 64<<20
	if _, err := h.st.LookMessageByOffset(gone); !recordGone(err) {
		t.Fatalf("offset %d: %v; want store.ErrNotFound", gone, err)
	}
	h.timer.mu.Lock()
	for i := range h.timer.pending {
		if h.timer.pending[i].queueOffset == 0 {
			h.timer.pending[i].phy = gone
		}
	}
	h.timer.mu.Unlock()

	h.park(topic, 0, due+200)
	testutil.WaitFor(t, 20*time.Second, "the second timer message in the heap", loaded(1))
	h.clock.advance(11 * time.Second)
	h.timer.Arrived() // the loop sleeps on the real clock: wake it to read the moved one
	testutil.WaitFor(t, 20*time.Second, "the second timer message delivered to its topic", func() bool { return h.delivered(topic) >= 1 })
	if n := h.delivered(topic); n != 1 {
		t.Fatalf("%d messages delivered to %s, want 1 (the first one's record is gone)", n, topic)
	}
	testutil.WaitFor(t, 20*time.Second, "both timer units past the checkpoint's low water", func() bool {
		return h.timer.Checkpoint().LowWater == 2
	})
}

// The timer's backlog: overdue entries count as due with the lateness of the oldest, the others as waiting
// and by how far ahead they are (RocketMQ's timer distribution bounds).
func TestTimerStatus(t *testing.T) {
	h := newHarness(t) // not started: nothing delivers the entries below
	now := time.Now()
	ms := now.UnixMilli()
	for _, due := range []int64{ms - 3000, ms - 10, ms + 2000, ms + 5000, ms + 59_000, ms + 3_600_000, ms + 90_000_000} {
		heap.Push(&h.timer.pending, timerEntry{due: due})
	}
	st := h.timer.Status(now)
	if st.Due != 2 || st.LateMillis != 3000 || st.Waiting != 5 {
		t.Fatalf("status %+v, want 2 due (3 s late), 5 waiting", st)
	}
	want := [len(TimerDistBounds)]int64{2, 1, 0, 0, 1, 0, 0, 0} // <=5 s: 2 s and 5 s; <=60 s; <=1 h; beyond 24 h: none
	if st.Ahead != want {
		t.Fatalf("distribution %v, want %v", st.Ahead, want)
	}
}
