package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rocketraft/rocketraft/message"
	"golang.org/x/sys/unix"
)

// Sentinel errors. Every error the store returns for them wraps one (errors.Is) with the
// value and the limit or the file and offset concerned; nothing is written when a put
// returns one.
var (
	// ErrMessageTooLarge: the body passes maxMessageSize, or the record(s) do not fit a file
	// (the record codec's sentinel, message.ErrMessageTooLarge).
	ErrMessageTooLarge = message.ErrMessageTooLarge
	// ErrTopicTooLong: the topic is empty or longer than 127 bytes (message.ErrTopicTooLong).
	ErrTopicTooLong = message.ErrTopicTooLong
	// ErrPropertiesTooLarge: the encoded properties pass 32767 bytes (message.ErrPropertiesTooLarge).
	ErrPropertiesTooLarge = message.ErrPropertiesTooLarge
	// ErrCorruptRecord: bytes that do not form a valid stored record (message.ErrCorruptRecord).
	ErrCorruptRecord = message.ErrCorruptRecord
	// ErrServiceNotAvailable: the store is not started, or closed.
	ErrServiceNotAvailable = errors.New("store: service not available")
	// ErrNotWritable: the store turned read-only after a write or flush failure, or it is a slave.
	ErrNotWritable = errors.New("store: not writable")
	// ErrDiskFull: disk use passed diskSpaceWarningLevelRatio (90 %).
	ErrDiskFull = errors.New("store: disk full")
	// ErrCreateMappedFile: a new CommitLog file could not be created.
	ErrCreateMappedFile = errors.New("store: cannot create mapped file")
	// ErrBatchMismatch: a batch mixes topics or queues, or is empty.
	ErrBatchMismatch = errors.New("store: invalid batch")
	// ErrStoreLocked: another Store (in this or another process) has the folder open.
	ErrStoreLocked = errors.New("store: store folder locked by another store")
)

// preallocateFiles says whether new files get their blocks with fallocate. They do not, as
// in RocketMQ (sparse files): on ext4 the first write to a fallocated (unwritten) extent makes
// every flush commit the journal, which measured here cut SYNC_FLUSH throughput by a third to
// a half. The price is that a write to a sparse mapping can fault (SIGBUS) when the disk is
// full; the writers run with debug.SetPanicOnFault, turn such a fault into errWriteFault and
// the store read-only, and puts are refused at diskSpaceWarningLevelRatio long before that.
const preallocateFiles = false

// errWriteFault is wrapped when writing mapped memory faulted; the store turns read-only.
var errWriteFault = errors.New("store: write fault")

// Clock gives the store its notion of now: store timestamps, index file names and expiry
// decisions. Tests inject a fake one; timers and intervals always use real time.
type Clock interface {
	Now() time.Time
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

// Options are the store's collaborators, things that are not config keys.
type Options struct {
	// Logger receives the store's logs; nil discards them.
	Logger *slog.Logger
	// StoreHost is the broker's client-facing ip:port, written into every record and msg id.
	StoreHost netip.AddrPort
	// Clock is nil for real time.
	Clock Clock
	// ArrivingListener is called by dispatch after each ConsumeQueue unit is appended (never
	// during Open's recovery). It runs on the dispatch goroutine and must not block; the
	// Arrival is the listener's to keep, but not its Properties bytes (see Arrival).
	ArrivingListener func(a Arrival)
	// Replicator, when set, makes puts on a SYNC_MASTER wait for a slave (see Replicator).
	Replicator Replicator
	// TagsCode, when set, may override the ConsumeQueue tag code of a record (the broker uses
	// it for SCHEDULE_TOPIC_XXXX delivery times); ok=false keeps TagsHash(TAGS). props is the
	// record's encoded properties (message.PropertyValue reads them), valid during the call only.
	TagsCode func(topic string, props []byte, storeTimestamp int64) (code int64, ok bool)
	// Framed opens the store in framed mode, under the Raft log of package raftlog (see
	// framed.go): the CommitLog holds framed Raft entries, Open does not scan it (call
	// RecoverFramed), there are no puts and no reput service, and dispatch is driven by the
	// Raft state machine. The transient store pool is not used.
	Framed bool
	// FileOps, when set, takes the store's pwrites and fdatasyncs of CommitLog and
	// ConsumeQueue files (fault injection in tests); nil is SysFileOps.
	FileOps FileOps
	// SyncObserver, when set, is told what the store makes durable in its CommitLog and
	// ConsumeQueue files (see SyncObserver); the power-loss harness journals it. Nil: none.
	SyncObserver SyncObserver
}

// Arrival describes a record that just became visible in a ConsumeQueue.
type Arrival struct {
	Topic          string
	QueueID        int32
	QueueOffset    int64
	TagsCode       int64
	StoreTimestamp int64
	// Properties is the record's encoded properties ("k\x01v\x02..."), in the CommitLog's mapping:
	// valid during the listener's call only. Dispatch does not decode them, since few arrivals are
	// looked at (a held pull with an SQL92 filter); PropertyMap decodes a copy.
	Properties []byte
}

// PropertyMap decodes the arrival's properties into a map of its own (call it during the listener's call).
func (a *Arrival) PropertyMap() map[string]string {
	return message.ParseProperties(string(a.Properties))
}

// PutStatus is RocketMQ's PutMessageStatus for a message that was written.
type PutStatus int

const (
	// PutOK: written (and flushed, with SYNC_FLUSH).
	PutOK PutStatus = iota
	// PutFlushDiskTimeout: written, but the SYNC_FLUSH flush did not confirm within
	// syncFlushTimeout (or the caller's context ended first, or the flush failed).
	PutFlushDiskTimeout
	// PutFlushSlaveTimeout and PutSlaveNotAvailable are for the replication modes.
	PutFlushSlaveTimeout
	PutSlaveNotAvailable
)

func (s PutStatus) String() string {
	switch s {
	case PutOK:
		return "PUT_OK"
	case PutFlushDiskTimeout:
		return "FLUSH_DISK_TIMEOUT"
	case PutFlushSlaveTimeout:
		return "FLUSH_SLAVE_TIMEOUT"
	case PutSlaveNotAvailable:
		return "SLAVE_NOT_AVAILABLE"
	}
	return fmt.Sprintf("PutStatus(%d)", int(s))
}

// PutResult describes a written message or batch.
type PutResult struct {
	Status PutStatus
	// MsgID is the offset msg id; for a batch, the ids comma-joined.
	MsgID          string
	PhysicalOffset int64
	// QueueOffset is the queue offset of the first message.
	QueueOffset    int64
	Count          int
	WroteBytes     int
	StoreTimestamp int64
}

const (
	stateOpen int32 = iota
	stateRunning
	stateClosed
)

// Store is the message store: CommitLog, ConsumeQueues, IndexFile and their services.
//
// Lock order: reputService.mu (dispatch), stager.mu (SYNC_FLUSH commit), commitLog.putMu,
// then the CommitLog queue's flushMu, commitMu and mu; putMu may be held while taking
// allocator.mu; dispatch takes consumeQueue.mu (then its queue's mu; a truncation its
// flushMu first), indexService.mu and putMu (queue offsets of appended records).
// TruncateCommitLog holds the first five. No
// other lock is held while calling the ArrivingListener, a put callback or the Replicator.
type Store struct {
	cfg   Config
	opts  Options
	log   *slog.Logger
	clock Clock

	commitLog *commitLog
	cqs       *consumeQueueTable
	// cqRemove: dispatch holds it shared from finding a ConsumeQueue to appending to it, so that
	// CleanExpiredConsumeQueues (exclusive) never destroys a queue a unit is about to go into.
	cqRemove sync.RWMutex
	cleanMu  sync.Mutex // serializes the clean service with DeleteExpiredFilesNow
	// cleanPolicy: SetCleanPolicy's keys, nil until it is called (admin_clean.go).
	cleanPolicy atomic.Pointer[CleanPolicy]
	index       *indexService
	// cold reads the chunks consumers ask for that are not cached (cold_read.go); nil unless
	// ColdReadEnable.
	cold       *coldCache
	checkpoint *checkpoint
	alloc      *allocator
	pool       *transientPool
	reput      *reputService
	group      *groupCommit
	wakeCommit chan struct{}

	state       atomic.Int32
	notWritable atomic.Bool
	// notWritableErr is the first failure that set notWritable.
	notWritableErr atomic.Pointer[error]
	diskFull       atomic.Bool
	confirmOffset  atomic.Int64
	// durableDispatch: a SYNC_FLUSH master (not a slave, not framed) dispatches a record, so
	// that consumers can read it, only once a flush made it durable (doc.go "Disk faults").
	durableDispatch bool
	lastExitOK      bool
	// replicator is Options.Replicator on a SYNC_MASTER, nil otherwise.
	replicator Replicator
	// replicaAppends is set once AppendCommitLog wrote something (dispatch then keeps the
	// next queue offsets up to date).
	replicaAppends atomic.Bool
	// newData wakes WaitForNewData callers; stopped is closed when Close begins.
	newData dataSignal
	stopped chan struct{}
	// Framed mode (framed.go): framedReady is set by RecoverFramed; inPlaceFrom is the lowest
	// CommitLog offset dispatch wrote queue offsets into since the last sync of them
	// (math.MaxInt64: none); retention is the guard on deleting CommitLog files.
	framedReady atomic.Bool
	inPlaceFrom atomic.Int64
	retention   atomic.Pointer[func(from, to int64) bool]

	cancel    context.CancelFunc
	wg        sync.WaitGroup
	closeOnce sync.Once
	closeErr  error

	lockFile    *os.File
	stats       storeStats
	diskUsage   func(path string) (float64, error)
	memoryBytes int64
}

// Open loads the store's files, recovers (normally after a clean Close, abnormally when the
// abort file says the last run crashed), dispatches what the ConsumeQueues and index miss,
// and creates the abort file. Services start with Start.
func Open(cfg Config, opts Options) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Store{cfg: cfg, opts: opts, log: opts.Logger, clock: opts.Clock,
		wakeCommit: make(chan struct{}, 1), diskUsage: diskUsedRatio, stopped: make(chan struct{}),
		durableDispatch: cfg.FlushDiskType == SyncFlush && cfg.BrokerRole != RoleSlave && !opts.Framed}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if cfg.ColdReadEnable {
		s.cold = newColdCache(s, cfg.ColdReadBufferBytes)
	}
	s.log = s.log.With("component", "store")
	fileBudget.setLogger(s.log)
	if s.clock == nil {
		s.clock = realClock{}
	}
	s.confirmOffset.Store(-1)
	s.inPlaceFrom.Store(math.MaxInt64)
	if cfg.BrokerRole == RoleSyncMaster && !opts.Framed {
		s.replicator = opts.Replicator
	}
	s.memoryBytes = totalMemory()
	if err := s.open(); err != nil {
		s.closeFiles()
		return nil, err
	}
	return s, nil
}

func (s *Store) open() error {
	cfg := s.cfg
	for _, dir := range []string{cfg.StorePathRootDir, cfg.commitLogDir()} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("store: create %s: %w", dir, err)
		}
	}
	if err := s.lockRoot(); err != nil {
		return err
	}
	_, err := os.Stat(cfg.abortPath())
	s.lastExitOK = errors.Is(err, os.ErrNotExist)
	if s.checkpoint, err = openCheckpoint(cfg.checkpointPath()); err != nil {
		return err
	}
	if cfg.TransientStorePoolEnable && !cfg.transientPoolActive() {
		s.log.Warn("transientStorePoolEnable is ignored: it needs flushDiskType=ASYNC_FLUSH and a master role",
			"flushDiskType", cfg.FlushDiskType, "brokerRole", cfg.BrokerRole)
	}
	if cfg.transientPoolActive() && !s.opts.Framed {
		if s.pool, err = newTransientPool(cfg.TransientStorePoolSize, cfg.MappedFileSizeCommitLog, s.log); err != nil {
			return err
		}
	}
	q := newMappedFileQueue(cfg.commitLogDir(), cfg.MappedFileSizeCommitLog, preallocateFiles, s.log)
	q.warm = cfg.warmCommitLog()
	// Writes with pwrite only: copies into the mapping find their pages faulted in by the
	// populate service, and with the advice it faulted them in as 4 KiB folios, slower
	// (doc.go "Writing and flushing"); the transient pool's commits were not measured with it.
	q.adviseWrites = cfg.pwriteCommitLog() && !cfg.transientPoolActive()
	if cfg.populateAheadBytes() > 0 && s.opts.FileOps == nil {
		// The pages faulted in ahead of the writes are dirty zeros: sync only the records
		// (msync of the written range; an fdatasync would write the zeros ahead too). Tests
		// that inject faults through FileOps keep their Sync.
		q.flushMode = flushMsync
	}
	q.observer = s.opts.SyncObserver
	q.ops = s.fileOps()
	s.alloc = newAllocator(q.dir, q.fileSize, preallocateFiles, cfg.warmCommitLog(), cfg.warmAheadBytes(), s.pool, cfg.FastFailIfNoBufferInStorePool, s.log)
	q.create = s.alloc.get
	// A new file is where disk use jumps (a whole file when it is warmed): measure it then,
	// not only every cleanResourceInterval.
	s.alloc.made = func() { s.checkDisk() }
	s.commitLog = newCommitLog(cfg, s.opts.StoreHost, s.clock, q)
	s.commitLog.log = s.log
	s.alloc.warmBytes = &s.commitLog.warmBytes
	s.cqs = newConsumeQueueTable(cfg.consumeQueueDir(), cfg.MappedFileSizeConsumeQueue, s.opts.SyncObserver, s.fileOps(), s.log)
	if cfg.MessageIndexEnable {
		s.index = newIndexService(cfg.indexDir(), cfg.MaxHashSlotNum, cfg.MaxIndexNum, s.clock, s.log)
	}
	s.reput = newReputService()
	if cfg.FlushDiskType == SyncFlush {
		s.group = newGroupCommit(time.Duration(cfg.SyncFlushTimeout) * time.Millisecond)
	}
	if s.opts.Framed {
		// The Raft log store finds the end of the log and calls RecoverFramed.
		if err := withFaultPanics(s.loadFramed); err != nil {
			return err
		}
	} else {
		// Recovery writes through mappings too (zeroed tails, rebuilt units).
		if err := withFaultPanics(s.recover); err != nil {
			return err
		}
		if cfg.warmCommitLog() {
			if err := s.warmCurrentFile(); err != nil {
				return err
			}
		}
	}
	if err := writeFileSynced(cfg.abortPath(), nil); err != nil {
		return fmt.Errorf("store: create abort file: %w", err)
	}
	return nil
}

// Start starts the services: flush (group commit or periodic), commit (transient pool),
// reput (dispatch), allocation of the next CommitLog file, ConsumeQueue flush and clean.
func (s *Store) Start() error {
	if s.opts.Framed && !s.framedReady.Load() {
		return fmt.Errorf("%w: call RecoverFramed before Start", ErrNotRecovered)
	}
	if !s.state.CompareAndSwap(stateOpen, stateRunning) {
		return fmt.Errorf("%w: Start called twice or after Close", ErrServiceNotAvailable)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	// The first clean run decides the disk state before the first put.
	s.checkDisk()
	next := int64(-1)
	if last := s.commitLog.q.last(); last != nil {
		next = last.from + last.size
	}
	s.alloc.start(next)
	s.goService(ctx, "allocate", s.alloc.run)
	if !s.opts.Framed {
		s.goService(ctx, "reput", s.runReput)
	}
	s.goService(ctx, "flushConsumeQueue", s.runConsumeQueueFlush)
	s.goService(ctx, "clean", s.runClean)
	if s.group != nil {
		s.goService(ctx, "groupCommit", s.runGroupCommit)
		s.goService(ctx, "flushWatcher", s.runFlushWatcher)
	} else {
		s.goService(ctx, "flushCommitLog", s.runAsyncFlush)
	}
	if s.pool != nil {
		s.goService(ctx, "commitCommitLog", s.runCommit)
	}
	if s.commitLog.warmAhead > 0 {
		s.goService(ctx, "warm", s.runWarm)
	}
	if s.commitLog.populateAhead > 0 {
		s.goService(ctx, "populate", s.runPopulate)
	}
	if s.index != nil {
		s.goService(ctx, "index", func(context.Context) { s.index.ensureFile() })
	}
	return nil
}

func (s *Store) goService(ctx context.Context, name string, fn func(context.Context)) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		fn(ctx)
		s.log.Debug("service stopped", "service", name)
	}()
}

// Close stops the services and waits for them, then commits, flushes and dispatches what is
// left, writes the checkpoint, unmaps the files (a file a reader still holds is unmapped at
// its last Release) and removes the abort file. Safe to call more than once.
func (s *Store) Close() error {
	s.closeOnce.Do(func() { s.closeErr = s.shutdown(true) })
	return s.closeErr
}

// shutdown stops everything; clean=false leaves the files as a crash would (no final flush,
// no checkpoint, abort file kept), for tests of recovery.
func (s *Store) shutdown(clean bool) error {
	s.state.Store(stateClosed)
	close(s.stopped)
	if s.commitLog != nil {
		s.commitLog.close()
	}
	if s.cancel != nil {
		s.cancel()
	}
	s.wg.Wait()
	var errs []error
	if clean && s.notWritable.Load() {
		// After a failed write or fsync nothing may say the files are durable: no final
		// flush, no checkpoint, the abort file stays, and Open checks every record from the
		// checkpoint's safe point as after a crash.
		s.log.Warn("closing as after a crash: a write or flush failed earlier", "err", s.notWritableCause())
		clean = false
	}
	if clean {
		errs = append(errs, s.flushAll()...)
	}
	if s.group != nil {
		s.group.failAll(s)
	}
	if clean {
		errs = append(errs, s.checkpoint.flush())
	}
	if s.cold != nil {
		s.cold.close()
	}
	s.closeFiles()
	if clean {
		if err := os.Remove(s.cfg.abortPath()); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("store: remove abort file: %w", err))
		} else {
			errs = append(errs, syncDir(s.cfg.StorePathRootDir))
		}
	}
	return errors.Join(errs...)
}

// flushAll commits and flushes the CommitLog, dispatches the rest, flushes the ConsumeQueues
// and the index and updates the checkpoint.
func (s *Store) flushAll() []error {
	var errs []error
	if s.pool != nil {
		s.commitLog.q.commit(0)
	}
	if err := s.flushCommitLog(0); err != nil {
		errs = append(errs, err)
	}
	if err := withFaultPanics(func() error { s.doReput(true); return nil }); err != nil {
		errs = append(errs, err)
	}
	if err := s.flushConsumeQueues(0); err != nil {
		errs = append(errs, err)
	}
	return errs
}

func (s *Store) closeFiles() {
	if s.commitLog != nil {
		s.commitLog.q.close()
	}
	if s.cqs != nil {
		for _, cq := range s.cqs.all() {
			cq.q.close()
		}
	}
	if s.index != nil {
		s.index.close()
	}
	if s.pool != nil {
		s.pool.close()
	}
	if s.checkpoint != nil {
		_ = s.checkpoint.f.Close()
	}
	if s.lockFile != nil {
		_ = s.lockFile.Close() // releases the flock
	}
}

// lockRoot takes an exclusive flock on storePathRootDir/lock so two processes never open the
// same store (RocketMQ locks the same file).
func (s *Store) lockRoot() error {
	path := filepath.Join(s.cfg.StorePathRootDir, "lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("store: open %s: %w", path, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		return fmt.Errorf("%w: %s: %v (config key storePathRootDir: each broker needs its own)", ErrStoreLocked, path, err)
	}
	s.lockFile = f
	return nil
}

// checkWritable returns why a put is refused, or nil.
func (s *Store) checkWritable() error {
	switch s.state.Load() {
	case stateOpen:
		return fmt.Errorf("%w: store not started", ErrServiceNotAvailable)
	case stateClosed:
		return fmt.Errorf("%w: store is closed", ErrServiceNotAvailable)
	}
	if s.cfg.BrokerRole == RoleSlave {
		return fmt.Errorf("%w: brokerRole is %s", ErrNotWritable, RoleSlave)
	}
	if s.opts.Framed {
		return fmt.Errorf("%w: a framed store takes messages through its Raft log", ErrNotWritable)
	}
	if s.notWritable.Load() {
		return fmt.Errorf("%w: a write or flush failed earlier (%v); reopen the store", ErrNotWritable, s.notWritableCause())
	}
	if s.diskFull.Load() {
		return fmt.Errorf("%w: disk use %.1f%% passed diskSpaceWarningLevelRatio %.0f%%",
			ErrDiskFull, 100*s.stats.diskRatio(), 100*s.cfg.diskWarningRatio())
	}
	return nil
}

// markNotWritable turns the store read-only until reopened, keeping the first cause.
func (s *Store) markNotWritable(err error) {
	s.notWritableErr.CompareAndSwap(nil, &err)
	if s.notWritable.CompareAndSwap(false, true) {
		s.log.Error("store turned read-only until reopened", "err", err)
	}
}

// notWritableCause is the failure that turned the store read-only (markNotWritable).
func (s *Store) notWritableCause() error {
	if p := s.notWritableErr.Load(); p != nil {
		return *p
	}
	return nil
}

// fileOps is Options.FileOps, or the system calls.
func (s *Store) fileOps() FileOps {
	if s.opts.FileOps != nil {
		return s.opts.FileOps
	}
	return SysFileOps{}
}

func wake(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// writeFileSynced creates path with data and syncs it and its folder.
func writeFileSynced(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return syncDir(filepath.Dir(path))
}

// syncDir fsyncs a folder so a create, rename or remove in it is durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("store: sync dir %s: %w", dir, err)
	}
	return nil
}

// diskUsedRatio is the used share of the partition holding path, as RocketMQ computes it
// (blocks reserved for root count neither as used nor as available).
func diskUsedRatio(path string) (float64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return -1, fmt.Errorf("store: statfs %s: %w", path, err)
	}
	used := st.Blocks - st.Bfree
	entire := used + st.Bavail
	if entire == 0 {
		return 0, nil
	}
	return float64(used) / float64(entire), nil
}

// totalMemory is the machine's RAM, for the "in memory" estimate of reads.
func totalMemory() int64 {
	var si unix.Sysinfo_t
	if err := unix.Sysinfo(&si); err != nil {
		return 8 << 30
	}
	return int64(si.Totalram) * int64(si.Unit)
}

// SetConfirmOffset limits dispatch: no record ending past off is dispatched once set.
func (s *Store) SetConfirmOffset(off int64) {
	s.confirmOffset.Store(off)
	s.checkpoint.update(func(d *checkpointData) { d.confirmPhyOffset = off })
	s.reput.wakeup()
}

// ConfirmOffset is the offset set by SetConfirmOffset, or -1.
func (s *Store) ConfirmOffset() int64 { return s.confirmOffset.Load() }

// MaxPhyOffset is the end of the readable CommitLog; in framed mode the dispatched position
// (the end of the last committed entry applied), as reads by physical offset stop there.
func (s *Store) MaxPhyOffset() int64 {
	if s.opts.Framed {
		return s.reput.from.Load()
	}
	return s.commitLog.q.maxOffset()
}

// MinPhyOffset is the first CommitLog offset still on disk (0 for an empty store).
func (s *Store) MinPhyOffset() int64 { return max(s.commitLog.q.minOffset(), 0) }

// DispatchBehindBytes is how much of the CommitLog is not dispatched yet.
func (s *Store) DispatchBehindBytes() int64 {
	return max(s.dispatchLimit()-s.reput.from.Load(), 0)
}

// Flush commits and flushes the CommitLog, then flushes the ConsumeQueues, the index and
// the checkpoint.
func (s *Store) Flush() error {
	if s.state.Load() == stateClosed {
		return fmt.Errorf("%w: store is closed", ErrServiceNotAvailable)
	}
	if s.pool != nil {
		s.commitLog.q.commit(0)
		s.newData.notify()
	}
	err := s.flushCommitLog(0)
	return errors.Join(err, s.flushConsumeQueues(0))
}

// DeleteTopics drops the ConsumeQueues of the topics and their next queue offsets.
func (s *Store) DeleteTopics(topics []string) error {
	var errs []error
	for _, t := range topics {
		for _, cq := range s.cqs.remove(t) {
			s.commitLog.setQueueOffset(queueKey{cq.topic, cq.queueID}, 0, true)
			if err := cq.destroy(); err != nil {
				errs = append(errs, err)
			}
		}
		dir := filepath.Join(s.cfg.consumeQueueDir(), t)
		if err := os.RemoveAll(dir); err != nil {
			errs = append(errs, fmt.Errorf("store: remove %s: %w", dir, err))
		}
	}
	return errors.Join(errs...)
}
