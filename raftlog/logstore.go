package raftlog

import (
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
	"github.com/rocketraft/rocketraft/store"
)

var (
	_ raft.LogStore          = (*Store)(nil)
	_ raft.MonotonicLogStore = (*Store)(nil)
)

// Errors of the log store besides raft.ErrLogNotFound and ErrCorruptFrame.
var (
	// ErrNotContiguous: StoreLogs got entries that do not follow the last one (a monotonic
	// store has no gaps and never overwrites without DeleteRange).
	ErrNotContiguous = errors.New("raftlog: entries not contiguous")
	// ErrHole: DeleteRange asked for a range in the middle of the log.
	ErrHole = errors.New("raftlog: delete range would leave a hole")
	// ErrEntryTooLarge: an entry does not fit a CommitLog file.
	ErrEntryTooLarge = errors.New("raftlog: entry too large for a commitlog file")
	// ErrClosed: the store was closed.
	ErrClosed = errors.New("raftlog: closed")
	// ErrIndexFault: the kernel could not back a write to the mapped index with a page (SIGBUS,
	// caught): no block for a hole of the sparse file on a full disk, or a page a failed disk
	// could not read in. The StoreLogs or DeleteRange that met it fails, nothing of it visible.
	ErrIndexFault = errors.New("raftlog: fault writing the mapped index")
)

// Options configure a Store.
type Options struct {
	// Logger receives the store's logs; nil discards them.
	Logger *slog.Logger
	// Sync makes StoreLogs durable before it returns (one fdatasync per call, however many
	// entries): the SYNC_FLUSH meaning, each node syncs before it acknowledges. False leaves
	// the entries in the page cache, flushed by the store's flush service (ASYNC_FLUSH: a
	// majority holds the entry in memory).
	Sync bool
	// SlotsPerIndexFile is the number of 24-byte slots per dense index file (default 1 Mi,
	// 24 MiB files).
	SlotsPerIndexFile uint64
	// CheckCRCOnRecover checks the message bodies' CRCs when recovery scans the log.
	CheckCRCOnRecover bool
}

// DefaultSlotsPerIndexFile is Options.SlotsPerIndexFile's default.
const DefaultSlotsPerIndexFile = 1 << 20

// Store is a raft.LogStore (and MonotonicLogStore) over a framed CommitLog (commitlog.go):
// every Raft entry is a frame in the CommitLog, found through a dense index.
//
// Concurrency: hashicorp/raft calls StoreLogs and suffix DeleteRanges from one goroutine (the
// leader loop or the follower's RPC handling) and prefix DeleteRanges from its snapshot
// goroutine; GetLog, FirstIndex and LastIndex from any goroutine. wmu serialises the writers;
// mu guards the published state, held for writing only while it changes (the end of a
// StoreLogs, a suffix truncation). Lock order: wmu, then mu.
type Store struct {
	cl       CommitLog
	log      *slog.Logger
	fileSize int64
	sync     bool
	idx      *denseIndex

	// applied is the highest index the state machine applied (SetAppliedIndex); compacted is
	// the highest index Raft allowed to drop (a prefix DeleteRange).
	applied   atomic.Uint64
	compacted atomic.Uint64
	// snapshotIndex is the last entry of the newest snapshot stored (SnapshotStore): the
	// retention keeps the file holding it, which SnapshotStore.Open reads to send it.
	snapshotIndex atomic.Uint64

	// stats are the node's performance counters (stats.go); leading tells StoreLogs whether
	// it runs for a leader's dispatch or a follower's append (nil: a follower).
	stats   *nodeStats
	leading atomic.Pointer[func() bool]
	// syncedEnd is the CommitLog end as of the last sync StoreLogs, the syncer or a suffix
	// truncation made (Options.Sync): what a machine crash keeps.
	syncedEnd atomic.Int64
	// overlap: a leader's StoreLogs leaves its sync to the syncer (leader_sync.go), which
	// kick wakes; stopSync (closed by Close) stops it and ends the waits, syncerDone is
	// closed when it has returned.
	overlap    atomic.Bool
	kick       chan struct{}
	stopSync   chan struct{}
	stopOnce   sync.Once
	syncerDone chan struct{}
	// failure is the store's first failure for good (storeFailed) and the hook told of it
	// once, on its own goroutine (OnStoreFailure: the node stops its Raft, node.go).
	failure struct {
		sync.Mutex
		err   error
		hook  func(error)
		fired bool
	}

	wmu     sync.Mutex
	scratch []byte // guarded by wmu
	// pred writes the queue offsets the state machine will give into the stored records
	// (queue_predict.go); its table is guarded by wmu.
	pred queuePrediction
	// repairMu serialises rebuilding index slots from GetLog (readFrame).
	repairMu sync.Mutex
	// pins are the CommitLog ranges snapshot sends read (snapshot.go): start -> count.
	pins struct {
		sync.Mutex
		from map[int64]int
	}

	mu struct {
		sync.RWMutex
		state logState
		// durable is how far this node holds the log durably (leader_sync.go).
		durable durableState
		// minPhy is the CommitLog minimum the cached first index belongs to.
		minPhy int64
		closed bool
	}
}

// logState is what the log holds: entries first..last (none when last == 0), the last one's
// term, and end, where the next frame goes.
type logState struct {
	first, last uint64
	lastTerm    uint64
	end         int64
}

// Open opens the log store over cl, a store opened with store.Options.Framed and not yet
// started: it loads the dense index under dir (dir/index), scans the CommitLog from
// cl.RecoveryStart() for the last valid entry (header CRC, position, contiguous index,
// non-decreasing term, data CRC or message records), rewrites the index from what it found,
// and completes the store's recovery with RecoverFramed at the end of that entry. The
// caller starts cl afterwards and closes it after Close.
func Open(cl CommitLog, dir string, opts Options) (*Store, error) {
	if !cl.Framed() {
		return nil, errors.New("raftlog: the store is not in framed mode (store.Options.Framed)")
	}
	if opts.SlotsPerIndexFile == 0 {
		opts.SlotsPerIndexFile = DefaultSlotsPerIndexFile
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	idx, err := openDenseIndex(filepath.Join(dir, "index"), opts.SlotsPerIndexFile)
	if err != nil {
		return nil, err
	}
	s := &Store{cl: cl, log: log.With("component", "raftlog"), fileSize: cl.CommitLogFileSize(), sync: opts.Sync, idx: idx,
		stats: newNodeStats()}
	s.pins.from = make(map[int64]int)
	s.pred.stale.Store(true)
	st, dirty, err := s.recover(opts.CheckCRCOnRecover)
	if err == nil {
		err = cl.RecoverFramed(st.end, dirty)
	}
	if err != nil {
		idx.close()
		return nil, err
	}
	if opts.Sync && st.end > 0 {
		// What recovery found may be in the page cache only (the process died, the machine
		// did not): make it durable before this node acknowledges any of it.
		if err := cl.SyncCommitLog(); err != nil {
			idx.close()
			return nil, fmt.Errorf("raftlog: sync the recovered log: %w", err)
		}
	}
	s.mu.state = st
	s.mu.durable = durableState{index: st.last, advanced: make(chan struct{})}
	s.stopSync = make(chan struct{})
	s.mu.minPhy = cl.MinPhyOffset()
	s.syncedEnd.Store(st.end)
	cl.SetRetentionGuard(s.retentionAllows)
	return s, nil
}

// FirstIndex is the first entry still in the CommitLog (0 when the log is empty). A prefix
// DeleteRange does not move it: files go when the CommitLog's retention deletes them.
func (s *Store) FirstIndex() (uint64, error) {
	s.mu.RLock()
	st, minPhy := s.mu.state, s.mu.minPhy
	s.mu.RUnlock()
	if st.last == 0 || s.cl.MinPhyOffset() == minPhy {
		return st.first, nil
	}
	return s.refreshFirst(), nil
}

// refreshFirst re-reads the first index after the CommitLog's first files were deleted.
func (s *Store) refreshFirst() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	minPhy := s.cl.MinPhyOffset()
	if s.mu.state.last == 0 || minPhy == s.mu.minPhy {
		return s.mu.state.first
	}
	h, err := s.headerAt(minPhy)
	if err != nil || h.index > s.mu.state.last {
		s.log.Error("cannot read the first entry after commitlog files were deleted", "offset", minPhy, "err", err)
		return s.mu.state.first
	}
	s.mu.state.first = max(s.mu.state.first, h.index)
	s.mu.minPhy = minPhy
	return s.mu.state.first
}

// LastIndex is the last entry (0 when the log is empty).
func (s *Store) LastIndex() (uint64, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.mu.state.last, nil
}

// IsMonotonic is true: the log never has gaps (raft.MonotonicLogStore).
func (s *Store) IsMonotonic() bool { return true }

// GetLog reads entry index into l (raft.ErrLogNotFound outside [FirstIndex, LastIndex]).
// Everything in l is a copy: nothing aliases the mapped files. The data of a message entry is
// the stored records: their physical offsets, and once applied their queue offsets, are set.
func (s *Store) GetLog(index uint64, l *raft.Log) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	st := s.mu.state
	if s.mu.closed {
		return ErrClosed
	}
	if st.last == 0 || index < st.first || index > st.last {
		return raft.ErrLogNotFound
	}
	f, release, err := s.readFrame(index, st)
	if err != nil {
		return err
	}
	defer release()
	h, _ := parseHeader(f)
	decodeLog(&h, f, l)
	return nil
}

// readFrame returns the whole frame of entry index (first <= index <= last), checked against
// its slot; a slot that does not match its frame is rebuilt from the frames (repairSlots).
// mu held for reading.
func (s *Store) readFrame(index uint64, st logState) ([]byte, func(), error) {
	for attempt := 0; ; attempt++ {
		sl, ok := s.idx.get(index)
		if ok {
			f, release, err := s.cl.ReadCommitLog(sl.pos, int(sl.size))
			if err != nil && errors.Is(err, store.ErrOffsetOutOfRange) && sl.pos < s.cl.MinPhyOffset() {
				return nil, nil, raft.ErrLogNotFound // its file was deleted meanwhile
			}
			if err == nil {
				h, herr := parseHeader(f)
				if herr == nil && int64(len(f)) == sl.size && h.index == index && h.pos == sl.pos && h.size == sl.size {
					return f, release, nil
				}
				release()
			}
		}
		if attempt > 0 {
			return nil, nil, fmt.Errorf("%w: entry %d: no frame at its index slot, even after rebuilding it", ErrCorruptFrame, index)
		}
		s.log.Error("raft log index slot does not match the commitlog; rebuilding it", "index", index)
		if err := s.repairSlots(index, st); err != nil {
			return nil, nil, err
		}
	}
}

// repairSlots rewrites the slots up to index from the frames, walking forward from the
// nearest lower entry whose slot matches its frame (or from the first file). mu held for
// reading: only slots of existing entries are written, which the writer never touches.
func (s *Store) repairSlots(index uint64, st logState) error {
	s.repairMu.Lock()
	defer s.repairMu.Unlock()
	k, pos := st.first, s.cl.MinPhyOffset()
	for j := index - 1; j >= st.first && j > 0; j-- {
		if sl, ok := s.idx.get(j); ok {
			if h, err := s.headerAt(sl.pos); err == nil && h.index == j && h.size == sl.size {
				k, pos = j+1, sl.pos+sl.size
				break
			}
		}
	}
	for ; k <= index; k++ {
		if s.fileSize-pos%s.fileSize < FrameHeaderSize+blankHeaderSize {
			pos += s.fileSize - pos%s.fileSize
		}
		h, err := s.headerAt(pos)
		if err != nil {
			// A blank filler: the entry is at the start of the next file.
			pos += s.fileSize - pos%s.fileSize
			if h, err = s.headerAt(pos); err != nil {
				return fmt.Errorf("raftlog: rebuild index slot %d: %w", k, err)
			}
		}
		if h.index != k {
			return fmt.Errorf("%w: rebuild index slot %d: the frame at %d is entry %d", ErrCorruptFrame, k, pos, h.index)
		}
		if err := s.idx.put(k, slot{pos: pos, term: h.term, size: h.size, typ: uint8(h.typ), kind: h.kind}); err != nil {
			return err
		}
		pos += h.size
	}
	return nil
}

// StoreLog stores one entry (see StoreLogs).
func (s *Store) StoreLog(l *raft.Log) error { return s.StoreLogs([]*raft.Log{l}) }

// StoreLogs appends entries, which must follow LastIndex with consecutive indexes and
// non-decreasing terms (an empty log takes any first index, at the start of its first file).
// Each becomes a frame at the CommitLog end (after a blank filler when it does not fit the
// file), found by its index slot. With Options.Sync it returns once they are durable. On an
// error nothing of the call is visible (the bytes written are cut at the next StoreLogs or
// at recovery).
func (s *Store) StoreLogs(logs []*raft.Log) error {
	if len(logs) == 0 {
		return nil
	}
	start := time.Now()
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.mu.RLock()
	st, closed := s.mu.state, s.mu.closed
	s.mu.RUnlock()
	if closed {
		return ErrClosed
	}
	if err := checkContiguous(st, logs); err != nil {
		return err
	}
	if end := s.cl.CommitLogEnd(); end != st.end {
		// A failed StoreLogs left bytes behind: cut them before writing.
		if err := s.cl.TruncateCommitLog(st.end); err != nil {
			err = fmt.Errorf("raftlog: cut what a failed append left at %d: %w", st.end, err)
			s.failedWrite(err)
			return err
		}
	}
	s.preparePrediction()
	next, err := s.appendFrames(st.end, logs)
	if err != nil {
		s.pred.stale.Store(true) // it counted records that are not stored
		s.failedWrite(err)
		return err
	}
	// A leader with the overlap on leaves the sync to the syncer (leader_sync.go).
	deferred := s.sync && s.overlapping() && s.isLeading()
	if s.sync && !deferred {
		syncStart := time.Now()
		if err := s.cl.SyncCommitLog(); err != nil {
			s.pred.stale.Store(true) // the entries are not stored
			err = fmt.Errorf("raftlog: sync entries %d..%d: %w", logs[0].Index, logs[len(logs)-1].Index, err)
			s.storeFailed(err) // no sync vouches for them again (store/doc.go "Disk faults")
			return err
		}
		d := time.Since(syncStart)
		s.stats.syncs.Add(1)
		s.stats.syncSeconds.observeDuration(d)
		s.syncedEnd.Store(next)
		if d > slowSync {
			s.log.Warn("slow raft log sync", "elapsed", d, "entries", len(logs))
		}
	}
	s.recordStore(logs, start)
	s.mu.Lock()
	if s.mu.state.last == 0 {
		s.mu.state.first = logs[0].Index
		s.mu.minPhy = s.cl.MinPhyOffset()
	}
	s.mu.state.last = logs[len(logs)-1].Index
	s.mu.state.lastTerm = logs[len(logs)-1].Term
	s.mu.state.end = next
	if !deferred {
		// Synced above (every byte written before, too), or never synced (ASYNC_FLUSH).
		s.markDurableLocked(s.mu.state.last)
	}
	s.mu.Unlock()
	if deferred {
		select {
		case s.kick <- struct{}{}:
		default:
		}
	}
	s.dropOldIndexFiles()
	return nil
}

// storeFailed reports, once, that the store under the log failed for good: a sync failed (the
// store is read-only from then on, and no later sync could vouch for what the failed one was
// to make durable), or a write met a store turned read-only (store.ErrNotWritable). The node
// stops its Raft (node.go): a node that can store nothing more must not answer appends, vote
// with a log it cannot extend, or win an election it would lose again at its first StoreLogs.
func (s *Store) storeFailed(err error) {
	s.failure.Lock()
	defer s.failure.Unlock()
	if s.failure.err == nil {
		s.failure.err = err
	}
	s.fireFailureLocked()
}

// onStoreFailure sets the hook storeFailed calls; it is called at once when the store failed
// before (Raft may store entries before the node sets it).
func (s *Store) onStoreFailure(hook func(error)) {
	s.failure.Lock()
	defer s.failure.Unlock()
	s.failure.hook = hook
	s.fireFailureLocked()
}

// fireFailureLocked calls the hook, once, on its own goroutine. failure held.
func (s *Store) fireFailureLocked() {
	if s.failure.hook != nil && s.failure.err != nil && !s.failure.fired {
		s.failure.fired = true
		go s.failure.hook(s.failure.err)
	}
}

// failedWrite is storeFailed for a write's error that says the store turned read-only. Other
// write errors (ErrIndexFault of a full disk, store.ErrDiskFull) leave the node running: it
// stores again once the disk has room.
func (s *Store) failedWrite(err error) {
	if errors.Is(err, store.ErrNotWritable) {
		s.storeFailed(err)
	}
}

// slowSync: syncs slower than this are logged.
const slowSync = 500 * time.Millisecond

// isLeading reports whether the node leads (Node sets leading once Raft runs).
func (s *Store) isLeading() bool {
	f := s.leading.Load()
	return f != nil && (*f)()
}

// recordStore counts a StoreLogs call that began at start, for the leader or a follower.
func (s *Store) recordStore(logs []*raft.Log, start time.Time) {
	end := time.Now()
	if s.isLeading() {
		s.stats.leaderStoreEntries.observe(int64(len(logs)))
		s.stats.leaderStoreSeconds.observeDuration(end.Sub(start))
		s.stats.markStored(logs[0].Index, logs[len(logs)-1].Index, end)
		return
	}
	s.stats.followerStoreEntries.observe(int64(len(logs)))
	s.stats.followerStoreSeconds.observeDuration(end.Sub(start))
}

func checkContiguous(st logState, logs []*raft.Log) error {
	prev, prevTerm := st.last, st.lastTerm
	for i, l := range logs {
		if (prev != 0 || i > 0) && l.Index != prev+1 {
			return fmt.Errorf("%w: entry %d after %d", ErrNotContiguous, l.Index, prev)
		}
		if l.Index == 0 || l.Term < prevTerm {
			return fmt.Errorf("%w: entry %d with term %d after term %d", ErrNotContiguous, l.Index, l.Term, prevTerm)
		}
		prev, prevTerm = l.Index, l.Term
	}
	return nil
}

// appendFrames writes logs as frames from pos (the end) and their slots, one append per run of
// frames in the same file; it returns the new end. wmu held.
func (s *Store) appendFrames(pos int64, logs []*raft.Log) (int64, error) {
	buf := s.scratch[:0]
	bufAt := pos
	flush := func() error {
		if len(buf) == 0 {
			return nil
		}
		err := s.cl.AppendCommitLog(bufAt, buf)
		buf = buf[:0]
		return err
	}
	for _, l := range logs {
		size := frameSize(l)
		if size+blankHeaderSize > s.fileSize {
			return pos, fmt.Errorf("%w: entry %d is %d bytes, a file %d", ErrEntryTooLarge, l.Index, size, s.fileSize)
		}
		if pos%s.fileSize+size+blankHeaderSize > s.fileSize {
			if err := flush(); err != nil {
				return pos, err
			}
			if err := s.cl.AppendCommitLogBlank(pos); err != nil {
				return pos, fmt.Errorf("raftlog: blank filler at %d: %w", pos, err)
			}
			// The index of every entry before the new file is made durable once per file,
			// so a crash never needs more than the last files scanned.
			if err := s.idx.sync(); err != nil {
				return pos, err
			}
			pos += s.fileSize - pos%s.fileSize
			bufAt = pos
		}
		var err error
		if buf, err = appendFrame(buf, l, pos, s.pred.queueOffset()); err != nil {
			return pos, err
		}
		kind, _ := splitData(l)
		if err := s.idx.put(l.Index, slot{pos: pos, term: l.Term, size: size, typ: uint8(l.Type), kind: kind}); err != nil {
			return pos, err
		}
		pos += size
	}
	err := flush()
	s.scratch = buf[:0]
	if cap(s.scratch) > maxScratch {
		s.scratch = nil
	}
	return pos, err
}

// maxScratch caps the encoding buffer kept between calls.
const maxScratch = 8 << 20

// SetAppliedIndex tells the store the state machine applied everything up to index (so it is
// committed). It tells the two kinds of DeleteRange apart: Raft compacts only applied
// entries, and cuts a conflicting suffix only above its commit index.
func (s *Store) SetAppliedIndex(index uint64) { raiseTo(&s.applied, index) }

// raiseTo moves a to v unless it is there or above already.
func raiseTo(a *atomic.Uint64, v uint64) {
	for {
		cur := a.Load()
		if v <= cur || a.CompareAndSwap(cur, v) {
			return
		}
	}
}

// CompactedIndex is the highest index Raft allowed to drop (0 for none).
func (s *Store) CompactedIndex() uint64 { return s.compacted.Load() }

// DeleteRange deletes entries min..max (inclusive). Two cases, told apart by the applied index
// (SetAppliedIndex):
//
//   - min at or below it: compaction after a snapshot (or the reset after installing one).
//     Advisory: the entries stay readable, CompactedIndex rises to max, and the CommitLog
//     files holding only compacted entries become deletable by the store's retention
//     (expiry, disk pressure, PruneCommitLog). The CommitLog is the message data: it
//     outlives Raft's log window as long as retention keeps it.
//   - min above it: a conflicting suffix (max >= LastIndex; max may pass it). The CommitLog
//     is cut at min's frame, durably, before it returns, so no later StoreLogs is
//     acknowledged on top of entries that a crash could bring back.
//
// A range strictly inside the log above the applied index is ErrHole; ranges already gone
// are fine.
func (s *Store) DeleteRange(min, max uint64) error {
	if min > max {
		return nil
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.mu.RLock()
	st, closed := s.mu.state, s.mu.closed
	s.mu.RUnlock()
	if closed {
		return ErrClosed
	}
	if min <= s.applied.Load() {
		top := max
		if st.last != 0 && top > st.last {
			top = st.last
		}
		raiseTo(&s.compacted, top)
		return nil
	}
	if st.last == 0 || min > st.last {
		return nil
	}
	if max < st.last {
		return fmt.Errorf("%w: delete %d..%d of %d..%d above the applied index %d", ErrHole, min, max, st.first, st.last, s.applied.Load())
	}
	return s.truncateSuffix(st, min)
}

// truncateSuffix cuts the log before entry min (> first... or at first: the log empties and
// its next entry goes where min's frame was). wmu held.
func (s *Store) truncateSuffix(st logState, min uint64) error {
	from := max(min, st.first)
	sl, ok := s.idx.get(from)
	if !ok {
		return fmt.Errorf("%w: entry %d has no index slot", ErrCorruptFrame, from)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pred.stale.Store(true)
	if err := s.cl.TruncateCommitLog(sl.pos); err != nil {
		return fmt.Errorf("raftlog: truncate entries %d..%d at %d: %w", from, st.last, sl.pos, err)
	}
	if err := s.idx.clearFrom(from); err != nil {
		return err
	}
	if sl.pos < s.syncedEnd.Load() {
		s.syncedEnd.Store(sl.pos) // the cut is durable
	}
	s.cutDurableLocked(from - 1)
	s.log.Info("truncated conflicting raft entries", "from", from, "to", st.last, "offset", sl.pos)
	if from <= st.first {
		s.mu.state = logState{end: sl.pos}
		return nil
	}
	prev, ok := s.idx.get(from - 1)
	if !ok {
		return fmt.Errorf("%w: entry %d has no index slot", ErrCorruptFrame, from-1)
	}
	s.mu.state.last, s.mu.state.lastTerm, s.mu.state.end = from-1, prev.term, sl.pos
	return nil
}

// retentionAllows is the store's retention guard: a CommitLog file [from, to) may go once
// every entry in it is compacted, i.e. the entry starting the next file follows a compacted
// one, and the newest snapshot's last entry lies in a later file. (Raft compacts up to a
// snapshot's last entry when TrailingLogs allows it; without the second rule the file holding
// that entry could go, and the snapshot could not be sent to a follower behind the log until
// the next one was taken, SnapshotThreshold entries later.)
func (s *Store) retentionAllows(from, to int64) bool {
	if s.pinned(to) {
		return false
	}
	h, err := s.headerAt(to)
	return err == nil && h.index-1 <= s.compacted.Load() && h.index <= s.snapshotIndex.Load()
}

// noteSnapshot records that a snapshot ending at entry index is stored (never lowers it).
func (s *Store) noteSnapshot(index uint64) { raiseTo(&s.snapshotIndex, index) }

// pinFiles keeps the retention from deleting CommitLog files at or after from until the
// returned func is called.
func (s *Store) pinFiles(from int64) func() {
	s.pins.Lock()
	defer s.pins.Unlock()
	s.pins.from[from]++
	var once sync.Once
	return func() {
		once.Do(func() {
			s.pins.Lock()
			defer s.pins.Unlock()
			if s.pins.from[from]--; s.pins.from[from] == 0 {
				delete(s.pins.from, from)
			}
		})
	}
}

// pinned reports whether a pinned range reaches the file ending at to.
func (s *Store) pinned(to int64) bool {
	s.pins.Lock()
	defer s.pins.Unlock()
	for from := range s.pins.from {
		if to > from {
			return true
		}
	}
	return false
}

// headerAt reads the frame header at pos.
func (s *Store) headerAt(pos int64) (frameHeader, error) {
	b, release, err := s.cl.ReadCommitLog(pos, FrameHeaderSize)
	if err != nil {
		return frameHeader{}, err
	}
	defer release()
	h, err := parseHeader(b)
	if err == nil && h.pos != pos {
		err = fmt.Errorf("%w: frame at %d says it is at %d", ErrCorruptFrame, pos, h.pos)
	}
	return h, err
}

// dropOldIndexFiles deletes the index files of entries the CommitLog no longer holds. wmu held.
func (s *Store) dropOldIndexFiles() {
	first, _ := s.FirstIndex()
	if lowest, ok := s.idx.firstFile(); ok && first > 0 && lowest+s.idx.perFile <= first {
		if err := s.idx.dropBelow(first); err != nil {
			s.log.Warn("deleting old index files", "err", err)
		}
	}
}

// Position is where entry index lies in the CommitLog: the frame [Pos, End), its data from
// Data. ok is false outside the log.
type Position struct {
	Pos, Data, End int64
	Kind           byte
	Type           raft.LogType
}

// Position returns where entry index lies (for the state machine: the records of a message
// entry are [Data, End)).
func (s *Store) Position(index uint64) (Position, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if st := s.mu.state; st.last == 0 || index < st.first || index > st.last {
		return Position{}, false
	}
	sl, ok := s.idx.get(index)
	if !ok {
		return Position{}, false
	}
	h, err := s.headerAt(sl.pos)
	if err != nil || h.index != index {
		return Position{}, false
	}
	return Position{Pos: sl.pos, Data: sl.pos + h.dataOffset(), End: sl.pos + sl.size, Kind: sl.kind, Type: raft.LogType(sl.typ)}, true
}

// End is where the next frame goes: the end of the last entry.
func (s *Store) End() int64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.mu.state.end
}

// Close syncs the index and closes it; later calls fail with ErrClosed. The CommitLog store
// stays open (its owner closes it after).
func (s *Store) Close() error {
	s.stopOnce.Do(func() { close(s.stopSync) })
	if s.overlapping() {
		<-s.syncerDone
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.closed {
		return nil
	}
	s.mu.closed = true
	s.cl.SetRetentionGuard(func(int64, int64) bool { return false })
	err := s.idx.sync()
	s.idx.close()
	return err
}
