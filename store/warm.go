package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// warmChunk is how many zero bytes warming writes before waiting for them to reach the disk,
// so warming never has more than this in flight ahead of a SYNC_FLUSH flush; frontiers are
// moved in whole chunks.
const warmChunk = 1 << 20

// defaultWarmAhead is how far the warm frontier of a SYNC_FLUSH CommitLog is kept ahead of
// the write position (see Config.warmAheadBytes): the warm service moves it once the writes
// come within half of it, so it writes zeros in bursts of about 8 MiB (about 25 ms of this
// disk's write bandwidth), while 16 MiB is more than a second of writes at the store's
// fastest measured rate (about 10 MB/s of 1 KiB records).
const defaultWarmAhead = 16 << 20

// warmTo makes the file warm up to to (capped at its size, see fillHoles) and moves its warm
// frontier there; a no-op when the frontier is there already. f.warmMu serialises warming of
// the file; a writer that must not write past the frontier calls warmTo first, so it waits
// for a warming in progress instead of racing its zeros.
func (f *mappedFile) warmTo(to int64) (int64, error) {
	to = min(to, f.size)
	if f.warmed.Load() >= to {
		return 0, nil
	}
	f.warmMu.Lock()
	defer f.warmMu.Unlock()
	from := f.warmed.Load()
	if from >= to {
		return 0, nil
	}
	n, err := f.fillHoles(from, to)
	if err != nil {
		return n, err
	}
	f.warmed.Store(to)
	return n, nil
}

// fillHoles writes zeros over every hole of [pos, to) and makes them durable (RocketMQ's
// warmMappedFile, through pwrite rather than the mapping, so no page is left dirty or
// write-faulted). Afterwards every block of the range is allocated and written: a later
// write there only overwrites data, and a SYNC_FLUSH fdatasync has no block allocation or
// extent conversion to commit to the ext4 journal. Parts already written (data, as SEEK_DATA
// reports it) are skipped, so a warm range costs two lseeks. The bytes in the holes are zero
// already, so readers see no change. Nobody may write records into the range meanwhile (see
// warmTo).
func (f *mappedFile) fillHoles(pos, to int64) (int64, error) {
	wrote, err := f.zeroHoles(pos, to, true)
	if err != nil || wrote == 0 {
		return wrote, err
	}
	// The block allocations are metadata: one fdatasync commits them.
	if err := unix.Fdatasync(int(f.file.Fd())); err != nil {
		return wrote, f.warmErr("sync zeros", to, err)
	}
	return wrote, nil
}

// zeroHoles writes zeros over every hole of [pos, to) and returns how many it wrote; with
// writeBack each chunk is written back before the next (fillHoles), without it the zeros
// stay dirty in the page cache and are written back by the kernel or the file's next sync.
// Either way the blocks are allocated (or reserved, with delayed allocation) by the write
// system call, so a later write through the mapping is a plain page fault instead of an
// allocation inside one. Nobody may write into the holes of the range meanwhile.
func (f *mappedFile) zeroHoles(pos, to int64, writeBack bool) (int64, error) {
	fd := int(f.file.Fd())
	wrote := int64(0)
	for pos < to {
		hole, err := unix.Seek(fd, pos, unix.SEEK_HOLE)
		if err != nil {
			return wrote, f.warmErr("seek hole", pos, err)
		}
		if hole >= to {
			break
		}
		end, err := unix.Seek(fd, hole, unix.SEEK_DATA)
		if errors.Is(err, unix.ENXIO) {
			end = to
		} else if err != nil {
			return wrote, f.warmErr("seek data", hole, err)
		}
		end = min(end, to)
		if err := f.writeZeros(hole, end, writeBack); err != nil {
			return wrote, err
		}
		wrote += end - hole
		pos = end
	}
	return wrote, nil
}

// zeroData writes zeros over every part of [pos, to) that is not a hole (holes read as zeros
// already), so the range reads as zeros and what was warm stays warm. The caller syncs.
func (f *mappedFile) zeroData(pos, to int64) error {
	fd := int(f.file.Fd())
	for pos < to {
		data, err := unix.Seek(fd, pos, unix.SEEK_DATA)
		if errors.Is(err, unix.ENXIO) || (err == nil && data >= to) {
			return nil
		}
		if err != nil {
			return f.warmErr("seek data", pos, err)
		}
		end, err := unix.Seek(fd, data, unix.SEEK_HOLE)
		if err != nil {
			return f.warmErr("seek hole", data, err)
		}
		end = min(end, to)
		if err := f.writeZeros(data, end, true); err != nil {
			return err
		}
		pos = end
	}
	return nil
}

// writeZeros writes zeros over [from, to) with pwrite, warmChunk at a time, with writeBack
// each chunk written back before the next is written. The caller syncs.
func (f *mappedFile) writeZeros(from, to int64, writeBack bool) error {
	zeros := make([]byte, min(warmChunk, to-from))
	flags := unix.SYNC_FILE_RANGE_WAIT_BEFORE | unix.SYNC_FILE_RANGE_WRITE | unix.SYNC_FILE_RANGE_WAIT_AFTER
	for at := from; at < to; {
		n := min(int64(len(zeros)), to-at)
		if _, err := f.file.WriteAt(zeros[:n], at); err != nil {
			return f.warmErr("write zeros", at, err)
		}
		if !writeBack {
			at += n
			continue
		}
		if err := unix.SyncFileRange(int(f.file.Fd()), at, n, flags); err != nil {
			return f.warmErr("write back zeros", at, err)
		}
		at += n
	}
	return nil
}

// prefault allocates the blocks of [from, to) and maps its pages writable in one call
// (MADV_POPULATE_WRITE), so writes through the mapping there take no page fault until the
// kernel writes a page back; from must be page aligned. Where the call fails (before Linux
// 5.14: EINVAL; a block it could not allocate: EFAULT), the holes of the range are written
// with zeros (zeroHoles, not waiting for the disk), which allocates the blocks but leaves
// the faults, and reports ENOSPC or an I/O error as such, before anything is written through
// the mapping. Nobody may write into the holes of the range meanwhile.
func (f *mappedFile) prefault(from, to int64) error {
	if err := unix.Madvise(f.data[from:to], unix.MADV_POPULATE_WRITE); err == nil {
		return nil
	}
	_, err := f.zeroHoles(from, to, false)
	return err
}

func (f *mappedFile) warmErr(op string, pos int64, err error) error {
	return fmt.Errorf("store: warm %s: %s at %d: %w", f.path, op, pos, err)
}

// warmTarget is where a file written up to wrote should be warm: ahead bytes further,
// rounded up to a whole chunk (the file's end with ahead 0: warm in full).
func warmTarget(wrote, ahead, size int64) int64 {
	if ahead <= 0 {
		return size
	}
	return chunkEnd(wrote+ahead, size)
}

// chunkEnd is pos rounded up to a whole warmChunk, at most size.
func chunkEnd(pos, size int64) int64 { return min((pos+warmChunk-1)/warmChunk*warmChunk, size) }

// warmCurrentFile makes sure the CommitLog file the next put goes to is warm up to its
// target (warmTarget): an empty master store gets its first file now (a slave waits: its
// first file starts wherever its master's data does); otherwise the last file is warmed
// from where it was written to, a no-op when that was done before. A failure to warm a
// tail is only logged: the file works, with slower SYNC_FLUSH flushes.
func (s *Store) warmCurrentFile() error {
	c := s.commitLog
	q := c.q
	start := time.Now()
	last := q.last()
	if last == nil {
		if s.cfg.BrokerRole == RoleSlave {
			return nil
		}
		if _, err := q.lastOrCreate(0); err != nil {
			return err
		}
		s.log.Info("created and warmed the first commitlog file", "elapsed", time.Since(start))
		return nil
	}
	wrote := last.wrote.Load()
	if wrote >= last.size {
		return nil
	}
	n, err := last.warmTo(warmTarget(wrote, c.warmAhead, last.size))
	c.warmBytes.Add(n)
	if err != nil {
		s.log.Warn("could not warm the tail of the last commitlog file", "err", err)
	} else if n > 0 {
		s.log.Info("warmed the tail of the last commitlog file", "file", last.path, "bytes", n, "elapsed", time.Since(start))
	}
	return nil
}

// runWarm is the warm service (SYNC_FLUSH): woken by the writers when the write position
// comes within half of warmAhead of the last file's warm frontier, it moves the frontier to
// warmAhead past the write position. The head of each new file is warmed by the allocate
// service, and a staged write that would still land past the frontier warms inline first
// (writeStage), so the frontier is a guarantee, the service only keeps that path cold.
func (s *Store) runWarm(ctx context.Context) {
	c := s.commitLog
	s.serveLastFile(ctx, func(f *mappedFile) {
		if wrote := f.wrote.Load(); wrote < f.size {
			n, err := f.warmTo(warmTarget(wrote, c.warmAhead, f.size))
			c.warmBytes.Add(n)
			if err != nil {
				s.log.Warn("could not warm ahead in the commitlog", "file", f.path, "err", err)
			}
		}
	})
}

// serveLastFile is the loop of the warm and populate services: each time the writers wake
// warmWake, fn runs on the CommitLog's last file, held, until ctx ends. beforeWarm (tests) runs
// before the file is taken.
func (s *Store) serveLastFile(ctx context.Context, fn func(f *mappedFile)) {
	c := s.commitLog
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.warmWake:
		}
		if c.beforeWarm != nil {
			c.beforeWarm()
		}
		f := c.q.last()
		if f == nil || !f.hold() {
			continue
		}
		fn(f)
		f.release()
	}
}

// wakeWarmLocked wakes the warm service when a write that ends at end in f has come within
// half of warmAhead of f's warm frontier. Put lock held; cheap (one atomic load).
func (c *commitLog) wakeWarmLocked(f *mappedFile, end int64) {
	c.wakeAheadLocked(f, end, c.warmAhead, f.warmed.Load())
}

// wakeAheadLocked wakes the warm or populate service (warmWake: a store runs one of them) when
// a write that ends at end in f has come within half of ahead of the service's frontier in f.
func (c *commitLog) wakeAheadLocked(f *mappedFile, end, ahead, frontier int64) {
	if ahead > 0 && end < f.size && end+ahead/2 > frontier {
		select {
		case c.warmWake <- struct{}{}:
		default:
		}
	}
}

// ensureWarm is called by the flusher before it writes staged records [pos, pos+n) to f: when
// they would end past the warm frontier (the warm service fell behind), it warms up to their
// end first, so a SYNC_FLUSH record never lands in a hole. A failure is logged and the write
// goes ahead: the file works, with a slower flush.
func (c *commitLog) ensureWarm(f *mappedFile, pos, n int64) {
	if c.warmAhead <= 0 || pos+n <= f.warmed.Load() {
		return
	}
	c.warmStalls.Add(1)
	w, err := f.warmTo(chunkEnd(pos+n, f.size))
	c.warmBytes.Add(w)
	if err != nil {
		c.log.Warn("could not warm before a write", "file", f.path, "at", pos, "err", err)
	}
}
