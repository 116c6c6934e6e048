package store

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadErrorOnAnOldFile: the first CommitLog file stops reading (cut beneath its mapping:
// its pages fault with SIGBUS, as pages of a file on a failing disk do). Reads of records in it
// fail with ErrReadFault naming the file, and skip nothing (the pull's next offset stays on
// the unreadable record); reads of later files, puts and their reads go on; once the file
// reads again (its bytes written back), the same reads return the records intact.
func TestReadErrorOnAnOldFile(t *testing.T) {
	cfg := smallConfig(t)
	s := openStore(t, cfg, testOptions(t))
	var acked []PutResult
	for i := range 100 { // 100 x ~490 B: three 16 KiB CommitLog files and a bit
		acked = append(acked, mustPut(t, s, testMessage("Old", 0, bodyOf(i, 400), nil)))
	}
	waitDispatched(t, s)
	if acked[len(acked)-1].PhysicalOffset < 2*cfg.MappedFileSizeCommitLog {
		t.Fatalf("the messages end at %d: want three CommitLog files", acked[len(acked)-1].PhysicalOffset)
	}
	first := filepath.Join(cfg.StorePathRootDir, "commitlog", "00000000000000000000")
	saved, err := os.ReadFile(first)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(first, 0); err != nil {
		t.Fatal(err)
	}

	r, err := s.GetMessage("g", "Old", 0, 0, 32, 1<<20, nil)
	if !errors.Is(err, ErrReadFault) || !strings.Contains(err.Error(), "00000000000000000000") {
		t.Fatalf("pull from the unreadable file: %v, %+v; want ErrReadFault naming the file", err, r)
	}
	if _, err := s.LookMessageByOffset(acked[3].PhysicalOffset); !errors.Is(err, ErrReadFault) {
		t.Fatalf("look up a record of the unreadable file: %v; want ErrReadFault", err)
	}
	if _, release, err := s.ReadCommitLog(0, 4096); !errors.Is(err, ErrReadFault) {
		if release != nil {
			release()
		}
		t.Fatalf("raw read of the unreadable file: %v; want ErrReadFault", err)
	}

	// The queue's records in the later files read; a pull starting before them stops at the
	// unreadable one rather than skipping it.
	var inSecond int
	for i, a := range acked {
		if a.PhysicalOffset >= cfg.MappedFileSizeCommitLog {
			inSecond = i
			break
		}
	}
	r, err = s.GetMessage("g", "Old", 0, int64(inSecond), 32, 1<<20, nil)
	if err != nil || r.Status != Found || r.MessageCount == 0 {
		t.Fatalf("pull from the second file: %v, %+v", err, r)
	}
	r.Release()
	res := mustPut(t, s, testMessage("Old", 0, "after the fault", nil))
	waitDispatched(t, s)
	if m, err := s.LookMessageByOffset(res.PhysicalOffset); err != nil || string(m.Body) != "after the fault" {
		t.Fatalf("a put after the fault: %v, %+v", err, m)
	}

	// The fault is gone: the file reads again, and every record is where its put said.
	if err := os.WriteFile(first, saved, 0o644); err != nil {
		t.Fatal(err)
	}
	got := readQueue(t, s, "Old", 0)
	if len(got) != len(acked)+1 {
		t.Fatalf("after the file reads again: %d messages, want %d", len(got), len(acked)+1)
	}
	for i, a := range acked {
		if got[i].PhysicalOffset != a.PhysicalOffset || string(got[i].Body) != bodyOf(i, 400) {
			t.Fatalf("message %d after the fault: offset %d body %.20q", i, got[i].PhysicalOffset, got[i].Body)
		}
	}
}
