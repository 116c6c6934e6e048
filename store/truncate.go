package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"

	"github.com/rocketraft/rocketraft/message"
)

// TruncateCommitLog drops the CommitLog from offset on (a replica whose tail diverged from
// its master, or a Raft follower's conflicting suffix), with everything built from it:
// ConsumeQueue units and index entries of every record that no longer lies whole before
// offset, and the next queue offsets those records had taken. Dispatch moves back to the
// start of the first record dropped. offset is a byte position in [MinPhyOffset,
// MaxPhyOffset]: it need not be a record boundary (a replica may hold part of a record, or
// part of a file's blank filler; appending the master's bytes from offset makes it whole
// again); outside that range the error wraps ErrOffsetOutOfRange. At MaxPhyOffset nothing
// changes.
//
// Durable when it returns: the cut file's tail is zeroed and synced, later files are
// deleted, the ConsumeQueues, index and checkpoint are synced, and so are the folders. Puts
// and AppendCommitLog wait meanwhile; a SYNC_FLUSH put whose record was dropped returns
// PutFlushDiskTimeout (a Replicator must fail its own waiters past offset). A confirm offset
// past offset is lowered to it. Readers holding records past offset keep valid memory, but
// the bytes of the cut file read as zeros.
func (s *Store) TruncateCommitLog(offset int64) error {
	if s.state.Load() == stateClosed {
		return fmt.Errorf("%w: store is closed", ErrServiceNotAvailable)
	}
	cut, err := s.truncateCommitLog(offset)
	if cut && s.group != nil {
		// Outside every lock: a put callback may put again.
		s.group.failAbove(offset)
	}
	s.reput.wakeup()
	return err
}

// truncateCommitLog does TruncateCommitLog under the locks; cut reports that data was dropped.
func (s *Store) truncateCommitLog(offset int64) (cut bool, _ error) {
	defer s.lockWriters()()
	cl := s.commitLog
	q := cl.q

	cl.stager.readAhead = 0
	if err := cl.writeStage(cl.takeStageLocked()); err != nil {
		s.markNotWritable(err)
		return false, fmt.Errorf("%w: %v", ErrNotWritable, err)
	}
	if s.pool != nil {
		q.commitLocked(0)
	}
	end, minOff := q.maxWrote(), max(q.minOffset(), 0)
	if offset < minOff || offset > end {
		return false, fmt.Errorf("%w: truncate at %d outside [%d, %d]", ErrOffsetOutOfRange, offset, minOff, end)
	}
	if offset == end {
		return false, nil
	}
	if s.opts.Framed && offset < s.reput.from.Load() {
		return false, fmt.Errorf("%w: truncate at %d below the dispatched position %d (committed entries)",
			ErrOffsetOutOfRange, offset, s.reput.from.Load())
	}
	// Files made ahead of the old end would leave a gap after the cut: they go first (the
	// highest offsets), then truncateTo deletes the later files from the last one, so a crash
	// at any point leaves the folder without a gap.
	s.alloc.discardFrom(offset - offset%q.fileSize + q.fileSize)
	var dropFrom int64
	var lowest map[queueKey]int64
	err := withFaultPanics(func() error {
		dropFrom = s.recordStartAt(offset)
		lowest = s.droppedQueueOffsets(dropFrom, end)
		return q.truncateTo(offset, true)
	})
	if err != nil {
		s.markNotWritable(err)
		return true, fmt.Errorf("%w: truncate %s: %v", ErrNotWritable, cl.describeOffset(offset), err)
	}
	for key, next := range lowest {
		if p := cl.putMu.queueOffsets[key]; p != nil && *p > next {
			*p = next
		}
	}
	var errs []error
	dirs := []string{q.dir}
	for _, cq := range s.cqs.all() {
		if cq.maxPhysicOffset.Load() > dropFrom {
			errs = append(errs, cq.truncateAbove(dropFrom))
			dirs = append(dirs, cq.q.dir)
		}
	}
	if s.index != nil {
		s.index.truncateAbove(dropFrom)
		errs = append(errs, s.index.syncAll())
		dirs = append(dirs, s.index.dir)
	}
	if s.reput.from.Load() > dropFrom {
		s.reput.from.Store(dropFrom)
	}
	if c := s.confirmOffset.Load(); c > offset {
		s.log.Warn("truncation below the confirm offset lowers it", "confirmOffset", c, "offset", offset)
		s.confirmOffset.Store(offset)
	}
	s.checkpoint.update(func(d *checkpointData) {
		d.physicFlushedOffset = min(d.physicFlushedOffset, offset)
		d.logicsFlushedOffset = min(d.logicsFlushedOffset, dropFrom)
		d.indexFlushedOffset = min(d.indexFlushedOffset, dropFrom)
		d.confirmPhyOffset = min(d.confirmPhyOffset, offset)
	})
	errs = append(errs, s.checkpoint.flush())
	for _, dir := range dirs {
		if err := syncDir(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	s.log.Info("truncated the commitlog", "from", end, "to", offset, "firstRecordDropped", dropFrom)
	return true, errors.Join(errs...)
}

// recordStartAt is the start of the record (or blank filler, or partial record at the end)
// that holds offset: offset itself at a record boundary. It walks record headers from the
// nearest boundary it knows before offset in the same file: the file start, the dispatch
// position, or the end of a ConsumeQueue's last record. Put lock held.
func (s *Store) recordStartAt(offset int64) int64 {
	f := s.commitLog.q.find(offset)
	if f == nil || offset == f.from {
		return offset
	}
	from := f.from
	if r := s.reput.from.Load(); r > from && r <= offset {
		from = r
	}
	for _, cq := range s.cqs.all() {
		if e := cq.maxPhysicOffset.Load(); e > from && e <= offset {
			from = e
		}
	}
	wrote := f.wrote.Load()
	for pos := from - f.from; ; {
		if pos+8 > wrote {
			return f.from + pos
		}
		size := int64(int32(binary.BigEndian.Uint32(f.data[pos:])))
		magic := int32(binary.BigEndian.Uint32(f.data[pos+4:]))
		if magic == message.BlankMagicCode || size <= 0 || f.from+pos+size > offset {
			return f.from + pos
		}
		pos += size
	}
}

// droppedQueueOffsets walks the whole records in [from, end) and returns, per queue, the
// lowest queue offset among them: the next queue offset once they are gone. Put lock held.
func (s *Store) droppedQueueOffsets(from, end int64) map[queueKey]int64 {
	lowest := make(map[queueKey]int64)
	q := s.commitLog.q
	for from < end {
		f := q.find(from)
		if f == nil {
			break
		}
		pos, stop := from-f.from, min(f.wrote.Load(), end-f.from)
		for pos+8 <= stop {
			size := int64(int32(binary.BigEndian.Uint32(f.data[pos:])))
			magic := int32(binary.BigEndian.Uint32(f.data[pos+4:]))
			if magic == message.BlankMagicCode || size <= 0 || pos+size > stop {
				break
			}
			if v, err := message.ParseRecord(f.data[pos : pos+size]); err == nil && !isTransactionSkipped(v.SysFlag) {
				key := queueKey{string(v.Topic), v.QueueID}
				if cur, ok := lowest[key]; !ok || v.QueueOffset < cur {
					lowest[key] = v.QueueOffset
				}
			}
			pos += size
		}
		from = f.from + f.size
	}
	return lowest
}

// lockWriters takes, in the store's lock order (dispatch, the stage, the put lock, flush and
// commit of the CommitLog files), every lock that writes to or reads ahead of the CommitLog
// tail, for the operations that move the tail back; the result releases them, after the
// cold-read chunks are forgotten (the bytes at their offsets may be other bytes now; a chunk
// being read meanwhile is not kept).
func (s *Store) lockWriters() (unlock func()) {
	cl := s.commitLog
	q := cl.q
	s.reput.mu.Lock()
	cl.stager.mu.Lock()
	cl.putMu.Lock()
	q.flushMu.Lock()
	q.commitMu.Lock()
	return func() {
		if s.cold != nil {
			s.cold.forget()
		}
		q.commitMu.Unlock()
		q.flushMu.Unlock()
		cl.putMu.Unlock()
		cl.stager.mu.Unlock()
		s.reput.mu.Unlock()
	}
}
