package store

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"

	"github.com/rocketraft/rocketraft/message"
	"golang.org/x/sys/unix"
)

// Framed mode (Options.Framed) is the store under the Raft mode (package raftlog): the
// CommitLog is the Raft log. Its top-level units are framed Raft entries, each starting like a
// stored-message record with a 4-byte total size and a 4-byte magic code (raftlog draws the
// frame), or the blank filler that closes a file; a message entry carries standard
// stored-message records inside. The Raft log store writes the CommitLog with
// AppendCommitLog, AppendCommitLogBlank, SyncCommitLog and TruncateCommitLog and reads it with
// ReadCommitLog; the store never parses it on its own:
//
//   - Open loads the files but neither scans the CommitLog nor dispatches; RecoverFramed,
//     called by the log store once it has found the end of the valid entries, completes the
//     recovery. Start refuses to run before.
//   - There is no reput service: the Raft state machine dispatches committed entries with
//     DispatchMessages (which assigns the queue offsets and writes them into the records in
//     place) and AdvanceDispatch, in log order. The dispatched position is where reads by
//     physical offset stop and what MaxPhyOffset reports, so nothing uncommitted is visible.
//   - PutMessage refuses (ErrNotWritable): messages reach the CommitLog through Raft.
//   - Expired CommitLog files are deleted only where the retention guard allows it (the Raft
//     log must have compacted their entries) and never past the dispatched position.
//
// The checkpoint keeps its meaning: logicsFlushedOffset is the dispatched position as of the
// last thorough ConsumeQueue flush, which also syncs the CommitLog pages that dispatch wrote
// queue offsets into; recovery cuts the ConsumeQueues and the index back to it, so the Raft
// log replays (and re-assigns, identically) everything after it.

// errNotFramed is wrapped by the framed-mode methods called on a classic store.
var errNotFramed = errors.New("store: not in framed mode")

// ErrNotRecovered is returned by Start on a framed store before RecoverFramed.
var ErrNotRecovered = errors.New("store: framed store not recovered")

// Framed reports whether the store runs in framed mode (Options.Framed).
func (s *Store) Framed() bool { return s.opts.Framed }

// LastExitOK reports whether the previous run closed the store cleanly (no abort file was
// left behind).
func (s *Store) LastExitOK() bool { return s.lastExitOK && s.checkpoint.existed }

// CommitLogFileSize is mappedFileSizeCommitLog.
func (s *Store) CommitLogFileSize() int64 { return s.cfg.MappedFileSizeCommitLog }

// CommitLogEnd is the write end of the CommitLog: where the next AppendCommitLog goes, 0 for
// an empty store. It covers bytes not yet durable, and in framed mode entries not yet
// committed (MaxPhyOffset stops at the dispatched position there).
func (s *Store) CommitLogEnd() int64 { return s.commitLog.q.maxWrote() }

// loadFramed is Open's recovery in framed mode: the files are mapped (every position at the
// file end until RecoverFramed) and the ConsumeQueues and index loaded.
func (s *Store) loadFramed() error {
	if _, err := s.commitLog.q.load(loadOptions{repairLast: true}); err != nil {
		return err
	}
	if err := s.cqs.load(); err != nil {
		return err
	}
	if s.index != nil {
		return s.index.load()
	}
	return nil
}

// RecoverFramed completes Open in framed mode. end is the end of the last valid entry, found
// by the Raft log store: the CommitLog is cut there (durably, the rest of its file zeroed when
// the last run crashed or dirtyTail says bytes follow end), the ConsumeQueues and the index
// are cut back to the dispatched position of the checkpoint (lowered to the start of the
// entry holding the end of a damaged ConsumeQueue), and the next queue offsets are taken from
// the ConsumeQueues, so dispatching the entries after DispatchedOffset again assigns the queue
// offsets they had. Call it once, after Open and before Start.
func (s *Store) RecoverFramed(end int64, dirtyTail bool) error {
	if !s.opts.Framed {
		return fmt.Errorf("%w: RecoverFramed", errNotFramed)
	}
	if s.state.Load() != stateOpen || s.framedReady.Load() {
		return fmt.Errorf("%w: RecoverFramed must be called once, between Open and Start", ErrServiceNotAvailable)
	}
	if err := withFaultPanics(func() error { return s.recoverFramed(end, dirtyTail) }); err != nil {
		return err
	}
	if s.cfg.warmCommitLog() {
		if err := s.warmCurrentFile(); err != nil {
			return err
		}
	}
	s.framedReady.Store(true)
	return nil
}

func (s *Store) recoverFramed(end int64, dirtyTail bool) error {
	cl := s.commitLog
	q := cl.q
	minPhy := max(q.minOffset(), 0)
	if fileEnd := q.maxWrote(); end < minPhy || end > fileEnd {
		return fmt.Errorf("%w: recovered end %d outside [%d, %d]", ErrOffsetOutOfRange, end, minPhy, fileEnd)
	}
	abnormal := !s.LastExitOK()
	if err := q.truncateTo(end, abnormal || dirtyTail); err != nil {
		return err
	}
	q.flushedWhere.Store(end)
	q.committedWhere.Store(end)
	dispatched := minPhy
	if s.checkpoint.existed {
		dispatched = max(min(s.checkpoint.snapshot().logicsFlushedOffset, end), minPhy)
	}
	for _, cq := range s.cqs.all() {
		if cq.damaged {
			e := max(cq.maxPhysicOffset.Load(), minPhy)
			s.log.Warn("a damaged consume queue makes the raft log dispatch again", "topic", cq.topic, "queueId", cq.queueID, "from", e)
			dispatched = min(dispatched, e)
		}
	}
	dispatched = s.frameStartAt(dispatched)
	for _, cq := range s.cqs.all() {
		if err := cq.truncateAbove(dispatched); err != nil {
			return err
		}
		cl.setQueueOffset(queueKey{cq.topic, cq.queueID}, cq.maxOffset(), false)
		cq.correctMinOffset(minPhy)
	}
	if s.index != nil {
		s.index.truncateAbove(dispatched)
		s.repairIndexSlots()
	}
	if abnormal {
		if err := syncFileSystems(s.cfg.StorePathRootDir, s.cfg.commitLogDir()); err != nil {
			return err
		}
		s.reportAllSynced()
	}
	s.setDispatched(dispatched)
	s.checkpoint.update(func(d *checkpointData) {
		d.physicFlushedOffset = end
		d.logicsFlushedOffset = dispatched
	})
	s.log.Info("recovered framed store", "abnormal", abnormal, "commitlogEnd", end, "dispatched", dispatched)
	return s.flushConsumeQueues(0)
}

// frameStartAt is the start of the top-level unit (framed entry or blank filler) holding
// offset, walking the units of its file from the file start; offset itself at a boundary.
func (s *Store) frameStartAt(offset int64) int64 {
	f := s.commitLog.q.find(offset)
	if f == nil || offset == f.from {
		return offset
	}
	for pos := int64(0); ; {
		if pos+8 > f.size {
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

// setDispatched moves the dispatched position (and the read limit with it).
func (s *Store) setDispatched(off int64) {
	s.reput.from.Store(off)
	s.commitLog.readLimit.Store(off)
}

// DispatchedOffset is how far the CommitLog is dispatched: in framed mode the end of the last
// entry the Raft state machine dispatched (entries up to it are in the ConsumeQueues and the
// index), in classic mode the reput position.
func (s *Store) DispatchedOffset() int64 { return s.reput.from.Load() }

// AppendCommitLogBlank closes the file holding offset with a blank record (size, blank magic
// code; the rest of the file is zeros), as a put does when a record does not fit: offset must
// be the end of the CommitLog (else an *OffsetMismatchError), and the next append goes to the
// next file. Like AppendCommitLog, the bytes are readable when it returns and durable after
// the next flush; the same callers' rules apply.
func (s *Store) AppendCommitLogBlank(offset int64) error {
	if err := s.checkAppendable(); err != nil {
		return err
	}
	err := withFaultPanics(func() error { return s.commitLog.appendBlank(offset) })
	if err != nil {
		if errors.Is(err, errWriteFault) {
			s.markNotWritable(err)
			return fmt.Errorf("%w: %v", ErrNotWritable, err)
		}
		return err
	}
	if s.commitLog.staged {
		if err := s.commitLog.commitStaged(); err != nil {
			s.markNotWritable(err)
			return fmt.Errorf("%w: %v", ErrNotWritable, err)
		}
	}
	return nil
}

// appendBlank writes the blank record at offset, the write end of a file with room for it.
func (c *commitLog) appendBlank(offset int64) (err error) {
	c.putMu.Lock()
	defer c.putMu.Unlock()
	if c.putMu.closed {
		return fmt.Errorf("%w: store is closed", ErrServiceNotAvailable)
	}
	defer catchWriteFault(&err)
	if end := c.q.maxWrote(); offset != end {
		return &OffsetMismatchError{Offset: offset, End: end}
	}
	f := c.q.last()
	if f == nil || f.isFull() {
		return fmt.Errorf("%w: no file with room for a blank record at %d", ErrOffsetOutOfRange, offset)
	}
	if f.size-f.wrote.Load() < message.BlankRecordMinLength {
		return fmt.Errorf("%w: %d bytes left at %s, a blank record needs %d", ErrChunkCrossesFile,
			f.size-f.wrote.Load(), c.describeOffset(offset), message.BlankRecordMinLength)
	}
	return c.writeBlank(f, f.wrote.Load())
}

// SyncCommitLog writes and flushes everything appended so far and returns once it is durable
// (the flush is timed into Stats like the flush services'). A failed flush turns the store
// read-only and is returned. Safe for concurrent use.
func (s *Store) SyncCommitLog() error {
	if s.state.Load() == stateClosed {
		return fmt.Errorf("%w: store is closed", ErrServiceNotAvailable)
	}
	return s.flushCommitLog(0)
}

// AssignedOffset is what DispatchMessages did with one record.
type AssignedOffset struct {
	PhysicalOffset int64
	Size           int32
	QueueOffset    int64
}

// DispatchMessages dispatches the stored-message records lying back to back in [from, to) of
// the CommitLog (one framed entry's records, within one file, written before): each record is
// given the next queue offset of its topic and queue, written into the record in place unless
// the record carries that offset already (prepared and rolled-back transaction messages get 0
// and take none; Stats.QueueOffsetsWritten counts the records written), then gets its
// ConsumeQueue unit, index entries and arrival notice. With assign=false the records keep the
// queue offsets they carry (a log copied from another replica) and the next queue offsets are
// raised past them. The dispatched position then moves to end, the end of the entry (>= to),
// and the read limit with it. It appends to out what each record got.
//
// Framed mode only; one caller at a time (the Raft state machine), in log order. An error
// (a record that does not parse: the entry was written wrong) dispatches nothing more, and
// the dispatched position stays before the entry.
func (s *Store) DispatchMessages(from, to, end int64, assign bool, out []AssignedOffset) ([]AssignedOffset, error) {
	if !s.opts.Framed {
		return out, fmt.Errorf("%w: DispatchMessages", errNotFramed)
	}
	if from > to || to > end {
		return out, fmt.Errorf("store: DispatchMessages: range [%d, %d) and end %d out of order", from, to, end)
	}
	if s.notWritable.Load() {
		return out, fmt.Errorf("%w: a write or flush failed earlier (%v); reopen the store", ErrNotWritable, s.notWritableCause())
	}
	s.reput.mu.Lock()
	defer s.reput.mu.Unlock()
	if from == to {
		s.advanceDispatchLocked(end)
		return out, nil
	}
	f := s.commitLog.q.holdAt(from)
	if f == nil {
		return out, fmt.Errorf("%w: dispatch at %d: no file (min %d)", ErrOffsetOutOfRange, from, s.MinPhyOffset())
	}
	defer f.release()
	if to > f.from+f.readable() {
		return out, fmt.Errorf("%w: dispatch [%d, %d) passes the readable end %d of %s", ErrOffsetOutOfRange,
			from, to, f.from+f.readable(), f.fileName())
	}
	err := withFaultPanics(func() error {
		var err error
		out, err = s.dispatchFramed(f, from-f.from, to-f.from, assign, out)
		return err
	})
	if err != nil {
		if errors.Is(err, errWriteFault) {
			s.markNotWritable(err)
			return out, fmt.Errorf("%w: %w", ErrNotWritable, err)
		}
		return out, err
	}
	s.advanceDispatchLocked(end)
	return out, nil
}

// dispatchFramed is DispatchMessages over the positions [pos, stop) of f. reput.mu held.
//
// With assign, a record that carries its queue offset already (the Raft log store writes the
// offsets it predicts before the entry's sync) is left as it is; only a record that does not
// is written, and counted in Stats.QueueOffsetsWritten. The dispatch's own counters decide
// either way: a record never keeps an offset they did not give it. With pwrite writes
// (SYNC_FLUSH) the offsets go into a copy of the records from the first one written, put back
// with one pwrite once the entry is dispatched (still before the dispatched position and the
// read limit move, so no reader sees a record without its queue offset): the pages were just
// written with pwrite and synced, so a store through the mapping takes a write-protect fault
// per page (ext4's page_mkwrite), measured at 12 % (leader) to 16 % (followers) of a Raft
// node's CPU in the bench-compare raft row; the pwrite dirties the same pages again, and the
// next sync writes them a second time.
func (s *Store) dispatchFramed(f *mappedFile, pos, stop int64, assign bool, out []AssignedOffset) (_ []AssignedOffset, err error) {
	cl := s.commitLog
	var patch []byte
	patchAt := int64(-1)
	defer func() {
		if patch == nil {
			return
		}
		s.reput.patch = patch[:0]
		if _, werr := f.file.WriteAt(patch[:pos-patchAt], patchAt); werr != nil && err == nil {
			err = fmt.Errorf("%w: write queue offsets into %s at %d: %v", errWriteFault, f.path, patchAt, werr)
		}
		s.markInPlaceWrites(f.from + patchAt) // after the write: a flush that clears the mark covers it
	}()
	for pos < stop {
		v, err := message.ParseRecord(f.data[pos:stop])
		if err != nil {
			return out, fmt.Errorf("%w at %s", err, cl.describeOffset(f.from+pos))
		}
		phy := f.from + pos
		if assign {
			want := int64(0)
			if !isTransactionSkipped(v.SysFlag) {
				want = cl.takeQueueOffset(queueKey{s.reput.topicString(v.Topic), v.QueueID})
			}
			if v.QueueOffset != want {
				switch {
				case cl.writeWithoutMmap && patch == nil:
					patchAt = pos
					patch = append(s.reput.patch[:0], f.data[pos:stop]...)
					fallthrough
				case patch != nil:
					binary.BigEndian.PutUint64(patch[pos-patchAt+message.OffQueueOffset:], uint64(want))
				default:
					binary.BigEndian.PutUint64(f.data[pos+message.OffQueueOffset:], uint64(want))
					s.markInPlaceWrites(phy)
				}
				s.stats.queueOffsetsWritten.Add(1)
				v.QueueOffset = want
			}
		} else if !isTransactionSkipped(v.SysFlag) {
			cl.raiseQueueOffset(queueKey{s.reput.topicString(v.Topic), v.QueueID}, v.QueueOffset+1)
		}
		if err := s.dispatchRecord(&v, phy, true); err != nil {
			return out, err
		}
		out = append(out, AssignedOffset{PhysicalOffset: phy, Size: int32(v.Size), QueueOffset: v.QueueOffset})
		s.reput.lastStoreTimestamp.Store(v.StoreTimestamp)
		pos += int64(v.Size)
	}
	return out, nil
}

// takeQueueOffset returns the next queue offset of key and moves it on.
func (c *commitLog) takeQueueOffset(key queueKey) int64 {
	c.putMu.Lock()
	defer c.putMu.Unlock()
	p := c.queueNextLocked(key)
	next := *p
	*p = next + 1
	return next
}

// AdvanceDispatch moves the dispatched position to end (never back): a framed entry without
// messages (Raft configuration, no-op, barrier, metadata) was applied. Framed mode only; safe
// concurrently with DispatchMessages (both hold the reput lock; a new leader's barrier calls
// it from another goroutine than the state machine).
func (s *Store) AdvanceDispatch(end int64) {
	if !s.opts.Framed {
		return
	}
	s.reput.mu.Lock()
	defer s.reput.mu.Unlock()
	s.advanceDispatchLocked(end)
}

func (s *Store) advanceDispatchLocked(end int64) {
	if end > s.reput.from.Load() {
		s.setDispatched(end)
	}
}

// markInPlaceWrites notes that dispatch wrote into the CommitLog at off, below what the flush
// may already have made durable: the next thorough ConsumeQueue flush syncs it.
func (s *Store) markInPlaceWrites(off int64) {
	for {
		cur := s.inPlaceFrom.Load()
		if cur <= off || s.inPlaceFrom.CompareAndSwap(cur, off) {
			return
		}
	}
}

// syncInPlaceWrites fdatasyncs the CommitLog files dispatch wrote queue offsets into, up to
// through: the checkpoint may then say they are dispatched durably.
func (s *Store) syncInPlaceWrites(through int64) error {
	from := s.inPlaceFrom.Swap(math.MaxInt64)
	if from == math.MaxInt64 {
		return nil
	}
	for _, f := range s.commitLog.q.snapshot() {
		if f.from+f.size <= from || f.from >= through || !f.hold() {
			continue
		}
		err := unix.Fdatasync(int(f.file.Fd()))
		f.release()
		if err != nil {
			s.markInPlaceWrites(from)
			return fmt.Errorf("store: sync queue offsets written into %s: %w", f.path, err)
		}
	}
	return nil
}

// SetRetentionGuard sets the framed-mode check the clean service asks before it deletes a
// CommitLog file [from, to): the Raft log says whether it no longer needs the entries there
// (nil allows every file, as in classic mode). fn runs on the clean goroutine, or on the
// caller of PruneCommitLog, and must not block.
func (s *Store) SetRetentionGuard(fn func(from, to int64) bool) {
	if fn == nil {
		s.retention.Store(nil)
		return
	}
	s.retention.Store(&fn)
}

// retentionAllows asks the retention guard about the file [from, to).
func (s *Store) retentionAllows(from, to int64) bool {
	fn := s.retention.Load()
	return fn == nil || (*fn)(from, to)
}

// PruneCommitLog deletes, oldest first and never the last file, the CommitLog files that end
// at or before offset, that are flushed and dispatched and that the retention guard allows,
// with the ConsumeQueue and index files that only point below the new minimum, whatever
// their age: what the clean service does to expired files, on demand (the Raft mode uses it
// when the log was compacted). It returns the number of CommitLog files deleted.
func (s *Store) PruneCommitLog(offset int64) int {
	q := s.commitLog.q
	limit := min(s.reput.from.Load(), q.flushedWhere.Load(), offset)
	n := q.deleteFirst(func(f *mappedFile) bool {
		return f.from+f.size <= limit && s.retentionAllows(f.from, f.from+f.size)
	}, math.MaxInt, nil)
	if n > 0 {
		s.cleanLogics(context.Background(), 0)
	}
	return n
}

// RecoveryStart is where a framed log store should start checking the CommitLog: the start
// of the third-last file after a clean close (as RocketMQ's normal recovery), the file
// holding the checkpoint's safe point after a crash, whichever is earlier.
func (s *Store) RecoveryStart() int64 {
	files := s.commitLog.q.snapshot()
	if len(files) == 0 {
		return 0
	}
	start := files[max(len(files)-normalRecoveryFiles, 0)].from
	if !s.LastExitOK() {
		safe := int64(0)
		if s.checkpoint.existed {
			safe = s.checkpoint.snapshot().safeOffset(false)
		}
		holding := files[0].from
		for _, f := range files {
			if f.from <= safe {
				holding = f.from
			}
		}
		start = min(start, holding)
	}
	return start
}

// ResetCommitLog empties a framed store for a log copied from another replica (a Raft
// snapshot install): every CommitLog file, ConsumeQueue and index file is deleted, the next
// queue offsets forgotten, and the dispatched position and the write end set to offset, a
// multiple of mappedFileSizeCommitLog where the first AppendCommitLog must then start.
// Durable when it returns. No append, dispatch or truncation may run meanwhile.
func (s *Store) ResetCommitLog(offset int64) error {
	if !s.opts.Framed {
		return fmt.Errorf("%w: ResetCommitLog", errNotFramed)
	}
	if offset < 0 || offset%s.cfg.MappedFileSizeCommitLog != 0 {
		return fmt.Errorf("%w: reset at %d, not a multiple of mappedFileSizeCommitLog %d", ErrOffsetOutOfRange, offset, s.cfg.MappedFileSizeCommitLog)
	}
	defer s.lockWriters()()
	cl := s.commitLog
	q := cl.q
	st := cl.takeStageLocked()
	st.reset()
	cl.stager.spare = st
	errs := []error{q.dropAll()}
	s.alloc.discardFrom(0)
	q.flushedWhere.Store(offset)
	q.committedWhere.Store(offset)
	for _, cq := range s.cqs.all() {
		s.cqs.remove(cq.topic)
		errs = append(errs, cq.destroy())
	}
	clear(cl.putMu.queueOffsets)
	if s.index != nil {
		s.index.truncateAbove(0)
		errs = append(errs, s.index.syncAll())
	}
	s.setDispatched(offset)
	s.checkpoint.update(func(d *checkpointData) {
		d.physicFlushedOffset, d.logicsFlushedOffset, d.indexFlushedOffset = offset, offset, offset
	})
	errs = append(errs, s.checkpoint.flush())
	for _, dir := range []string{q.dir, s.cfg.consumeQueueDir()} {
		if err := syncDir(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	s.log.Info("emptied the framed store", "next", offset)
	return errors.Join(errs...)
}
