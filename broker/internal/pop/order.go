package pop

import (
	"slices"
	"sync"
)

// Ordered (FIFO) pops, as RocketMQ's ConsumerOrderInfoManager: a pop with order=true writes no check point.
// The group's offset of the queue stays at its first unacked message; the queue is blocked for the group
// while the messages of its last pop are neither all acked nor past their invisible time, so the queue's
// next message is handed out only after the previous ones are acked, and an unacked one comes back, first
// in line, once its invisible time passed. The block is in memory only: after a restart or a change of
// master the queue is unblocked and delivers again from the group's offset, that is from the first message
// not acked (at least once; a message acked less than an offset sync interval before a Raft failover can
// come again).

// orderQueue is one queue's last ordered pop for one group.
type orderQueue struct {
	popTime   int64   // of the pop, or of the last change of invisible time
	handles   []int64 // every pop time a handle of this pop may carry: the pop's, then each change's
	invisible int64
	attemptID string
	offsets   []int64       // the offsets handed out, ascending
	acked     uint64        // bit i: offsets[i] acked
	counts    map[int64]int // how often each offset was handed out before this pop
}

func (o *orderQueue) allAcked() bool {
	return o.acked == (uint64(1)<<len(o.offsets))-1 // a pop hands out at most 32 messages
}

// orderInfo holds the ordered queues' blocks, keyed topic@group@queue.
type orderInfo struct {
	mu sync.Mutex
	m  map[orderKey]*orderQueue // guarded by mu
}

type orderKey struct {
	group, topic string
	queueID      int32
}

func newOrderInfo() *orderInfo { return &orderInfo{m: map[orderKey]*orderQueue{}} }

// reset forgets every block (a new term as master).
func (o *orderInfo) reset() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.m = map[orderKey]*orderQueue{}
}

// blocked reports whether the group's queue is blocked at now: its last pop has unacked messages still
// invisible. A retry of that very pop (the same non-empty attemptID) is not blocked, so it gets the same
// messages again.
func (o *orderInfo) blocked(group, topic string, q int32, now int64, attemptID string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	oq := o.m[orderKey{group, topic, q}]
	if oq == nil || oq.allAcked() {
		return false
	}
	if attemptID != "" && attemptID == oq.attemptID {
		return false
	}
	return now < oq.popTime+oq.invisible
}

// update records a pop of offsets from the queue and returns how often its first message was handed out
// before (the attempt count RocketMQ reports in orderCountInfo).
func (o *orderInfo) update(group, topic string, q int32, popTime, invisible int64, attemptID string, offsets []int64) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	k := orderKey{group, topic, q}
	prev := o.m[k]
	counts := map[int64]int{}
	for _, off := range offsets {
		if prev != nil {
			if n, ok := prev.counts[off]; ok {
				counts[off] = n + 1
				continue
			}
			for _, p := range prev.offsets {
				if p == off {
					counts[off] = 1
				}
			}
		}
		if _, ok := counts[off]; !ok {
			counts[off] = 0
		}
	}
	o.m[k] = &orderQueue{popTime: popTime, handles: []int64{popTime}, invisible: invisible, attemptID: attemptID,
		offsets: append([]int64(nil), offsets...), counts: counts}
	if len(offsets) == 0 {
		return 0
	}
	return counts[offsets[0]]
}

// ack marks the message at off of the pop at popTime acked and returns the group's next offset of the queue
// (the first message of the pop not acked, or the one after the pop). ok is false when the queue has no
// such pop (a stale handle: the pop was superseded after its invisible time, or this node was not master
// when it was made).
func (o *orderInfo) ack(group, topic string, q int32, off, popTime int64) (next int64, ok bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	oq := o.m[orderKey{group, topic, q}]
	if oq == nil || !slices.Contains(oq.handles, popTime) {
		return 0, false
	}
	idx := -1
	for i, p := range oq.offsets {
		if p == off {
			idx = i
		}
	}
	if idx < 0 {
		return 0, false
	}
	oq.acked |= 1 << idx
	for i, p := range oq.offsets {
		if oq.acked&(1<<i) == 0 {
			return p, true
		}
	}
	return oq.offsets[len(oq.offsets)-1] + 1, true
}

// change moves the invisible time of the pop at popTime to invisible from newPopTime (an ordered
// message's change of invisible time holds the whole queue); handles of the pop with the old pop times stay
// valid for acks. ok as ack's.
func (o *orderInfo) change(group, topic string, q int32, popTime, newPopTime, invisible int64) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	oq := o.m[orderKey{group, topic, q}]
	if oq == nil || !slices.Contains(oq.handles, popTime) {
		return false
	}
	oq.popTime, oq.invisible = newPopTime, invisible
	oq.handles = append(oq.handles, newPopTime)
	return true
}

// addInFlight adds the unacked messages of every ordered pop to t (metrics, consume stats).
func (o *orderInfo) addInFlight(t map[GroupQueue]InFlight) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for k, oq := range o.m {
		for i, off := range oq.offsets {
			if oq.acked&(1<<i) == 0 {
				gq := GroupQueue{Group: k.group, Topic: k.topic, QueueID: k.queueID}
				f, ok := t[gq]
				if !ok {
					f.Next = -1 // the group's offset is the next pop's
				}
				t[gq] = f.add(off)
			}
		}
	}
}
