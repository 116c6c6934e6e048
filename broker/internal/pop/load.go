package pop

import (
	"context"
	"fmt"
	"time"
)

// dispatchWait bounds how long a load waits for the store to dispatch what the CommitLog held when it began.
const dispatchWait = 30 * time.Second

// ensureLoaded reads the revive log once per term, before the term's first pop or ack (or revive) is
// served, and returns the term's epoch. The state of each check point read is what its records say; the
// group's pop offset of its queue is lifted past its messages, so a pop offset that lags behind the log (a
// crash before the offsets were persisted, an offset sync that had not reached this node) never hands out
// again a message that is in flight.
func (s *Engine) ensureLoaded(ctx context.Context) (uint64, error) {
	epoch := s.epoch()
	if s.loaded.Load() == epoch {
		return epoch, nil
	}
	s.loadMu.Lock()
	defer s.loadMu.Unlock()
	if s.loaded.Load() == epoch {
		return epoch, nil
	}
	if err := s.waitDispatched(ctx); err != nil {
		return epoch, err
	}
	all := make([]scanned, s.rlog.queues)
	for q := range s.rlog.queues {
		sc, err := s.rlog.scan(q)
		if err != nil {
			return epoch, err
		}
		all[q] = sc
	}
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	if s.st.epoch != epoch {
		return epoch, ErrNotRunning // a new term began meanwhile: its own load reads again
	}
	for q, sc := range all {
		s.st.revive[q].end = max(s.st.revive[q].end, sc.end)
		for k, c := range sc.cks {
			if s.st.cks[k] != nil {
				continue
			}
			c.epoch = epoch
			s.st.cks[k] = c
			gq := GroupQueue{Group: c.ck.CID, Topic: c.ck.Topic, QueueID: c.ck.QueueID}
			qs := s.st.queueLocked(gq)
			qs.storedEnd = max(qs.storedEnd, c.end())
			if s.o.Offsets.Query(gq.Group, gq.Topic, gq.QueueID) < c.end() {
				s.o.Offsets.Commit(gq.Group, gq.Topic, gq.QueueID, c.end())
			}
		}
	}
	s.loaded.Store(epoch)
	return epoch, nil
}

// waitDispatched waits until the store has dispatched what its CommitLog held now (the reput of a classic
// broker catches up after a restart; in the Raft mode the term begins once every earlier entry is applied).
func (s *Engine) waitDispatched(ctx context.Context) error {
	end := s.o.Store.MaxPhyOffset()
	if s.o.Store.DispatchedOffset() >= end {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, dispatchWait)
	defer cancel()
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for s.o.Store.DispatchedOffset() < end {
		select {
		case <-ctx.Done():
			return fmt.Errorf("pop: the store dispatched up to %d of %d in %v: the revive log is not read yet: %w",
				s.o.Store.DispatchedOffset(), end, dispatchWait, ctx.Err())
		case <-t.C:
		}
	}
	return nil
}
