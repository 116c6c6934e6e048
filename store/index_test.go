package store

import (
	"bytes"
	"fmt"
	"os"
	"sort"
	"testing"
	"time"

	"github.com/rocketraft/rocketraft/message"
	"golang.org/x/sys/unix"
)

func queryBodies(t *testing.T, s *Store, topic, key string, maxNum int, begin, end int64) []string {
	t.Helper()
	r, err := s.QueryMessage(topic, key, maxNum, begin, end)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	var out []string
	for _, rec := range r.Records {
		m, err := message.DecodeMessage(rec, true)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(m.Body))
	}
	sort.Strings(out)
	return out
}

func TestQueryMessageByKey(t *testing.T) {
	cfg := smallConfig(t)
	cfg.MaxHashSlotNum = 4 // many collisions: the store must filter them
	cfg.MaxIndexNum = 16   // several index files
	clock := newFakeClock(time.Date(2024, 5, 1, 10, 0, 0, 0, time.Local))
	opts := testOptions(t)
	opts.Clock = clock
	s := openStore(t, cfg, opts)
	start := clock.Now().UnixMilli()
	for i := 0; i < 60; i++ {
		keys := fmt.Sprintf("key-%d shared", i)
		mustPut(t, s, testMessage("T", int32(i%2), fmt.Sprintf("body-%d", i),
			map[string]string{message.PropertyKeys: keys, message.PropertyUniqKey: fmt.Sprintf("U%04d", i)}))
		clock.Advance(2 * time.Second)
	}
	mustPut(t, s, testMessage("Other", 0, "other-body", map[string]string{message.PropertyKeys: "key-7"}))
	waitDispatched(t, s)
	end := clock.Now().UnixMilli()
	if n := len(s.index.files); n < 3 {
		t.Fatalf("%d index files, want several", n)
	}
	if got := queryBodies(t, s, "T", "key-7", 32, start, end); len(got) != 1 || got[0] != "body-7" {
		t.Errorf("key-7: %v", got)
	}
	if got := queryBodies(t, s, "Other", "key-7", 32, start, end); len(got) != 1 || got[0] != "other-body" {
		t.Errorf("Other key-7: %v", got)
	}
	if got := queryBodies(t, s, "T", "U0042", 32, start, end); len(got) != 1 || got[0] != "body-42" {
		t.Errorf("uniq key: %v", got)
	}
	if got := queryBodies(t, s, "T", "shared", 5, start, end); len(got) != 5 {
		t.Errorf("maxNum 5: %d results", len(got))
	}
	if got := queryBodies(t, s, "T", "shared", 1000, start, end); len(got) != cfg.DefaultQueryMaxNum {
		t.Errorf("maxNum capped: %d results, want %d", len(got), cfg.DefaultQueryMaxNum)
	}
	// Messages 10..14 were stored in [start+20s, start+28s].
	got := queryBodies(t, s, "T", "shared", 32, start+20000, start+28000)
	want := []string{"body-10", "body-11", "body-12", "body-13", "body-14"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("time range: %v, want %v", got, want)
	}
	if got := queryBodies(t, s, "T", "missing", 32, start, end); len(got) != 0 {
		t.Errorf("missing key: %v", got)
	}
	r, _ := s.QueryMessage("T", "key-59", 1, start, end)
	if r.IndexLastUpdatePhyoffset <= 0 || r.IndexLastUpdateTimestamp < start {
		t.Errorf("index last update %d / %d", r.IndexLastUpdatePhyoffset, r.IndexLastUpdateTimestamp)
	}
	r.Release()

	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2 := openStore(t, cfg, opts)
	if got := queryBodies(t, s2, "T", "key-33", 32, start, end); len(got) != 1 || got[0] != "body-33" {
		t.Errorf("after reopen: %v", got)
	}
	// Reopening does not index anything twice.
	if got := queryBodies(t, s2, "T", "U0001", 32, start, end); len(got) != 1 {
		t.Errorf("after reopen, uniq key found %d times", len(got))
	}
}

func TestOffsetInQueueByTime(t *testing.T) {
	clock := newFakeClock(time.Date(2024, 5, 1, 10, 0, 0, 0, time.Local))
	opts := testOptions(t)
	opts.Clock = clock
	s := openStore(t, smallConfig(t), opts)
	base := clock.Now().UnixMilli()
	// Store times: base, base+10, ..., two messages per time step.
	for i := 0; i < 40; i++ {
		mustPut(t, s, testMessage("T", 0, bodyOf(i, 300), nil))
		if i%2 == 1 {
			clock.Advance(10 * time.Millisecond)
		}
	}
	waitDispatched(t, s)
	for _, tc := range []struct {
		ts   int64
		want int64
	}{
		{base - 1000, 0},
		{base, 0},
		{base + 1, 2},
		{base + 10, 2},
		{base + 95, 20},
		{base + 190, 38},
		{base + 191, 40},
		{base + 100000, 40},
	} {
		if got := s.OffsetInQueueByTime("T", 0, tc.ts); got != tc.want {
			t.Errorf("OffsetInQueueByTime(base%+d) = %d, want %d", tc.ts-base, got, tc.want)
		}
	}
	if got := s.OffsetInQueueByTime("Nope", 0, base); got != 0 {
		t.Errorf("unknown queue: %d", got)
	}
}

// Java: "polygenelubricants".hashCode() == Integer.MIN_VALUE, whose absolute value is still negative;
// the IndexFile slot hash folds it to 0 as RocketMQ's indexKeyHashMethod does.
func TestIndexKeyHashOfMinValue(t *testing.T) {
	if got := indexKeyHash("polygenelubricants"); got != 0 {
		t.Errorf("indexKeyHash(MIN_VALUE) = %d, want 0", got)
	}
}

// TestIndexFileAllocatedAhead: the hash slots and the entries ahead of the last one are
// written (zeros) before any key goes through the mapping, in a new file and in a file
// reopened after a restart, so no write through the mapping lands in a hole.
func TestIndexFileAllocatedAhead(t *testing.T) {
	cfg := smallConfig(t)
	cfg.MaxHashSlotNum = 1 << 20 // 4 MiB of slots
	cfg.MaxIndexNum = 1 << 20    // 20 MiB of entries
	s := openStore(t, cfg, testOptions(t))
	put := func(from, n int) {
		for i := from; i < from+n; i++ {
			mustPut(t, s, testMessage("T", 0, "b", map[string]string{message.PropertyUniqKey: fmt.Sprintf("U%06d", i)}))
		}
		waitDispatched(t, s)
	}
	put(0, 100)
	f := s.index.files[len(s.index.files)-1]
	path := f.mf.path
	slotsEnd := f.entryPos(0)
	if h := firstHole(t, path, 0); h < slotsEnd+warmChunk {
		t.Fatalf("new index file: first hole at %d, want none before the slots' end %d and a chunk of entries", h, slotsEnd)
	}
	// Enough entries to cross into the next chunk: the frontier moves with them.
	perChunk := warmChunk / indexEntrySize
	put(100, perChunk+10)
	last := f.entryPos(f.indexCount())
	if h := firstHole(t, path, 0); h <= last {
		t.Fatalf("after %d keys: first hole at %d, the next entry goes to %d", f.indexCount()-1, h, last)
	}
	if fi, err := os.Stat(path); err != nil || fi.Size() != f.mf.size {
		t.Fatalf("size %v, %v; want %d", fi, err, f.mf.size)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Punch the slots back into a hole, as a file written by an older version could be, and
	// reopen: the next key fills it before writing through the mapping, and every key stays
	// found.
	func() {
		fd, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer fd.Close()
		// The upper half of the slots, rounded to pages; each slot there may hold a chain
		// head, so punch only pages that read as zeros.
		buf := make([]byte, 4096)
		for off := (slotsEnd / 2) &^ 4095; off+4096 <= slotsEnd; off += 4096 {
			if _, err := fd.ReadAt(buf, off); err != nil {
				t.Fatal(err)
			}
			if bytes.Count(buf, []byte{0}) == len(buf) {
				if err := unix.Fallocate(int(fd.Fd()), unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, off, 4096); err != nil {
					t.Skipf("punch hole: %v", err)
				}
			}
		}
	}()
	s = openStore(t, cfg, testOptions(t))
	if h := firstHole(t, path, 0); h >= slotsEnd {
		t.Fatalf("the punched slots read as no hole (%d): the test cannot tell", h)
	}
	put(200+perChunk, 1)
	f = s.index.files[len(s.index.files)-1]
	if h := firstHole(t, path, 0); h <= f.entryPos(f.indexCount()) {
		t.Fatalf("after reopen and one key: first hole at %d", h)
	}
	for _, k := range []string{"U000000", "U000099", fmt.Sprintf("U%06d", 200+perChunk)} {
		if got := queryBodies(t, s, "T", k, 4, 0, time.Now().Add(time.Hour).UnixMilli()); len(got) != 1 {
			t.Errorf("key %s found %d times", k, len(got))
		}
	}
}

// TestIndexDropsFileWithoutHeader: an index file of the right size whose header was never
// written (the process died between making the file and its first entry; raftlog's crash copies
// caught it so) is dropped at Open and the index rebuilt, rather than failing Open. Open read the
// header's count again after unmapping the file, a panic reported as a write fault.
func TestIndexDropsFileWithoutHeader(t *testing.T) {
	cfg := smallConfig(t)
	s := openStore(t, cfg, testOptions(t))
	mustPut(t, s, testMessage("T", 0, "b", map[string]string{message.PropertyKeys: "k1"}))
	waitDispatched(t, s)
	path := s.index.files[0].mf.path
	size := s.index.files[0].mf.size
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, size); err != nil { // the right size, all zeros: index count 0
		t.Fatal(err)
	}
	again := openStore(t, cfg, testOptions(t))
	waitDispatched(t, again)
	r, err := again.QueryMessage("T", "k1", 4, 0, 1<<62)
	if err != nil || len(r.Records) != 1 {
		t.Fatalf("QueryMessage after the rebuild: %d records, %v", len(r.Records), err)
	}
	r.Release()
}
