package store

import (
	"fmt"
	"sync"

	"golang.org/x/sys/unix"
)

// stagedWrites are CommitLog records appended under the put lock but not yet in the file
// (SYNC_FLUSH): the flusher writes them with one pwrite per file just before it flushes
// (commitStaged), so a put costs a copy into memory under the lock, not a system call, and
// the writers released by a flush are back in the queue sooner. Readers never see staged
// bytes: a file's committed position (the readable end) moves only once they are written.
type stagedWrites struct {
	buf  []byte
	segs []stagedSegment
}

// stagedSegment is a run of buf bound for one file.
type stagedSegment struct {
	f      *mappedFile
	pos    int64 // file position of buf[off]
	off, n int
	// end is the readable end of f once the segment is written: pos+n, or the file size
	// after a blank record (the rest of a file is zeros already).
	end int64
}

// reserve returns n bytes of buf to encode the records that go to f at pos. Put lock held;
// the slice is valid until the next reserve.
func (st *stagedWrites) reserve(f *mappedFile, pos int64, n int) []byte {
	off := len(st.buf)
	st.buf = append(st.buf, make([]byte, n)...)
	if k := len(st.segs) - 1; k >= 0 && st.segs[k].f == f && st.segs[k].end == pos {
		st.segs[k].n += n
		st.segs[k].end = pos + int64(n)
	} else {
		st.segs = append(st.segs, stagedSegment{f: f, pos: pos, off: off, n: n, end: pos + int64(n)})
	}
	return st.buf[off : off+n]
}

// closeFile marks the rest of f, from the end of what is staged, as readable once written
// (after a blank record).
func (st *stagedWrites) closeFile(f *mappedFile) {
	if k := len(st.segs) - 1; k >= 0 && st.segs[k].f == f {
		st.segs[k].end = f.size
	}
}

func (st *stagedWrites) reset() {
	st.buf = st.buf[:0]
	clear(st.segs)
	st.segs = st.segs[:0]
}

// stager owns the staged writes of a commitLog. The put lock guards the current set; mu
// serialises commits, so segments reach their files in order.
type stager struct {
	mu    sync.Mutex
	spare stagedWrites // guarded by mu
	// readAhead is the CommitLog offset up to which the pages ahead of the writes were asked
	// for (guarded by mu); see readAheadOf.
	readAhead int64
}

// readAheadWindow is how far ahead of the write position commitStaged asks the kernel to
// read a warm file's pages.
const readAheadWindow = 4 << 20

// readAheadOf asks the kernel to read the pages ahead of end in f, once per half window. A
// pwrite that covers part of a page not in the page cache must first read that page, and in
// a warm file (written zeros) that is a disk read in the flush path; the page is cached
// right after the file is warmed, but not after a reboot. Cheap when the pages are cached.
func (c *commitLog) readAheadOf(f *mappedFile, end int64) {
	if at := f.from + end; at+readAheadWindow/2 > c.stager.readAhead && end < f.size {
		n := min(int64(readAheadWindow), f.size-end)
		_ = unix.Fadvise(int(f.file.Fd()), end, n, unix.FADV_WILLNEED)
		c.stager.readAhead = at + n
	}
}

// commitStaged writes the staged records to their files and makes them readable. A failed
// write loses the records it carried (they were never acknowledged: the flush that would
// have confirmed them does not happen) and is returned as errWriteFault.
func (c *commitLog) commitStaged() error {
	c.stager.mu.Lock()
	defer c.stager.mu.Unlock()
	c.putMu.Lock()
	st := c.takeStageLocked()
	c.putMu.Unlock()
	return c.writeStage(st)
}

// takeStageLocked swaps the staged writes for the spare set. stager.mu and putMu held.
func (c *commitLog) takeStageLocked() stagedWrites {
	st := c.putMu.stage
	c.putMu.stage = c.stager.spare
	return st
}

// writeStage writes st to the files in order and keeps it as the spare. stager.mu held.
func (c *commitLog) writeStage(st stagedWrites) error {
	var err error
	for _, sg := range st.segs {
		c.ensureWarm(sg.f, sg.pos, int64(sg.n))
		if c.beforeWrite != nil {
			c.beforeWrite(sg.f, sg.pos, int64(sg.n))
		}
		if _, werr := c.q.ops.WriteAt(sg.f.file, st.buf[sg.off:sg.off+sg.n], sg.pos); werr != nil {
			err = fmt.Errorf("%w: write %s at %d: %v", errWriteFault, sg.f.path, sg.pos, werr)
			break
		}
		sg.f.committed.Store(sg.end)
		c.readAheadOf(sg.f, sg.end)
	}
	st.reset()
	c.stager.spare = st
	return err
}
