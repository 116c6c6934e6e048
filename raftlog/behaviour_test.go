package raftlog

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/hashicorp/raft"
)

// behaviour runs one random sequence of the operations Raft performs on a LogStore against
// raftlog and raft.InmemStore side by side:
//
//   - ref (an InmemStore) is the log as Raft sees it: entries lo..hi;
//   - shadow is every entry stored and not cut by a suffix truncation or deleted with its
//     CommitLog file: exactly what raftlog must hold, since its prefix deletion is advisory.
//
// After every operation raftlog must equal shadow (FirstIndex, LastIndex, every entry) and
// agree with ref on ref's whole range.
type behaviour struct {
	t      *testing.T
	rng    *rand.Rand
	gen    entryGen
	log    *testLog
	ref    *raft.InmemStore
	shadow map[uint64]*raft.Log
	// lo..hi is Raft's log (lo > hi: everything compacted), next the index StoreLogs takes
	// next, applied what the state machine applied.
	lo, hi, next, applied uint64
	// snap is the last entry of the newest snapshot (taken before each compaction).
	snap uint64
	ops  map[string]int
}

func TestBehaviourAgainstInmemStore(t *testing.T) {
	for seed := range uint64(6) {
		sync := seed%2 == 1
		t.Run(fmt.Sprintf("seed%d-sync%v", seed, sync), func(t *testing.T) {
			t.Parallel()
			b := &behaviour{t: t, rng: rand.New(rand.NewPCG(seed, 99)), log: openTestLog(t, t.TempDir(), sync),
				ref: raft.NewInmemStore(), shadow: map[uint64]*raft.Log{}, next: 1, ops: map[string]int{}}
			b.gen = entryGen{rng: b.rng, term: 1}
			for range 400 {
				b.step()
				b.check()
			}
			t.Logf("operations: %v; raft log %d..%d, raftlog holds %d entries", b.ops, b.lo, b.hi, len(b.shadow))
		})
	}
}

func (b *behaviour) step() {
	switch r := b.rng.IntN(100); {
	case r < 40:
		b.storeLogs()
	case r < 50:
		b.commit()
	case r < 58:
		b.compact()
	case r < 68:
		b.truncateSuffix()
	case r < 73:
		b.prune()
	case r < 78:
		b.crash()
	case r < 81:
		b.reopen()
	default:
		b.get(b.rng.IntN(8))
	}
}

func (b *behaviour) storeLogs() {
	b.ops["store"]++
	n := 1 + b.rng.IntN(8)
	if b.rng.IntN(10) == 0 {
		n = 40 // a batch crossing files
	}
	var logs []*raft.Log
	for i := range n {
		logs = append(logs, b.gen.next(b.next+uint64(i)))
	}
	if err := b.log.s.StoreLogs(logs); err != nil {
		b.t.Fatalf("StoreLogs(%d..%d): %v", logs[0].Index, logs[n-1].Index, err)
	}
	if err := b.ref.StoreLogs(logs); err != nil {
		b.t.Fatal(err)
	}
	for _, l := range logs {
		b.shadow[l.Index] = l
	}
	if b.lo == 0 || b.lo > b.hi+1 {
		b.lo = logs[0].Index
	}
	b.hi = logs[n-1].Index
	b.next = b.hi + 1
}

func (b *behaviour) commit() {
	if b.hi <= b.applied {
		return
	}
	b.ops["commit"]++
	b.applied += 1 + uint64(b.rng.IntN(int(b.hi-b.applied)))
	b.log.s.SetAppliedIndex(b.applied)
}

// compact deletes a prefix of applied entries, as Raft does after a snapshot (sometimes all
// of them, as after installing one).
func (b *behaviour) compact() {
	first, _ := b.log.s.FirstIndex()
	if b.applied < max(first, b.lo) || first == 0 || b.lo == 0 {
		return // nothing applied in the log (lo 0: a suffix cut emptied Raft's log)
	}
	b.ops["compact"]++
	upTo := b.lo + uint64(b.rng.IntN(int(b.applied-b.lo+1)))
	// The snapshot before it ends at the last compacted entry (Raft compacts up to it when
	// TrailingLogs allows) or after it.
	snap := upTo
	if b.rng.IntN(2) == 0 {
		snap += uint64(b.rng.IntN(int(b.applied - upTo + 1)))
	}
	b.snap = max(b.snap, snap)
	b.log.s.noteSnapshot(b.snap)
	if err := b.log.s.DeleteRange(first, upTo); err != nil {
		b.t.Fatalf("DeleteRange(%d, %d) compaction: %v", first, upTo, err)
	}
	if err := b.ref.DeleteRange(first, upTo); err != nil {
		b.t.Fatal(err)
	}
	b.lo = upTo + 1
}

// truncateSuffix cuts uncommitted entries, as a follower does on a conflict.
func (b *behaviour) truncateSuffix() {
	if b.hi <= b.applied || b.hi < b.lo {
		return
	}
	b.ops["suffix"]++
	from := max(b.applied+1, b.lo) + uint64(b.rng.IntN(int(b.hi-max(b.applied+1, b.lo)+1)))
	to := b.hi + uint64(b.rng.IntN(3))
	if err := b.log.s.DeleteRange(from, to); err != nil {
		b.t.Fatalf("DeleteRange(%d, %d) suffix: %v", from, to, err)
	}
	if err := b.ref.DeleteRange(from, to); err != nil {
		b.t.Fatal(err)
	}
	for i := from; i <= b.hi; i++ {
		delete(b.shadow, i)
	}
	b.hi, b.next = from-1, from
	if from == b.lo {
		b.lo = 0
	}
	// A new leader's entries come in a later term.
	b.gen.term++
}

// prune lets the CommitLog's retention delete the files of compacted entries.
func (b *behaviour) prune() {
	if b.applied == 0 {
		return
	}
	b.ops["prune"]++
	p, ok := b.log.s.Position(b.applied)
	if !ok {
		return
	}
	b.log.cl.AdvanceDispatch(p.End)
	if err := b.log.cl.SyncCommitLog(); err != nil {
		b.t.Fatal(err)
	}
	b.log.cl.PruneCommitLog(p.End)
	first, _ := b.log.s.FirstIndex()
	if first != 0 && b.lo <= b.hi && first > b.lo {
		b.t.Fatalf("retention deleted entries Raft did not compact: first %d, raft log from %d", first, b.lo)
	}
	if b.snap > 0 && first > b.snap {
		b.t.Fatalf("retention deleted the newest snapshot's last entry %d: first %d", b.snap, first)
	}
	for i := range b.shadow {
		if i < first {
			delete(b.shadow, i)
		}
	}
}

func (b *behaviour) crash() {
	b.ops["crash"]++
	old := b.log
	b.log = old.crashCopy(b.t)
	old.close()
	b.log.s.SetAppliedIndex(b.applied)
	b.log.s.noteSnapshot(b.snap) // as NewSnapshotStore does from the snapshots on disk
}

func (b *behaviour) reopen() {
	b.ops["reopen"]++
	b.log.close()
	b.log = openTestLog(b.t, b.log.root, b.log.sync)
	b.log.s.SetAppliedIndex(b.applied)
	b.log.s.noteSnapshot(b.snap)
}

// get reads n random indexes around the log from both stores.
func (b *behaviour) get(n int) {
	b.ops["get"]++
	for range n {
		i := uint64(max(int64(b.lo)-3, 0) + b.rng.Int64N(int64(b.hi-b.lo)+8))
		b.checkEntry(i)
	}
}

func (b *behaviour) checkEntry(i uint64) {
	var got, ref raft.Log
	err := b.log.s.GetLog(i, &got)
	want, held := b.shadow[i]
	switch {
	case !held && !errors.Is(err, raft.ErrLogNotFound):
		b.t.Fatalf("GetLog(%d) = %v, want ErrLogNotFound", i, err)
	case held && err != nil:
		b.t.Fatalf("GetLog(%d): %v", i, err)
	case held:
		if d := sameEntry(&got, want); d != "" {
			b.t.Fatalf("GetLog(%d): %s", i, d)
		}
	}
	if refErr := b.ref.GetLog(i, &ref); refErr == nil {
		if !held {
			b.t.Fatalf("InmemStore holds %d, raftlog does not", i)
		}
		if d := sameEntry(&got, &ref); d != "" {
			b.t.Fatalf("GetLog(%d) against InmemStore: %s", i, d)
		}
	}
}

func (b *behaviour) check() {
	first, _ := b.log.s.FirstIndex()
	last, _ := b.log.s.LastIndex()
	var wantFirst, wantLast uint64
	if len(b.shadow) > 0 {
		keys := make([]uint64, 0, len(b.shadow))
		for k := range b.shadow {
			keys = append(keys, k)
		}
		wantFirst, wantLast = slices.Min(keys), slices.Max(keys)
		if int(wantLast-wantFirst+1) != len(keys) {
			b.t.Fatalf("model error: shadow %d..%d has %d entries", wantFirst, wantLast, len(keys))
		}
	}
	if first != wantFirst || last != wantLast {
		b.t.Fatalf("raftlog holds %d..%d, want %d..%d", first, last, wantFirst, wantLast)
	}
	if refLast, _ := b.ref.LastIndex(); refLast != 0 && refLast != b.hi {
		b.t.Fatalf("InmemStore ends at %d, model at %d", refLast, b.hi)
	}
	for _, i := range []uint64{first, last, b.lo, b.hi, (first + last) / 2} {
		b.checkEntry(i)
	}
}
