package broker

import (
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

// errHandleNotInFlight: an ack or a change of invisible time names a message that is not in flight under
// that receipt handle: it was acked already, its invisible time passed and it was redelivered (or moved to
// the dead-letter queue), or a change of invisible time replaced the handle. Answered NO_MESSAGE.
var errHandleNotInFlight = errors.New("pop: receipt handle is not in flight")

// ack acks the message at queue offset off of topic (the topic it was read from: RealTopic of the handle)
// popped under handle h. It returns once the ack record is written (or, for an ordered pop, the group's
// offset moved).
func (s *popService) ack(ctx context.Context, group, topic string, q int32, off int64, h protocol.ExtraInfo) error {
	if !s.running() {
		return errPopNotRunning
	}
	if h.Order() {
		next, ok := s.order.ack(group, topic, q, off, h.PopTime)
		if !ok {
			return fmt.Errorf("%w: no ordered pop of %s queue %d by %s at popTime %d holds offset %d (superseded after its invisible time)",
				errHandleNotInFlight, topic, q, group, h.PopTime, off)
		}
		s.o.offsets.commit(group, topic, q, next)
		s.o.unblocked(topic, q)
		return nil
	}
	rq, err := s.reviveQueueOf(h)
	if err != nil {
		return err
	}
	c, claimed, err := s.claim(rq, group, topic, q, h, []int64{off}, true)
	if err != nil {
		return err
	}
	a := &protocol.AckMsg{AckOffset: off, StartOffset: h.CKQueueOffset, ConsumerGroup: group, Topic: topic,
		QueueID: q, PopTime: h.PopTime, BrokerName: s.o.broker}
	return s.settle(rq, c, claimed, s.rlog.writeAck(ctx, rq.id, a, s.nowMs()))
}

// claim checks, under the revive queue's lock, that the messages at offs of the handle's pop are in flight
// and marks them pending: an ack (or change) of them is being written, which the revive loop leaves alone
// and a second ack finds taken. With all, a message not in flight is an error; otherwise it is left out.
// The write then runs without the lock, so acks of one revive queue are written side by side (and share
// the store's group commit); settle ends the claim.
func (s *popService) claim(rq *reviveQueue, group, topic string, q int32, h protocol.ExtraInfo, offs []int64, all bool) (*ckState, uint32, error) {
	rq.mu.Lock()
	defer rq.mu.Unlock()
	var (
		c       *ckState
		claimed uint32
	)
	for _, off := range offs {
		cs, i, err := s.inFlightLocked(rq, group, topic, q, off, h)
		if err != nil {
			if all || !errors.Is(err, errHandleNotInFlight) {
				c.unclaim(claimed)
				return nil, 0, err
			}
			continue
		}
		c = cs
		claimed |= 1 << i
		c.pending |= 1 << i
	}
	return c, claimed, nil
}

// settle ends a claim: on a write error the messages are in flight again; after a write the revive queue is
// read, which applies the records written.
func (s *popService) settle(rq *reviveQueue, c *ckState, claimed uint32, werr error) error {
	rq.mu.Lock()
	defer rq.mu.Unlock()
	c.unclaim(claimed)
	if werr != nil {
		return werr
	}
	return s.rlog.scanLocked(rq)
}

// batchAck acks the entries of a BATCH_ACK_MESSAGE. Offsets no longer in flight are skipped, as RocketMQ
// does; the error is the first write that failed.
func (s *popService) batchAck(ctx context.Context, acks []protocol.BatchAck) error {
	if !s.running() {
		return errPopNotRunning
	}
	for i := range acks {
		b := &acks[i]
		topic, err := protocol.RealTopic(b.Topic, b.ConsumerGroup, b.Retry)
		if err != nil {
			return fmt.Errorf("pop: batch ack entry %d: %w", i, err)
		}
		h := protocol.ExtraInfo{CKQueueOffset: b.StartOffset, PopTime: b.PopTime, InvisibleTime: b.InvisibleTime,
			ReviveQueueID: b.ReviveQueueID, RetryMark: b.Retry, QueueID: b.QueueID}
		offs := b.Offsets()
		if h.Order() {
			for _, off := range offs {
				_ = s.ack(ctx, b.ConsumerGroup, topic, b.QueueID, off, h)
			}
			continue
		}
		if err := s.batchAckOne(ctx, b.ConsumerGroup, topic, h, offs); err != nil {
			return err
		}
	}
	return nil
}

func (s *popService) batchAckOne(ctx context.Context, group, topic string, h protocol.ExtraInfo, offs []int64) error {
	rq, err := s.reviveQueueOf(h)
	if err != nil {
		return nil // not a handle of this broker: skipped
	}
	c, claimed, err := s.claim(rq, group, topic, h.QueueID, h, offs, false)
	if err != nil || c == nil {
		return err
	}
	var live []int64
	for i, d := range c.ck.QueueOffsetDiff {
		if claimed&(1<<i) != 0 {
			live = append(live, c.ck.StartOffset+int64(d))
		}
	}
	a := &protocol.AckMsg{StartOffset: h.CKQueueOffset, ConsumerGroup: group, Topic: topic, QueueID: h.QueueID,
		PopTime: h.PopTime, BrokerName: s.o.broker, AckOffsetList: live}
	return s.settle(rq, c, claimed, s.rlog.writeAck(ctx, rq.id, a, s.nowMs()))
}

// changeInvisible hides the message for invisible ms from now instead: a new check point for it alone,
// then an ack of the old one, in the same revive queue. It returns the new pop time; the new handle is h
// with CKQueueOffset off, that pop time and the new invisible time.
func (s *popService) changeInvisible(ctx context.Context, group, topic string, q int32, off int64, h protocol.ExtraInfo, invisible int64) (int64, error) {
	if !s.running() {
		return 0, errPopNotRunning
	}
	now := s.nowMs()
	if now <= h.PopTime {
		now = h.PopTime + 1 // the new check point must not share the old one's key
	}
	if h.Order() {
		if !s.order.change(group, topic, q, h.PopTime, now, invisible) {
			return 0, fmt.Errorf("%w: no ordered pop of %s queue %d by %s at popTime %d", errHandleNotInFlight, topic, q, group, h.PopTime)
		}
		return now, nil
	}
	rq, err := s.reviveQueueOf(h)
	if err != nil {
		return 0, err
	}
	c, claimed, err := s.claim(rq, group, topic, q, h, []int64{off}, true)
	if err != nil {
		return 0, err
	}
	ck := &protocol.PopCheckPoint{StartOffset: off, PopTime: now, InvisibleTime: invisible, Num: 1, QueueID: q,
		Topic: topic, CID: group, QueueOffsetDiff: []int32{0}, BrokerName: s.o.broker}
	werr := s.rlog.writeCheckPoint(ctx, rq.id, ck, now)
	if werr == nil {
		// Should this ack fail, the new check point stands too: the message comes back at both times.
		a := &protocol.AckMsg{AckOffset: off, StartOffset: h.CKQueueOffset, ConsumerGroup: group, Topic: topic,
			QueueID: q, PopTime: h.PopTime, BrokerName: s.o.broker}
		werr = s.rlog.writeAck(ctx, rq.id, a, now)
	}
	return now, s.settle(rq, c, claimed, werr)
}

// reviveQueueOf is the revive queue a (non-ordered) handle names.
func (s *popService) reviveQueueOf(h protocol.ExtraInfo) (*reviveQueue, error) {
	if h.ReviveQueueID < 0 || int(h.ReviveQueueID) >= len(s.queues) {
		return nil, fmt.Errorf("%w: revive queue %d of the handle is not one of this broker's %d (reviveQueueNum)",
			errHandleNotInFlight, h.ReviveQueueID, len(s.queues))
	}
	return s.queues[h.ReviveQueueID], nil
}

// inFlightLocked finds the pending check point of the handle and checks that the message at off (index i
// of it) is in it, not acked and not being acked. rq.mu must be held.
func (s *popService) inFlightLocked(rq *reviveQueue, group, topic string, q int32, off int64, h protocol.ExtraInfo) (*ckState, int, error) {
	if err := s.rlog.scanLocked(rq); err != nil {
		return nil, 0, err
	}
	c := rq.cks[ckKey{group, topic, q, h.CKQueueOffset, h.PopTime}]
	if c == nil {
		return nil, 0, fmt.Errorf("%w: %s queue %d offset %d popped by %s at %d: acked, redelivered after its invisible time, or its handle replaced",
			errHandleNotInFlight, topic, q, off, group, h.PopTime)
	}
	i := c.ck.IndexOf(off)
	if i < 0 {
		return nil, 0, fmt.Errorf("%w: offset %d is not in the pop of %s queue %d at %d", errHandleNotInFlight, off, topic, q, h.PopTime)
	}
	if (c.acked|c.pending)&(1<<i) != 0 {
		return nil, 0, fmt.Errorf("%w: %s queue %d offset %d popped by %s at %d is acked already", errHandleNotInFlight, topic, q, off, group, h.PopTime)
	}
	return c, i, nil
}

// reviveLoop redelivers, every reviveInterval, what was not acked in time.
func (s *popService) reviveLoop(ctx context.Context) {
	t := time.NewTicker(ms(s.o.cfg.ReviveInterval))
	defer t.Stop()
	for {
		for _, q := range s.queues {
			if ctx.Err() != nil {
				return
			}
			if err := s.reviveQueue(ctx, q); err != nil && ctx.Err() == nil {
				s.o.log.Warn("pop revive", "reviveQueue", q.id, "err", err)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// reviveQueue redelivers the unacked messages of the queue's check points whose invisible time passed (to
// the group's retry topic, or its dead-letter topic once its attempts are spent), acks them in the revive
// log, and stores the queue's revive offset.
func (s *popService) reviveQueue(ctx context.Context, q *reviveQueue) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if err := s.rlog.scanLocked(q); err != nil {
		return err
	}
	now := s.nowMs()
	var due []*ckState
	for _, c := range q.cks {
		if c.ck.ReviveTime() <= now {
			due = append(due, c)
		}
	}
	slices.SortFunc(due, func(a, b *ckState) int { return int(a.at - b.at) })
	for _, c := range due {
		if err := s.reviveCheckPoint(ctx, q, c); err != nil {
			return err
		}
	}
	if len(due) > 0 {
		if err := s.rlog.scanLocked(q); err != nil {
			return err
		}
	}
	s.rlog.commitProgressLocked(q)
	return nil
}

// reviveCheckPoint redelivers c's unacked messages and writes one batch ack for them. q.mu must be held.
func (s *popService) reviveCheckPoint(ctx context.Context, q *reviveQueue, c *ckState) error {
	var offs []int64
	for i, d := range c.ck.QueueOffsetDiff {
		if (c.acked|c.pending)&(1<<i) != 0 {
			continue // acked, or an ack of it is being written
		}
		off := c.ck.StartOffset + int64(d)
		if err := s.redeliver(ctx, &c.ck, off); err != nil {
			return err
		}
		offs = append(offs, off)
	}
	if len(offs) == 0 {
		return nil
	}
	a := &protocol.AckMsg{StartOffset: c.ck.StartOffset, ConsumerGroup: c.ck.CID, Topic: c.ck.Topic,
		QueueID: c.ck.QueueID, PopTime: c.ck.PopTime, BrokerName: c.ck.BrokerName, AckOffsetList: offs}
	return s.rlog.writeAck(ctx, q.id, a, s.nowMs())
}

// redeliver copies the message at off of the check point's queue to the group's retry topic with one more
// reconsume time, or to %DLQ%<group> when it was delivered the group's retryMaxTimes + 1 times. A message
// whose record is gone (expired files) is skipped.
func (s *popService) redeliver(ctx context.Context, ck *protocol.PopCheckPoint, off int64) error {
	unit, err := s.o.store.ConsumeQueueUnit(ck.Topic, ck.QueueID, off)
	if err != nil {
		s.o.log.Warn("pop revive: message gone", "topic", ck.Topic, "queue", ck.QueueID, "offset", off, "err", err)
		return nil
	}
	m, err := s.o.store.LookMessageByOffset(unit.PhysicalOffset)
	if errors.Is(err, store.ErrNotVisibleYet) {
		return fmt.Errorf("pop revive: read %s/%d offset %d: %w", ck.Topic, ck.QueueID, off, err) // retried
	}
	if err != nil {
		s.o.log.Warn("pop revive: message gone", "topic", ck.Topic, "queue", ck.QueueID, "offset", off, "err", err)
		return nil
	}
	var out *message.Message
	if m.ReconsumeTimes >= s.o.maxAttempts(ck.CID) {
		if out, err = s.o.deadLetter(ck.CID, m); err != nil {
			return err
		}
	} else {
		topic := ck.Topic
		if protocol.RetryMark(topic) == protocol.RetryMarkNormal {
			topic = s.retryTopic(ck.Topic, ck.CID)
		}
		if err := s.o.ensureTopic(topic, 1); err != nil {
			return err
		}
		o := m.Message
		o.Topic, o.QueueID, o.ReconsumeTimes = topic, 0, m.ReconsumeTimes+1
		o.Properties = editProperties(o.Properties, func(p map[string]string) {
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
	_, err = s.o.put(ctx, out)
	s.counters.reviveRetry.Get(popMetricKey{group: ck.CID, topic: ck.Topic, status: putStatus(err)}).Add(1)
	if err != nil {
		return fmt.Errorf("pop revive: put %s: %w", out.Topic, err)
	}
	return nil
}
