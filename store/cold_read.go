package store

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Cold reads (ColdReadEnable): a consumer reading CommitLog ranges that are not in the page
// cache reads them around it, with O_DIRECT, into a few chunk buffers the store reuses.
//
// Why: a read through the mapping of a page that is not cached faults, and the kernel takes a
// free page for it; measured on this project's machines (virtual, reporting free pages to their
// host, so a page taken from the free lists must be backed by the host again), reading a cold
// 4 GiB file through a mapping cost 1.6-2.7 ms of CPU per MiB at 391-570 MB/s, and reading it
// with O_DIRECT in 2 MiB chunks into one reused buffer 0.15-0.17 ms per MiB at 1,362-1,445 MB/s
// (one core, the same file, after drop_caches). A drained backlog also leaves the page cache as
// it found it, instead of pushing out the pages the tail's readers and the writer use.
//
// How: GetMessage looks at each record's chunk (coldChunkSize, cut at the file's end) once per
// run of records in it. A chunk is read directly when it lies wholly below both the flushed
// offset and the dispatched offset (so its bytes are on the disk and final: framed mode writes
// queue offsets into records at dispatch, and the kernel writes dirty pages of the range back
// before a direct read anyway) and fewer than half of its pages are cached (mincore; the
// answer is remembered, in a bounded set, for the chunks found cached). Loads are shared: the
// readers of one chunk wait for one read. A reader that starts on a chunk read directly wakes
// the prefetcher (one goroutine at a time), which reads the next coldPrefetch chunks the same
// way, so a drain's disk reads overlap its answers instead of taking turns with them. A record
// that crosses its chunk's end is read directly on its own (through the mapping, its fault
// would read the pages around it into the cache, and the next chunks would look cached). A
// chunk with no free buffer (every one held by answers not yet written), a file system that
// refuses O_DIRECT and a failed read fall back to the mapping, as before (probed: a bad block
// is ErrReadFault as before); a direct read that fails is counted and logged once.
//
// The answers hold their chunks (GetResult.Release) as they hold their mapped files; a chunk
// held by none is reused, least recently used first. The operations that move the CommitLog's
// tail back (TruncateCommitLog, ResetCommitLog) forget every chunk as they release the writers'
// locks (lockWriters), and a load that began before is not kept.

// coldChunkSize is the largest chunk read at once: a multiple of every page size the store
// runs on, so offsets and lengths suit O_DIRECT.
const coldChunkSize = 2 << 20

// coldResidentMemo bounds the chunks remembered as cached (read through the mapping).
const coldResidentMemo = 4096

// coldPrefetch is how many chunks past the one a reader starts the prefetcher reads.
const coldPrefetch = 2

// coldChunk is one chunk's buffer. start, data and err are set before ready is closed and
// never change after; refs and lastUse are guarded by coldCache.mu.
type coldChunk struct {
	start int64 // CommitLog offset of data[0]
	data  []byte
	err   error
	ready chan struct{}

	buf     []byte // the whole buffer (anonymous mapping), data is its prefix
	refs    int
	lastUse uint64
}

// coldCache holds the chunk buffers and what is known of the chunks.
type coldCache struct {
	s       *Store
	maxBufs int

	mu       sync.Mutex
	chunks   map[int64]*coldChunk // by start, loaded or loading
	resident map[int64]bool       // starts of chunks found cached
	free     [][]byte             // buffers not in a chunk
	bufs     int                  // buffers made
	clock    uint64
	broken   bool   // O_DIRECT refused: every read goes through the mapping
	closed   bool   // Store.Close: no more chunks
	gen      uint64 // moved by forget: a load begun before it is not kept

	prefetching atomic.Bool    // a prefetcher runs
	prefetchers sync.WaitGroup // close waits for it

	loads, loadBytes, fallbacks, failures atomic.Int64
	failLogged                            atomic.Bool
}

func newColdCache(s *Store, bufferBytes int64) *coldCache {
	return &coldCache{s: s, maxBufs: int(max(bufferBytes/coldChunkSize, 1)),
		chunks: map[int64]*coldChunk{}, resident: map[int64]bool{}}
}

// chunkOf returns the bounds of the chunk of file f holding phy.
func (c *coldCache) chunkOf(f *mappedFile, phy int64) (start, end int64) {
	size := min(coldChunkSize, f.size)
	start = f.from + (phy-f.from)/size*size
	return start, min(start+size, f.from+f.size)
}

// eligible reports whether the chunk [start, end) may be read directly: its bytes are flushed
// and dispatched.
func (c *coldCache) eligible(end int64) bool {
	return end <= c.s.commitLog.q.flushedWhere.Load() && end <= c.s.reput.from.Load()
}

// acquire returns the chunk [start, end) of file f, held, read directly if it is cold, or nil
// when it is to be read through the mapping (cached, no buffer free, or the read failed). f
// is held by the caller; ahead is set for the prefetcher (whose lack of a buffer is not
// counted).
func (c *coldCache) acquire(f *mappedFile, start, end int64, ahead bool) *coldChunk {
	c.mu.Lock()
	gen := c.gen
	if !c.eligible(end) || c.broken || c.closed || c.resident[start] {
		c.mu.Unlock()
		return nil
	}
	c.clock++
	if ch := c.chunks[start]; ch != nil {
		ch.refs++
		ch.lastUse = c.clock
		c.mu.Unlock()
		return c.await(ch)
	}
	c.mu.Unlock()

	// Outside the lock: is the chunk cached? (A race with another reader asking the same only
	// costs a second mincore.)
	if cachedHalf(f.data[start-f.from : end-f.from]) {
		c.mu.Lock()
		if len(c.resident) >= coldResidentMemo {
			clear(c.resident)
		}
		c.resident[start] = true
		c.mu.Unlock()
		return nil
	}

	c.mu.Lock()
	if c.gen != gen {
		c.mu.Unlock()
		return nil
	}
	if ch := c.chunks[start]; ch != nil { // loaded meanwhile
		ch.refs++
		ch.lastUse = c.clock
		c.mu.Unlock()
		return c.await(ch)
	}
	buf := c.takeBufferLocked()
	if buf == nil {
		c.mu.Unlock()
		if !ahead {
			c.fallbacks.Add(1)
		}
		return nil
	}
	ch := &coldChunk{start: start, ready: make(chan struct{}), buf: buf, refs: 1, lastUse: c.clock}
	c.chunks[start] = ch
	c.mu.Unlock()

	// O_DIRECT wants whole blocks: the length rounded up to a page (the file's end stops it).
	n, err := readDirect(f.path, buf[:min((end-start+osPageSize-1)&^(osPageSize-1), int64(len(buf)))], start-f.from)
	switch {
	case err == nil && int64(n) < end-start:
		err = fmt.Errorf("store: direct read of %s at %d: %d of %d bytes", f.path, start-f.from, n, end-start)
	case errors.Is(err, unix.EINVAL):
		c.mu.Lock()
		c.broken = true
		c.mu.Unlock()
		c.s.log.Warn("store: the file system refuses O_DIRECT; cold reads go through the mapping", "file", f.path, "err", err)
	}
	if err != nil {
		c.failures.Add(1)
		if c.failLogged.CompareAndSwap(false, true) {
			c.s.log.Warn("store: a direct read of a cold chunk failed; it is read through the mapping", "file", f.path, "err", err)
		}
		ch.err = err
		c.mu.Lock()
		delete(c.chunks, start)
		c.mu.Unlock()
		close(ch.ready)
		c.release(ch)
		return nil
	}
	ch.data = buf[:end-start]
	c.loads.Add(1)
	c.loadBytes.Add(end - start)
	close(ch.ready)
	return c.await(ch)
}

// await waits for ch, which the caller holds, to be read, and returns it; nil (released) when
// its read failed or it was forgotten meanwhile (the CommitLog was cut: its bytes may be old).
func (c *coldCache) await(ch *coldChunk) *coldChunk {
	<-ch.ready
	c.mu.Lock()
	valid := ch.err == nil && c.chunks[ch.start] == ch
	c.mu.Unlock()
	if !valid {
		c.release(ch)
		return nil
	}
	return ch
}

// prefetch reads the coldPrefetch chunks from offset from, those that are cold, on a goroutine
// of its own unless one runs already: a reader that moves on to the next chunk finds it read
// (the drain's disk reads overlap its sends instead of taking turns with them).
func (c *coldCache) prefetch(from int64) {
	if !c.prefetching.CompareAndSwap(false, true) {
		return
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		c.prefetching.Store(false)
		return
	}
	c.prefetchers.Add(1)
	c.mu.Unlock()
	go func() {
		defer c.prefetchers.Done()
		defer c.prefetching.Store(false)
		for range coldPrefetch {
			f := c.s.commitLog.q.holdAt(from)
			if f == nil {
				return
			}
			start, end := c.chunkOf(f, from)
			ch := c.acquire(f, start, end, true)
			f.release()
			if ch == nil {
				return
			}
			c.release(ch)
			from = end
		}
	}()
}

// takeBufferLocked returns a buffer for a new chunk: a free one, a new one while there are
// fewer than maxBufs, or the buffer of the least recently used chunk no answer holds; nil when
// every buffer is held. c.mu is held.
func (c *coldCache) takeBufferLocked() []byte {
	if n := len(c.free); n > 0 {
		b := c.free[n-1]
		c.free = c.free[:n-1]
		return b
	}
	if c.bufs < c.maxBufs {
		b, err := unix.Mmap(-1, 0, coldChunkSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
		if err != nil {
			return nil
		}
		c.bufs++
		return b
	}
	var victim *coldChunk
	for _, ch := range c.chunks {
		if ch.refs == 0 && (victim == nil || ch.lastUse < victim.lastUse) {
			victim = ch
		}
	}
	if victim == nil {
		return nil
	}
	delete(c.chunks, victim.start)
	return victim.buf
}

// release drops a reference on ch; an unreferenced chunk that failed, or that was forgotten,
// gives its buffer back.
func (c *coldCache) release(ch *coldChunk) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch.refs--
	if ch.refs == 0 && c.chunks[ch.start] != ch {
		c.free = append(c.free, ch.buf)
	}
}

// forget drops every chunk (the CommitLog was cut): held ones give their buffers back at their
// last release.
func (c *coldCache) forget() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	for start, ch := range c.chunks {
		delete(c.chunks, start)
		if ch.refs == 0 {
			c.free = append(c.free, ch.buf)
		}
	}
	clear(c.resident)
}

// close waits for the prefetcher and unmaps the buffers no answer holds (Store.Close, after
// the services stopped and before the files close; answers still held keep theirs, which the
// process then leaves mapped).
func (c *coldCache) close() {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.prefetchers.Wait()
	c.mu.Lock()
	defer c.mu.Unlock()
	for start, ch := range c.chunks {
		if ch.refs == 0 {
			delete(c.chunks, start)
			c.free = append(c.free, ch.buf)
		}
	}
	for _, b := range c.free {
		_ = unix.Munmap(b)
	}
	c.free = nil
}

// readDirect reads len(buf) bytes of the file at path from off with O_DIRECT.
func readDirect(path string, buf []byte, off int64) (int, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECT|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, fmt.Errorf("store: open %s for direct reads: %w", path, err)
	}
	defer unix.Close(fd)
	n := 0
	for n < len(buf) {
		k, err := unix.Pread(fd, buf[n:], off+int64(n))
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return n, fmt.Errorf("store: direct read of %s at %d: %w", path, off+int64(n), err)
		}
		if k == 0 {
			break
		}
		n += k
	}
	return n, nil
}

// cachedHalf reports whether at least half of the pages of b (mapped file memory) are in the
// page cache; true when mincore fails (then the mapping serves, as without cold reads).
func cachedHalf(b []byte) bool {
	resident, all, err := residentPages(b)
	return err != nil || 2*resident >= all
}

// residentPages counts the pages of b (page-aligned mapped memory) that are in the page cache
// (mincore), and all of them.
func residentPages(b []byte) (resident, all int, err error) {
	if len(b) == 0 {
		return 0, 0, nil
	}
	vec := make([]byte, (len(b)+osPageSize-1)/osPageSize)
	if _, _, e := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
		return 0, len(vec), fmt.Errorf("mincore: %w", e)
	}
	for _, v := range vec {
		resident += int(v & 1)
	}
	return resident, len(vec), nil
}

// coldRun is readQueue's view of the chunk of the records it reads: one lookup per run of
// records in the same chunk.
type coldRun struct {
	start, end int64
	ch         *coldChunk // nil: read through the mapping
}

// record returns the bytes of the record [phy, phy+size) of file f from its chunk, when the
// chunk is read directly, adding the chunk to held the first time; ok false means read it
// through the mapping.
func (c *coldCache) record(run *coldRun, held *heldFiles, f *mappedFile, phy int64, size int) ([]byte, bool) {
	if phy < run.start || phy >= run.end {
		start, end := c.chunkOf(f, phy)
		*run = coldRun{start: start, end: end, ch: c.acquire(f, start, end, false)}
		if run.ch != nil {
			held.addChunk(c, run.ch)
			c.prefetch(end)
		}
	}
	if run.ch == nil {
		return nil, false
	}
	if phy+int64(size) > run.start+int64(len(run.ch.data)) {
		// Crossing into the next chunk: read directly too. Through the mapping its fault would
		// read the pages around it into the cache (read-around: read_ahead_kb, 8 MiB on some
		// virtual disks), and the next chunks would then look cached.
		return c.readRecord(f, phy, size)
	}
	off := phy - run.start
	return run.ch.data[off : off+int64(size) : off+int64(size)], true
}

// readRecord reads the record [phy, phy+size) of file f with O_DIRECT into a buffer of its own;
// ok false when that fails (then the mapping serves it).
func (c *coldCache) readRecord(f *mappedFile, phy int64, size int) ([]byte, bool) {
	pos := phy - f.from
	from := pos &^ (osPageSize - 1)
	to := (pos + int64(size) + osPageSize - 1) &^ (osPageSize - 1)
	raw := make([]byte, to-from+osPageSize)
	pad := 0
	if r := int(uintptr(unsafe.Pointer(&raw[0])) & (osPageSize - 1)); r != 0 {
		pad = osPageSize - r
	}
	buf := raw[pad : pad+int(to-from)]
	n, err := readDirect(f.path, buf, from)
	if err != nil || int64(n) < pos+int64(size)-from {
		c.failures.Add(1)
		return nil, false
	}
	c.loadBytes.Add(int64(size))
	b := buf[pos-from : pos-from+int64(size)]
	return b[:size:size], true
}
