package broker

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"maps"
	"slices"
	"sync"

	"github.com/rocketraft/rocketraft/raftlog"
)

// raftOffsetSync proposes the consumer offsets, the delay offsets and the timer checkpoint the master
// changed, about once a second (dLegerOffsetSyncIntervalMs): the master commits offsets locally as in
// classic mode, and every tick compares its tables with what it proposed last and proposes the
// difference (set values, removed topic@group keys, the whole timer checkpoint when it moved) as one
// metaOffsets entry. The other nodes apply it; the master skips its own entries (Origin), its tables
// being at least as new. A node that becomes master thus resumes delay and timer delivery about where
// the previous master was, instead of delivering every due message again.
type raftOffsetSync struct {
	b *Broker
	// origin names this node's incarnation: dLegerSelfId and a random nonce per process, so after a
	// restart the node applies the entries it proposed before.
	origin string

	mu       sync.Mutex                 // serialises sync, reset and apply
	proposed map[string]map[int32]int64 // guarded by mu: the consumer offsets as last proposed
	delay    map[int]int64              // guarded by mu: the delay offsets as last proposed
	timer    TimerCheckpoint            // guarded by mu: the timer checkpoint as last proposed
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
	s.timer = s.b.timer.checkpoint()
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
	timer := b.timer.checkpoint()
	if !timer.equal(s.timer) {
		cmd.Timer = &timer
	}
	if cmd.Offsets == nil && cmd.RemovedOffsets == nil && cmd.Delay == nil && cmd.Timer == nil {
		return
	}
	if _, err := b.proposeMeta(cmd); err != nil {
		if !errors.Is(err, raftlog.ErrNotLeader) {
			b.log.Warn("raft: proposing the changed consumer offsets failed; retried next interval", "err", err)
		}
		return
	}
	s.proposed, s.delay, s.timer = cur, delay, timer
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
	if cmd.Timer != nil {
		b.timer.restoreCheckpoint(*cmd.Timer)
		if err := b.timer.persist(); err != nil {
			b.log.Error("persist timer checkpoint", "err", err)
		}
	}
}

// checkpoint is the timer service's progress (its TimerCheckpoint, delivered offsets sorted).
func (s *timerService) checkpoint() TimerCheckpoint {
	s.mu.Lock()
	cp := TimerCheckpoint{LowWater: s.lowWater, Delivered: make([]int64, 0, len(s.delivered))}
	for off := range s.delivered {
		cp.Delivered = append(cp.Delivered, off)
	}
	s.mu.Unlock()
	slices.Sort(cp.Delivered)
	return cp
}

// restoreCheckpoint takes another master's timer progress (Raft mode; the service is stopped on this
// node): the next start scans the timer queue again from its low water mark.
func (s *timerService) restoreCheckpoint(cp TimerCheckpoint) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lowWater, s.scanned, s.pending = cp.LowWater, cp.LowWater, nil
	s.delivered = make(map[int64]bool, len(cp.Delivered))
	for _, off := range cp.Delivered {
		if off >= cp.LowWater {
			s.delivered[off] = true
		}
	}
}

// equal reports whether two checkpoints (delivered sorted) are the same.
func (c TimerCheckpoint) equal(o TimerCheckpoint) bool {
	return c.LowWater == o.LowWater && slices.Equal(c.Delivered, o.Delivered)
}
