package store

import (
	"os"

	"golang.org/x/sys/unix"
)

// FileOps are the system calls through which the store writes its CommitLog and ConsumeQueue
// records with pwrite and makes them durable: the seam where a test injects disk faults
// (ENOSPC in the middle of a write, EIO from a sync, a slow sync). Options.FileOps nil means
// SysFileOps, the real calls. Writes through the mapping (ASYNC_FLUSH records) and warming
// zeros do not go through it.
//
// Both methods may be called concurrently for different files; they must behave as the
// system calls do: WriteAt returns how much it wrote and an error when that is less than
// len(b); after Sync returns an error, what was written before it is not known to be on
// disk, and a later Sync that succeeds does not change that (the kernel may have dropped
// the pages: PostgreSQL's "fsyncgate"), so the store never calls it again for those bytes.
type FileOps interface {
	// WriteAt writes b at off of f (pwrite).
	WriteAt(f *os.File, b []byte, off int64) (int, error)
	// Sync makes the data written to f durable (fdatasync).
	Sync(f *os.File) error
}

// SysFileOps is FileOps through the system calls.
type SysFileOps struct{}

var _ FileOps = SysFileOps{}

// WriteAt is pwrite(2).
func (SysFileOps) WriteAt(f *os.File, b []byte, off int64) (int, error) { return f.WriteAt(b, off) }

// Sync is fdatasync(2).
func (SysFileOps) Sync(f *os.File) error { return unix.Fdatasync(int(f.Fd())) }
