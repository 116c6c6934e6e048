package pop

import (
	"math/bits"
	"sync"

	"github.com/rocketraft/rocketraft/protocol"
)

// The in-memory state of the pops in flight (doc.go, "State"): every check point not yet fully acked, by
// the key an ack names it with, and for every queue a pop read from, where the next pop reads and which of
// its pops the group's committed pop offset may not pass yet. All of it is guarded by state.mu; nothing
// holds state.mu while it reads the store or writes a record.

// ckKey names a check point as an ack names it.
type ckKey struct {
	group, topic string
	queueID      int32
	startOffset  int64
	popTime      int64
}

func keyOf(ck *protocol.PopCheckPoint) ckKey {
	return ckKey{ck.CID, ck.Topic, ck.QueueID, ck.StartOffset, ck.PopTime}
}

// ckState is a check point in flight. Bit i of the masks is message i (ck.QueueOffsetDiff[i]).
type ckState struct {
	ck protocol.PopCheckPoint
	rq int32 // the revive queue of its handles and records
	// at is the queue offset of its record in revive queue rq, or -1 while it has none (it is in the merge
	// buffer: buffer.go).
	at      int64
	storing bool   // its record is being written (buffer.go)
	acked   uint32 // acked, or handed to the retry topic by the revive service: never delivered again from it
	written uint32 // acked bits an ack record in the revive log says (only once at >= 0)
	writing uint32 // acked bits whose ack record is being written (writeAcks)
	pending uint32 // claimed: an ack, a change of invisible time or a redelivery of it is being written
	// next is where its queue's next pop read from after it (the pop's next begin offset): the group's
	// committed pop offset once it and every pop before it on the queue are settled.
	next int64
	// queue is the state of the queue it was popped from, nil for a check point that is not a pop's (a
	// change of invisible time, one read from the revive log at start).
	queue *queueState
	epoch uint64 // the term it was made in
}

func (c *ckState) done() bool       { return bits.OnesCount32(c.acked) >= int(c.ck.Num) }
func (c *ckState) stored() bool     { return c.at >= 0 }
func (c *ckState) all() uint32      { return uint32(1)<<uint(c.ck.Num) - 1 }
func (c *ckState) inFlight() uint32 { return c.all() &^ (c.acked | c.pending) }

// settled reports whether the group's committed pop offset may pass the pop: a crash after that loses none
// of its messages, because each is acked or its check point is in the revive log.
func (c *ckState) settled() bool { return c.done() || c.stored() }

// end is past the check point's last message.
func (c *ckState) end() int64 { return c.offset(len(c.ck.QueueOffsetDiff)-1) + 1 }

// offset is the queue offset of message i.
func (c *ckState) offset(i int) int64 { return c.ck.StartOffset + int64(c.ck.QueueOffsetDiff[i]) }

// offsets are the queue offsets of the bits of mask.
func (c *ckState) offsets(mask uint32) []int64 {
	var out []int64
	for i := range c.ck.QueueOffsetDiff {
		if mask&(1<<i) != 0 {
			out = append(out, c.offset(i))
		}
	}
	return out
}

// mask is the bits of the offsets of offs in the check point; missed are the offsets it does not hold.
func (c *ckState) mask(offs []int64) (mask uint32, missed []int64) {
	for _, off := range offs {
		if i := c.ck.IndexOf(off); i >= 0 {
			mask |= 1 << i
		} else {
			missed = append(missed, off)
		}
	}
	return mask, missed
}

// queueState is one queue of one group as its pops see it.
type queueState struct {
	gq GroupQueue
	// pop is held while a pop reads the queue and records its check point, and while the queue's buffered
	// check points are written (buffer.go): one at a time per queue, in pop order. Taken before state.mu,
	// never while holding it.
	pop sync.Mutex

	// Guarded by state.mu:
	known     bool  // cursor and committed were read from the offset table since start
	cursor    int64 // the next offset a pop reads
	committed int64 // the pop offset this engine last committed (or read): another value in the table was set from outside
	// fifo are the queue's pops since its committed offset, in pop order: the committed offset moves to a
	// pop's next once it and every one before it are settled.
	fifo []*ckState
	// storedEnd is the end (last offset + 1) of the queue's furthest check point in the revive log: a pop
	// that starts below it (after a reset of the offset) writes its check point at once (buffer.go).
	storedEnd int64
}

// reviveState is what the engine knows of one revive queue's records.
type reviveState struct {
	// end is past the last record known: the end of the scan at start, then of every record written.
	end int64
	// writing holds, for every check point being written, the queue's end when its write began: its record
	// lands at or past it, so the revive offset stays at or below it until the write is answered.
	writing map[*ckState]int64
}

// state is the engine's state of one term as master.
type state struct {
	mu       sync.Mutex
	epoch    uint64 // +1 at every Start: an operation begun in an older epoch records nothing
	cks      map[ckKey]*ckState
	queues   map[GroupQueue]*queueState
	revive   []reviveState
	buffered int // check points without a record (buffer.go), storing ones included, that are not done
}

// resetLocked forgets everything (a new term as master). s.mu must be held.
func (s *state) resetLocked(reviveQueues int) {
	s.epoch++
	s.cks = map[ckKey]*ckState{}
	s.queues = map[GroupQueue]*queueState{}
	s.revive = make([]reviveState, reviveQueues)
	for i := range s.revive {
		s.revive[i].writing = map[*ckState]int64{}
	}
	s.buffered = 0
}

// queueLocked is gq's state, made on first use. s.mu must be held.
func (s *state) queueLocked(gq GroupQueue) *queueState {
	q := s.queues[gq]
	if q == nil {
		q = &queueState{gq: gq}
		s.queues[gq] = q
	}
	return q
}

// removeLocked forgets a check point that is done. s.mu must be held.
func (s *state) removeLocked(c *ckState) {
	k := keyOf(&c.ck)
	if s.cks[k] == c {
		delete(s.cks, k)
	}
	if !c.stored() {
		s.buffered-- // never removed while its record is being written
	}
}
