package store

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rocketraft/rocketraft/message"
)

// diskStub is a settable disk-usage ratio.
type diskStub struct{ bits atomic.Int64 }

func (d *diskStub) set(permille int64) { d.bits.Store(permille) }
func (d *diskStub) usage(string) (float64, error) {
	return float64(d.bits.Load()) / 1000, nil
}

// cleanStore opens a started store with a fake clock and a disk stub, and puts messages
// over several CommitLog files.
func cleanStore(t *testing.T, clock *fakeClock) (*Store, *diskStub, []putRecord) {
	cfg := smallConfig(t)
	cfg.FileReservedTime = 1
	cfg.DeleteWhen = "04"
	cfg.DeleteCommitLogFilesInterval = 0
	cfg.DeleteConsumeQueueFilesInterval = 0
	cfg.DeleteFileBatchMax = 100
	opts := testOptions(t)
	opts.Clock = clock
	s, err := Open(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	disk := &diskStub{}
	disk.set(100)
	s.diskUsage = disk.usage
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	puts := putMixed(t, s, 200)
	waitDispatched(t, s)
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	return s, disk, puts
}

// localAt is a day after tomorrow at hh:mm local time: later than every file's mtime plus
// fileReservedTime.
func localAt(hh, mm int) time.Time {
	d := time.Now().Add(48 * time.Hour)
	return time.Date(d.Year(), d.Month(), d.Day(), hh, mm, 0, 0, time.Local)
}

func TestExpiryAtDeleteWhen(t *testing.T) {
	clock := newFakeClock(time.Now())
	s, _, puts := cleanStore(t, clock)
	files := len(s.commitLog.q.snapshot())
	ctx := context.Background()

	clock.Set(localAt(3, 30)) // expired, but not the deleteWhen hour
	s.cleanOnce(ctx)
	if s.MinPhyOffset() != 0 {
		t.Fatalf("deleted at 03:30: min %d", s.MinPhyOffset())
	}
	clock.Set(time.Now()) // the deleteWhen hour is irrelevant while nothing expired
	s.cleanOnce(ctx)

	clock.Set(localAt(4, 30))
	s.cleanOnce(ctx)
	left := s.commitLog.q.snapshot()
	if len(left) != 1 || len(left) >= files {
		t.Fatalf("%d of %d commitlog files left, want only the last", len(left), files)
	}
	minPhy := s.MinPhyOffset()
	if minPhy != left[0].from {
		t.Fatalf("min phy %d, first file %d", minPhy, left[0].from)
	}
	entries, _ := os.ReadDir(s.cfg.commitLogDir())
	if len(entries) > 2 { // the last file and perhaps the preallocated next one
		t.Fatalf("%d files on disk after expiry", len(entries))
	}
	// Queues now start at their first message still in the CommitLog.
	for _, k := range []queueKey{{"TopicA", 0}, {"TopicB", 1}} {
		var first int64 = -1
		var n int64
		for _, p := range puts {
			if p.topic == k.topic && p.queue == k.queueID {
				if p.res.PhysicalOffset >= minPhy && first < 0 {
					first = n
				}
				n++
			}
		}
		if first < 0 {
			first = n
		}
		if got := s.MinOffsetInQueue(k.topic, k.queueID); got != first {
			t.Errorf("%s/%d: min offset %d, want %d", k.topic, k.queueID, got, first)
		}
		r, _ := s.GetMessage("g", k.topic, k.queueID, 0, 32, 1<<20, nil)
		if first > 0 && (r.Status != OffsetTooSmall || r.NextBeginOffset != first) {
			t.Errorf("%s/%d: read at 0 = %v next %d, want OFFSET_TOO_SMALL next %d", k.topic, k.queueID, r.Status, r.NextBeginOffset, first)
		}
		r.Release()
		got := readQueue(t, s, k.topic, k.queueID)
		if int64(len(got)) != n-first {
			t.Errorf("%s/%d: %d readable, want %d", k.topic, k.queueID, len(got), n-first)
		}
	}
	// Old ConsumeQueue files went too (they only pointed below the new minimum).
	for _, cq := range s.cqs.all() {
		if f := cq.q.first(); f != nil && f.readable() >= cqUnitSize {
			if u := readUnit(f.data[f.readable()-cqUnitSize:]); u.phy < minPhy && len(cq.q.snapshot()) > 1 {
				t.Errorf("%s/%d keeps a file whose units all point below %d", cq.topic, cq.queueID, minPhy)
			}
		}
	}
	if len(s.index.files) > 1 && s.index.files[0].endPhyOffset() < minPhy {
		t.Errorf("an index file pointing only below %d was kept", minPhy)
	}
}

func TestExpiryByDiskUse(t *testing.T) {
	clock := newFakeClock(time.Now())
	s, disk, _ := cleanStore(t, clock)
	ctx := context.Background()
	files := len(s.commitLog.q.snapshot())

	// Past diskMaxUsedSpaceRatio (75 %): expired files go at any hour, unexpired ones stay.
	disk.set(800)
	s.cleanOnce(ctx)
	if n := len(s.commitLog.q.snapshot()); n != files {
		t.Fatalf("unexpired files deleted at 80%%: %d of %d left", n, files)
	}
	clock.Set(localAt(10, 0))
	s.cleanOnce(ctx)
	if n := len(s.commitLog.q.snapshot()); n != 1 {
		t.Fatalf("expired files kept at 80%%: %d of %d left", n, files)
	}
}

func TestCleanForciblyAndDiskFull(t *testing.T) {
	clock := newFakeClock(time.Now())
	s, disk, _ := cleanStore(t, clock)
	ctx := context.Background()

	// Past diskSpaceCleanForciblyRatio (85 %): files go before they expire.
	disk.set(870)
	s.cleanOnce(ctx)
	if n := len(s.commitLog.q.snapshot()); n != 1 {
		t.Fatalf("forcible clean left %d files", n)
	}
	if _, err := s.PutMessage(ctx, testMessage("T", 0, "still ok at 87%", nil)); err != nil {
		t.Fatalf("put at 87%%: %v", err)
	}
	// Past diskSpaceWarningLevelRatio (90 %): writes are refused, nothing written.
	disk.set(950)
	s.cleanOnce(ctx)
	before := s.MaxPhyOffset()
	_, err := s.PutMessage(ctx, testMessage("T", 0, "refused", nil))
	if !errors.Is(err, ErrDiskFull) {
		t.Fatalf("put at 95%%: %v", err)
	}
	if s.MaxPhyOffset() != before || !s.Stats().DiskFull {
		t.Fatalf("disk full: end moved from %d to %d, stats %+v", before, s.MaxPhyOffset(), s.Stats().DiskFull)
	}
	disk.set(500)
	s.cleanOnce(ctx)
	if _, err := s.PutMessage(ctx, testMessage("T", 0, "accepted again", nil)); err != nil {
		t.Fatalf("put after the disk recovered: %v", err)
	}
}

// Disk use is measured whenever a CommitLog file is made, not only by the clean service
// (every cleanResourceInterval, an hour in these tests): writes stop at the next file.
func TestDiskFullNoticedAtNewFile(t *testing.T) {
	s, disk, _ := cleanStore(t, newFakeClock(time.Now()))
	disk.set(950)
	fileSize := s.cfg.MappedFileSizeCommitLog
	start := s.commitLog.q.maxWrote()
	for i := 0; ; i++ {
		_, err := s.PutMessage(context.Background(), testMessage("T", 0, bodyOf(i, 1000), nil))
		if errors.Is(err, ErrDiskFull) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if s.commitLog.q.maxWrote() > start+3*fileSize {
			t.Fatal("puts still accepted three files after the disk filled")
		}
	}
}

// Readers hold records in files the cleaner deletes: the records stay readable until
// Release, and the files are unmapped after the last release.
func TestReadsRacingDeletion(t *testing.T) {
	clock := newFakeClock(time.Now())
	s, disk, _ := cleanStore(t, clock)
	disk.set(870) // every clean deletes all but the last file
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var reads, held atomic.Int64
	check := func(rec []byte) {
		v, err := message.ParseRecord(rec)
		if err != nil || message.BodyCRC(v.Body) != v.BodyCRC {
			t.Errorf("a held record changed under the reader: %v", err)
		}
	}
	for w := 0; w < 2; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; ctx.Err() == nil; i++ {
				if _, err := s.PutMessage(ctx, testMessage("TopicA", int32(w), bodyOf(i, 900), nil)); err != nil && ctx.Err() == nil {
					t.Errorf("put: %v", err)
					return
				}
			}
		}(w)
	}
	for r := 0; r < 3; r++ {
		wg.Add(1)
		go func(r int) {
			defer wg.Done()
			for ctx.Err() == nil {
				q := int32(r % 2)
				res, err := s.GetMessage("g", "TopicA", q, s.MinOffsetInQueue("TopicA", q), 16, 1<<20, nil)
				if err != nil {
					t.Errorf("get: %v", err)
					return
				}
				for _, rec := range res.Records {
					check(rec)
				}
				held.Add(int64(len(res.Records)))
				// Keep the records across a clean run, then read them again.
				for i := 0; i < 3 && ctx.Err() == nil; i++ {
					s.cleanOnce(ctx)
				}
				for _, rec := range res.Records {
					check(rec)
				}
				res.Release()
				reads.Add(1)
			}
		}(r)
	}
	// A fail-safe, not a speed bound: on a loaded machine (flushes of seconds) 30 reads took longer than 10 s.
	deadline := time.Now().Add(2 * time.Minute)
	for (reads.Load() < 30 || s.MinPhyOffset() == 0) && time.Now().Before(deadline) && !t.Failed() {
		s.cleanOnce(ctx)
	}
	cancel()
	wg.Wait()
	if reads.Load() < 30 || held.Load() == 0 || s.MinPhyOffset() == 0 {
		t.Fatalf("race did not happen: %d reads, %d records held, min phy %d", reads.Load(), held.Load(), s.MinPhyOffset())
	}
	if hanging := s.commitLog.q.hangingFiles(0); len(hanging) != 0 {
		t.Fatalf("files still mapped after every reader released: %v", hanging)
	}
}

// A deleted file a reader still holds stays mapped (and is reported as hanging) until the
// reader releases it.
func TestDeletedFileUnmappedAtLastRelease(t *testing.T) {
	clock := newFakeClock(time.Now())
	s, disk, puts := cleanStore(t, clock)
	rec, release, err := s.SelectRecord(puts[0].res.PhysicalOffset)
	if err != nil {
		t.Fatal(err)
	}
	first := s.commitLog.q.first()
	disk.set(870)
	s.cleanOnce(context.Background())
	if s.MinPhyOffset() == 0 {
		t.Fatal("first file not deleted")
	}
	if _, err := os.Stat(first.path); !os.IsNotExist(err) {
		t.Fatalf("deleted file still on disk: %v", err)
	}
	if m, err := message.DecodeMessage(rec, true); err != nil || string(m.Body) != puts[0].body {
		t.Fatalf("held record unreadable after deletion: %v", err)
	}
	if h := s.commitLog.q.hangingFiles(0); len(h) != 1 || filepath.Base(h[0]) != first.fileName() {
		t.Fatalf("hanging files %v", h)
	}
	release()
	if !first.cleaned.Load() || len(s.commitLog.q.hangingFiles(0)) != 0 {
		t.Fatal("file not unmapped at the last release")
	}
	if _, err := s.LookMessageByOffset(puts[0].res.PhysicalOffset); !errors.Is(err, ErrNotFound) {
		t.Fatalf("lookup in a deleted file: %v", err)
	}
}

// The allocate service makes the next CommitLog file before the current one fills, and
// Close deletes it if it was never written.
func TestNextFilePreallocated(t *testing.T) {
	for _, warm := range []bool{false, true} {
		cfg := smallConfig(t)
		cfg.WarmMapedFileEnable = warm
		s := openStore(t, cfg, testOptions(t))
		mustPut(t, s, testMessage("T", 0, "first", nil))
		next := filepath.Join(cfg.commitLogDir(), offsetFileName(cfg.MappedFileSizeCommitLog))
		waitFor(t, "the next file to be preallocated", func() bool {
			st, err := os.Stat(next)
			return err == nil && st.Size() == cfg.MappedFileSizeCommitLog
		})
		if n := len(s.commitLog.q.snapshot()); n != 1 {
			t.Fatalf("preallocated file already in the queue: %d files", n)
		}
		puts := putMixed(t, s, 40)
		waitDispatched(t, s)
		checkAll(t, s, puts)
		last := s.commitLog.q.maxWrote()
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		entries, _ := os.ReadDir(cfg.commitLogDir())
		if int64(len(entries)) != (last+cfg.MappedFileSizeCommitLog-1)/cfg.MappedFileSizeCommitLog {
			t.Fatalf("warm=%v: %d files on disk after Close for %d bytes", warm, len(entries), last)
		}
	}
}
