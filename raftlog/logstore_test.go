package raftlog

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/hashicorp/raft"
)

func mustStore(t *testing.T, s *Store, logs ...*raft.Log) {
	t.Helper()
	if err := s.StoreLogs(logs); err != nil {
		t.Fatalf("StoreLogs(%d..): %v", logs[0].Index, err)
	}
}

func entries(g *entryGen, from uint64, n int) []*raft.Log {
	var out []*raft.Log
	for i := range n {
		out = append(out, g.next(from+uint64(i)))
	}
	return out
}

func TestStoreLogsContract(t *testing.T) {
	l := openTestLog(t, t.TempDir(), false)
	s := l.s
	g := &entryGen{rng: rand.New(rand.NewPCG(1, 2)), term: 3}
	var got raft.Log
	if err := s.GetLog(1, &got); !errors.Is(err, raft.ErrLogNotFound) {
		t.Fatalf("GetLog on an empty log = %v", err)
	}
	mustStore(t, s, entries(g, 1, 10)...)
	cases := []struct {
		name string
		logs []*raft.Log
		want error
	}{
		{"gap", []*raft.Log{{Index: 12, Term: 3}}, ErrNotContiguous},
		{"overwrite", []*raft.Log{{Index: 10, Term: 3}}, ErrNotContiguous},
		{"older term", []*raft.Log{{Index: 11, Term: 1}}, ErrNotContiguous},
		{"gap inside", []*raft.Log{{Index: 11, Term: 3}, {Index: 13, Term: 3}}, ErrNotContiguous},
		{"too large", []*raft.Log{{Index: 11, Term: 3, Data: make([]byte, 40<<10)}}, ErrEntryTooLarge},
	}
	for _, c := range cases {
		if err := s.StoreLogs(c.logs); !errors.Is(err, c.want) {
			t.Errorf("%s: StoreLogs = %v, want %v", c.name, err, c.want)
		}
	}
	if last, _ := s.LastIndex(); last != 10 {
		t.Fatalf("failed calls changed the log: last %d", last)
	}
	if err := s.DeleteRange(4, 6); !errors.Is(err, ErrHole) {
		t.Fatalf("DeleteRange in the middle = %v, want ErrHole", err)
	}
	mustStore(t, s, g.next(11))
	if err := s.GetLog(12, &got); !errors.Is(err, raft.ErrLogNotFound) {
		t.Fatalf("GetLog past the end = %v", err)
	}
	if err := s.DeleteRange(20, 30); err != nil {
		t.Fatalf("DeleteRange past the end = %v", err)
	}
}

// TestSuffixEmptiesLog cuts every entry (none committed): the next first entry goes where the
// old one was, also after a restart.
func TestSuffixEmptiesLog(t *testing.T) {
	root := t.TempDir()
	l := openTestLog(t, root, true)
	g := &entryGen{rng: rand.New(rand.NewPCG(3, 4)), term: 1}
	mustStore(t, l.s, entries(g, 1, 30)...)
	if err := l.s.DeleteRange(1, 30); err != nil {
		t.Fatal(err)
	}
	if first, _ := l.s.FirstIndex(); first != 0 {
		t.Fatalf("FirstIndex after cutting everything = %d", first)
	}
	l.close()
	l = openTestLog(t, root, true)
	g.term = 2
	mustStore(t, l.s, entries(g, 1, 3)...)
	if p, _ := l.s.Position(1); p.Pos != 0 {
		t.Fatalf("first entry after the cut at %d, want 0", p.Pos)
	}
}

// TestReplicasPlaceEntriesAlike feeds two logs the same entries with the same cuts: their
// CommitLog files are byte-identical.
func TestReplicasPlaceEntriesAlike(t *testing.T) {
	a := openTestLog(t, t.TempDir(), false)
	b := openTestLog(t, t.TempDir(), true)
	g := &entryGen{rng: rand.New(rand.NewPCG(5, 6)), term: 1}
	next := uint64(1)
	for round := range 30 {
		logs := entries(g, next, 1+round%7)
		mustStore(t, a.s, logs...)
		// The replica gets the leader's entries as GetLog returns them.
		var copies []*raft.Log
		for _, x := range logs {
			var c raft.Log
			if err := a.s.GetLog(x.Index, &c); err != nil {
				t.Fatal(err)
			}
			copies = append(copies, &c)
		}
		mustStore(t, b.s, copies...)
		next += uint64(len(logs))
		if round%5 == 4 {
			for _, s := range []*Store{a.s, b.s} {
				if err := s.DeleteRange(next-2, next); err != nil {
					t.Fatal(err)
				}
			}
			next -= 2
			g.term++
		}
	}
	for _, l := range []*testLog{a, b} {
		if err := l.cl.SyncCommitLog(); err != nil {
			t.Fatal(err)
		}
	}
	fa, fb := commitLogFiles(t, a.root), commitLogFiles(t, b.root)
	if !slices.Equal(names(fa), names(fb)) {
		t.Fatalf("files differ: %v and %v", names(fa), names(fb))
	}
	for name, da := range fa {
		if !bytes.Equal(da, fb[name]) {
			t.Fatalf("commitlog file %s differs between the replicas", name)
		}
	}
}

func commitLogFiles(t *testing.T, root string) map[string][]byte {
	t.Helper()
	dir := filepath.Join(root, "commitlog")
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = b
	}
	return out
}

func names(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
