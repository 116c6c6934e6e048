package powerloss

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func writeFile(t *testing.T, path string, size int, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, size)
	copy(b, data)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestCutKeepsWhatWasSynced: files cut back to their last sync, cuts lowering the watermark,
// files never synced zeroed in full, deleted and unjournaled files left alone, a torn last
// line ignored, and a second cut finding nothing more to drop.
func TestCutKeepsWhatWasSynced(t *testing.T) {
	root := t.TempDir()
	j, err := Open(root)
	if err != nil {
		t.Fatal(err)
	}
	cl := filepath.Join(root, "commitlog", "00000000000000000000")
	cq := filepath.Join(root, "consumequeue", "T", "0", "00000000000000000000")
	fresh := filepath.Join(root, "commitlog", "00000000000000001024")
	gone := filepath.Join(root, "commitlog", "gone")
	other := filepath.Join(root, "index", "x")
	data := bytes.Repeat([]byte("r"), 900)
	writeFile(t, cl, 1024, data)
	writeFile(t, cq, 200, bytes.Repeat([]byte("u"), 100))
	writeFile(t, fresh, 1024, []byte("unsynced"))
	writeFile(t, other, 64, bytes.Repeat([]byte("i"), 64))
	j.Created(cl, 1024)
	j.Synced(cl, 300)
	j.Synced(cl, 700)
	j.Cut(cl, 500) // truncation: the watermark goes down
	j.Created(cq, 200)
	j.Synced(cq, 100)
	j.Created(fresh, 1024)
	j.Created(gone, 1024)
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(root, FileName), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("sync 1024 commitl"); err != nil { // torn: killed mid-write
		t.Fatal(err)
	}
	f.Close()

	rep, err := Cut(root)
	if err != nil {
		t.Fatal(err)
	}
	want := []CutFile{
		{Path: "commitlog/00000000000000000000", Size: 1024, Watermark: 500, Dropped: 400},
		{Path: "commitlog/00000000000000001024", Size: 1024, Watermark: 0, Dropped: 8},
	}
	if len(rep.Files) != len(want) || rep.Files[0] != want[0] || rep.Files[1] != want[1] || rep.Kept != 1 {
		t.Fatalf("report %+v, want files %+v and 1 kept", rep, want)
	}
	if rep.Dropped() != 408 {
		t.Fatalf("dropped %d, want 408", rep.Dropped())
	}
	check := func(path string, size int, keep []byte) {
		t.Helper()
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		w := make([]byte, size)
		copy(w, keep)
		if !bytes.Equal(b, w) {
			t.Fatalf("%s after the cut: %q", path, b)
		}
	}
	check(cl, 1024, data[:500])
	check(cq, 200, bytes.Repeat([]byte("u"), 100))
	check(fresh, 1024, nil)
	check(other, 64, bytes.Repeat([]byte("i"), 64))

	// The journal now says everything left is durable: a second cut drops nothing, and a
	// store reopened on the folder appends to it.
	if rep, err = Cut(root); err != nil || len(rep.Files) != 0 || rep.Kept != 3 {
		t.Fatalf("second cut: %+v, %v", rep, err)
	}
	j, err = Open(root)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, cl, 1024, bytes.Repeat([]byte("s"), 800))
	j.Synced(cl, 600)
	j.Close()
	rep, err = Cut(root)
	if err != nil || len(rep.Files) != 1 || rep.Files[0].Watermark != 600 || rep.Files[0].Dropped != 200 {
		t.Fatalf("cut after a restart: %+v, %v", rep, err)
	}
}

func TestCutWithoutJournal(t *testing.T) {
	if _, err := Cut(t.TempDir()); !errors.Is(err, ErrNoJournal) {
		t.Fatalf("cut of a folder without a journal: %v, want ErrNoJournal", err)
	}
}

func TestCutRefusesAGarbledJournal(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, FileName), []byte("sync x commitlog/0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Cut(root); err == nil {
		t.Fatal("a garbled journal was accepted")
	}
}

func TestReportString(t *testing.T) {
	r := Report{Kept: 3, Files: []CutFile{{Path: "commitlog/0", Dropped: 496}, {Path: "consumequeue/T/0/0", Dropped: 40},
		{Path: "consumequeue/T/1/0", Dropped: 20}}}
	if got, want := r.String(), "556 unsynced bytes dropped (commitlog 496 in 1 file, consumequeue 60 in 2 files); 3 files synced"; got != want {
		t.Fatalf("got %q\nwant %q", got, want)
	}
	if got := (Report{Kept: 2}).String(); got != "nothing unsynced (2 files synced)" {
		t.Fatalf("got %q", got)
	}
}

// TestJournalCompacts: a journal that took more than compactEvery events holds one line per file
// afterwards, and a cut still finds every watermark.
func TestJournalCompacts(t *testing.T) {
	root := t.TempDir()
	j, err := Open(root)
	if err != nil {
		t.Fatal(err)
	}
	a, b := filepath.Join(root, "commitlog", "a"), filepath.Join(root, "commitlog", "b")
	writeFile(t, a, 4096, bytes.Repeat([]byte("a"), 4096))
	writeFile(t, b, 4096, bytes.Repeat([]byte("b"), 4096))
	j.Created(b, 4096)
	j.Synced(b, 100)
	for i := range compactEvery + 10 {
		j.Synced(a, int64(i%4000))
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(filepath.Join(root, FileName))
	if err != nil || st.Size() > 1024 {
		t.Fatalf("journal after %d events: %v bytes, %v", compactEvery+12, st.Size(), err)
	}
	rep, err := Cut(root)
	if err != nil || len(rep.Files) != 2 || rep.Files[0].Watermark != int64((compactEvery+9)%4000) || rep.Files[1].Watermark != 100 {
		t.Fatalf("cut after compaction: %+v, %v", rep, err)
	}
}

// TestJournalElsewhere: with EnvVar an absolute path, the journal goes there (the chaos suite keeps it off
// a disk its disk faults fail or fill), and CutAt cuts the store by it; nothing is written in the store's root.
func TestJournalElsewhere(t *testing.T) {
	root, elsewhere := t.TempDir(), filepath.Join(t.TempDir(), "j", FileName)
	t.Setenv(EnvVar, elsewhere)
	if got := JournalPath(root); got != elsewhere {
		t.Fatalf("JournalPath = %s, want %s", got, elsewhere)
	}
	t.Setenv(EnvVar, "1")
	if got := JournalPath(root); got != filepath.Join(root, FileName) {
		t.Fatalf("JournalPath with %s=1: %s", EnvVar, got)
	}
	j, err := OpenAt(root, elsewhere)
	if err != nil {
		t.Fatal(err)
	}
	cl := filepath.Join(root, "commitlog", "00000000000000000000")
	writeFile(t, cl, 1024, bytes.Repeat([]byte("r"), 900))
	j.Created(cl, 1024)
	j.Synced(cl, 300)
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, FileName)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a journal in the store's root: %v", err)
	}
	rep, err := CutAt(root, elsewhere)
	if err != nil || len(rep.Files) != 1 || rep.Files[0].Dropped != 900-300 { // to the last byte written
		t.Fatalf("CutAt: %+v, %v", rep, err)
	}
}
