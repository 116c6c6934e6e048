package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
)

// What replication (ha/, raftlog/) needs from the store: raw CommitLog bytes to send
// (ReadCommitLog), to append at the same offsets (AppendCommitLog), to drop a diverged tail
// (TruncateCommitLog, truncate.go), the durable end (FlushedPhyOffset), a cheap wait for new
// bytes (WaitForNewData) and, on a SYNC_MASTER, a hook in the put path (Replicator).
//
// The CommitLog is a byte stream here: replicas hold the same bytes at the same offsets, file
// boundaries included (a record never spans files, a blank filler closes each file). Chunks
// may split records; dispatch only ever dispatches whole records.

var (
	// ErrOffsetMismatch is wrapped by *OffsetMismatchError.
	ErrOffsetMismatch = errors.New("store: commitlog offset mismatch")
	// ErrChunkCrossesFile: an AppendCommitLog chunk runs past the end of the file it starts
	// in; nothing was written.
	ErrChunkCrossesFile = errors.New("store: chunk crosses a commitlog file end")
	// ErrOffsetOutOfRange: an offset outside [MinPhyOffset, MaxPhyOffset].
	ErrOffsetOutOfRange = errors.New("store: commitlog offset out of range")
)

// OffsetMismatchError says an AppendCommitLog chunk does not start at the CommitLog's end:
// a gap (Offset > End, bytes missing in between) or an overlap (Offset < End). Nothing was
// written. errors.Is(err, ErrOffsetMismatch) holds.
type OffsetMismatchError struct {
	// Offset is where the chunk starts, End where the CommitLog ends (the offset expected).
	Offset, End int64
}

func (e *OffsetMismatchError) Error() string {
	kind := "overlaps"
	if e.Gap() {
		kind = "leaves a gap after"
	}
	return fmt.Sprintf("store: chunk at offset %d %s the commitlog end %d", e.Offset, kind, e.End)
}

func (e *OffsetMismatchError) Unwrap() error { return ErrOffsetMismatch }

// Gap reports a chunk that starts past the end; otherwise it overlaps bytes already there.
func (e *OffsetMismatchError) Gap() bool { return e.Offset > e.End }

// Replicator is the SYNC_MASTER group transfer, implemented outside the store (ha/). With
// Options.Replicator set and brokerRole SYNC_MASTER, every put that waits for its store (the
// WAIT property is not "false") calls Wait once its records are locally durable (after the
// flush under SYNC_FLUSH, at once under ASYNC_FLUSH) and reports the status Wait gives; a put
// whose flush failed reports PutFlushDiskTimeout without calling Wait. Unset, or on another
// role, the put path never looks at it.
type Replicator interface {
	// Wait arranges for done to be called exactly once, from any goroutine, with PutOK when
	// a slave has acknowledged the CommitLog up to offset (the end of the put's records),
	// PutFlushSlaveTimeout when none did in time, or PutSlaveNotAvailable when no slave can
	// (none connected, or too far behind). Wait must not block; done must not block either
	// (it may run a put's callback). Wait is called concurrently from many puts.
	Wait(offset int64, done func(PutStatus))
}

// ReplicatorFunc adapts a function to Replicator.
type ReplicatorFunc func(offset int64, done func(PutStatus))

// Wait calls f.
func (f ReplicatorFunc) Wait(offset int64, done func(PutStatus)) { f(offset, done) }

var _ Replicator = ReplicatorFunc(nil)

// ReadCommitLog returns the CommitLog bytes from offset: at most maxBytes, never past the end
// of the file holding offset, and only what is readable (written to the file: with
// SYNC_FLUSH that includes bytes not yet flushed; cap maxBytes at FlushedPhyOffset()-offset
// to send only durable bytes). data points into the mapped file, without a copy; it stays
// valid until release is called (exactly once, from any goroutine), even if the file is
// deleted meanwhile. At the end (offset == MaxPhyOffset()) data is empty and err nil; an
// offset outside [MinPhyOffset, MaxPhyOffset] wraps ErrOffsetOutOfRange. Safe for
// concurrent use.
func (s *Store) ReadCommitLog(offset int64, maxBytes int) (data []byte, release func(), err error) {
	if maxBytes <= 0 {
		return nil, nil, fmt.Errorf("store: ReadCommitLog: maxBytes %d must be positive", maxBytes)
	}
	q := s.commitLog.q
	end := q.maxOffset()
	if offset == end {
		return nil, func() {}, nil
	}
	f := q.holdAt(offset)
	if f == nil || offset > end {
		if f != nil {
			f.release()
		}
		return nil, nil, fmt.Errorf("%w: %d outside [%d, %d]", ErrOffsetOutOfRange, offset, s.MinPhyOffset(), end)
	}
	pos := offset - f.from
	n := min(f.readable()-pos, int64(maxBytes))
	if n <= 0 {
		f.release()
		return nil, func() {}, nil
	}
	data = f.data[pos : pos+n]
	if err := probe(data, f.fileName(), pos); err != nil {
		f.release()
		return nil, nil, err
	}
	var once atomic.Bool
	return data, func() {
		if once.CompareAndSwap(false, true) {
			f.release()
		}
	}, nil
}

// AppendCommitLog appends raw CommitLog bytes, as a replica receives them from its master:
// data must start exactly at the end of the CommitLog (MaxPhyOffset), else an
// *OffsetMismatchError names both offsets, and must not run past the end of the file it
// starts in (ErrChunkCrossesFile); nothing is written then. An empty CommitLog (a new
// replica) takes a first chunk at any multiple of mappedFileSizeCommitLog, as a master
// starts a new slave at its current file; a replica too far behind its master (its end no
// longer on the master) empties itself first with TruncateCommitLog(MinPhyOffset()). The bytes are taken as they are (whole records,
// parts of records, blank fillers): they must be the master's bytes at the same offsets.
//
// When it returns the bytes are readable (MaxPhyOffset covers them) but not yet durable:
// the flush service makes them so (SYNC_FLUSH: woken at once; FlushedPhyOffset tells).
// Dispatch builds ConsumeQueue units and index entries from every whole record, and the
// next queue offsets follow them. Calls must not overlap each other, TruncateCommitLog or
// puts: a store takes either puts or appends (brokerRole SLAVE refuses puts). The store must
// be started; it refuses appends after a write failure (ErrNotWritable) or with the disk
// full (ErrDiskFull).
func (s *Store) AppendCommitLog(offset int64, data []byte) error {
	if err := s.checkAppendable(); err != nil {
		return err
	}
	if len(data) == 0 {
		return nil
	}
	var reset bool
	err := withFaultPanics(func() error {
		var err error
		reset, err = s.commitLog.appendRaw(offset, data)
		return err
	})
	if err != nil {
		if errors.Is(err, errWriteFault) {
			s.markNotWritable(err)
			return fmt.Errorf("%w: %v", ErrNotWritable, err)
		}
		return err
	}
	if !s.opts.Framed {
		s.replicaAppends.Store(true)
	}
	if reset {
		s.reput.mu.Lock()
		if s.opts.Framed {
			s.setDispatched(offset)
		} else {
			s.reput.from.Store(offset)
		}
		s.reput.mu.Unlock()
	}
	if s.commitLog.staged {
		if err := s.commitLog.commitStaged(); err != nil {
			s.markNotWritable(err)
			return fmt.Errorf("%w: %v", ErrNotWritable, err)
		}
	}
	switch {
	case s.opts.Framed:
		// The Raft log store syncs when it must (SyncCommitLog); the state machine
		// dispatches.
	case s.pool != nil:
		s.commitLog.q.commit(0)
	case s.group != nil:
		s.group.wakeup()
	}
	s.reput.wakeup()
	s.newData.notify()
	return nil
}

// checkAppendable is checkWritable for AppendCommitLog: any role may append.
func (s *Store) checkAppendable() error {
	switch {
	case s.state.Load() != stateRunning:
		return fmt.Errorf("%w: store not running", ErrServiceNotAvailable)
	case s.notWritable.Load():
		return fmt.Errorf("%w: a write or flush failed earlier (%v); reopen the store", ErrNotWritable, s.notWritableCause())
	case s.diskFull.Load():
		return fmt.Errorf("%w: disk use %.1f%% passed diskSpaceWarningLevelRatio %.0f%%",
			ErrDiskFull, 100*s.stats.diskRatio(), 100*s.cfg.diskWarningRatio())
	}
	return nil
}

// appendRaw writes data at offset (see AppendCommitLog); reset reports that an empty
// CommitLog was restarted at offset.
func (c *commitLog) appendRaw(offset int64, data []byte) (reset bool, err error) {
	c.putMu.Lock()
	defer c.putMu.Unlock()
	if c.putMu.closed {
		return false, fmt.Errorf("%w: store is closed", ErrServiceNotAvailable)
	}
	defer catchWriteFault(&err)
	end := c.q.maxWrote()
	if offset != end {
		if !c.emptyLocked() || offset%c.fileSize != 0 || offset < 0 {
			return false, &OffsetMismatchError{Offset: offset, End: end}
		}
		if err := c.q.dropAll(); err != nil {
			return false, err
		}
		c.q.flushedWhere.Store(offset)
		c.q.committedWhere.Store(offset)
		reset = true
	}
	f, err := c.q.lastOrCreate(offset)
	if err != nil {
		return reset, err
	}
	pos := offset - f.from
	if pos+int64(len(data)) > f.size {
		return reset, fmt.Errorf("%w: %d bytes at %s, %d bytes left in the file", ErrChunkCrossesFile,
			len(data), c.describeOffset(offset), f.size-pos)
	}
	buf := c.reserveLocked(f, pos, len(data))
	copy(buf, data)
	return reset, c.finishLocked(f, pos, buf, pos+int64(len(data)))
}

// emptyLocked reports a CommitLog with nothing written (no file, or one empty file).
func (c *commitLog) emptyLocked() bool {
	fs := c.q.snapshot()
	return len(fs) == 0 || (len(fs) == 1 && fs[0].wrote.Load() == 0)
}

// FlushedPhyOffset is the end of the durable CommitLog: every byte before it survives a
// machine crash.
func (s *Store) FlushedPhyOffset() int64 { return s.commitLog.q.flushedWhere.Load() }

// WaitForNewData blocks until MaxPhyOffset() passes after and returns it, or returns
// ctx.Err() when ctx ends first, or ErrServiceNotAvailable once the store closes. It costs
// no polling: writers signal only while someone waits. Safe for concurrent use.
func (s *Store) WaitForNewData(ctx context.Context, after int64) (int64, error) {
	return s.newData.wait(ctx, s.stopped, func() (int64, bool) {
		end := s.MaxPhyOffset()
		return end, end > after
	})
}

// dataSignal wakes the goroutines waiting for new CommitLog bytes. The zero value is ready.
// notify is cheap while nobody waits (one atomic load), so every writer may call it.
type dataSignal struct {
	waiters atomic.Int32
	mu      sync.Mutex
	ch      chan struct{} // closed and replaced by notify
}

// notify wakes every current waiter. Call it after the readable end moved.
func (d *dataSignal) notify() {
	if d.waiters.Load() == 0 {
		return
	}
	d.mu.Lock()
	if d.ch != nil {
		close(d.ch)
		d.ch = nil
	}
	d.mu.Unlock()
}

// wait returns once ready reports true (with its value), or when ctx ends or stopped closes.
func (d *dataSignal) wait(ctx context.Context, stopped <-chan struct{}, ready func() (int64, bool)) (int64, error) {
	d.waiters.Add(1)
	defer d.waiters.Add(-1)
	for {
		d.mu.Lock()
		if d.ch == nil {
			d.ch = make(chan struct{})
		}
		ch := d.ch
		d.mu.Unlock()
		// Checked after taking the channel: a notify that missed this waiter happened
		// before the check, which then sees its data.
		if v, ok := ready(); ok {
			return v, nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-stopped:
			return 0, fmt.Errorf("%w: store is closed", ErrServiceNotAvailable)
		}
	}
}
