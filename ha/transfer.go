package ha

import (
	"context"
	"sync"
	"time"

	"github.com/rocketraft/rocketraft/store"
)

// transferWaiter is one SYNC_MASTER put waiting for a slave to acknowledge its end offset.
type transferWaiter struct {
	need     int64
	deadline time.Time
	done     func(store.PutStatus)
}

// groupTransfer is RocketMQ's GroupTransferService: puts park a waiter; every time the slaves'
// acknowledged offset moves, one pass completes every waiter it covers, so one acknowledgement
// (a report per 32 KiB frame) answers all the puts it covers at once, as the flush group commit
// does for one fsync. Waiters past slaveTimeout complete with FLUSH_SLAVE_TIMEOUT.
type groupTransfer struct {
	timeout time.Duration
	acked   func() int64 // the best slave acknowledgement so far
	wake    chan struct{}

	mu struct {
		sync.Mutex
		pending []transferWaiter // in arrival order (near enough offset order)
		spare   []transferWaiter
		closed  bool
	}
}

func newGroupTransfer(timeout time.Duration, acked func() int64) *groupTransfer {
	return &groupTransfer{timeout: timeout, acked: acked, wake: make(chan struct{}, 1)}
}

func (g *groupTransfer) wakeup() { wake(g.wake) }

// add parks a waiter for need; done runs exactly once, at once when need is acknowledged
// already, else from the transfer goroutine (or Close). done must not block.
func (g *groupTransfer) add(need int64, done func(store.PutStatus)) {
	if g.acked() >= need {
		done(store.PutOK)
		return
	}
	g.mu.Lock()
	if g.mu.closed {
		g.mu.Unlock()
		done(g.finalStatus(need))
		return
	}
	g.mu.pending = append(g.mu.pending, transferWaiter{need: need, deadline: time.Now().Add(g.timeout), done: done})
	g.mu.Unlock()
	// The acknowledgement may have moved between the check and the append: the pass sees it.
	g.wakeup()
}

func (g *groupTransfer) finalStatus(need int64) store.PutStatus {
	if g.acked() >= need {
		return store.PutOK
	}
	return store.PutFlushSlaveTimeout
}

// run serves the waiters until ctx ends: on each acknowledgement, and on a tick that expires
// the waiters past their deadline.
func (g *groupTransfer) run(ctx context.Context) {
	tick := min(max(g.timeout/10, time.Millisecond), 100*time.Millisecond)
	t := time.NewTicker(tick)
	defer t.Stop()
	var ready []transferWaiter
	for {
		select {
		case <-ctx.Done():
			return
		case <-g.wake:
		case <-t.C:
		}
		ready = g.serve(time.Now(), ready[:0])
	}
}

// serve completes, outside the lock, every waiter that is acknowledged or expired. ready is
// scratch space, returned for reuse.
func (g *groupTransfer) serve(now time.Time, ready []transferWaiter) []transferWaiter {
	acked := g.acked()
	g.mu.Lock()
	if len(g.mu.pending) == 0 {
		g.mu.Unlock()
		return ready
	}
	keep := g.mu.spare[:0]
	for _, w := range g.mu.pending {
		if acked >= w.need || !now.Before(w.deadline) {
			ready = append(ready, w)
		} else {
			keep = append(keep, w)
		}
	}
	old := g.mu.pending
	g.mu.pending = keep
	clear(old)
	g.mu.spare = old[:0]
	g.mu.Unlock()
	for i, w := range ready {
		if acked >= w.need {
			w.done(store.PutOK)
		} else {
			w.done(store.PutFlushSlaveTimeout)
		}
		ready[i] = transferWaiter{}
	}
	return ready
}

// close completes every remaining waiter (OK when acknowledged by now) and refuses new ones.
func (g *groupTransfer) close() {
	g.mu.Lock()
	g.mu.closed = true
	waiters := g.mu.pending
	g.mu.pending = nil
	g.mu.Unlock()
	for _, w := range waiters {
		w.done(g.finalStatus(w.need))
	}
}

// pendingCount is the number of parked waiters.
func (g *groupTransfer) pendingCount() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.mu.pending)
}

func wake(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}
