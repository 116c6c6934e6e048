package store

import (
	"os"
	"path/filepath"
	"testing"
)

// A truncation also deletes the files the allocate service made ahead of the old end:
// left behind they would be a gap in the folder, and the next Open would refuse it.
func TestTruncateDropsFilesMadeAhead(t *testing.T) {
	cfg := smallConfig(t)
	s := openStore(t, cfg, testOptions(t))
	fs := cfg.MappedFileSizeCommitLog
	var cut int64
	for i := 0; s.MaxPhyOffset() < 2*fs+fs/2; i++ {
		res := mustPut(t, s, testMessage("T", 0, bodyOf(i, 900), nil))
		if i == 5 {
			cut = res.PhysicalOffset
		}
	}
	ahead := filepath.Join(cfg.StorePathRootDir, "commitlog", offsetFileName(3*fs))
	waitFor(t, "the file after the last one to be made ahead", func() bool {
		_, err := os.Stat(ahead)
		return err == nil
	})
	waitDispatched(t, s)
	if err := s.TruncateCommitLog(cut); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(ahead); !os.IsNotExist(err) {
		t.Fatalf("file made ahead still there after the truncation: %v", err)
	}
	mustPut(t, s, testMessage("T", 0, "after", nil))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openStore(t, cfg, testOptions(t))
	waitDispatched(t, s)
	if got := readQueue(t, s, "T", 0); len(got) != 6 || string(got[5].Body) != "after" {
		t.Fatalf("after reopening the queue holds %d messages", len(got))
	}
}
