package store

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// crash stops a store the way a killed process leaves it: no final flush, no checkpoint,
// abort file left behind (the page cache keeps what was written).
func crash(t *testing.T, s *Store) {
	t.Helper()
	s.closeOnce.Do(func() { s.closeErr = s.shutdown(false) })
}

// recordFile returns the CommitLog file and in-file position of a physical offset.
func recordFile(cfg Config, phy int64) (string, int64) {
	from := phy - phy%cfg.MappedFileSizeCommitLog
	return filepath.Join(cfg.commitLogDir(), offsetFileName(from)), phy - from
}

func patchFile(t *testing.T, path string, pos int64, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(b, pos); err != nil {
		t.Fatal(err)
	}
}

// bodyPos is the in-record position of the body (IPv4 hosts).
const bodyPos = 88

// verifyPrefix checks that exactly puts[:n] survived: readable through their queues, the
// CommitLog ends right after puts[n-1], keys of lost messages are gone, and new messages
// continue the queues. It returns the survivors and the new messages.
func verifyPrefix(t *testing.T, s *Store, puts []putRecord, n int) []putRecord {
	t.Helper()
	waitDispatched(t, s)
	checkAll(t, s, puts[:n])
	end := int64(0)
	if n > 0 {
		last := puts[n-1].res
		end = last.PhysicalOffset + int64(last.WroteBytes)
	}
	if got := s.MaxPhyOffset(); got != end {
		t.Fatalf("commitlog ends at %d, want %d", got, end)
	}
	counts := map[queueKey]int64{}
	for _, p := range puts[:n] {
		counts[queueKey{p.topic, p.queue}]++
	}
	for _, p := range puts {
		k := queueKey{p.topic, p.queue}
		if got := s.MaxOffsetInQueue(p.topic, p.queue); got != counts[k] {
			t.Fatalf("%s/%d: max offset %d, want %d", p.topic, p.queue, got, counts[k])
		}
	}
	for i, p := range puts {
		r, err := s.QueryMessage(p.topic, fmt.Sprintf("key-%d", i), 32, 0, 1<<62)
		if err != nil {
			t.Fatal(err)
		}
		if want := map[bool]int{true: 1, false: 0}[i < n]; len(r.Records) != want {
			t.Fatalf("key-%d: %d index hits, want %d", i, len(r.Records), want)
		}
		r.Release()
	}
	// New messages continue where the survivors end.
	out := append([]putRecord(nil), puts[:n]...)
	for _, p := range puts[:min(len(puts), 6)] {
		k := queueKey{p.topic, p.queue}
		res := mustPut(t, s, testMessage(p.topic, p.queue, "after-recovery", nil))
		if res.QueueOffset != counts[k] {
			t.Fatalf("%s/%d: new message got queue offset %d, want %d", p.topic, p.queue, res.QueueOffset, counts[k])
		}
		counts[k]++
		out = append(out, putRecord{p.topic, p.queue, "after-recovery", "", res})
	}
	return out
}

func TestRecoveryCorruptionTable(t *testing.T) {
	const n = 120
	for _, tc := range []struct {
		name  string
		clean bool // Close before the damage (normal recovery) rather than crash
		// damage breaks the store's files and returns how many messages must survive.
		damage func(t *testing.T, cfg Config, puts []putRecord) int
	}{
		{"abort file present", false, func(t *testing.T, cfg Config, puts []putRecord) int { return n }},
		{"torn last record", false, func(t *testing.T, cfg Config, puts []putRecord) int {
			last := puts[n-1].res
			path, pos := recordFile(cfg, last.PhysicalOffset)
			half := int64(last.WroteBytes) / 2
			patchFile(t, path, pos+half, make([]byte, int64(last.WroteBytes)-half))
			return n - 1
		}},
		{"torn last record header only", false, func(t *testing.T, cfg Config, puts []putRecord) int {
			last := puts[n-1].res
			path, pos := recordFile(cfg, last.PhysicalOffset)
			patchFile(t, path, pos+8, make([]byte, int64(last.WroteBytes)-8))
			return n - 1
		}},
		{"flipped byte in a body", false, func(t *testing.T, cfg Config, puts []putRecord) int {
			k := n - 25
			path, pos := recordFile(cfg, puts[k].res.PhysicalOffset)
			patchFile(t, path, pos+bodyPos+3, []byte{'#'})
			return k
		}},
		{"flipped byte in a body, clean close", true, func(t *testing.T, cfg Config, puts []putRecord) int {
			k := n - 3
			path, pos := recordFile(cfg, puts[k].res.PhysicalOffset)
			patchFile(t, path, pos+bodyPos+1, []byte{'#'})
			return k
		}},
		{"bad magic", false, func(t *testing.T, cfg Config, puts []putRecord) int {
			k := n - 40
			path, pos := recordFile(cfg, puts[k].res.PhysicalOffset)
			patchFile(t, path, pos+4, []byte{0xDE, 0xAD, 0xBE, 0xEF})
			return k
		}},
		{"bad total size", false, func(t *testing.T, cfg Config, puts []putRecord) int {
			k := n - 10
			path, pos := recordFile(cfg, puts[k].res.PhysicalOffset)
			var b [4]byte
			binary.BigEndian.PutUint32(b[:], uint32(puts[k].res.WroteBytes+5))
			patchFile(t, path, pos, b[:])
			return k
		}},
		{"truncated consume queue", true, func(t *testing.T, cfg Config, puts []putRecord) int {
			dir := filepath.Join(cfg.consumeQueueDir(), "TopicA", "1")
			entries, _ := os.ReadDir(dir)
			last := filepath.Join(dir, entries[len(entries)-1].Name())
			if err := os.Truncate(last, cqUnitSize+7); err != nil {
				t.Fatal(err)
			}
			return n
		}},
		{"consume queue folder deleted, checkpoint missing", true, func(t *testing.T, cfg Config, puts []putRecord) int {
			if err := os.RemoveAll(filepath.Join(cfg.consumeQueueDir(), "TopicB")); err != nil {
				t.Fatal(err)
			}
			if err := os.Remove(cfg.checkpointPath()); err != nil {
				t.Fatal(err)
			}
			return n
		}},
		{"missing checkpoint", true, func(t *testing.T, cfg Config, puts []putRecord) int {
			if err := os.Remove(cfg.checkpointPath()); err != nil {
				t.Fatal(err)
			}
			return n
		}},
		{"missing checkpoint after a crash", false, func(t *testing.T, cfg Config, puts []putRecord) int {
			if err := os.Remove(cfg.checkpointPath()); err != nil {
				t.Fatal(err)
			}
			return n
		}},
		{"index file of the wrong size", true, func(t *testing.T, cfg Config, puts []putRecord) int {
			entries, _ := os.ReadDir(cfg.indexDir())
			last := filepath.Join(cfg.indexDir(), entries[len(entries)-1].Name())
			if err := os.Truncate(last, 1000); err != nil {
				t.Fatal(err)
			}
			return n
		}},
		{"last commitlog file cut short", false, func(t *testing.T, cfg Config, puts []putRecord) int {
			k := n - 2
			path, pos := recordFile(cfg, puts[k].res.PhysicalOffset)
			if err := os.Truncate(path, pos+20); err != nil {
				t.Fatal(err)
			}
			return k
		}},
	} {
		// SYNC_FLUSH files are warm (written zeros, no holes) and truncated tails are
		// rewritten with zeros rather than punched.
		for _, flush := range []string{AsyncFlush, SyncFlush} {
			t.Run(flush+"/"+tc.name, func(t *testing.T) {
				cfg := smallConfig(t)
				cfg.MaxIndexNum = 64
				cfg.FlushDiskType = flush
				s := openStore(t, cfg, testOptions(t))
				puts := putMixed(t, s, n)
				waitDispatched(t, s)
				if tc.clean {
					if err := s.Close(); err != nil {
						t.Fatal(err)
					}
				} else {
					crash(t, s)
				}
				want := tc.damage(t, cfg, puts)
				s2 := openStore(t, cfg, testOptions(t))
				if s2.lastExitOK == !tc.clean {
					t.Errorf("lastExitOK = %v after clean=%v", s2.lastExitOK, tc.clean)
				}
				kept := verifyPrefix(t, s2, puts, want)

				// A second crash right after recovery must not bring back anything dropped.
				crash(t, s2)
				s3 := openStore(t, cfg, testOptions(t))
				waitDispatched(t, s3)
				checkAll(t, s3, kept)
			})
		}
	}
}

// Recovery never panics on garbage: a CommitLog file full of noise opens as an empty or
// truncated log, never a crash.
func TestRecoveryFromGarbage(t *testing.T) {
	cfg := smallConfig(t)
	s := openStore(t, cfg, testOptions(t))
	puts := putMixed(t, s, 30)
	crash(t, s)
	path, _ := recordFile(cfg, puts[len(puts)-1].res.PhysicalOffset)
	noise := make([]byte, cfg.MappedFileSizeCommitLog)
	for i := range noise {
		noise[i] = byte(i*7 + i/13)
	}
	if err := os.WriteFile(path, noise, 0o644); err != nil {
		t.Fatal(err)
	}
	s2 := openStore(t, cfg, testOptions(t))
	waitDispatched(t, s2)
	if _, err := s2.PutMessage(context.Background(), testMessage("T", 0, "still works", nil)); err != nil {
		t.Fatal(err)
	}
	first, _ := recordFile(cfg, 0)
	if filepath.Base(first) != filepath.Base(path) {
		// Everything before the garbage file survived.
		surviving := 0
		for _, p := range puts {
			if p.res.PhysicalOffset < puts[len(puts)-1].res.PhysicalOffset-puts[len(puts)-1].res.PhysicalOffset%cfg.MappedFileSizeCommitLog {
				surviving++
			}
		}
		got := 0
		for _, q := range []queueKey{{"TopicA", 0}, {"TopicA", 1}, {"TopicA", 2}, {"TopicB", 0}, {"TopicB", 1}, {"TopicB", 2}} {
			got += len(readQueue(t, s2, q.topic, q.queueID))
		}
		if got != surviving {
			t.Fatalf("%d messages readable, want the %d before the garbage file", got, surviving)
		}
	}
}
