package broker

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"sync"

	"github.com/rocketraft/rocketraft/broker/internal/delay"
	"github.com/rocketraft/rocketraft/protocol"
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
	r        *raftRole              // proposes, and says whether this node is master
	offsets  *consumerOffsetManager // the tables it reads and, applying another node's entry, sets
	schedule *delay.Schedule        // (through their own methods)
	timer    *delay.Timer
	log      *slog.Logger
	// origin names this node's incarnation: dLegerSelfId and a random nonce per process, so after a
	// restart the node applies the entries it proposed before.
	origin string

	mu       sync.Mutex                 // serialises sync, reset and apply
	proposed map[string]map[int32]int64 // guarded by mu: the consumer offsets as last proposed
	delay    map[int]int64              // guarded by mu: the delay offsets as last proposed
	timerCP  protocol.TimerCheckpoint   // guarded by mu: the timer checkpoint as last proposed
}

func newRaftOffsetSync(r *raftRole, offsets *consumerOffsetManager, schedule *delay.Schedule, timer *delay.Timer,
	log *slog.Logger, selfID string) *raftOffsetSync {
	var nonce [8]byte
	_, _ = rand.Read(nonce[:])
	return &raftOffsetSync{r: r, offsets: offsets, schedule: schedule, timer: timer, log: log,
		origin: selfID + "/" + hex.EncodeToString(nonce[:])}
}

// reset takes the current tables as proposed (on becoming master: what this node applied is what the
// group holds).
func (s *raftOffsetSync) reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.proposed = s.offsets.snapshot().OffsetTable
	s.delay = s.schedule.Offsets().OffsetTable
	s.timerCP = s.timer.Checkpoint()
}

// sync proposes what changed since the last proposal (master only; every dLegerOffsetSyncIntervalMs).
func (s *raftOffsetSync) sync() {
	if !s.r.master.Load() {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := s.offsets.snapshot().OffsetTable
	delay := s.schedule.Offsets().OffsetTable
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
	timer := s.timer.Checkpoint()
	if !timer.Equal(s.timerCP) {
		cmd.Timer = &timer
	}
	if cmd.Offsets == nil && cmd.RemovedOffsets == nil && cmd.Delay == nil && cmd.Timer == nil {
		return
	}
	if _, err := s.r.proposeMeta(cmd); err != nil {
		if !errors.Is(err, raftlog.ErrNotLeader) {
			s.log.Warn("raft: proposing the changed consumer offsets failed; retried next interval", "err", err)
		}
		return
	}
	s.proposed, s.delay, s.timerCP = cur, delay, timer
}

// apply takes another node's offsets entry (FSM goroutine), each table through its owner's methods.
func (s *raftOffsetSync) apply(cmd *metaCmd) {
	s.offsets.apply(cmd.Offsets, cmd.RemovedOffsets)
	if len(cmd.Delay) > 0 {
		s.schedule.SetOffsets(cmd.Delay)
		if err := s.schedule.Persist(); err != nil {
			s.log.Error("persist delay offsets", "err", err)
		}
	}
	if cmd.Timer != nil {
		s.timer.RestoreCheckpoint(*cmd.Timer)
		if err := s.timer.Persist(); err != nil {
			s.log.Error("persist timer checkpoint", "err", err)
		}
	}
}
