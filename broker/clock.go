package broker

import (
	"time"
)

// Clock is the time source of the services that act on time: the timer and the delay levels
// (broker/internal/delay), the transaction check (broker/internal/txcheck), and the put path that turns a relative delay (TIMER_DELAY_SEC, TIMER_DELAY_MS) into a
// delivery time. Options.Clock injects one (a test steps it); nil is the system's. Both methods may be
// called from any goroutine.
type Clock interface {
	// Now is the wall clock. It may step forward or back at any time (settimeofday, an NTP step, a VM
	// restored from a snapshot); the services never compare two of its readings with each other.
	Now() time.Time
	// Elapsed is the time since a fixed point of this clock's choosing on a clock that never steps
	// (CLOCK_MONOTONIC: it follows NTP's rate corrections, not its steps). It never goes back.
	Elapsed() time.Duration
}

// systemClock is the process's clocks: time.Now's wall reading and its monotonic reading.
type systemClock struct{ start time.Time }

func newSystemClock() systemClock { return systemClock{start: time.Now()} }

func (c systemClock) Now() time.Time         { return time.Now().Round(0) }
func (c systemClock) Elapsed() time.Duration { return time.Since(c.start) }

// steadyClock is wall time that does not step: the wall clock as read once, when the broker started
// (New), plus the time elapsed on the monotonic clock since. A step of the wall clock after the start is
// not followed until the broker starts again; a rate correction is. The delivery times the services
// compare with it are wall times (stored timer properties, producers' born timestamps), so this is what
// the package doc's "Clocks" section says happens on a jump.
type steadyClock struct {
	c     Clock
	wall0 time.Time
	mono0 time.Duration
}

func newSteadyClock(c Clock) *steadyClock {
	s := &steadyClock{c: c}
	s.wall0, s.mono0 = c.Now(), c.Elapsed()
	return s
}

// Now is the steady wall time.
func (s *steadyClock) Now() time.Time { return s.wall0.Add(s.c.Elapsed() - s.mono0) }

// Elapsed is the underlying clock's monotonic time.
func (s *steadyClock) Elapsed() time.Duration { return s.c.Elapsed() }

// Skew is how far the wall clock is from the steady time now (positive: the wall clock is ahead): the sum
// of the steps since the start.
func (s *steadyClock) Skew() time.Duration { return s.c.Now().Sub(s.Now()) }
