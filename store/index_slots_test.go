package store

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rocketraft/rocketraft/message"
)

// TestIndexSlotsBehaveAsAReference: random puts with keys, queries, thorough flushes at random moments, clean
// restarts and crashes (a process that dies with slots changed only in memory), checked against a reference of
// which bodies each key names. The slots are many (several shadow chunks) and the files small (several files),
// so crashes meet every state: slots written out or not, a file just filled, a new file not yet flushed.
func TestIndexSlotsBehaveAsAReference(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			cfg := smallConfig(t)
			cfg.MaxHashSlotNum = 4 * shadowChunk / indexSlotSize // 4 chunks of slots
			cfg.MaxIndexNum = 150
			cfg.FlushConsumeQueueThoroughInterval = 15 // ms: thorough flushes race with puts and crashes
			cfg.DefaultQueryMaxNum = 1000
			rng := rand.New(rand.NewPCG(seed, 7))
			s := openStore(t, cfg, testOptions(t))
			want := map[string][]string{} // key -> bodies
			const keyPool = 60
			check := func(when string, key string) {
				t.Helper()
				got := queryBodies(t, s, "T", key, 1000, 0, time.Now().Add(time.Hour).UnixMilli())
				w := slices.Clone(want[key])
				slices.Sort(w)
				if !slices.Equal(got, w) {
					t.Fatalf("%s: key %s found %v, want %v", when, key, got, w)
				}
			}
			crashes := 0
			for op := 0; op < 600; op++ {
				switch r := rng.IntN(100); {
				case r < 80:
					body := fmt.Sprintf("b%d", op)
					n := 1 + rng.IntN(3)
					var keys []string // distinct: a key given twice is indexed twice
					for len(keys) < n {
						if k := fmt.Sprintf("k%d", rng.IntN(keyPool)); !slices.Contains(keys, k) {
							keys = append(keys, k)
						}
					}
					mustPut(t, s, testMessage("T", 0, body, map[string]string{
						message.PropertyKeys: strings.Join(keys, " "), message.PropertyUniqKey: "u" + body}))
					for _, k := range keys {
						want[k] = append(want[k], body)
					}
					want["u"+body] = []string{body}
				case r < 90:
					waitDispatched(t, s)
					check(fmt.Sprintf("op %d", op), fmt.Sprintf("k%d", rng.IntN(keyPool)))
				case r < 97:
					waitDispatched(t, s)
					crash(t, s)
					crashes++
					s = openStore(t, cfg, testOptions(t))
				default:
					if err := s.Close(); err != nil {
						t.Fatal(err)
					}
					s = openStore(t, cfg, testOptions(t))
				}
			}
			waitDispatched(t, s)
			for k := range want {
				check("at the end", k)
			}
			if n := len(s.index.files); n < 3 || crashes == 0 {
				t.Fatalf("%d index files and %d crashes: the test did not reach the cases it is for", n, crashes)
			}
		})
	}
}

// TestIndexSlotsWriteOutChangedChunks: changed chunks are marked, apart or adjacent, within a bitmap word and
// across words; writing them out carries every one to the file and leaves nothing marked.
func TestIndexSlotsWriteOutChangedChunks(t *testing.T) {
	cfg := smallConfig(t)
	cfg.MaxHashSlotNum = 200 * shadowChunk / indexSlotSize
	s := openStore(t, cfg, testOptions(t))
	mustPut(t, s, testMessage("T", 0, "b", map[string]string{message.PropertyUniqKey: "u"}))
	waitDispatched(t, s)
	s.index.mu.Lock()
	f := s.index.files[len(s.index.files)-1]
	perChunk := shadowChunk / indexSlotSize
	for _, c := range []int{0, 1, 2, 63, 64, 65, 130, 199} {
		f.setSlot(c*perChunk+3, int32(c+1))
	}
	marked := 0
	for _, w := range f.dirty {
		for ; w != 0; w &= w - 1 {
			marked++
		}
	}
	// The put marked its own chunk, which may be one of the eight.
	if marked < 8 || marked > 9 {
		t.Fatalf("%d chunks marked, want 8 or 9", marked)
	}
	if err := f.writeSlots(); err != nil {
		t.Fatal(err)
	}
	for i, w := range f.dirty {
		if w != 0 {
			t.Fatalf("word %d still marked after the write: %x", i, w)
		}
	}
	for _, c := range []int{0, 1, 2, 63, 64, 65, 130, 199} {
		if got := f.u32(indexHeaderSize + int64(c*perChunk+3)*indexSlotSize); got != int32(c+1) {
			t.Errorf("chunk %d: the file holds %d, want %d", c, got, c+1)
		}
	}
	s.index.mu.Unlock()
}
