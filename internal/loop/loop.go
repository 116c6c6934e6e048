// Package loop holds the two pieces of plumbing the broker's background services share: a function run on
// a ticker until a stop channel closes, on a goroutine the caller's WaitGroup tracks (so a Close that waits
// on the group waits for it), and the non-blocking wake-up of a loop that sleeps on a capacity-1 channel
// (a signal already pending absorbs the next).
package loop

import (
	"sync"
	"time"
)

// Every calls fn every interval on a goroutine tracked by wg, until stop is closed. A call of fn in
// progress when stop closes finishes; no call starts after the goroutine saw stop closed.
func Every(stop <-chan struct{}, wg *sync.WaitGroup, interval time.Duration, fn func()) {
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				fn()
			}
		}
	}()
}

// Wake signals ch (capacity 1) without blocking: a send that would block (a signal pending already) is
// dropped.
func Wake(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}
