package store

import (
	"testing"

	"github.com/rocketraft/rocketraft/message"
)

// BenchmarkIndexWriteSlots: writing out every slot of a default-sized index file (5,000,000 slots, 20 MB), all
// changed, which the thorough flush does holding the index lock (dispatch waits that long).
//
//	go test ./store -run '^$' -bench IndexWriteSlots -benchtime 20x
func BenchmarkIndexWriteSlots(b *testing.B) {
	cfg := smallConfig(b)
	cfg.MaxHashSlotNum = DefaultConfig().MaxHashSlotNum
	s := openStore(b, cfg, testOptions(b))
	mustPut(b, s, testMessage("T", 0, "b", map[string]string{message.PropertyUniqKey: "u"}))
	waitDispatched(b, s)
	s.index.mu.Lock()
	defer s.index.mu.Unlock()
	f := s.index.files[len(s.index.files)-1]
	b.SetBytes(int64(len(f.shadow)))
	for b.Loop() {
		for i := range f.dirty {
			f.dirty[i] = ^uint64(0)
		}
		if err := f.writeSlots(); err != nil {
			b.Fatal(err)
		}
	}
}
