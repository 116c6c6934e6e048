package pop

import (
	"context"
	"errors"
	"fmt"

	"github.com/rocketraft/rocketraft/protocol"
)

// ErrHandleNotInFlight: an ack or a change of invisible time names a message that is not in flight under
// that receipt handle: it was acked already, its invisible time passed and it was redelivered (or moved to
// the dead-letter queue), or a change of invisible time replaced the handle. Answered NO_MESSAGE.
var ErrHandleNotInFlight = errors.New("pop: receipt handle is not in flight")

// Ack acks the message at queue offset off of topic (the topic it was read from: RealTopic of the handle)
// popped under handle h. It returns once the message is acked: in memory for a check point without a
// record yet (buffer.go), else once the ack record is written (or, for an ordered pop, the group's offset
// moved).
func (s *Engine) Ack(ctx context.Context, group, topic string, q int32, off int64, h protocol.ExtraInfo) error {
	if !s.running() {
		return ErrNotRunning
	}
	if h.Order() {
		next, ok := s.order.ack(group, topic, q, off, h.PopTime)
		if !ok {
			return fmt.Errorf("%w: no ordered pop of %s queue %d by %s at popTime %d holds offset %d (superseded after its invisible time)",
				ErrHandleNotInFlight, topic, q, group, h.PopTime, off)
		}
		s.o.Offsets.Commit(group, topic, q, next)
		s.o.Unblocked(topic, q)
		return nil
	}
	missed, err := s.ackCheckPoint(ctx, ckKey{group, topic, q, h.CKQueueOffset, h.PopTime}, h.ReviveQueueID, []int64{off})
	if err != nil {
		return err
	}
	if len(missed) > 0 {
		return fmt.Errorf("%w: %s queue %d offset %d popped by %s at %d: acked, redelivered after its invisible time, or its handle replaced",
			ErrHandleNotInFlight, topic, q, off, group, h.PopTime)
	}
	return nil
}

// BatchAckResult is what became of one entry of a BATCH_ACK_MESSAGE: the offsets whose message was not in
// flight under the entry's pop (acked already, redelivered after its invisible time, or its handle replaced),
// and the error that kept the entry's other offsets from being acked (nil: they are).
type BatchAckResult struct {
	NotInFlight []int64
	Err         error
}

// BatchAck acks the entries of a BATCH_ACK_MESSAGE, one record at most per entry (a pop's check point), and
// returns one result per entry. The error is ErrNotRunning off the master (nothing was acked).
func (s *Engine) BatchAck(ctx context.Context, acks []protocol.BatchAck) ([]BatchAckResult, error) {
	if !s.running() {
		return nil, ErrNotRunning
	}
	out := make([]BatchAckResult, len(acks))
	for i := range acks {
		b, r := &acks[i], &out[i]
		topic, err := protocol.RealTopic(b.Topic, b.ConsumerGroup, b.Retry)
		if err != nil {
			r.Err = fmt.Errorf("pop: batch ack entry %d: %w", i, err)
			continue
		}
		h := protocol.ExtraInfo{CKQueueOffset: b.StartOffset, PopTime: b.PopTime, InvisibleTime: b.InvisibleTime,
			ReviveQueueID: b.ReviveQueueID, RetryMark: b.Retry, QueueID: b.QueueID}
		offs := b.Offsets()
		if h.Order() {
			for _, off := range offs {
				if err := s.Ack(ctx, b.ConsumerGroup, topic, b.QueueID, off, h); errors.Is(err, ErrHandleNotInFlight) {
					r.NotInFlight = append(r.NotInFlight, off)
				} else if err != nil && r.Err == nil {
					r.Err = err
				}
			}
			continue
		}
		r.NotInFlight, r.Err = s.ackCheckPoint(ctx, ckKey{b.ConsumerGroup, topic, b.QueueID, b.StartOffset, b.PopTime}, b.ReviveQueueID, offs)
	}
	return out, nil
}

// ackCheckPoint acks the messages at offs of the check point k (of revive queue rq) and returns the offsets
// not in flight under it. A check point with a record gets one ack record for them (written before it
// returns); one without (buffer.go) is acked in memory, and one whose record is being written has its ack
// record written after it by the writer.
func (s *Engine) ackCheckPoint(ctx context.Context, k ckKey, rq int32, offs []int64) ([]int64, error) {
	if _, err := s.ensureLoaded(ctx); err != nil {
		return nil, err
	}
	s.st.mu.Lock()
	c := s.st.cks[k]
	if c == nil || c.rq != rq {
		s.st.mu.Unlock()
		return offs, nil
	}
	mask, missed := c.mask(offs)
	live := mask & c.inFlight()
	missed = append(missed, c.offsets(mask&^live)...)
	if live == 0 {
		s.st.mu.Unlock()
		return missed, nil
	}
	if !c.stored() {
		c.acked |= live
		s.finishLocked(c)
		s.st.mu.Unlock()
		return missed, nil
	}
	c.pending |= live
	s.st.mu.Unlock()
	err := s.rlog.writeAck(ctx, c.rq, s.ackOf(c, live), s.nowMs())
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	c.pending &^= live
	if err != nil {
		return missed, err
	}
	c.acked |= live
	c.written |= live
	s.finishLocked(c)
	return missed, nil
}

// ChangeInvisible hides the message for invisible ms from now instead: a new check point for it alone,
// then an ack of it in the old one, in the same revive queue. It returns the new pop time; the new handle is
// h with CKQueueOffset off, that pop time and the new invisible time.
func (s *Engine) ChangeInvisible(ctx context.Context, group, topic string, q int32, off int64, h protocol.ExtraInfo, invisible int64) (int64, error) {
	if !s.running() {
		return 0, ErrNotRunning
	}
	now := s.nowMs()
	if now <= h.PopTime {
		now = h.PopTime + 1 // the new check point must not share the old one's key
	}
	if h.Order() {
		if !s.order.change(group, topic, q, h.PopTime, now, invisible) {
			return 0, fmt.Errorf("%w: no ordered pop of %s queue %d by %s at popTime %d", ErrHandleNotInFlight, topic, q, group, h.PopTime)
		}
		return now, nil
	}
	epoch, err := s.ensureLoaded(ctx)
	if err != nil {
		return 0, err
	}
	s.st.mu.Lock()
	c := s.st.cks[ckKey{group, topic, q, h.CKQueueOffset, h.PopTime}]
	i := -1
	if c != nil && c.rq == h.ReviveQueueID {
		i = c.ck.IndexOf(off)
	}
	if i < 0 || c.inFlight()&(1<<i) == 0 {
		s.st.mu.Unlock()
		return 0, fmt.Errorf("%w: %s queue %d offset %d popped by %s at %d: acked, redelivered after its invisible time, or its handle replaced",
			ErrHandleNotInFlight, topic, q, off, group, h.PopTime)
	}
	bit := uint32(1) << i
	c.pending |= bit
	stored := c.stored()
	s.st.mu.Unlock()
	if !stored {
		// Its check point is written first, and the queue's pops before it: the new one, with a record,
		// lifts the pop offset past the message after a crash (load.go), which must lose none of theirs.
		if err := s.storeThrough(ctx, epoch, c); err != nil {
			s.st.mu.Lock()
			c.pending &^= bit
			s.st.mu.Unlock()
			return 0, err
		}
	}
	nc := &ckState{ck: protocol.PopCheckPoint{StartOffset: off, PopTime: now, InvisibleTime: invisible, Num: 1, QueueID: q,
		Topic: topic, CID: group, QueueOffsetDiff: []int32{0}, BrokerName: s.o.Broker}, rq: c.rq, at: -1, next: -1, epoch: epoch}
	err = s.writeCheckPoint(ctx, nc, func(err error) {
		if err == nil && s.st.epoch == epoch {
			s.st.cks[keyOf(&nc.ck)] = nc
		}
	})
	if err == nil {
		// Should this ack fail, the new check point stands too: the message comes back at both times.
		err = s.rlog.writeAck(ctx, c.rq, s.ackOf(c, bit), now)
	}
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	c.pending &^= bit
	if err != nil {
		return 0, err
	}
	c.acked |= bit
	c.written |= bit
	s.finishLocked(c)
	return now, nil
}
