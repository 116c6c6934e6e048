package store

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/rocketraft/rocketraft/message"
	"golang.org/x/sys/unix"
)

// skipUnlessColdReads skips the test where the file system in dir refuses O_DIRECT or keeps a
// flushed file's pages cached after MADV_DONTNEED and POSIX_FADV_DONTNEED (tmpfs).
func skipUnlessColdReads(t *testing.T, dir string) {
	t.Helper()
	path := filepath.Join(dir, "cold-probe")
	if err := os.WriteFile(path, make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(path)
	buf, err := unix.Mmap(-1, 0, 1<<20, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(buf)
	if _, err := readDirect(path, buf, 0); err != nil {
		t.Skipf("no O_DIRECT reads in %s: %v", dir, err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	data, err := unix.Mmap(int(f.Fd()), 0, 1<<20, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(data)
	touchPages(data)
	evictPages(t, f, data, 0)
	if n, all := cachedPages(t, data); n > 0 {
		t.Skipf("the file system of %s keeps dropped pages cached (%d of %d still resident)", dir, n, all)
	}
}

// evictPages takes the pages of data, mapped from f at off, out of the page cache.
func evictPages(t *testing.T, f *os.File, data []byte, off int64) {
	t.Helper()
	if err := unix.Madvise(data, unix.MADV_DONTNEED); err != nil {
		t.Fatalf("madvise: %v", err)
	}
	if err := unix.Fadvise(int(f.Fd()), off, int64(len(data)), unix.FADV_DONTNEED); err != nil {
		t.Fatalf("fadvise: %v", err)
	}
}

// cachedPages is residentPages for a test: a failed mincore fails it.
func cachedPages(t *testing.T, b []byte) (resident, all int) {
	t.Helper()
	resident, all, err := residentPages(b)
	if err != nil {
		t.Fatal(err)
	}
	return resident, all
}

// evictCommitLog takes the whole CommitLog out of the page cache, once it is flushed (again while
// the kernel keeps some page, busy a moment).
func evictCommitLog(t *testing.T, s *Store) {
	t.Helper()
	end := s.MaxPhyOffset()
	waitFor(t, "the CommitLog flushed", func() bool { return s.commitLog.q.flushedWhere.Load() >= end })
	waitFor(t, "the CommitLog out of the page cache", func() bool {
		for _, f := range s.commitLog.q.snapshot() {
			evictPages(t, f.file, f.data, 0)
		}
		r, _ := coldResident(t, s, end)
		return r == 0
	})
}

// coldResident counts the CommitLog pages cached below end.
func coldResident(t *testing.T, s *Store, end int64) (resident, all int) {
	t.Helper()
	for _, f := range s.commitLog.q.snapshot() {
		if f.from >= end {
			break
		}
		r, a := cachedPages(t, f.data[:min(end-f.from, f.size)])
		resident, all = resident+r, all+a
	}
	return resident, all
}

// pullAll reads queue q of topic from offset from to its end in pulls of n as group g, checks
// each body against body(offset), and returns how many it read.
func pullAll(t *testing.T, s *Store, topic string, q int32, from int64, n int, body func(int) string) int {
	t.Helper()
	read := 0
	for off := from; ; {
		r, err := s.GetMessage("g", topic, q, off, n, 8<<20, nil)
		if err != nil {
			t.Errorf("GetMessage(%s, %d, %d): %v", topic, q, off, err)
			return read
		}
		if r.Status != Found {
			r.Release()
			return read
		}
		for i, rec := range r.Records {
			m, err := message.DecodeMessage(rec, true)
			if err != nil {
				t.Errorf("queue %d offset %d: %v", q, off+int64(i), err)
				continue
			}
			if want := body(int(off) + i); string(m.Body) != want {
				t.Errorf("queue %d offset %d: body %.32q, want %.32q", q, off+int64(i), m.Body, want)
			}
			read++
		}
		off = r.NextBeginOffset
		r.Release()
	}
}

// checkChunksReleased fails when a chunk is still held after every answer was released (and the
// prefetcher, which holds a chunk while it reads it, is done).
func checkChunksReleased(t *testing.T, s *Store) {
	t.Helper()
	c := s.cold
	held := func() (start int64, refs int) {
		c.mu.Lock()
		defer c.mu.Unlock()
		for start, ch := range c.chunks {
			if ch.refs != 0 {
				return start, ch.refs
			}
		}
		return 0, 0
	}
	waitFor(t, "every chunk released", func() bool {
		_, refs := held()
		return refs == 0 && !c.prefetching.Load()
	})
	if start, refs := held(); refs != 0 {
		t.Errorf("chunk at %d still held %d times", start, refs)
	}
}

// coldStore is a store of 4 MiB CommitLog files (two chunks each) holding perQueue messages of
// size bytes in each of queues 0..queues-1 of topic Cold, flushed, dispatched and evicted.
func coldStore(t *testing.T, queues int32, perQueue, size int, tune func(*Config)) (*Store, Config) {
	t.Helper()
	cfg := smallConfig(t)
	cfg.MappedFileSizeCommitLog = 4 << 20
	cfg.MaxMessageSize = 64 << 10
	cfg.MappedFileSizeConsumeQueue = 1024 * cqUnitSize
	if tune != nil {
		tune(&cfg)
	}
	skipUnlessColdReads(t, cfg.StorePathRootDir)
	s := openStore(t, cfg, testOptions(t))
	for i := range perQueue {
		for q := range queues {
			mustPut(t, s, testMessage("Cold", q, bodyOf(i, size), nil))
		}
	}
	waitDispatched(t, s)
	evictCommitLog(t, s)
	return s, cfg
}

// TestColdReads: queues whose CommitLog is not cached are read with O_DIRECT, chunk by chunk, by
// concurrent readers: every body as written, the page cache left as it was (nothing cached below
// the last chunk, which is not flushed whole), every chunk released with its answer.
func TestColdReads(t *testing.T) {
	const queues, perQueue, size = 4, 500, 8 << 10
	s, _ := coldStore(t, queues, perQueue, size, nil)
	body := func(i int) string { return bodyOf(i, size) }
	var wg sync.WaitGroup
	for q := range int32(queues) {
		for range 2 {
			wg.Go(func() {
				if n := pullAll(t, s, "Cold", q, 0, 32, body); n != perQueue {
					t.Errorf("queue %d: read %d of %d", q, n, perQueue)
				}
			})
		}
	}
	wg.Wait()
	st := s.Stats()
	// 16.5 MB of CommitLog in four files: the last one's end is not flushed whole, so it is read
	// through the mapping, whose faults read the pages around them (read-around, as far as
	// read_ahead_kb) in that file; the three files before it, six chunks, are read directly.
	if st.ColdReadChunks < 6 || st.ColdReadFailures != 0 {
		t.Fatalf("cold reads: %d chunks (%d bytes), %d without a buffer, %d failures; want at least 6 chunks and no failure",
			st.ColdReadChunks, st.ColdReadBytes, st.ColdReadNoBuffer, st.ColdReadFailures)
	}
	if r, all := coldResident(t, s, s.commitLog.q.last().from); r != 0 {
		t.Errorf("%d of the %d CommitLog pages before the last file are cached after the cold reads", r, all)
	}
	checkChunksReleased(t, s)

	// Cached now (read through the mapping): no chunk read.
	for _, f := range s.commitLog.q.snapshot() {
		touchPages(f.data[:f.readable()])
	}
	before := s.Stats().ColdReadChunks
	s.cold.forget() // the chunks read above would serve again
	if n := pullAll(t, s, "Cold", 0, 0, 32, body); n != perQueue {
		t.Fatalf("cached queue 0: read %d of %d", n, perQueue)
	}
	if after := s.Stats().ColdReadChunks; after != before {
		t.Errorf("%d chunks read directly while the CommitLog was cached", after-before)
	}
}

// TestColdReadsBuffersHeld: with one buffer held by an answer not yet released, the next chunk is
// read through the mapping, unchanged; once released, the buffer serves the next chunk.
func TestColdReadsBuffersHeld(t *testing.T) {
	const size = 8 << 10
	s, _ := coldStore(t, 1, 1000, size, func(c *Config) { c.ColdReadBufferBytes = coldChunkSize })
	held, err := s.GetMessage("g", "Cold", 0, 0, 32, 1<<20, nil)
	if err != nil || held.Status != Found {
		t.Fatalf("first pull: %v %v", held, err)
	}
	// Queue offset 300 is in the second chunk (8.3 KB records).
	body := func(i int) string { return bodyOf(i, size) }
	r, err := s.GetMessage("g", "Cold", 0, 300, 8, 1<<20, nil)
	if err != nil || r.Status != Found {
		t.Fatalf("pull at 300: %v %v", r, err)
	}
	for i, rec := range r.Records {
		if m, err := message.DecodeMessage(rec, true); err != nil || string(m.Body) != body(300+i) {
			t.Fatalf("offset %d through the mapping: %v", 300+i, err)
		}
	}
	r.Release()
	if st := s.Stats(); st.ColdReadNoBuffer == 0 {
		t.Fatalf("the second chunk found a buffer while the only one was held: %+v", st)
	}
	for i, rec := range held.Records { // the held answer's buffer was left alone
		if m, err := message.DecodeMessage(rec, true); err != nil || string(m.Body) != body(i) {
			t.Fatalf("held answer, offset %d: %v", i, err)
		}
	}
	held.Release()
	checkChunksReleased(t, s)
	evictCommitLog(t, s)
	before := s.Stats().ColdReadChunks
	if n := pullAll(t, s, "Cold", 0, 500, 32, body); n != 500 {
		t.Fatalf("read %d of 500", n)
	}
	if s.Stats().ColdReadChunks == before {
		t.Fatal("no chunk read directly once the buffer was released")
	}
	checkChunksReleased(t, s)
}

// TestColdReadsForgetOnTruncate: a CommitLog cut and written again at the same offsets is read as
// it is now, never from a chunk read before the cut.
func TestColdReadsForgetOnTruncate(t *testing.T) {
	const size = 8 << 10
	s, _ := coldStore(t, 1, 400, size, nil)
	if n := pullAll(t, s, "Cold", 0, 0, 32, func(i int) string { return bodyOf(i, size) }); n != 400 {
		t.Fatalf("read %d of 400", n)
	}
	if s.Stats().ColdReadChunks == 0 {
		t.Fatal("no chunk read directly")
	}
	// Cut at message 10 (inside the first chunk) and write other bodies in its place.
	r, err := s.GetMessage("g", "Cold", 0, 10, 1, 1<<20, nil)
	if err != nil || r.Status != Found {
		t.Fatalf("pull at 10: %v %v", r, err)
	}
	cut, err := message.DecodeMessage(r.Records[0], true)
	r.Release()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.TruncateCommitLog(cut.PhysicalOffset); err != nil {
		t.Fatal(err)
	}
	again := func(i int) string {
		if i < 10 {
			return bodyOf(i, size)
		}
		return strings.Repeat(fmt.Sprintf("again-%06d-", i), size/13+1)[:size]
	}
	for i := 10; i < 400; i++ {
		mustPut(t, s, testMessage("Cold", 0, again(i), nil))
	}
	waitDispatched(t, s)
	evictCommitLog(t, s)
	if n := pullAll(t, s, "Cold", 0, 0, 32, again); n != 400 {
		t.Fatalf("read %d of 400 after the cut", n)
	}
	checkChunksReleased(t, s)
}

// TestColdReadsForgetOnReset: the same for a framed store reset (a Raft snapshot installed) at an
// offset it had written before.
func TestColdReadsForgetOnReset(t *testing.T) {
	cfg := smallConfig(t)
	skipUnlessColdReads(t, cfg.StorePathRootDir)
	s := openFramed(t, cfg)
	const n = 40
	body := func(tag string) func(int) string {
		return func(i int) string { return fmt.Sprintf("%s-%04d-%s", tag, i, strings.Repeat("x", 900)) }
	}
	write := func(tag string) {
		t.Helper()
		for i := range n {
			dispatchFramed(t, s, appendFramed(t, s, testMessage("Cold", 0, body(tag)(i), nil)))
		}
		if err := s.SyncCommitLog(); err != nil {
			t.Fatal(err)
		}
		evictCommitLog(t, s)
	}
	write("first")
	if got := pullAll(t, s, "Cold", 0, 0, 32, body("first")); got != n {
		t.Fatalf("read %d of %d", got, n)
	}
	if s.Stats().ColdReadChunks == 0 {
		t.Fatal("no chunk read directly")
	}
	if err := s.ResetCommitLog(0); err != nil {
		t.Fatal(err)
	}
	write("second")
	if got := pullAll(t, s, "Cold", 0, 0, 32, body("second")); got != n {
		t.Fatalf("read %d of %d after the reset", got, n)
	}
	checkChunksReleased(t, s)
}

func TestColdReadConfig(t *testing.T) {
	cfg := smallConfig(t)
	cfg.ColdReadBufferBytes = coldChunkSize - 1
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "coldReadBufferBytes") {
		t.Fatalf("Validate() = %v, want an error naming coldReadBufferBytes", err)
	}
	cfg.ColdReadEnable = false
	if err := cfg.Validate(); err != nil {
		t.Fatalf("Validate() with coldReadEnable=false: %v", err)
	}
}
