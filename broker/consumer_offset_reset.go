package broker

import (
	"sync"
	"sync/atomic"
	"time"
)

// A reset that holds (mqadmin resetOffsetByTime while consumers of the group are online). The broker commits
// the new offsets and tells the consumers (RESET_CONSUMER_CLIENT_OFFSET); the official clients apply it about
// 10 s later (the Go client sleeps 10 s, then commits the new offsets and drops the queues, which its next
// rebalance takes up again at the broker's offset). Meanwhile they keep committing their old offsets (the
// periodic persist, every 5 s), and a commit of an old offset that reaches the broker after the client's
// commit of the new one undoes the reset for that queue: the group never reads those messages again (the
// admin test saw it for one queue of two). So, as RocketMQ 5's server-side reset does, the broker ignores a
// commit of any other offset by one of the group's consumers (UPDATE_CONSUMER_OFFSET on a connection that
// sent the group's heartbeat, or a pull's commit flag) for a queue with a reset pending, until a pull of that queue at the
// reset's offset shows a consumer took it up, or resetHold passes (a consumer that never comes back must
// not freeze the group's offsets); a new reset replaces a pending one. The commits ignored are answered
// SUCCESS, as RocketMQ does.

// resetHold bounds how long a reset keeps client commits off its queues: the client's 10 s, its
// rebalance interval (20 s) and a margin.
const resetHold = 60 * time.Second

// pendingResets are the resets waiting for a consumer to take them up, by "topic@group" and queue.
type pendingResets struct {
	count atomic.Int32     // entries in byKey; the hot paths look at it first and take no lock while it is 0
	now   func() time.Time // the clock (nil: time.Now); read only once something is pending
	mu    sync.Mutex
	byKey map[string]map[int32]pendingReset // guarded by mu
}

func (p *pendingResets) clock() time.Time {
	if p.now != nil {
		return p.now()
	}
	return time.Now()
}

type pendingReset struct {
	offset int64
	until  time.Time
}

// hold records a reset of group's queue of topic to offset, pending for resetHold.
func (p *pendingResets) hold(group, topic string, queueID int32, offset int64) {
	key := topic + offsetKeySep + group
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.byKey == nil {
		p.byKey = map[string]map[int32]pendingReset{}
	}
	q := p.byKey[key]
	if q == nil {
		q = map[int32]pendingReset{}
		p.byKey[key] = q
	}
	if _, ok := q[queueID]; !ok {
		p.count.Add(1)
	}
	q[queueID] = pendingReset{offset: offset, until: p.clock().Add(resetHold)}
}

// blocks reports whether a client's commit of offset for the queue is to be ignored: a reset of it to
// another offset is pending. An expired reset is dropped.
func (p *pendingResets) blocks(group, topic string, queueID int32, offset int64) bool {
	if p.count.Load() == 0 {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	r, ok := p.lookupLocked(topic+offsetKeySep+group, queueID, p.clock())
	return ok && r.offset != offset
}

// pulled notes a pull of the queue at offset, which ends a pending reset to that offset (a consumer
// took it up), and reports whether the pull's commit of commitOffset may be applied.
func (p *pendingResets) pulled(group, topic string, queueID int32, offset, commitOffset int64) bool {
	if p.count.Load() == 0 {
		return true
	}
	key := topic + offsetKeySep + group
	p.mu.Lock()
	defer p.mu.Unlock()
	r, ok := p.lookupLocked(key, queueID, p.clock())
	if ok && r.offset == offset {
		p.removeLocked(key, queueID)
		return true
	}
	return !ok || r.offset == commitOffset
}

// lookupLocked is the queue's pending reset, dropped (and not returned) once expired. p.mu must be held.
func (p *pendingResets) lookupLocked(key string, queueID int32, now time.Time) (pendingReset, bool) {
	r, ok := p.byKey[key][queueID]
	if ok && now.After(r.until) {
		p.removeLocked(key, queueID)
		return pendingReset{}, false
	}
	return r, ok
}

func (p *pendingResets) removeLocked(key string, queueID int32) {
	q := p.byKey[key]
	if _, ok := q[queueID]; !ok {
		return
	}
	delete(q, queueID)
	p.count.Add(-1)
	if len(q) == 0 {
		delete(p.byKey, key)
	}
}
