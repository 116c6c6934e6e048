package store

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rocketraft/rocketraft/message"
)

// reputPollInterval is the fallback poll of the reput service; puts, commits and
// SetConfirmOffset wake it directly.
const reputPollInterval = 100 * time.Millisecond

// reputService is RocketMQ's ReputMessageService: one goroutine reads the CommitLog after
// the last dispatched offset and feeds the ConsumeQueues, the index and the arriving
// listener. from only grows, except in recovery.
type reputService struct {
	// mu is held by each dispatch run, and by TruncateCommitLog to keep dispatch out.
	mu sync.Mutex
	// patch is the copy of an entry's records dispatchFramed writes the queue offsets into
	// before one pwrite puts it back (guarded by mu).
	patch              []byte
	from               atomic.Int64
	lastStoreTimestamp atomic.Int64
	wake               chan struct{}
	// stuckAt is the offset of the last record dispatch failed on (logged once per offset).
	stuckAt atomic.Int64
	// lastTopic saves a string allocation per record for runs of one topic (the framed dispatch's
	// queue-offset keys; the ConsumeQueue dispatch uses each queue's own topic string).
	lastTopic string
}

// topicString returns b as a string, reusing the previous record's topic when equal.
func (r *reputService) topicString(b []byte) string {
	if string(b) != r.lastTopic {
		r.lastTopic = string(b)
	}
	return r.lastTopic
}

func newReputService() *reputService {
	r := &reputService{wake: make(chan struct{}, 1)}
	r.stuckAt.Store(-1)
	return r
}

func (r *reputService) wakeup() { wake(r.wake) }

// dispatchLimit is the end dispatch may reach: the readable CommitLog end, no further than
// the flushed end on a SYNC_FLUSH master (durableDispatch), or the confirm offset once set.
func (s *Store) dispatchLimit() int64 {
	limit := s.commitLog.q.maxOffset()
	if s.durableDispatch {
		limit = min(limit, s.commitLog.q.flushedWhere.Load())
	}
	if c := s.confirmOffset.Load(); c >= 0 && c < limit {
		limit = c
	}
	return limit
}

func (s *Store) runReput(ctx context.Context) {
	t := time.NewTicker(reputPollInterval)
	defer t.Stop()
	faulted := false // logged once per run of faults: a full disk faults every wake-up
	for {
		if err := withFaultPanics(func() error { s.doReput(true); return nil }); err != nil {
			if !faulted {
				s.log.Error("dispatch faulted on mapped memory (a full or failed disk?); it retries on every wake-up, "+
					"logged again once it has passed", "from", s.reput.from.Load(), "err", err)
			}
			faulted = true
		} else if faulted {
			s.log.Info("dispatch passes again after a fault", "from", s.reput.from.Load())
			faulted = false
		}
		select {
		case <-ctx.Done():
			return
		case <-s.reput.wake:
		case <-t.C:
		}
	}
}

// doReput dispatches every complete record between the reput offset and the dispatch limit.
// notify calls the arriving listener. Only the reput goroutine, Open and Close call it.
func (s *Store) doReput(notify bool) {
	if s.opts.Framed {
		return // the Raft state machine dispatches (framed.go)
	}
	s.reput.mu.Lock()
	defer s.reput.mu.Unlock()
	q := s.commitLog.q
	for {
		from := s.reput.from.Load()
		limit := s.dispatchLimit()
		if from >= limit {
			return
		}
		if minOff := q.minOffset(); from < minOff {
			s.log.Warn("reput offset is below the commitlog minimum, skipping ahead", "from", from, "min", minOff)
			s.reput.from.Store(minOff)
			continue
		}
		f := q.holdAt(from)
		if f == nil {
			return
		}
		next, err := s.dispatchFile(f, from-f.from, min(f.readable(), limit-f.from), notify)
		f.release()
		s.reput.from.Store(next)
		if err != nil {
			if s.reput.stuckAt.Swap(next) != next {
				s.log.Error("dispatch stopped; it retries on the next wake-up", "offset", next, "err", err)
			}
			return
		}
		if next == from {
			return
		}
	}
}

// dispatchFile dispatches the records of f from pos up to end and returns the offset reached.
func (s *Store) dispatchFile(f *mappedFile, pos, end int64, notify bool) (int64, error) {
	for pos+8 <= end {
		size := int64(int32(binary.BigEndian.Uint32(f.data[pos:])))
		magic := int32(binary.BigEndian.Uint32(f.data[pos+4:]))
		if magic == message.BlankMagicCode {
			return f.from + f.size, nil
		}
		if size <= 0 || pos+size > end {
			if size <= 0 || pos+size > f.size {
				return f.from + pos, fmt.Errorf("%w: record size %d at %s", ErrCorruptRecord, size, s.commitLog.describeOffset(f.from+pos))
			}
			// The record ends past the confirm offset, or past what a replica has
			// received so far (AppendCommitLog may split records): wait for the rest.
			break
		}
		v, err := message.ParseRecord(f.data[pos : pos+size])
		if err != nil {
			return f.from + pos, fmt.Errorf("%w at %s", err, s.commitLog.describeOffset(f.from+pos))
		}
		if err := s.dispatchRecord(&v, f.from+pos, notify); err != nil {
			return f.from + pos, err
		}
		pos += size
		s.reput.lastStoreTimestamp.Store(v.StoreTimestamp)
	}
	return f.from + pos, nil
}

// dispatchRecord appends the ConsumeQueue unit (not for prepared or rolled-back
// transaction messages), notifies the listener and indexes the keys.
func (s *Store) dispatchRecord(v *message.RecordView, phy int64, notify bool) error {
	if !isTransactionSkipped(v.SysFlag) {
		listener := s.opts.ArrivingListener
		var tags int64
		if t, ok := message.PropertyValue(v.Properties, message.PropertyTags); ok && len(t) > 0 {
			tags = int64(message.JavaStringHash(t))
		}
		s.cqRemove.RLock()
		cq := s.cqs.getOrCreateFor(v.Topic, v.QueueID)
		topic := cq.topic // the queue's own string: no allocation per record
		if s.opts.TagsCode != nil {
			if code, ok := s.opts.TagsCode(topic, v.Properties, v.StoreTimestamp); ok {
				tags = code
			}
		}
		added, err := cq.put(phy, int32(v.Size), tags, v.QueueOffset)
		s.cqRemove.RUnlock()
		if err != nil {
			return fmt.Errorf("store: consume queue %s/%d: %w", topic, v.QueueID, err)
		}
		if added && s.replicaAppends.Load() {
			// Records a replica appended were given their queue offsets elsewhere: a put
			// on this store later (after a promotion) must continue after them.
			s.commitLog.raiseQueueOffset(queueKey{topic, v.QueueID}, v.QueueOffset+1)
		}
		if added && notify && listener != nil {
			listener(Arrival{Topic: topic, QueueID: v.QueueID, QueueOffset: v.QueueOffset, TagsCode: tags,
				StoreTimestamp: v.StoreTimestamp, Properties: v.Properties})
		}
	}
	if s.index != nil {
		err := s.index.build(indexRecord{phy: phy, storeTimestamp: v.StoreTimestamp, sysFlag: v.SysFlag,
			topic: v.Topic, properties: v.Properties})
		if err != nil {
			return fmt.Errorf("store: index: %w", err)
		}
	}
	return nil
}
