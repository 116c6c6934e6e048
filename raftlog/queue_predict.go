package raftlog

import (
	"encoding/binary"
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
	q, ok := p.next[string(v.Topic)]
	if int(v.QueueID) >= len(q) {
		q = append(q, make([]int64, int(v.QueueID)+1-len(q))...)
		ok = false
	}
	n := q[v.QueueID]
	q[v.QueueID] = n + 1
	if !ok {
		p.next[string(v.Topic)] = q
	}
	return n
}

// set makes next the table's next offset of topic's queue id (false: an id out of range).
func (p *queuePrediction) set(topic string, id int32, next int64) bool {
	if id < 0 || id >= maxPredictedQueueID {
		return false
	}
	q := p.next[topic]
	if int(id) >= len(q) {
		q = append(q, make([]int64, int(id)+1-len(q))...)
	}
	q[id] = next
	p.next[topic] = q
	return true
}

// queueOffset is take as PatchRecordsWith's callback, nil without a table.
func (p *queuePrediction) queueOffset() func(v *message.RecordView) int64 {
	if p.next == nil {
		return nil
	}
	return p.take
}

// preparePrediction rebuilds the table before StoreLogs writes at end when it is stale. wmu
// held. A rebuild that fails leaves no table: the entries are stored with zeros, as before,
// and the next staleness tries again.
func (s *Store) preparePrediction(end int64) {
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
	if err := s.walkMessageRecords(at, end, func(v *message.RecordView) { p.take(v) }); err != nil {
		p.next = nil
		s.log.Warn("queue offsets are written at apply until the next rebuild", "err", err)
	}
}

// walkMessageRecords calls fn, in log order, for every record of the message entries in the
// CommitLog [from, to) (from a unit boundary).
func (s *Store) walkMessageRecords(from, to int64, fn func(v *message.RecordView)) error {
	if from > to {
		return fmt.Errorf("raftlog: predict queue offsets: dispatched position %d is past the log end %d", from, to)
	}
	for pos := from; pos < to; {
		head, release, err := s.cl.ReadCommitLog(pos, blankHeaderSize)
		if err != nil {
			return fmt.Errorf("raftlog: predict queue offsets: read at %d: %w", pos, err)
		}
		size := int64(binary.BigEndian.Uint32(head))
		magic := int32(binary.BigEndian.Uint32(head[4:]))
		release()
		if magic == message.BlankMagicCode {
			pos += size
			continue
		}
		h, err := s.headerAt(pos)
		if err != nil {
			return fmt.Errorf("raftlog: predict queue offsets: %w", err)
		}
		if h.kind == KindMessages && h.typ == raft.LogCommand {
			if err := s.walkFrameRecords(&h, fn); err != nil {
				return err
			}
		}
		pos = h.end()
	}
	return nil
}

// walkFrameRecords calls fn for every record of the message frame h.
func (s *Store) walkFrameRecords(h *frameHeader, fn func(v *message.RecordView)) error {
	f, release, err := s.cl.ReadCommitLog(h.pos, int(h.size))
	if err != nil {
		return fmt.Errorf("raftlog: predict queue offsets: read entry %d at %d: %w", h.index, h.pos, err)
	}
	defer release()
	if int64(len(f)) != h.size {
		return fmt.Errorf("raftlog: predict queue offsets: entry %d at %d: %d of %d bytes readable", h.index, h.pos, len(f), h.size)
	}
	data := f[h.dataOffset():]
	for off := 0; off < len(data); {
		v, err := message.ParseRecord(data[off:])
		if err != nil {
			return fmt.Errorf("raftlog: predict queue offsets: entry %d at %d: %w", h.index, h.pos, err)
		}
		fn(&v)
		off += v.Size
	}
	return nil
}
