package broker

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"maps"
	"sync"

	"github.com/rocketraft/rocketraft/raftlog"
)

// raftOffsetSync proposes the consumer and delay offsets the master changed, about once a second
// (dLegerOffsetSyncIntervalMs): the master commits offsets locally as in classic mode, and every tick
// compares its tables with what it proposed last and proposes the difference (set values, removed
// topic@group keys) as one metaOffsets entry. The other nodes apply it; the master skips its own
// entries (Origin), its tables being at least as new.
type raftOffsetSync struct {
	b *Broker
	// origin names this node's incarnation: dLegerSelfId and a random nonce per process, so after a
	// restart the node applies the entries it proposed before.
	origin string

	mu       sync.Mutex                 // serialises sync, reset and apply
	proposed map[string]map[int32]int64 // guarded by mu: the consumer offsets as last proposed
	delay    map[int]int64              // guarded by mu: the delay offsets as last proposed
}

func newRaftOffsetSync(b *Broker) *raftOffsetSync {
	var nonce [8]byte
	_, _ = rand.Read(nonce[:])
	return &raftOffsetSync{b: b, origin: b.cfg.Raft.DLegerSelfId + "/" + hex.EncodeToString(nonce[:])}
}

// reset takes the current tables as proposed (on becoming master: what this node applied is what the
// group holds).
func (s *raftOffsetSync) reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.proposed = s.b.offsets.snapshot().OffsetTable
	s.delay = s.b.schedule.snapshot().OffsetTable
}

// sync proposes what changed since the last proposal (master only; every dLegerOffsetSyncIntervalMs).
func (s *raftOffsetSync) sync() {
	b := s.b
	if !b.raft.master.Load() {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := b.offsets.snapshot().OffsetTable
	delay := b.schedule.snapshot().OffsetTable
	cmd := &metaCmd{Op: metaOffsets, Origin: s.origin}
	for k, q := range cur {
		old := s.proposed[k]
		for id, off := range q {
			if o, ok := old[id]; !ok || o != off {
				if cmd.Offsets == nil {
					cmd.Offsets = map[string]map[int32]int64{}
				}
				if cmd.Offsets[k] == nil {
					cmd.Offsets[k] = map[int32]int64{}
				}
				cmd.Offsets[k][id] = off
			}
		}
	}
	for k := range s.proposed {
		if _, ok := cur[k]; !ok {
			cmd.RemovedOffsets = append(cmd.RemovedOffsets, k)
		}
	}
	for level, off := range delay {
		if o, ok := s.delay[level]; !ok || o != off {
			if cmd.Delay == nil {
				cmd.Delay = map[int]int64{}
			}
			cmd.Delay[level] = off
		}
	}
	if cmd.Offsets == nil && cmd.RemovedOffsets == nil && cmd.Delay == nil {
		return
	}
	if _, err := b.proposeMeta(cmd); err != nil {
		if !errors.Is(err, raftlog.ErrNotLeader) {
			b.log.Warn("raft: proposing the changed consumer offsets failed; retried next interval", "err", err)
		}
		return
	}
	s.proposed, s.delay = cur, delay
}

// apply takes another node's offsets entry (FSM goroutine).
func (s *raftOffsetSync) apply(cmd *metaCmd) {
	b := s.b
	b.offsets.mu.Lock()
	for k, q := range cmd.Offsets {
		t := b.offsets.table[k]
		if t == nil {
			t = map[int32]int64{}
			b.offsets.table[k] = t
		}
		maps.Copy(t, q)
	}
	for _, k := range cmd.RemovedOffsets {
		delete(b.offsets.table, k)
	}
	b.offsets.dirty = true
	b.offsets.mu.Unlock()
	if len(cmd.Delay) > 0 {
		b.schedule.mu.Lock()
		maps.Copy(b.schedule.offsets, cmd.Delay)
		b.schedule.mu.Unlock()
		if err := b.schedule.persist(); err != nil {
			b.log.Error("persist delay offsets", "err", err)
		}
	}
}
