package store

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/rocketraft/rocketraft/message"
)

// faultyDisk is FileOps with faults on the CommitLog's files (ConsumeQueue files pass): the
// next failSyncs syncs fail with EIO (the ones after succeed, as Linux lets a later fsync
// succeed after the error was reported once), the next shortWrites writes write half their
// bytes and fail with ENOSPC, and while hold is open every sync waits for it to close.
type faultyDisk struct {
	SysFileOps

	mu          sync.Mutex
	failSyncs   int
	shortWrites int
	hold        chan struct{}
	syncs       int // syncs of CommitLog files that reached the disk
	held        chan struct{}
}

func isCommitLogFile(f *os.File) bool {
	return filepath.Base(filepath.Dir(f.Name())) == "commitlog"
}

func (d *faultyDisk) Sync(f *os.File) error {
	if !isCommitLogFile(f) {
		return d.SysFileOps.Sync(f)
	}
	d.mu.Lock()
	hold, held := d.hold, d.held
	if d.failSyncs > 0 {
		d.failSyncs--
		d.mu.Unlock()
		return syscall.EIO
	}
	d.syncs++
	d.mu.Unlock()
	if hold != nil {
		select {
		case held <- struct{}{}:
		default:
		}
		<-hold
	}
	return d.SysFileOps.Sync(f)
}

func (d *faultyDisk) WriteAt(f *os.File, b []byte, off int64) (int, error) {
	if isCommitLogFile(f) {
		d.mu.Lock()
		short := d.shortWrites > 0
		if short {
			d.shortWrites--
		}
		d.mu.Unlock()
		if short {
			n, err := d.SysFileOps.WriteAt(f, b[:len(b)/2], off)
			if err != nil {
				return n, err
			}
			return n, syscall.ENOSPC
		}
	}
	return d.SysFileOps.WriteAt(f, b, off)
}

func (d *faultyDisk) commitLogSyncs() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.syncs
}

// faultStore opens a SYNC_FLUSH store on d and acknowledges n messages first.
func faultStore(t *testing.T, d *faultyDisk, n int) (*Store, Config, []PutResult) {
	t.Helper()
	cfg := smallConfig(t)
	cfg.FlushDiskType = SyncFlush
	opts := testOptions(t)
	opts.FileOps = d
	s := openStore(t, cfg, opts)
	var acked []PutResult
	for i := range n {
		acked = append(acked, mustPut(t, s, testMessage("Disk", 0, "before-"+string(rune('a'+i)), nil)))
	}
	return s, cfg, acked
}

// reopenAfterFault closes s (as after a crash: it failed a write or sync), reopens its folder
// with a healthy disk and checks that recovery ran, every acknowledged message is intact at
// its offset, the CommitLog is whole, and the store takes puts again.
func reopenAfterFault(t *testing.T, s *Store, cfg Config, acked []PutResult) {
	t.Helper()
	if err := s.Close(); err != nil {
		t.Logf("close after the fault: %v", err)
	}
	if _, err := os.Stat(cfg.abortPath()); err != nil {
		t.Fatalf("close after a disk fault removed the abort file (%v): the next Open would trust the tail", err)
	}
	s2 := openStore(t, cfg, testOptions(t))
	if s2.lastExitOK {
		t.Fatal("reopen after a disk fault took the clean-exit recovery")
	}
	waitDispatched(t, s2)
	for i, r := range acked {
		m, err := s2.LookMessageByOffset(r.PhysicalOffset)
		if err != nil || string(m.Body) != "before-"+string(rune('a'+i)) || m.QueueOffset != r.QueueOffset {
			t.Fatalf("acknowledged message %d at %d: %v, %+v", i, r.PhysicalOffset, err, m)
		}
	}
	if end, reason := s2.scanCommitLog(s2.MinPhyOffset()); reason != "" || end != s2.MaxPhyOffset() {
		t.Fatalf("commitlog scan after reopening stops at %d (%s), end %d", end, reason, s2.MaxPhyOffset())
	}
	if res := mustPut(t, s2, testMessage("Disk", 0, "after", nil)); res.Status != PutOK {
		t.Fatalf("put after reopening: %v", res.Status)
	}
}

// expectFaultAnswers puts a message into a store whose next write or sync fails: it must get
// FLUSH_DISK_TIMEOUT, and the put after it ErrNotWritable naming the cause.
func expectFaultAnswers(t *testing.T, s *Store, cause string) {
	t.Helper()
	res, err := s.PutMessage(context.Background(), testMessage("Disk", 0, "faulted", nil))
	if err != nil || res.Status != PutFlushDiskTimeout {
		t.Fatalf("put whose write or sync failed: %v, %v; want FLUSH_DISK_TIMEOUT", res.Status, err)
	}
	_, err = s.PutMessage(context.Background(), testMessage("Disk", 0, "refused", nil))
	if !errors.Is(err, ErrNotWritable) || !strings.Contains(err.Error(), cause) {
		t.Fatalf("put after the fault: %v; want ErrNotWritable naming %q", err, cause)
	}
}

// TestFsyncEIOStopsAcknowledging: a CommitLog fdatasync fails with EIO. The put it was for is
// not acknowledged (FLUSH_DISK_TIMEOUT), later puts are refused with ErrNotWritable naming the
// cause, and the store never syncs the CommitLog again, although the next fdatasync would
// succeed (fsyncgate: the kernel may have dropped the pages the failed one was to write), so
// nothing written before the failure is ever called durable. Close leaves the files as a crash
// would; reopened on a healthy disk, every acknowledged message is there.
func TestFsyncEIOStopsAcknowledging(t *testing.T) {
	d := &faultyDisk{}
	s, cfg, acked := faultStore(t, d, 5)
	flushed, syncs := s.FlushedPhyOffset(), d.commitLogSyncs()
	d.mu.Lock()
	d.failSyncs = 1
	d.mu.Unlock()

	expectFaultAnswers(t, s, "input/output error")
	if err := s.SyncCommitLog(); !errors.Is(err, ErrNotWritable) {
		t.Fatalf("SyncCommitLog after the failed fsync: %v; want ErrNotWritable", err)
	}
	if got := s.FlushedPhyOffset(); got != flushed {
		t.Fatalf("flushed offset moved from %d to %d after the failed fsync", flushed, got)
	}
	if got := d.commitLogSyncs(); got != syncs {
		t.Fatalf("%d more CommitLog syncs after the failed one: a later fsync's success proves nothing", got-syncs)
	}
	if st := s.Stats(); st.Writable {
		t.Fatal("Stats says writable after a failed fsync")
	}
	reopenAfterFault(t, s, cfg, acked)
}

// TestENOSPCInTheMiddleOfAWrite: the pwrite of staged records writes half of them and fails
// with ENOSPC. Nothing of it is acknowledged, later puts are refused naming the cause, and
// reopening (space freed) cuts the torn record and keeps every acknowledged one.
func TestENOSPCInTheMiddleOfAWrite(t *testing.T) {
	d := &faultyDisk{}
	s, cfg, acked := faultStore(t, d, 5)
	d.mu.Lock()
	d.shortWrites = 1
	d.mu.Unlock()
	expectFaultAnswers(t, s, "no space left on device")
	reopenAfterFault(t, s, cfg, acked)
}

// TestSlowFsync: while a CommitLog fdatasync hangs, a put waiting for it times out with
// FLUSH_DISK_TIMEOUT (syncFlushTimeout) and reads go on; once the sync completes the store is
// still writable and acknowledges again (a slow disk is not a failed one).
func TestSlowFsync(t *testing.T) {
	d := &faultyDisk{}
	cfg := smallConfig(t)
	cfg.FlushDiskType = SyncFlush
	cfg.SyncFlushTimeout = 200
	opts := testOptions(t)
	opts.FileOps = d
	s := openStore(t, cfg, opts)
	first := mustPut(t, s, testMessage("Disk", 0, "first", nil))
	hold := make(chan struct{})
	d.mu.Lock()
	d.hold, d.held = hold, make(chan struct{}, 1)
	held := d.held
	d.mu.Unlock()
	done := make(chan PutResult, 1)
	go func() {
		res, err := s.PutMessage(context.Background(), testMessage("Disk", 0, "slow", nil))
		if err != nil {
			t.Errorf("put during the slow sync: %v", err)
		}
		done <- res
	}()
	<-held // the flusher is inside the sync
	if m, err := s.LookMessageByOffset(first.PhysicalOffset); err != nil || string(m.Body) != "first" {
		t.Fatalf("read during the slow sync: %v", err)
	}
	if res := <-done; res.Status != PutFlushDiskTimeout {
		t.Fatalf("put during the slow sync: %v; want FLUSH_DISK_TIMEOUT", res.Status)
	}
	d.mu.Lock()
	d.hold = nil
	d.mu.Unlock()
	close(hold)
	if res := mustPut(t, s, testMessage("Disk", 0, "after", nil)); res.Status != PutOK {
		t.Fatalf("put after the slow sync: %v", res.Status)
	}
	if !s.Stats().Writable {
		t.Fatal("a slow sync turned the store read-only")
	}
}

// queueHolds reports whether queue 0 of topic Disk holds a message with body at offset off or later.
func queueHolds(t *testing.T, s *Store, off int64, body string) bool {
	t.Helper()
	r, err := s.GetMessage("g", "Disk", 0, off, 32, 1<<20, nil)
	if err != nil {
		t.Fatalf("GetMessage: %v", err)
	}
	defer r.Release()
	for _, rec := range r.Records {
		if m, err := message.DecodeMessage(rec, true); err == nil && string(m.Body) == body {
			return true
		}
	}
	return false
}

// TestSyncFlushReadsOnlyDurableRecords: with SYNC_FLUSH a master's consumers read a record only once the
// flush that covers it made it durable. While that flush waits for the disk the record is not in its queue;
// when the flush fails (EIO) it never is, though its bytes stay in the CommitLog's page cache until the
// store is reopened. Before, dispatch ran while the disk worked: a consumer read such a record, the repaired
// disk came back without it, and a later message took its queue offset, which that consumer then skipped
// (make chaos, disk-eio-writer on a SYNC_MASTER: 3/389 read as w03-00000390 and as w03-00000397).
func TestSyncFlushReadsOnlyDurableRecords(t *testing.T) {
	d := &faultyDisk{}
	s, _, acked := faultStore(t, d, 3)
	next := acked[len(acked)-1].QueueOffset + 1
	waitFor(t, "the acknowledged messages in their queue", func() bool { return s.MaxOffsetInQueue("Disk", 0) == next })

	// A slow flush: the record waits for it.
	hold := make(chan struct{})
	d.mu.Lock()
	d.hold, d.held = hold, make(chan struct{}, 1)
	held := d.held
	d.mu.Unlock()
	release := sync.OnceFunc(func() {
		d.mu.Lock()
		d.hold = nil
		d.mu.Unlock()
		close(hold)
	})
	t.Cleanup(release) // before the store's Close, which waits for the held flush
	done := make(chan PutResult, 1)
	go func() {
		res, err := s.PutMessage(context.Background(), testMessage("Disk", 0, "slow", nil))
		if err != nil {
			t.Errorf("put during the slow sync: %v", err)
		}
		done <- res
	}()
	<-held // the flusher is inside the sync, the record written
	s.reput.wakeup()
	s.doReput(true) // dispatch as far as it may
	if s.MaxOffsetInQueue("Disk", 0) != next || queueHolds(t, s, next, "slow") {
		t.Fatal("a record was readable while the flush that covers it waited for the disk")
	}
	release()
	if res := <-done; res.Status != PutOK {
		t.Fatalf("put after the slow sync: %v", res.Status)
	}
	waitFor(t, "the flushed record in its queue", func() bool { return queueHolds(t, s, next, "slow") })
	next++

	// A failed flush: the record is never readable.
	d.mu.Lock()
	d.failSyncs = 1
	d.mu.Unlock()
	expectFaultAnswers(t, s, "input/output error")
	s.doReput(true)
	if s.MaxOffsetInQueue("Disk", 0) != next || queueHolds(t, s, next, "faulted") {
		t.Fatal("a record whose flush failed was readable")
	}
}
