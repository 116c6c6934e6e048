package raftlog

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/raft"
)

// corruptAt changes the byte at a CommitLog offset in a closed log's folder.
func corruptAt(t *testing.T, root string, fileSize, off int64, fn func(b byte) byte) {
	t.Helper()
	path := filepath.Join(root, "commitlog", fileName(off-off%fileSize))
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := []byte{0}
	if _, err := f.ReadAt(b, off%fileSize); err != nil {
		t.Fatal(err)
	}
	b[0] = fn(b[0])
	if _, err := f.WriteAt(b, off%fileSize); err != nil {
		t.Fatal(err)
	}
}

func fileName(off int64) string {
	return filepath.Base(filepath.Join("x", pad20(off)))
}

func pad20(v int64) string {
	s := []byte("00000000000000000000")
	for i := len(s) - 1; v > 0; i-- {
		s[i] = byte('0' + v%10)
		v /= 10
	}
	return string(s)
}

// TestRecoveryCutsAtDamage damages entry k of a log closed after a crash (or cleanly) and
// checks that reopening keeps exactly the entries before it, with a log that takes new ones.
func TestRecoveryCutsAtDamage(t *testing.T) {
	const n, k = 120, 100
	flip := func(b byte) byte { return b ^ 0x40 }
	cases := []struct {
		name string
		// damage breaks entry k (frame position p, data from d, end e) in the closed folder.
		damage func(t *testing.T, root string, fs int64, p Position)
		keep   uint64
	}{
		{"torn tail", func(t *testing.T, root string, fs int64, p Position) {
			// The last frame written only in part.
			for off := p.Pos + FrameHeaderSize; off < p.End; off++ {
				corruptAt(t, root, fs, off, func(byte) byte { return 0 })
			}
		}, k - 1},
		{"flipped header byte", func(t *testing.T, root string, fs int64, p Position) {
			corruptAt(t, root, fs, p.Pos+fhTerm+7, flip)
		}, k - 1},
		{"bad magic", func(t *testing.T, root string, fs int64, p Position) {
			corruptAt(t, root, fs, p.Pos+fhMagic, flip)
		}, k - 1},
		{"flipped data byte", func(t *testing.T, root string, fs int64, p Position) {
			corruptAt(t, root, fs, p.Data+90, flip) // in the first record's body
		}, k - 1},
		{"index files gone", func(t *testing.T, root string, fs int64, p Position) {
			if err := os.RemoveAll(filepath.Join(root, "raft", "index")); err != nil {
				t.Fatal(err)
			}
		}, n},
		{"index slot wrong", func(t *testing.T, root string, fs int64, p Position) {
			idx, err := openDenseIndex(filepath.Join(root, "raft", "index"), 64)
			if err != nil {
				t.Fatal(err)
			}
			defer idx.close()
			if err := idx.put(3, slot{pos: 12345, size: 99, term: 1}); err != nil {
				t.Fatal(err)
			}
		}, n},
	}
	for _, c := range cases {
		for _, crash := range []bool{false, true} {
			t.Run(c.name+map[bool]string{false: "/clean", true: "/crash"}[crash], func(t *testing.T) {
				// Damage at k must be found whatever the scan start: keep the files few.
				l := openTestLog(t, t.TempDir(), true)
				g := &entryGen{rng: rand.New(rand.NewPCG(7, 8)), term: 1}
				for i := uint64(1); i <= n; i++ {
					e := g.next(i)
					if i == k {
						e.Type, e.Data = raft.LogCommand, messageData(g.rng, 2)
					}
					mustStore(t, l.s, e)
				}
				p, _ := l.s.Position(k)
				root := l.root
				if crash {
					c2 := t.TempDir()
					copyTree(t, l.root, c2)
					root = c2
				}
				l.close()
				fs := testStoreConfig(root, true).MappedFileSizeCommitLog
				c.damage(t, root, fs, p)
				r := openTestLog(t, root, true)
				if last, _ := r.s.LastIndex(); last != c.keep {
					t.Fatalf("recovered last index %d, want %d", last, c.keep)
				}
				if r.s.End() != r.cl.CommitLogEnd() {
					t.Fatalf("log end %d, commitlog end %d", r.s.End(), r.cl.CommitLogEnd())
				}
				for i := uint64(1); i <= c.keep; i++ {
					var e raft.Log
					if err := r.s.GetLog(i, &e); err != nil {
						t.Fatalf("GetLog(%d) after recovery: %v", i, err)
					}
				}
				g.term++
				mustStore(t, r.s, g.next(c.keep+1))
			})
		}
	}
}
