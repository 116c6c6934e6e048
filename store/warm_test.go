package store

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/rocketraft/rocketraft/message"
	"golang.org/x/sys/unix"
)

// firstHole is where the first hole at or after pos is (the file size when there is none).
func firstHole(t *testing.T, path string, pos int64) int64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	hole, err := unix.Seek(int(f.Fd()), pos, unix.SEEK_HOLE)
	if err != nil {
		t.Fatal(err)
	}
	return hole
}

// With SYNC_FLUSH an empty store gets a warm first file at Open, the allocate service warms
// the next one, and a reopened store warms the tail that an ASYNC_FLUSH run left sparse,
// without touching what was written.
func TestSyncFlushWarmsFiles(t *testing.T) {
	cfg := smallConfig(t)
	cfg.MappedFileSizeCommitLog = 64 << 10
	cfg.FlushDiskType = AsyncFlush
	cfg.WriteWithoutMmap = true // copies into the mapping would have the tail populated, not sparse
	s := openStore(t, cfg, testOptions(t))
	puts := putMixed(t, s, 30)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	last := s.commitLog.q.maxWrote()
	path, pos := recordFile(cfg, last)
	if hole := firstHole(t, path, pos); hole >= cfg.MappedFileSizeCommitLog {
		t.Skipf("%s has no hole after %d: the file system does not report holes", path, pos)
	}

	cfg.FlushDiskType = SyncFlush
	s = openStore(t, cfg, testOptions(t))
	if hole := firstHole(t, path, 0); hole != cfg.MappedFileSizeCommitLog {
		t.Fatalf("tail of %s not warmed at Open: hole at %d", path, hole)
	}
	waitDispatched(t, s)
	checkAll(t, s, puts)
	next := filepath.Join(cfg.commitLogDir(), offsetFileName(last-last%cfg.MappedFileSizeCommitLog+cfg.MappedFileSizeCommitLog))
	waitFor(t, "the next file to be made ahead", func() bool { return s.alloc.nextPending() == nil })
	if hole := firstHole(t, next, 0); hole != cfg.MappedFileSizeCommitLog {
		t.Fatalf("next file %s not warmed: hole at %d", next, hole)
	}
	puts = append(puts, putMixed(t, s, 60)...)
	waitDispatched(t, s)
	checkAll(t, s, puts)

	empty := smallConfig(t)
	empty.FlushDiskType = SyncFlush
	s = openStore(t, empty, testOptions(t))
	first := filepath.Join(empty.commitLogDir(), offsetFileName(0))
	if hole := firstHole(t, first, 0); hole != empty.MappedFileSizeCommitLog {
		t.Fatalf("first file of an empty store not warmed at Open: hole at %d", hole)
	}
}

// BenchmarkRawSyncWrite is the SYNC_FLUSH disk baseline: records appended with pwrite and
// made durable with fdatasync, batch records per fdatasync (1 as one writer, 16 as a full
// group commit), into a file prepared four ways: sparse (as RocketMQ creates files),
// fallocated, zeroed with fallocate(FALLOC_FL_ZERO_RANGE), or written with zeros and synced
// (fillHoles). The ratio batch=16 / batch=1 in msgs/s is the ceiling of what a group commit
// of 16 writers can gain over one writer on this disk.
func BenchmarkRawSyncWrite(b *testing.B) {
	rec, err := message.EncodeRecord(nil, &message.MessageExt{Message: *benchMessage(1024), StoreHost: testStoreHost})
	if err != nil {
		b.Fatal(err)
	}
	const fileSize = 256 << 20
	for _, prep := range []string{"sparse", "fallocate", "zerorange", "zeros"} {
		for _, batch := range []int{1, 16} {
			b.Run(fmt.Sprintf("%s/batch=%d", prep, batch), func(b *testing.B) {
				f := prepareFile(b, filepath.Join(b.TempDir(), "f"), fileSize, prep)
				defer f.Close()
				buf := make([]byte, 0, batch*len(rec))
				for i := 0; i < batch; i++ {
					buf = append(buf, rec...)
				}
				b.SetBytes(int64(len(rec)))
				b.ResetTimer()
				var off int64
				for i := 0; i < b.N; i += batch {
					if off+int64(len(buf)) > fileSize {
						off = 0
					}
					if _, err := f.WriteAt(buf, off); err != nil {
						b.Fatal(err)
					}
					if err := unix.Fdatasync(int(f.Fd())); err != nil {
						b.Fatal(err)
					}
					off += int64(len(buf))
				}
				b.StopTimer()
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
			})
		}
	}
}

// prepareFile creates a file of size bytes the way prep names (see BenchmarkRawSyncWrite).
func prepareFile(b *testing.B, path string, size int64, prep string) *os.File {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		b.Fatal(err)
	}
	fd := int(f.Fd())
	switch prep {
	case "sparse":
		err = f.Truncate(size)
	case "fallocate":
		err = unix.Fallocate(fd, 0, 0, size)
	case "zerorange":
		if err = f.Truncate(size); err == nil {
			err = unix.Fallocate(fd, unix.FALLOC_FL_ZERO_RANGE, 0, size)
		}
	case "zeros":
		if err = f.Truncate(size); err == nil {
			mf := &mappedFile{path: path, size: size, file: f}
			_, err = mf.fillHoles(0, size)
		}
	}
	if err == nil {
		err = unix.Fdatasync(fd)
	}
	if err != nil {
		b.Fatalf("prepare %s: %v", prep, err)
	}
	return f
}

// With SYNC_FLUSH and files much larger than the warm distance, start-up warms only the head
// of the first file, every staged write lands where the file has no hole (looked up with
// SEEK_HOLE at the moment of the write, through real puts from concurrent writers), the warm
// service keeps the frontier ahead of the writes without warming whole files, writes that
// outrun a stalled warm service warm in the flush path first, and the records read back
// intact, before and after a reopen.
func TestSyncFlushWarmFrontier(t *testing.T) {
	const size, ahead = 8 << 20, 2 << 20
	cfg := smallConfig(t)
	cfg.FlushDiskType = SyncFlush
	cfg.MappedFileSizeCommitLog = size
	cfg.MaxMessageSize = 128 << 10
	cfg.warmAhead = ahead

	var writes, cold atomic.Int64
	var coldAt atomic.Value
	var stall sync.RWMutex // held by the test to stop the warm service
	open := func() *Store {
		s, err := Open(cfg, testOptions(t))
		if err != nil {
			t.Fatal(err)
		}
		s.commitLog.beforeWrite = func(f *mappedFile, pos, n int64) {
			writes.Add(1)
			hole, err := unix.Seek(int(f.file.Fd()), pos, unix.SEEK_HOLE)
			if err != nil || hole < pos+n {
				cold.Add(1)
				coldAt.Store(fmt.Sprintf("%s [%d, %d): hole at %d (%v)", f.path, pos, pos+n, hole, err))
			}
		}
		s.commitLog.beforeWarm = func() { stall.RLock(); stall.RUnlock() }
		if err := s.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	s := open()
	first := filepath.Join(cfg.commitLogDir(), offsetFileName(0))
	if hole := firstHole(t, first, 0); hole < ahead || hole >= size {
		t.Fatalf("first file after Open: first hole at %d, want the head warm, in [%d, %d)", hole, ahead, size)
	}

	var mu sync.Mutex
	var puts []putRecord
	putUntil := func(s *Store, end int64) {
		var wg sync.WaitGroup
		for w := 0; w < 8; w++ {
			wg.Add(1)
			go func(q int32) {
				defer wg.Done()
				for i := 0; s.MaxPhyOffset() < end; i++ {
					body := bodyOf(i, 16<<10+int(q)*997+i*4099%(48<<10))
					m := testMessage("Warm", q, body, map[string]string{message.PropertyTags: "T"})
					res, err := s.PutMessage(context.Background(), m)
					if err != nil || res.Status != PutOK {
						t.Errorf("put: %v %v", res.Status, err)
						return
					}
					mu.Lock()
					puts = append(puts, putRecord{"Warm", q, body, "T", res})
					mu.Unlock()
				}
			}(int32(w))
		}
		wg.Wait()
	}
	checkFrontier := func(s *Store) {
		t.Helper()
		end := s.MaxPhyOffset()
		path, pos := recordFile(cfg, end)
		want := min(pos+ahead/2, size)
		waitFor(t, "the warm frontier to move ahead of the writes", func() bool { return firstHole(t, path, pos) >= want })
		if hole := firstHole(t, path, pos); pos+ahead+warmChunk < size && hole >= size {
			t.Fatalf("%s warmed in full with the writes at %d", path, pos)
		}
		next := filepath.Join(cfg.commitLogDir(), offsetFileName(end-pos+size))
		waitFor(t, "the next file to be made ahead", func() bool { return s.alloc.nextPending() == nil })
		if hole := firstHole(t, next, 0); hole < ahead || hole >= size {
			t.Fatalf("next file %s: first hole at %d, want the head warm, in [%d, %d)", next, hole, ahead, size)
		}
	}

	putUntil(s, 2*size+size/2)
	if writes.Load() == 0 || cold.Load() != 0 {
		t.Fatalf("%d of %d staged writes landed in a hole, e.g. %v", cold.Load(), writes.Load(), coldAt.Load())
	}
	checkFrontier(s)
	st := s.Stats()
	if st.WarmBytes <= 0 || st.WarmBytes > 4*size {
		t.Fatalf("WarmBytes %d for %d bytes written", st.WarmBytes, s.MaxPhyOffset())
	}
	t.Logf("%d staged writes, %d MiB warmed, %d warmed in the flush path", writes.Load(), st.WarmBytes>>20, st.WarmStalls)
	waitDispatched(t, s)
	checkAll(t, s, puts)

	stall.Lock()
	stalls := st.WarmStalls
	putUntil(s, 3*size+size/4)
	stall.Unlock()
	if cold.Load() != 0 {
		t.Fatalf("%d of %d staged writes landed in a hole with the warm service stalled, e.g. %v", cold.Load(), writes.Load(), coldAt.Load())
	}
	if got := s.Stats().WarmStalls; got <= stalls {
		t.Fatalf("WarmStalls %d -> %d: the writes outran a stalled warm service without warming first", stalls, got)
	}
	checkFrontier(s)

	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open()
	checkFrontier(s)
	putUntil(s, 4*size+size/4)
	if cold.Load() != 0 {
		t.Fatalf("%d of %d staged writes landed in a hole after a reopen, e.g. %v", cold.Load(), writes.Load(), coldAt.Load())
	}
	checkFrontier(s)
	waitDispatched(t, s)
	checkAll(t, s, puts)
}
