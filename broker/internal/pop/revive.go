package pop

import (
	"context"
	"encoding/json"
	"fmt"
	"math/bits"
	"net/netip"
	"sync"
	"time"

	"github.com/rocketraft/rocketraft/message"
	"github.com/rocketraft/rocketraft/protocol"
	"github.com/rocketraft/rocketraft/store"
)

// The revive log: every non-ordered pop writes a check point (CK) record to one queue of the revive topic,
// every ack (and every redelivery, and every change of invisible time) an ack record to the same queue. The
// records are messages like any other, so they are flushed, replicated and (in the Raft mode) committed
// like any other. A reviveQueue is the state of one revive queue as its records say: the check points not
// yet fully acked, with their acked bits, built by reading the queue in order from the revive offset (the
// ReviveGroup's consumer offset of that queue: the position of its oldest pending check point). It is the
// one source of truth of what is in flight; nothing else records a pop.

// ckKey names a check point as an ack names it.
type ckKey struct {
	group, topic string
	queueID      int32
	startOffset  int64
	popTime      int64
}

// ckState is a pending check point: its record's body, where the record is in its revive queue, and which
// of its messages are acked (bit i: QueueOffsetDiff[i]). Its fields are guarded by the revive queue's mu.
type ckState struct {
	ck      protocol.PopCheckPoint
	at      int64
	acked   uint32
	pending uint32 // bit i: an ack (or change of invisible time) of message i is being written (claim)
}

// unclaim clears claimed pending bits; nil-safe.
func (c *ckState) unclaim(claimed uint32) {
	if c != nil {
		c.pending &^= claimed
	}
}

func (c *ckState) done() bool { return bits.OnesCount32(c.acked) >= int(c.ck.Num) }

// reviveQueue is one revive queue's state. mu is held while its records are read (scan), while due check
// points are redelivered (revive), and while an ack or a change of invisible time is checked against the
// state and its messages claimed (pending); their records are written without it, and the revive loop
// leaves claimed messages alone, so an ack and a redelivery of one message never both succeed.
type reviveQueue struct {
	id int32

	mu      sync.Mutex
	loaded  bool               // guarded by mu: scanned from the revive offset since the service started
	scanned int64              // guarded by mu: the next revive-queue offset to read
	cks     map[ckKey]*ckState // guarded by mu: the pending check points
}

// reviveLog reads and writes the revive topic: what the pop service needs of the store, the offsets and
// the put path, for the revive queues.
type reviveLog struct {
	topic   string
	store   Store
	offsets Offsets
	put     PutFunc
	host    netip.AddrPort // born host of the records: this broker
	// dispatched has one signal per revive queue, fired when a record of it is dispatched.
	dispatched []*signal
	// counted is told of every record put: group, topic, CK or ACK, and the put's error.
	counted func(group, topic, kind string, err error)
}

// dispatchWait bounds how long a write waits for its record to reach the revive queue's consume queue.
const dispatchWait = 10 * time.Second

// arrived is told of every record dispatched to the revive topic (the store's arrival listener; must not
// block).
func (l *reviveLog) arrived(q int32) {
	if q >= 0 && int(q) < len(l.dispatched) {
		l.dispatched[q].fire()
	}
}

// waitDispatched returns once the record at queue offset off of revive queue q is in its consume queue,
// so the next scan reads it (the reput of classic mode dispatches after the put was answered).
func (l *reviveLog) waitDispatched(ctx context.Context, q int32, off int64) error {
	if l.store.MaxOffsetInQueue(l.topic, q) > off {
		return nil
	}
	deadline := time.NewTimer(dispatchWait)
	defer deadline.Stop()
	for {
		fired := l.dispatched[q].next() // taken before the check: a dispatch after it fires it
		if l.store.MaxOffsetInQueue(l.topic, q) > off {
			return nil
		}
		select {
		case <-fired:
		case <-deadline.C:
			return fmt.Errorf("pop: record %d of %s queue %d not dispatched after %v", off, l.topic, q, dispatchWait)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// signal wakes every waiter at once: next is a channel closed by the following fire.
type signal struct {
	mu sync.Mutex
	ch chan struct{} // guarded by mu; nil until someone waits
}

func (s *signal) next() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch == nil {
		s.ch = make(chan struct{})
	}
	return s.ch
}

func (s *signal) fire() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch != nil {
		close(s.ch)
		s.ch = nil
	}
}

// reviveOffset is where a scan of queue q starts after a restart or a change of master.
func (l *reviveLog) reviveOffset(q int32) int64 {
	off := l.offsets.Query(protocol.ReviveGroup, l.topic, q)
	if min := l.store.MinOffsetInQueue(l.topic, q); off < min {
		off = min
	}
	return off
}

// scanLocked reads the queue's records from where it stopped to the queue's end and applies them: a check
// point becomes pending (and lifts the group's pop offset of its queue past its messages, so a pop offset
// that lagged behind the log, after a crash or a failover, never hands those messages out again), an ack
// sets bits. q.mu must be held.
func (l *reviveLog) scanLocked(q *reviveQueue) error {
	if !q.loaded {
		q.scanned = l.reviveOffset(q.id)
		q.cks = map[ckKey]*ckState{}
		q.loaded = true
	}
	for {
		res, err := l.store.GetMessage(protocol.ReviveGroup, l.topic, q.id, q.scanned, 64, maxReadBytes, nil)
		if err != nil {
			return fmt.Errorf("pop: read revive queue %d at %d: %w", q.id, q.scanned, err)
		}
		if res.Status != store.Found {
			next := res.NextBeginOffset
			res.Release()
			switch {
			case res.Status == store.OffsetOverflowBadly && next < q.scanned:
				q.scanned = next // the revive offset passed the queue's end (a log cut back): read from there
				continue
			case next > q.scanned && res.Status != store.OffsetOverflowOne:
				q.scanned = next // a hole (expired files): skip it
				continue
			}
			return nil
		}
		for _, rec := range res.Records {
			m, err := message.DecodeMessage(rec, true)
			if err != nil {
				res.Release()
				return fmt.Errorf("pop: revive queue %d at %d: %w", q.id, q.scanned, err)
			}
			l.applyLocked(q, m)
			q.scanned = m.QueueOffset + 1
		}
		res.Release()
	}
}

// applyLocked applies one record of the revive queue. A record that does not decode is skipped (it cannot
// name a check point). q.mu must be held.
func (l *reviveLog) applyLocked(q *reviveQueue, m *message.MessageExt) {
	tag, _ := propValue(m.Properties, message.PropertyTags)
	switch tag {
	case protocol.CheckPointTag:
		var ck protocol.PopCheckPoint
		if json.Unmarshal(m.Body, &ck) != nil || ck.Num <= 0 || len(ck.QueueOffsetDiff) != int(ck.Num) {
			return
		}
		k := ckKey{ck.CID, ck.Topic, ck.QueueID, ck.StartOffset, ck.PopTime}
		if _, ok := q.cks[k]; !ok {
			q.cks[k] = &ckState{ck: ck, at: m.QueueOffset}
		}
		end := ck.StartOffset + int64(ck.QueueOffsetDiff[len(ck.QueueOffsetDiff)-1]) + 1
		if l.offsets.Query(ck.CID, ck.Topic, ck.QueueID) < end {
			l.offsets.Commit(ck.CID, ck.Topic, ck.QueueID, end)
		}
	case protocol.AckTag, protocol.BatchAckTag:
		var a protocol.AckMsg
		if json.Unmarshal(m.Body, &a) != nil {
			return
		}
		c := q.cks[ckKey{a.ConsumerGroup, a.Topic, a.QueueID, a.StartOffset, a.PopTime}]
		if c == nil {
			return
		}
		offs := a.AckOffsetList
		if tag == protocol.AckTag {
			offs = []int64{a.AckOffset}
		}
		for _, o := range offs {
			if i := c.ck.IndexOf(o); i >= 0 {
				c.acked |= 1 << i
			}
		}
		if c.done() {
			delete(q.cks, ckKey{a.ConsumerGroup, a.Topic, a.QueueID, a.StartOffset, a.PopTime})
		}
	}
}

// commitProgressLocked stores the queue's revive offset: its oldest pending check point, or where the scan
// stopped. q.mu must be held.
func (l *reviveLog) commitProgressLocked(q *reviveQueue) {
	off := q.scanned
	for _, c := range q.cks {
		off = min(off, c.at)
	}
	if l.offsets.Query(protocol.ReviveGroup, l.topic, q.id) != off {
		l.offsets.Commit(protocol.ReviveGroup, l.topic, q.id, off)
	}
}

// writeCheckPoint writes ck to revive queue q and returns once the put path answered.
func (l *reviveLog) writeCheckPoint(ctx context.Context, q int32, ck *protocol.PopCheckPoint, born int64) error {
	err := l.write(ctx, q, protocol.CheckPointTag, ck, born)
	l.counted(ck.CID, ck.Topic, "CK", err)
	return err
}

// writeAck writes an ack record (one offset) or a batch ack record (AckOffsetList) to revive queue q.
func (l *reviveLog) writeAck(ctx context.Context, q int32, a *protocol.AckMsg, born int64) error {
	tag := protocol.AckTag
	if len(a.AckOffsetList) > 0 {
		tag, a.AckOffset = protocol.BatchAckTag, -1
	}
	err := l.write(ctx, q, tag, a, born)
	l.counted(a.ConsumerGroup, a.Topic, "ACK", err)
	return err
}

func (l *reviveLog) write(ctx context.Context, q int32, tag string, body any, born int64) error {
	b, err := json.Marshal(body)
	if err != nil {
		return fmt.Errorf("pop: encode %s record: %w", tag, err)
	}
	m := &message.Message{Topic: l.topic, QueueID: q, Body: b, BornTimestamp: born, BornHost: l.host,
		Properties: message.EncodeProperties(map[string]string{message.PropertyTags: tag})}
	res, err := l.put(ctx, m)
	if err != nil {
		return fmt.Errorf("pop: write %s record to %s queue %d: %w", tag, l.topic, q, err)
	}
	return l.waitDispatched(ctx, q, res.QueueOffset)
}
