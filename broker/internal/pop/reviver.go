package pop

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/rocketraft/rocketraft/message"
	"github.com/rocketraft/rocketraft/protocol"
	"github.com/rocketraft/rocketraft/store"
)

// The revive service: every reviveInterval it brings back the messages of the check points whose invisible
// time passed and are not acked (with a record or still in the merge buffer), writes the check points that
// stayed popCkStayBufferTime in the buffer (buffer.go), and stores each revive queue's revive offset.

// reviveLoop runs until ctx ends.
func (s *Engine) reviveLoop(ctx context.Context) {
	t := time.NewTicker(ms(s.o.Config.ReviveInterval))
	defer t.Stop()
	for {
		if epoch, err := s.ensureLoaded(ctx); err != nil {
			if ctx.Err() == nil {
				s.o.Log.Warn("pop: read the revive log", "err", err)
			}
		} else {
			if err := s.revive(ctx); err != nil && ctx.Err() == nil {
				s.o.Log.Warn("pop revive", "err", err)
			}
			if err := s.storeExpired(ctx, epoch); err != nil && ctx.Err() == nil {
				s.o.Log.Warn("pop: write buffered check points", "err", err)
			}
			s.commitReviveOffsets()
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// dueCheckPoint is a check point whose invisible time passed and the messages of it the revive service
// claimed.
type dueCheckPoint struct {
	c       *ckState
	claimed uint32
}

// revive redelivers the messages in flight of every check point whose invisible time passed: each to the
// group's retry topic, or its dead-letter topic once its attempts are spent. A redelivered message is acked
// in its check point (one ack record for them when it has a record).
func (s *Engine) revive(ctx context.Context) error {
	now := s.nowMs()
	var due []dueCheckPoint
	s.st.mu.Lock()
	for _, c := range s.st.cks {
		if c.ck.ReviveTime() <= now && !c.storing {
			if m := c.inFlight(); m != 0 {
				c.pending |= m
				due = append(due, dueCheckPoint{c, m})
			}
		}
	}
	s.st.mu.Unlock()
	slices.SortFunc(due, func(a, b dueCheckPoint) int {
		return cmp.Or(cmp.Compare(a.c.ck.PopTime, b.c.ck.PopTime), cmp.Compare(a.c.at, b.c.at))
	})
	var failed error
	for _, d := range due {
		if failed != nil || ctx.Err() != nil {
			s.unclaim(d)
			continue
		}
		var revived uint32
		for i := range d.c.ck.QueueOffsetDiff {
			if d.claimed&(1<<i) == 0 {
				continue
			}
			if err := s.redeliver(ctx, &d.c.ck, d.c.offset(i)); err != nil {
				failed = err
				break
			}
			revived |= 1 << i
		}
		s.reviveSettle(ctx, d, revived)
	}
	return failed
}

// reviveSettle acks the redelivered messages of d in its check point (one ack record of them when it has a
// record) and lets go of the rest of the claim.
func (s *Engine) reviveSettle(ctx context.Context, d dueCheckPoint, revived uint32) {
	c := d.c
	s.st.mu.Lock()
	c.pending &^= d.claimed
	c.acked |= revived
	s.st.mu.Unlock()
	// Its record may have been written meanwhile (buffer.go), after the acks it carries were counted.
	s.writeAcks(ctx, c)
}

// writeAcks writes one ack record of what is acked of c and not in the log yet, when c has a record, and
// forgets c once done. An ack record that cannot be written leaves the acks in memory: after a restart their
// messages come back once more.
func (s *Engine) writeAcks(ctx context.Context, c *ckState) {
	s.st.mu.Lock()
	var m uint32
	if c.stored() && !c.storing {
		m = c.acked &^ (c.written | c.writing)
		c.writing |= m
	}
	s.st.mu.Unlock()
	var err error
	if m != 0 {
		if err = s.rlog.writeAck(ctx, c.rq, s.ackOf(c, m), s.nowMs()); err != nil {
			s.o.Log.Warn("pop: ack record", "group", c.ck.CID, "topic", c.ck.Topic, "queue", c.ck.QueueID, "err", err)
		}
	}
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	c.writing &^= m
	if err == nil {
		c.written |= m
	}
	s.finishLocked(c)
}

func (s *Engine) unclaim(d dueCheckPoint) {
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	d.c.pending &^= d.claimed
}

// redeliver copies the message at off of the check point's queue to the group's retry topic with one more
// reconsume time, or to %DLQ%<group> when it was delivered the group's retryMaxTimes + 1 times. A message
// whose record is gone (expired files) is skipped; one not visible yet (Raft mode) is an error, so the claim is
// let go and the message read again on the next round.
func (s *Engine) redeliver(ctx context.Context, ck *protocol.PopCheckPoint, off int64) error {
	unit, err := s.o.Store.ConsumeQueueUnit(ck.Topic, ck.QueueID, off)
	if err != nil {
		s.o.Log.Warn("pop revive: message gone", "topic", ck.Topic, "queue", ck.QueueID, "offset", off, "err", err)
		return nil
	}
	m, err := s.o.Store.LookMessageByOffset(unit.PhysicalOffset)
	if errors.Is(err, store.ErrNotVisibleYet) {
		return fmt.Errorf("pop revive: read %s/%d offset %d: %w", ck.Topic, ck.QueueID, off, err) // retried
	}
	if err != nil {
		s.o.Log.Warn("pop revive: message gone", "topic", ck.Topic, "queue", ck.QueueID, "offset", off, "err", err)
		return nil
	}
	var out *message.Message
	if m.ReconsumeTimes >= s.o.MaxAttempts(ck.CID) {
		if out, err = s.o.DeadLetter(ck.CID, m); err != nil {
			return err
		}
	} else {
		topic := ck.Topic
		if protocol.RetryMark(topic) == protocol.RetryMarkNormal {
			topic = s.RetryTopic(ck.Topic, ck.CID)
		}
		if err := s.o.EnsureTopic(topic, 1); err != nil {
			return err
		}
		o := m.Message
		o.Topic, o.QueueID, o.ReconsumeTimes = topic, 0, m.ReconsumeTimes+1
		o.Properties = message.EditProperties(o.Properties, func(p map[string]string) {
			if _, ok := p[message.PropertyFirstPopTime]; !ok {
				p[message.PropertyFirstPopTime] = strconv.FormatInt(ck.PopTime, 10)
			}
			if _, ok := p[message.PropertyRetryTopic]; !ok && protocol.RetryMark(ck.Topic) == protocol.RetryMarkNormal {
				p[message.PropertyRetryTopic] = ck.Topic // the topic first sent to, for the dead-letter copy
			}
			delete(p, message.PropertyPopCK)
		})
		out = &o
	}
	_, err = s.o.Put(ctx, out)
	s.counters.reviveRetry.Get(popMetricKey{group: ck.CID, topic: ck.Topic, status: putStatus(err)}).Add(1)
	if err != nil {
		return fmt.Errorf("pop revive: put %s: %w", out.Topic, err)
	}
	return nil
}

// commitReviveOffsets stores each revive queue's revive offset: its oldest check point in flight with a
// record, else past its last record known; never past a check point being written.
func (s *Engine) commitReviveOffsets() {
	s.st.mu.Lock()
	offs := make([]int64, len(s.st.revive))
	for q := range s.st.revive {
		rs := &s.st.revive[q]
		offs[q] = rs.end
		for _, from := range rs.writing {
			offs[q] = min(offs[q], from)
		}
	}
	for _, c := range s.st.cks {
		if c.stored() && int(c.rq) < len(offs) {
			offs[c.rq] = min(offs[c.rq], c.at)
		}
	}
	s.st.mu.Unlock()
	for q, off := range offs {
		if s.o.Offsets.Query(protocol.ReviveGroup, s.rlog.topic, int32(q)) != off {
			s.o.Offsets.Commit(protocol.ReviveGroup, s.rlog.topic, int32(q), off)
		}
	}
}
