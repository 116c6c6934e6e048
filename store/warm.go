package store

import (
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// warmChunk is how many zero bytes warm writes before waiting for them to reach the disk,
// so a file being warmed never has more than this in flight ahead of a SYNC_FLUSH flush of
// the file being written.
const warmChunk = 1 << 20

// warmFrom writes zeros over every hole of the file from pos to its end and makes them
// durable (RocketMQ's warmMappedFile, through pwrite rather than the mapping, so no page is
// left dirty or write-faulted). Afterwards every block up to the end is allocated and
// written: a later write there only overwrites data, and a SYNC_FLUSH fdatasync has no
// block allocation or extent conversion to commit to the ext4 journal. Parts already
// written (data, as SEEK_DATA reports it) are skipped, so warming a warm file costs two
// lseeks. The bytes in the holes are zero already, so readers see no change. The caller is
// the only writer of the range.
func (f *mappedFile) warmFrom(pos int64) (int64, error) {
	fd := int(f.file.Fd())
	wrote := int64(0)
	for pos < f.size {
		hole, err := unix.Seek(fd, pos, unix.SEEK_HOLE)
		if err != nil {
			return wrote, f.warmErr("seek hole", pos, err)
		}
		if hole >= f.size {
			break
		}
		end, err := unix.Seek(fd, hole, unix.SEEK_DATA)
		if errors.Is(err, unix.ENXIO) {
			end = f.size
		} else if err != nil {
			return wrote, f.warmErr("seek data", hole, err)
		}
		end = min(end, f.size)
		if err := f.writeZeros(hole, end); err != nil {
			return wrote, err
		}
		wrote += end - hole
		pos = end
	}
	if wrote == 0 {
		return 0, nil
	}
	// The block allocations are metadata: one fdatasync commits them.
	if err := unix.Fdatasync(fd); err != nil {
		return wrote, f.warmErr("sync zeros", pos, err)
	}
	return wrote, nil
}

// writeZeros writes zeros over [from, to) with pwrite, warmChunk at a time, each chunk
// written back before the next is written. The caller syncs.
func (f *mappedFile) writeZeros(from, to int64) error {
	zeros := make([]byte, min(warmChunk, to-from))
	flags := unix.SYNC_FILE_RANGE_WAIT_BEFORE | unix.SYNC_FILE_RANGE_WRITE | unix.SYNC_FILE_RANGE_WAIT_AFTER
	for at := from; at < to; {
		n := min(int64(len(zeros)), to-at)
		if _, err := f.file.WriteAt(zeros[:n], at); err != nil {
			return f.warmErr("write zeros", at, err)
		}
		if err := unix.SyncFileRange(int(f.file.Fd()), at, n, flags); err != nil {
			return f.warmErr("write back zeros", at, err)
		}
		at += n
	}
	return nil
}

func (f *mappedFile) warmErr(op string, pos int64, err error) error {
	return fmt.Errorf("store: warm %s: %s at %d: %w", f.path, op, pos, err)
}

// warmCurrentFile makes sure the CommitLog file the next put goes to is warm: an empty
// master store gets its first file now, warmed in full (a slave waits: its first file starts
// wherever its master's data does); otherwise the unwritten tail of the last file is warmed,
// a no-op when it was warmed before. A failure to warm a tail is only logged: the file
// works, with slower SYNC_FLUSH flushes.
func (s *Store) warmCurrentFile() error {
	q := s.commitLog.q
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
	n, err := last.warmFrom(last.wrote.Load())
	if err != nil {
		s.log.Warn("could not warm the tail of the last commitlog file", "err", err)
	} else if n > 0 {
		s.log.Info("warmed the tail of the last commitlog file", "file", last.path, "bytes", n, "elapsed", time.Since(start))
	}
	return nil
}
