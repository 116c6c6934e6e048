package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	mmap "github.com/edsrzf/mmap-go"
	"golang.org/x/sys/unix"
)

// osPageSize is the page size used for flush thresholds and alignment (RocketMQ OS_PAGE_SIZE).
const osPageSize = 4096

// fileNameDigits is the width of a file name made of its first offset.
const fileNameDigits = 20

// offsetFileName is the name of the file whose first byte is at offset: 20 decimal digits.
func offsetFileName(offset int64) string {
	return fmt.Sprintf("%020d", offset)
}

// parseOffsetFileName returns the offset a file name stands for.
func parseOffsetFileName(name string) (int64, bool) {
	if len(name) != fileNameDigits {
		return 0, false
	}
	v, err := strconv.ParseInt(name, 10, 64)
	return v, err == nil && v >= 0
}

// mappedFile is one fixed-size file mapped read-write in full.
//
// Positions: wrote is where the next append goes (owned by the single writer of the file);
// committed is how far readers may read (equal to wrote unless a transient pool buffer takes
// the writes, then the commit service moves it); flushed is how far the bytes are durable.
// All three only grow, except under truncate, which runs with no writer and no reader active.
//
// Lifetime: refs starts at 1 (the owning queue). Readers hold() before touching data and
// release() after; destroy() marks the file unavailable and drops the queue's reference. The
// mapping is unmapped and the descriptor closed when the last reference goes, never before.
type mappedFile struct {
	path string
	from int64
	size int64
	file *os.File
	data mmap.MMap

	// writeBuf is the transient pool buffer taking the writes, or nil; pool gets it back
	// once the file is full and committed.
	writeBuf []byte
	pool     *transientPool
	bufBack  atomic.Bool

	wrote     atomic.Int64
	committed atomic.Int64
	flushed   atomic.Int64
	// storeTimestamp is the store time of the last record appended (CommitLog files).
	storeTimestamp atomic.Int64
	// lastFlushTimestamp is the store time covered by the last flush.
	lastFlushTimestamp atomic.Int64

	// warmed is the warm frontier: every block before it is written and synced (see
	// warmTo, which alone moves it, under warmMu).
	warmMu sync.Mutex
	warmed atomic.Int64
	// populated is the populate frontier of a file written through the mapping: the pages
	// before it were faulted in writable (populateTo, which alone moves it, under warmMu).
	populated atomic.Int64
	// populateFailed: populateTo failed once on this file (a full disk, say); the writes
	// fault their pages in themselves from then on, and the failure is logged once.
	populateFailed atomic.Bool

	refs        atomic.Int64
	available   atomic.Bool
	unlink      atomic.Bool
	destroyedAt atomic.Int64
	cleaned     atomic.Bool
}

// fileSizeFix says what to do with an existing file whose size differs from the expected one.
type fileSizeFix int

const (
	// sizeMustMatch refuses the file.
	sizeMustMatch fileSizeFix = iota
	// sizeRepair truncates or extends the file to the expected size (the caller then treats
	// the zeroed tail as not written).
	sizeRepair
)

// errFileSize is wrapped when an existing file has the wrong size.
var errFileSize = errors.New("store: file size does not match the configured size")

// createMappedFile creates (or empties) path with size bytes and maps it. preallocate
// reserves the blocks, so writes through the mapping cannot hit ENOSPC (a SIGBUS); otherwise
// the file is sparse.
func createMappedFile(path string, from, size int64, preallocate bool) (*mappedFile, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("store: create %s: %w", path, err)
	}
	if err := sizeFile(f, size, preallocate); err != nil {
		f.Close()
		_ = os.Remove(path)
		return nil, fmt.Errorf("store: size %s to %d bytes: %w", path, size, err)
	}
	mf, err := mapFile(f, path, from, size)
	if err != nil {
		_ = os.Remove(path)
	}
	return mf, err
}

// openMappedFile maps an existing file. A file of another size is refused, or with
// sizeRepair cut or extended with zeros to size (repaired is then true).
func openMappedFile(path string, from, size int64, fix fileSizeFix) (mf *mappedFile, repaired bool, err error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, false, fmt.Errorf("store: open %s: %w", path, err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, false, fmt.Errorf("store: stat %s: %w", path, err)
	}
	if cur := st.Size(); cur != size {
		if fix == sizeMustMatch {
			f.Close()
			return nil, false, fmt.Errorf("%w: %s is %d bytes, want %d", errFileSize, path, cur, size)
		}
		if err := f.Truncate(size); err != nil {
			f.Close()
			return nil, false, fmt.Errorf("store: resize %s from %d to %d bytes: %w", path, cur, size, err)
		}
		repaired = true
	}
	mf, err = mapFile(f, path, from, size)
	return mf, repaired, err
}

// mapFile maps f in full; it closes f on failure.
func mapFile(f *os.File, path string, from, size int64) (*mappedFile, error) {
	if err := fileBudget.reserve(path); err != nil {
		f.Close()
		return nil, err
	}
	data, err := mmap.MapRegion(f, int(size), mmap.RDWR, 0, 0)
	if err != nil {
		fileBudget.release()
		f.Close()
		return nil, fmt.Errorf("store: mmap %s (%d bytes): %w", path, size, err)
	}
	mf := &mappedFile{path: path, from: from, size: size, file: f, data: data}
	mf.refs.Store(1)
	mf.available.Store(true)
	return mf, nil
}

// adviseUnwritten maps f from pos (rounded up to a page) to its end MADV_RANDOM: the part of
// the CommitLog file being written that is not written yet. A read through the mapping of a
// written page that is not cached (dispatch or a reader right behind the writes, after the
// page was written back and dropped: this VM trims the page cache within seconds, 77 of 256
// MiB of a freshly written file gone in 20 s with 22 GiB free) otherwise read ahead into the
// holes of the sparse file after the written end, zero-filling large folios that the next
// pwrites then went into, and ext4's write path walks every block of a large folio on every
// write (TestNoReadAheadIntoTheUnwrittenTail: one read cached all 943 pages after the end of
// a 4 MiB file). Measured (BenchmarkPutMessage 1KiB ASYNC_FLUSH under perf): the zero-filling
// under dispatch's page faults 15 % of the samples, ext4_block_write_begin 13.7 % and
// block_commit_write 15.7 % under pwrite; with the advice 0, under 1.3 % and 7.2 %. Advice
// only: errors are ignored.
func (f *mappedFile) adviseUnwritten(pos int64) {
	start := (pos + osPageSize - 1) &^ (osPageSize - 1)
	if start < f.size {
		_ = unix.Madvise(f.data[start:f.size], unix.MADV_RANDOM)
	}
}

// adviseWritten gives f back the default advice once it is written to its end, so reads of
// it (catching up, cold reads that fall back to the mapping) get the kernel's read-around.
func (f *mappedFile) adviseWritten() {
	_ = unix.Madvise(f.data[:f.size], unix.MADV_NORMAL)
}

// sizeFile gives an empty file its size, reserving the blocks when asked and supported.
func sizeFile(f *os.File, size int64, preallocate bool) error {
	if preallocate {
		if err := unix.Fallocate(int(f.Fd()), 0, 0, size); err == nil {
			return nil
		} else if errors.Is(err, unix.ENOSPC) {
			return err
		}
	}
	return f.Truncate(size)
}

// fileName is the base name of the file.
func (f *mappedFile) fileName() string { return filepath.Base(f.path) }

// isFull reports whether the writer has reached the end of the file.
func (f *mappedFile) isFull() bool { return f.wrote.Load() >= f.size }

// readable is the position up to which readers may read.
func (f *mappedFile) readable() int64 { return f.committed.Load() }

// setPositions sets all three positions (load and truncate only).
func (f *mappedFile) setPositions(pos int64) {
	f.wrote.Store(pos)
	f.committed.Store(pos)
	f.flushed.Store(pos)
}

// writeSlice returns where the writer puts n bytes at pos: the pool buffer or the mapping.
// Only the single writer of the file calls it.
func (f *mappedFile) writeSlice(pos, n int64) []byte {
	if f.writeBuf != nil {
		return f.writeBuf[pos : pos+n]
	}
	return f.data[pos : pos+n]
}

// publish makes bytes up to pos visible: with a pool buffer only the commit does that.
func (f *mappedFile) publish(pos int64) {
	f.wrote.Store(pos)
	if f.writeBuf == nil {
		f.committed.Store(pos)
	}
}

// appendRaw copies b at the write position (raw replication and ConsumeQueue units). The
// caller is the file's single writer and has checked the room.
//
// A write that reaches into a page not written yet (it starts one, or a unit crosses into one)
// of a file without a write buffer goes in with pwrite: the first store through the mapping
// into a hole of the sparse file takes a fault whose read-around fills the device's whole
// read-ahead window of the file with zeros (8 MiB on this machine's virtio disk, capped at the
// file's end): about a millisecond on ext4 (measured: 1.19 ms per new file through the mapping,
// 44 us with pwrite). A 20-byte ConsumeQueue unit starts a page only every 1,024 units, so the
// units crossing into the four pages between faulted: with 100 topics x 8 queues half the
// broker's CPU went to that zero-filling (perf: __pi_memset under filemap_fault, 48 %). The
// mapping shares the page cache, so readers see the bytes either way.
func (f *mappedFile) appendRaw(b []byte) {
	pos := f.wrote.Load()
	newPage := pos%osPageSize == 0 || (pos+int64(len(b))-1)/osPageSize != pos/osPageSize
	if f.writeBuf == nil && newPage && f.file != nil {
		if n, err := f.file.WriteAt(b, pos); err == nil && n == len(b) {
			f.publish(pos + int64(len(b)))
			return
		}
	}
	copy(f.writeSlice(pos, int64(len(b))), b)
	f.publish(pos + int64(len(b)))
}

// hold takes a reader reference; false means the file is being deleted or closed.
func (f *mappedFile) hold() bool {
	for {
		r := f.refs.Load()
		if r <= 0 || !f.available.Load() {
			return false
		}
		if f.refs.CompareAndSwap(r, r+1) {
			return true
		}
	}
}

// release drops a reference; the last one unmaps the file.
func (f *mappedFile) release() {
	if f.refs.Add(-1) == 0 {
		f.cleanup()
	}
}

// destroy marks the file unavailable and drops the queue's reference. With unlink the file is
// removed from disk at once (its blocks are freed when the last reader releases it).
func (f *mappedFile) destroy(unlink bool) error {
	if !f.available.CompareAndSwap(true, false) {
		return nil
	}
	f.destroyedAt.Store(time.Now().UnixNano())
	var err error
	if unlink {
		f.unlink.Store(true)
		if rmErr := os.Remove(f.path); rmErr != nil && !errors.Is(rmErr, os.ErrNotExist) {
			err = fmt.Errorf("store: remove %s: %w", f.path, rmErr)
		}
	}
	f.release()
	return err
}

// hanging reports a destroyed file still mapped for readers after d.
func (f *mappedFile) hanging(d time.Duration) bool {
	at := f.destroyedAt.Load()
	return at != 0 && !f.cleaned.Load() && time.Since(time.Unix(0, at)) > d
}

func (f *mappedFile) cleanup() {
	if !f.cleaned.CompareAndSwap(false, true) {
		return
	}
	f.returnBuffer()
	_ = f.data.Unmap()
	fileBudget.release()
	_ = f.file.Close()
}

// returnBuffer gives the pool buffer back once (file full and committed, or closed).
func (f *mappedFile) returnBuffer() {
	if f.writeBuf != nil && f.pool != nil && f.bufBack.CompareAndSwap(false, true) {
		f.pool.put(f.writeBuf)
	}
}

// pagesBetween is the number of whole pages between two positions, as RocketMQ counts them.
func pagesBetween(from, to int64) int64 { return to/osPageSize - from/osPageSize }

// commit copies pool-buffered bytes into the mapping. leastPages > 0 waits for that many
// uncommitted pages (a full file always commits). Only the commit service and Close call it.
func (f *mappedFile) commit(leastPages int) int64 {
	if f.writeBuf == nil || f.bufBack.Load() {
		return f.committed.Load()
	}
	wrote, committed := f.wrote.Load(), f.committed.Load()
	if wrote <= committed {
		return committed
	}
	if wrote < f.size && leastPages > 0 && pagesBetween(committed, wrote) < int64(leastPages) {
		return committed
	}
	copy(f.data[committed:wrote], f.writeBuf[committed:wrote])
	f.committed.Store(wrote)
	if wrote >= f.size {
		f.returnBuffer()
	}
	return wrote
}

// flushMode selects how dirty pages reach the disk. fdatasync is the default: measured here
// (BenchmarkSyncFlushMode, one SYNC_FLUSH writer) it ran 10-25 % faster than msync of the
// dirty page-aligned range; only the range is dirty, so both write the same pages.
type flushMode int

const (
	// flushFdatasync fdatasyncs the whole file.
	flushFdatasync flushMode = iota
	// flushMsync msyncs the dirty page-aligned range of the mapping.
	flushMsync
)

// flush makes the committed bytes durable when at least leastPages pages are dirty (a full
// file always flushes). It returns the flushed position. Only one flusher runs per file.
func (f *mappedFile) flush(leastPages int, mode flushMode, ops FileOps) (int64, error) {
	flushed, target := f.flushed.Load(), f.committed.Load()
	if target <= flushed {
		return flushed, nil
	}
	if target < f.size && leastPages > 0 && pagesBetween(flushed, target) < int64(leastPages) {
		return flushed, nil
	}
	if !f.hold() {
		return flushed, nil
	}
	defer f.release()
	ts := f.storeTimestamp.Load()
	var err error
	switch {
	case mode == flushFdatasync && ops != nil:
		err = ops.Sync(f.file)
	case mode == flushFdatasync:
		err = unix.Fdatasync(int(f.file.Fd()))
	default:
		start := flushed &^ (osPageSize - 1)
		err = unix.Msync(f.data[start:target], unix.MS_SYNC)
	}
	if err != nil {
		return flushed, fmt.Errorf("store: flush %s [%d, %d): %w", f.path, flushed, target, err)
	}
	f.flushed.Store(target)
	f.lastFlushTimestamp.Store(ts)
	return target, nil
}

// zeroFrom clears the file from pos to its end, so nothing stale past a truncation point can
// be read back as data. The page-aligned part is zeroed with fallocate when supported, or,
// for a warm file (see warmTo), its written parts are written with zeros so they stay warm
// (the holes past the warm frontier read as zeros already).
//
// A sparse file whose tail holds nothing (no data past the page of pos, per SEEK_DATA, and zeros
// from pos to that page's end) is left alone: every ConsumeQueue load cuts its last file at its
// end, and zeroing the rest (fallocate and msync of up to 6 MB) cost about 2 ms per queue, 20 s
// for a broker with 10,000 written queues.
func (f *mappedFile) zeroFrom(pos int64, warm bool) error {
	if pos >= f.size {
		return nil
	}
	edge := min((pos+osPageSize-1)&^(osPageSize-1), f.size)
	if !warm && f.writeBuf == nil && allZero(f.data[pos:edge]) && f.noDataFrom(edge) {
		return nil
	}
	clear(f.data[pos:edge])
	if edge < f.size {
		var err error
		if warm {
			err = f.zeroData(edge, f.size)
		} else {
			err = unix.Fallocate(int(f.file.Fd()), unix.FALLOC_FL_ZERO_RANGE|unix.FALLOC_FL_KEEP_SIZE, edge, f.size-edge)
		}
		if err != nil {
			clear(f.data[edge:f.size])
		}
	}
	if f.writeBuf != nil {
		clear(f.writeBuf[pos:])
	}
	start := pos &^ (osPageSize - 1)
	if err := unix.Msync(f.data[start:f.size], unix.MS_SYNC); err != nil {
		return fmt.Errorf("store: flush zeroed tail of %s from %d: %w", f.path, pos, err)
	}
	return nil
}

// noDataFrom reports that the file holds no data from off to its end (SEEK_DATA finds none); false when
// the file system cannot tell.
func (f *mappedFile) noDataFrom(off int64) bool {
	if off >= f.size {
		return true
	}
	next, err := unix.Seek(int(f.file.Fd()), off, unix.SEEK_DATA)
	if errors.Is(err, unix.ENXIO) {
		return true
	}
	return err == nil && next >= f.size
}
