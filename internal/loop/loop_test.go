package loop

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rocketraft/rocketraft/internal/testutil"
)

// Every calls fn again and again until stop closes, and the WaitGroup then waits for its goroutine (Wait
// returns once the loop saw stop).
func TestEveryRunsUntilStopped(t *testing.T) {
	var (
		wg    sync.WaitGroup
		calls atomic.Int64
	)
	stop := make(chan struct{})
	Every(stop, &wg, time.Millisecond, func() { calls.Add(1) })
	testutil.WaitFor(t, 10*time.Second, "three calls", func() bool { return calls.Load() >= 3 })
	close(stop)
	wg.Wait()
}

// Wake leaves one signal pending however often it is called, and never blocks.
func TestWakeNeverBlocks(t *testing.T) {
	ch := make(chan struct{}, 1)
	for range 3 {
		Wake(ch)
	}
	if len(ch) != 1 {
		t.Fatalf("%d signals pending, want 1", len(ch))
	}
	<-ch
	Wake(ch)
	if len(ch) != 1 {
		t.Fatal("no signal after the pending one was taken")
	}
}
