package raftlog

import (
	"fmt"
	"sync/atomic"

	"github.com/hashicorp/raft"

	"github.com/rocketraft/rocketraft/message"
)

// queuePrediction writes into the records of each message entry StoreLogs stores the queue
// offsets the state machine will give them when it applies the entry, so that the apply finds
// them there and writes nothing (store.DispatchMessages checks each one and writes only the
// records whose offset differs). Before, StoreLogs wrote zeros and the apply wrote the offsets
// into records whose pages the entry's sync had just written, so every page of an entry was
// written twice and copied once more (see doc.go, "Queue offsets").
//
// The prediction is a deterministic function of the log: the next offset of every queue as of
// the dispatched position (the store's table), plus one for every record that takes one in the
// message entries stored after it. Every node holds the same prefix of the log, so every node
// predicts the same offsets, and the state machine, applying the same prefix in the same
// order, gives them. Nothing depends on the prediction being right: the dispatch's own counters
// decide every offset, and a record that carries another one is written at apply as before
// (store.Stats.QueueOffsetsWritten counts them). A wrong or missing prediction costs a write,
// never a wrong offset.
//
// The table is kept as of the end of the log. What moves that end other than StoreLogs makes
// it stale, and the next StoreLogs rebuilds it from the store's table and the frames after
// the dispatched position: Open, a suffix truncation, a snapshot install, a failed StoreLogs,
// and an entry the state machine could not dispatch (its records then take no offsets).
//
// Concurrency: next is used under Store.wmu only (StoreLogs, the one writer); stale may be
// set from any goroutine.
type queuePrediction struct {
	stale atomic.Bool
	// next[topic][queueID] is the next queue offset as of the end of the log; nil while the
	// table is not known (then StoreLogs writes zeros).
	next map[string][]int64
}

// maxPredictedQueueID bounds the queue ids the table keeps in a slice; a record of a higher
// one (no topic has that many queues) drops the prediction until the next rebuild.
const maxPredictedQueueID = 1 << 14

// take returns the predicted queue offset of v and counts the record (0 for a record that
// takes none, or without a table).
func (p *queuePrediction) take(v *message.RecordView) int64 {
	if p.next == nil || !message.TakesQueueOffset(v.SysFlag) {
		return 0
	}
	if v.QueueID < 0 || v.QueueID >= maxPredictedQueueID {
		p.next = nil
		return 0
	}
	q := p.next[string(v.Topic)] // no allocation for the lookup
	if int(v.QueueID) >= len(q) {
		q = growQueues(q, v.QueueID)
		p.next[string(v.Topic)] = q
	}
	n := q[v.QueueID]
	q[v.QueueID] = n + 1
	return n
}

// set makes next the table's next offset of topic's queue id (false: an id out of range).
func (p *queuePrediction) set(topic string, id int32, next int64) bool {
	if id < 0 || id >= maxPredictedQueueID {
		return false
	}
	q := growQueues(p.next[topic], id)
	q[id] = next
	p.next[topic] = q
	return true
}

// growQueues returns q long enough to hold queue id.
func growQueues(q []int64, id int32) []int64 {
	if int(id) < len(q) {
		return q
	}
	return append(q, make([]int64, int(id)+1-len(q))...)
}

// queueOffset is take as PatchRecordsWith's callback, nil without a table.
func (p *queuePrediction) queueOffset() func(v *message.RecordView) int64 {
	if p.next == nil {
		return nil
	}
	return p.take
}

// preparePrediction rebuilds the table before StoreLogs writes when it is stale. wmu held. A
// rebuild that fails leaves no table: the entries are stored with zeros, as before, and the
// next staleness tries again.
func (s *Store) preparePrediction() {
	p := &s.pred
	if !p.stale.Swap(false) {
		return
	}
	table, at := s.cl.DispatchedQueueOffsets()
	p.next = make(map[string][]int64, len(table))
	for _, q := range table {
		if !p.set(q.Topic, q.QueueID, q.Next) {
			p.next = nil
			return
		}
	}
	if err := s.walkMessageRecords(at, func(v *message.RecordView) { p.take(v) }); err != nil {
		p.next = nil
		s.log.Warn("queue offsets are written at apply until the next rebuild", "err", err)
	}
}

// walkMessageRecords calls fn, in log order, for every record of the message entries that
// start at or after from (the dispatched position), found through the dense index.
func (s *Store) walkMessageRecords(from int64, fn func(v *message.RecordView)) error {
	s.mu.RLock()
	st := s.mu.state
	s.mu.RUnlock()
	first := st.last + 1
	for i := st.last; i >= st.first && i > 0; i-- {
		sl, ok := s.idx.get(i)
		if !ok {
			return fmt.Errorf("raftlog: predict queue offsets: entry %d has no index slot", i)
		}
		if sl.pos < from {
			break
		}
		first = i
	}
	for i := first; i <= st.last; i++ {
		p, ok := s.Position(i)
		if !ok {
			return fmt.Errorf("raftlog: predict queue offsets: entry %d is not in the log", i)
		}
		if p.Kind != KindMessages || p.Type != raft.LogCommand {
			continue
		}
		data, release, err := s.cl.ReadCommitLog(p.Data, int(p.End-p.Data))
		if err != nil {
			return fmt.Errorf("raftlog: predict queue offsets: read entry %d at %d: %w", i, p.Pos, err)
		}
		err = eachRecord(data, int(p.End-p.Data), fn)
		release()
		if err != nil {
			return fmt.Errorf("raftlog: predict queue offsets: entry %d at %d: %w", i, p.Pos, err)
		}
	}
	return nil
}

// eachRecord calls fn for every record of data, which must hold want bytes.
func eachRecord(data []byte, want int, fn func(v *message.RecordView)) error {
	if len(data) != want {
		return fmt.Errorf("%d of %d bytes readable", len(data), want)
	}
	for off := 0; off < len(data); {
		v, err := message.ParseRecord(data[off:])
		if err != nil {
			return err
		}
		fn(&v)
		off += v.Size
	}
	return nil
}
