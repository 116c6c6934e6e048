package store

import (
	"fmt"
	"os"
	"path/filepath"
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
// (warmFrom). The ratio batch=16 / batch=1 in msgs/s is the ceiling of what a group commit
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
			_, err = mf.warmFrom(0)
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
