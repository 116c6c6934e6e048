package store

import (
	"testing"
)

// TestNoReadAheadIntoTheUnwrittenTail: the part of the CommitLog file being written that is
// not written yet is mapped MADV_RANDOM, so a read through the mapping of a written page that
// left the page cache (as this VM's cache trimming makes them leave within seconds) does not
// read ahead into the holes after the written end, filling the page cache with zero-filled
// folios that the next writes would go into (mappedFile.adviseUnwritten). Once the writer
// moves to the next file, the full one reads ahead again.
func TestNoReadAheadIntoTheUnwrittenTail(t *testing.T) {
	cfg := smallConfig(t)
	cfg.MappedFileSizeCommitLog = 4 << 20
	cfg.WriteWithoutMmap = true
	skipUnlessColdReads(t, cfg.StorePathRootDir)
	s := openStore(t, cfg, testOptions(t))
	if !s.commitLog.q.adviseWrites {
		t.Skip("the CommitLog is not written with pwrite in this configuration")
	}
	var last PutResult
	for i := range 300 {
		last = mustPut(t, s, testMessage("T", 0, bodyOf(i, 1000), nil))
	}
	waitDispatched(t, s)
	evictCommitLog(t, s)
	f := s.commitLog.q.last()
	if m, err := s.LookMessageByOffset(last.PhysicalOffset); err != nil || string(m.Body) != bodyOf(299, 1000) {
		t.Fatalf("read back the last message: %v", err)
	}
	tail := (f.wrote.Load()+osPageSize-1)&^(osPageSize-1) + osPageSize
	if n, all := cachedPages(t, f.data[tail:]); n != 0 {
		t.Fatalf("%d of the %d pages after the written end are cached: read ahead into the holes", n, all)
	}

	// Fill the file: the writer moves on, and the full file reads ahead.
	for i := 300; s.commitLog.q.last() == f; i++ {
		mustPut(t, s, testMessage("T", 0, bodyOf(i, 1000), nil))
	}
	waitDispatched(t, s)
	if err := s.Flush(); err != nil { // the new file's few pages, before the thorough flush's 10 s
		t.Fatal(err)
	}
	evictCommitLog(t, s)
	if _, err := s.LookMessageByOffset(last.PhysicalOffset); err != nil {
		t.Fatal(err)
	}
	if n, _ := cachedPages(t, f.data[tail:]); n == 0 {
		t.Fatalf("no page after the one read is cached in the full file: no read-ahead")
	}
}
