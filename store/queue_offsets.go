package store

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
)

// QueueNext is one entry of the next-queue-offset table (RocketMQ's topicQueueTable): the
// queue offset the next record of a topic's queue gets.
type QueueNext struct {
	Topic   string
	QueueID int32
	Next    int64
}

// QueueOffsetTable returns the next queue offset of every queue that has taken one, sorted by
// topic and queue id. In framed mode, called by the Raft state machine between two dispatches,
// it is the table as of the last entry dispatched: what a replica that installs the log from
// that entry on needs for the queues whose records all lie before it (SeedQueueOffsets).
func (s *Store) QueueOffsetTable() []QueueNext {
	cl := s.commitLog
	cl.putMu.Lock()
	out := make([]QueueNext, 0, len(cl.putMu.queueOffsets))
	for k, p := range cl.putMu.queueOffsets {
		if next := *p; next > 0 {
			out = append(out, QueueNext{Topic: k.topic, QueueID: k.queueID, Next: next})
		}
	}
	cl.putMu.Unlock()
	slices.SortFunc(out, func(a, b QueueNext) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.QueueID, b.QueueID))
	})
	return out
}

// DispatchedQueueOffsets returns QueueOffsetTable and DispatchedOffset as of one moment:
// the table is the one of the last entry dispatched before that position. Framed mode; safe
// concurrently with DispatchMessages (it waits for a dispatch in progress). The Raft log store
// predicts the queue offsets of the entries it stores from them.
func (s *Store) DispatchedQueueOffsets() ([]QueueNext, int64) {
	s.reput.mu.Lock()
	defer s.reput.mu.Unlock()
	return s.QueueOffsetTable(), s.DispatchedOffset()
}

// SeedQueueOffsets makes the next queue offset of each queue in table at least its Next. A
// queue whose ConsumeQueue ends below Next is filled with filler units up to it (an empty one
// gets its first file where Next lies), as a queue whose records all expired ends: its
// minimum and maximum offsets are then Next, the next record dispatched there gets Next, and
// so does the same record dispatched again after a restart (recovery keeps the fillers, and
// takes the next offsets from the ConsumeQueues). The seeded files are durable when it
// returns. Framed mode: a Raft snapshot install, after the copied records are dispatched,
// with no dispatch running meanwhile.
func (s *Store) SeedQueueOffsets(table []QueueNext) error {
	if !s.opts.Framed {
		return fmt.Errorf("%w: SeedQueueOffsets", errNotFramed)
	}
	s.reput.mu.Lock()
	defer s.reput.mu.Unlock()
	var errs []error
	dirs := map[string]bool{}
	for _, e := range table {
		if e.Next <= 0 {
			continue
		}
		if e.QueueID < 0 || e.Topic == "" {
			errs = append(errs, fmt.Errorf("store: seed queue offsets: topic %q queue %d is not a queue", e.Topic, e.QueueID))
			continue
		}
		cq := s.cqs.getOrCreate(e.Topic, e.QueueID)
		wrote, err := cq.seed(e.Next)
		if err == nil && wrote {
			err = cq.flush(0)
			dirs[cq.q.dir] = true
			dirs[filepath.Dir(cq.q.dir)] = true
			s.log.Info("seeded a consume queue", "topic", e.Topic, "queueId", e.QueueID, "next", e.Next)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("store: seed %s/%d at %d: %w", e.Topic, e.QueueID, e.Next, err))
			continue
		}
		s.commitLog.raiseQueueOffset(queueKey{e.Topic, e.QueueID}, e.Next)
	}
	if len(dirs) > 0 {
		dirs[s.cfg.consumeQueueDir()] = true
	}
	for dir := range dirs {
		if err := syncDir(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
