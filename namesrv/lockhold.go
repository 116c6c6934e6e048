package namesrv

import (
	"sync/atomic"
	"time"
)

// lockHoldBounds are the upper bounds of the write-lock hold histogram: a registration that changes a
// thousand topics holds the lock for some tens of microseconds, one that changes nothing for a few.
var lockHoldBounds = []time.Duration{5 * time.Microsecond, 10 * time.Microsecond, 25 * time.Microsecond,
	50 * time.Microsecond, 100 * time.Microsecond, 200 * time.Microsecond, 500 * time.Microsecond, time.Millisecond,
	2500 * time.Microsecond, 5 * time.Millisecond, 10 * time.Millisecond, 25 * time.Millisecond,
	50 * time.Millisecond, 100 * time.Millisecond}

// lockHoldObserver counts how long the routing tables' write lock is held, in lockHoldBounds buckets
// (and one above them): lock-free, for the metrics endpoint (rocketmq_namesrv_route_write_lock_seconds)
// and the fleet simulator.
type lockHoldObserver struct {
	counts [15]atomic.Int64 // len(lockHoldBounds)+1
	sum    atomic.Int64     // nanoseconds
}

func (o *lockHoldObserver) observe(d time.Duration) {
	i := 0
	for i < len(lockHoldBounds) && d > lockHoldBounds[i] {
		i++
	}
	o.counts[i].Add(1)
	o.sum.Add(int64(d))
}

// LockHold is a snapshot of the write-lock hold histogram: counts per bucket of Bounds (not cumulative;
// the last count is above the last bound) and the sum of every hold.
type LockHold struct {
	Bounds []time.Duration
	Counts []int64
	Sum    time.Duration
}

// LockHold returns how long the routing tables' write lock has been held, since start.
func (m *RouteInfoManager) LockHold() LockHold {
	h := LockHold{Bounds: lockHoldBounds, Counts: make([]int64, len(m.lockHold.counts)),
		Sum: time.Duration(m.lockHold.sum.Load())}
	for i := range m.lockHold.counts {
		h.Counts[i] = m.lockHold.counts[i].Load()
	}
	return h
}
