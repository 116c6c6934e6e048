package store

import (
	"testing"
)

// The populate service keeps the pages ahead of the writes through the mapping faulted in, the
// bytes there zeros, and the records read back; the CommitLog is flushed with msync of the
// written range.
func TestPopulateAheadOfTheWrites(t *testing.T) {
	cfg := smallConfig(t)
	cfg.FlushDiskType = AsyncFlush
	cfg.WriteWithoutMmap = false
	cfg.MappedFileSizeCommitLog = 64 << 20
	s := openStore(t, cfg, testOptions(t))
	c := s.commitLog
	if c.populateAhead != defaultPopulateAhead || c.q.flushMode != flushMsync {
		t.Fatalf("populateAhead %d, flush mode %d: want %d and msync", c.populateAhead, c.q.flushMode, defaultPopulateAhead)
	}
	const n = 100
	var puts []PutResult
	for i := range n {
		puts = append(puts, mustPut(t, s, testMessage("T", 0, bodyOf(i, 1000), nil)))
	}
	f := c.q.last()
	wrote := f.wrote.Load()
	want := chunkEnd(wrote+c.populateAhead, f.size)
	waitFor(t, "the populate frontier 16 MiB past the writes", func() bool { return f.populated.Load() >= want })
	from := (wrote + osPageSize - 1) &^ (osPageSize - 1)
	if got, all := cachedPages(t, f.data[from:want]); got != all {
		t.Fatalf("%d of the %d pages ahead of the writes are in the page cache, want all", got, all)
	}
	if !allZero(f.data[wrote:want]) {
		t.Fatal("the populated pages are not zeros")
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	waitDispatched(t, s)
	got := readQueue(t, s, "T", 0)
	if len(got) != n {
		t.Fatalf("read %d messages, want %d", len(got), n)
	}
	for i, m := range got {
		if string(m.Body) != bodyOf(i, 1000) {
			t.Fatalf("message %d: body differs", i)
		}
	}

	// A cut zeroes the tail (its pages leave the page cache): the frontier comes back to the cut,
	// and the next writes have the pages after it faulted in again.
	cut := puts[n/2].PhysicalOffset
	if err := s.TruncateCommitLog(cut); err != nil {
		t.Fatal(err)
	}
	if p := f.populated.Load(); p > cut-f.from {
		t.Fatalf("populate frontier at %d after a cut at %d", p, cut-f.from)
	}
	mustPut(t, s, testMessage("T", 0, "after the cut", nil))
	wrote = f.wrote.Load()
	want = chunkEnd(wrote+c.populateAhead, f.size)
	waitFor(t, "the populate frontier past the writes after the cut", func() bool { return f.populated.Load() >= want })
	from = (wrote + osPageSize - 1) &^ (osPageSize - 1)
	if got, all := cachedPages(t, f.data[from:want]); got != all {
		t.Fatalf("after the cut, %d of the %d pages ahead of the writes are in the page cache, want all", got, all)
	}
}

// Only copies into the mapping of files not warmed in full are populated.
func TestPopulateAheadOnlyForCopiesIntoTheMapping(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  func(*Config)
		want bool
	}{
		{"default", func(*Config) {}, true},
		{"pwrite", func(c *Config) { c.WriteWithoutMmap = true }, false},
		{"SYNC_FLUSH", func(c *Config) { c.FlushDiskType = SyncFlush }, false},
		{"warmed files", func(c *Config) { c.WarmMapedFileEnable = true }, false},
		{"transient pool", func(c *Config) { c.TransientStorePoolEnable = true }, false},
	} {
		cfg := DefaultConfig()
		tc.set(&cfg)
		if got := cfg.populateAheadBytes() > 0; got != tc.want {
			t.Errorf("%s: populated %v, want %v", tc.name, got, tc.want)
		}
	}
}
