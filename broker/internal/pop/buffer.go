package pop

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// The merge buffer (doc.go, "The merge buffer"): a pop's check point stays in memory, without a record, for
// up to popCkStayBufferTime. A pop acked within that time (the usual case: consumers ack in seconds) writes
// nothing to the revive log; one that is not gets its check point written then, in pop order with the
// queue's other pops, and its acks so far in one ack record after it. The group's pop offset passes a pop
// only once it is settled (acked, or its check point written: cursor.go), so a crash loses none of a
// buffered pop's messages: they are read again from the pop offset.

// closeFlushWait bounds how long Close writes the buffered check points of a term that ends.
const closeFlushWait = 5 * time.Second

// errCheckPointTaken: a pop's check point would have the key of one in flight (two pops of a queue from
// one offset within one millisecond, after an offset reset): the pop of that queue is refused.
var errCheckPointTaken = errors.New("pop: a check point of the same queue, start offset and pop time is in flight")

// recordPop records the check point of a pop of qs, so that acks find it and the revive service brings its
// messages back, and moves the cursor past it. It stays in the buffer when it may: the buffer is on and not
// full, and the pop starts at or past every check point of the queue with a record (after an offset reset
// back it may not: doc.go, "What survives what"). Otherwise the queue's buffered pops are written first, then
// it. qs.pop must be held.
func (s *Engine) recordPop(ctx context.Context, epoch uint64, qs *queueState, c *ckState) error {
	k := keyOf(&c.ck)
	s.st.mu.Lock()
	switch {
	case s.st.epoch != epoch:
		s.st.mu.Unlock()
		return ErrNotRunning
	case s.st.cks[k] != nil:
		s.st.mu.Unlock()
		return fmt.Errorf("%w: %s queue %d at %d, pop time %d", errCheckPointTaken, c.ck.Topic, c.ck.QueueID, c.ck.StartOffset, c.ck.PopTime)
	case s.o.Config.EnablePopBufferMerge && int64(s.st.buffered) < s.o.Config.PopCkMaxBufferSize &&
		c.ck.StartOffset >= qs.storedEnd:
		s.st.cks[k] = c
		qs.fifo = append(qs.fifo, c)
		qs.cursor = c.next
		s.st.buffered++
		s.st.mu.Unlock()
		return nil
	}
	s.st.mu.Unlock()
	if err := s.storeBuffered(ctx, epoch, qs, nil); err != nil {
		return err
	}
	return s.writeCheckPoint(ctx, c, func(err error) {
		if err != nil || s.st.epoch != epoch {
			return
		}
		s.st.cks[k] = c
		qs.fifo = append(qs.fifo, c)
		qs.cursor = c.next
		qs.storedEnd = max(qs.storedEnd, c.end())
		s.advanceLocked(qs)
	})
}

// storeBuffered writes the check points of the queue's buffered pops, in pop order, while more says so of
// the next one (nil: all of them). qs.pop must be held.
func (s *Engine) storeBuffered(ctx context.Context, epoch uint64, qs *queueState, more func(c *ckState) bool) error {
	for {
		s.st.mu.Lock()
		if s.st.epoch != epoch {
			s.st.mu.Unlock()
			return ErrNotRunning
		}
		var c *ckState
		for _, f := range qs.fifo {
			if !f.stored() && !f.storing && !f.done() {
				c = f
				break
			}
		}
		if c == nil || more != nil && !more(c) {
			s.st.mu.Unlock()
			return nil
		}
		c.storing = true
		s.st.mu.Unlock()
		if err := s.store(ctx, c); err != nil {
			return err
		}
	}
}

// store writes the record of c, a buffered check point (c.storing set), then one ack record of what was
// acked of it while it was buffered or being written.
func (s *Engine) store(ctx context.Context, c *ckState) error {
	err := s.writeCheckPoint(ctx, c, func(err error) {
		c.storing = false
		if err != nil || c.epoch != s.st.epoch {
			return
		}
		s.st.buffered--
		if c.queue != nil {
			c.queue.storedEnd = max(c.queue.storedEnd, c.end())
			s.advanceLocked(c.queue) // c is settled: it has its record
		}
	})
	if err != nil {
		return err
	}
	s.writeAcks(ctx, c)
	return nil
}

// storeExpired writes the check points that stayed popCkStayBufferTime in the buffer (the revive loop, each
// reviveInterval). A queue a pop reads now is left for the next round.
func (s *Engine) storeExpired(ctx context.Context, epoch uint64) error {
	stay := s.o.Config.PopCkStayBufferTime
	now := s.nowMs()
	expired := func(c *ckState) bool { return now-c.ck.PopTime >= stay }
	var queues []*queueState
	s.st.mu.Lock()
	for _, qs := range s.st.queues {
		for _, c := range qs.fifo {
			if !c.stored() && !c.storing && !c.done() {
				if expired(c) {
					queues = append(queues, qs)
				}
				break
			}
		}
	}
	s.st.mu.Unlock()
	var errs []error
	for _, qs := range queues {
		if !qs.pop.TryLock() {
			continue
		}
		err := s.storeBuffered(ctx, epoch, qs, expired)
		qs.pop.Unlock()
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// storeThrough writes the check point c (buffered, its message claimed for a change of invisible time) and
// before it every buffered pop of its queue, in pop order.
func (s *Engine) storeThrough(ctx context.Context, epoch uint64, c *ckState) error {
	if qs := c.queue; qs != nil {
		qs.pop.Lock()
		defer qs.pop.Unlock()
		if err := s.storeBuffered(ctx, epoch, qs, func(*ckState) bool { return !c.stored() }); err != nil {
			return err
		}
	}
	s.st.mu.Lock()
	alone := !c.stored() && !c.storing // not in its queue's pops any more (an offset reset): written alone
	if alone {
		c.storing = true
	}
	s.st.mu.Unlock()
	if alone {
		return s.store(ctx, c)
	}
	return nil
}

// flushBuffer writes every buffered check point, when a term ends (Close), so that the next term (here, or
// on the new master) neither reads their messages again at once nor brings back what was acked.
func (s *Engine) flushBuffer(ctx context.Context, epoch uint64) {
	s.st.mu.Lock()
	queues := make([]*queueState, 0, len(s.st.queues))
	for _, qs := range s.st.queues {
		queues = append(queues, qs)
	}
	s.st.mu.Unlock()
	for _, qs := range queues {
		qs.pop.Lock()
		err := s.storeBuffered(ctx, epoch, qs, nil)
		qs.pop.Unlock()
		if err != nil {
			s.o.Log.Warn("pop: write the buffered check points at the end of the term (their messages come back from the pop offset)", "err", err)
			return
		}
	}
}
