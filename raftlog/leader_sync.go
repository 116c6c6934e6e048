package raftlog

import (
	"errors"
	"time"

	"github.com/hashicorp/raft"
)

// The leader's sync overlapped with replication (Raft thesis section 10.2.1; doc.go has the
// safety argument). With SYNC_FLUSH and overlap on, a leader's StoreLogs writes the entries and
// returns; the syncer goroutine syncs them while Raft replicates them. Three rules keep a
// message from being answered or applied anywhere before a majority holds it durably:
//
//  1. The leader's state machine applies an entry only once the leader's own sync covers it
//     (FSM.ApplyBatch waits in waitDurable), so a put is answered after the leader's sync and
//     a follower's (Raft counts a follower only after its StoreLogs, which syncs before it
//     returns).
//  2. The commit index the leader sends its followers is at most what the leader holds durably
//     (the transport clamps AppendEntriesRequest.LeaderCommitIndex: pipeline.go), so no
//     follower applies an entry the leader could still lose.
//  3. A node that is not leading answers for entries it already holds only once they are
//     durable: Raft reads such an entry through GetLog before acknowledging an AppendEntries
//     that repeats it, and the gate (gatedLog) syncs first. This covers a leader that stepped
//     down with entries written but not yet synced.
//
// durable is guarded by Store.mu: index is the last entry known durable, gen counts the changes
// that cut or replaced the log (a suffix truncation, a snapshot install), so a sync that began
// before one cannot vouch for entries written after it; err is the first failed sync (the
// CommitLog store is read-only from then on).
type durableState struct {
	index uint64
	gen   uint64
	err   error
	// advanced is closed (and replaced) whenever index or err changes.
	advanced chan struct{}
}

// errSyncStopped: a wait for durability ended because the log store closed.
var errSyncStopped = errors.New("raftlog: the log store closed before the entry was synced")

// enableOverlap turns the overlapped leader sync on (Node.Start, when it owns the transport
// that applies rule 2) and starts the syncer; a no-op without Options.Sync.
func (s *Store) enableOverlap() {
	if !s.sync || s.overlap.Load() {
		return
	}
	s.kick = make(chan struct{}, 1)
	s.syncerDone = make(chan struct{})
	s.overlap.Store(true)
	go s.runSyncer()
}

// overlapping reports whether StoreLogs defers a leader's sync to the syncer.
func (s *Store) overlapping() bool { return s.overlap.Load() }

// runSyncer syncs whatever a leader's StoreLogs wrote, one sync for all the writes since the
// last (group commit), until the store closes.
func (s *Store) runSyncer() {
	defer close(s.syncerDone)
	for {
		select {
		case <-s.kick:
		case <-s.stopSync:
			return
		}
		s.syncWritten()
	}
}

// syncWritten syncs the CommitLog and marks what was written before the sync durable, unless
// the log was cut or replaced meanwhile.
func (s *Store) syncWritten() {
	s.mu.RLock()
	st, gen, done := s.mu.state, s.mu.durable.gen, s.mu.durable.index
	s.mu.RUnlock()
	if st.last <= done {
		// A sync that began after this kick's write already covered it (the kick channel
		// holds one wake-up): nothing is waiting on a sync.
		return
	}
	start := time.Now()
	err := s.cl.SyncCommitLog()
	d := time.Since(start)
	s.stats.syncs.Add(1)
	s.stats.syncSeconds.observeDuration(d)
	if d > slowSync {
		s.log.Warn("slow raft log sync", "elapsed", d, "through", st.last)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		first := s.mu.durable.err == nil
		s.log.Error("raft log sync failed: entries written after the last good sync are not durable; "+
			"this node applies and acknowledges nothing more (the store is read-only until restarted)", "err", err)
		s.setDurableLocked(s.mu.durable.index, err)
		if first {
			s.storeFailed(err)
		}
		return
	}
	if gen == s.mu.durable.gen && st.last > s.mu.durable.index {
		s.setDurableLocked(st.last, nil)
		if st.end > s.syncedEnd.Load() {
			s.syncedEnd.Store(st.end)
		}
	}
}

// setDurableLocked records a new durable index or the first sync error and wakes the waiters.
// mu held for writing.
func (s *Store) setDurableLocked(index uint64, err error) {
	d := &s.mu.durable
	if d.err == nil {
		d.err = err
	}
	d.index = index
	if d.advanced != nil {
		close(d.advanced)
	}
	d.advanced = make(chan struct{})
}

// cutDurableLocked: the log was cut before entry from (or replaced, from = 0 with keep the new
// durable index): a sync that began earlier no longer vouches for what follows. mu held for
// writing.
func (s *Store) cutDurableLocked(keep uint64) {
	s.mu.durable.gen++
	s.setDurableLocked(min(s.mu.durable.index, keep), nil)
}

// markDurableLocked: everything up to index is durable now (a StoreLogs that synced itself,
// or a snapshot install). mu held for writing.
func (s *Store) markDurableLocked(index uint64) {
	if index > s.mu.durable.index {
		s.setDurableLocked(index, nil)
	}
}

// DurableIndex is the last entry this node holds durably: every entry with Options.Sync off.
func (s *Store) DurableIndex() uint64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if !s.sync {
		return s.mu.state.last
	}
	return s.mu.durable.index
}

// waitDurable returns once entry index (or the last entry, when index is past it) is durable
// here (at once without the overlap, where StoreLogs syncs before it returns), or with the
// sync's error, or errSyncStopped.
func (s *Store) waitDurable(index uint64) error {
	if !s.overlapping() {
		return nil
	}
	for {
		s.mu.RLock()
		d, last := s.mu.durable, s.mu.state.last
		s.mu.RUnlock()
		if d.err != nil {
			return d.err
		}
		if d.index >= min(index, last) {
			return nil
		}
		// Every entry a leader's StoreLogs left unsynced kicked the syncer, and a kick is
		// never lost (the channel holds one while a sync runs), so a sync is coming.
		select {
		case <-d.advanced:
		case <-s.stopSync:
			return errSyncStopped
		}
	}
}

// clampCommit is the commit index a leader may tell its followers: at most what it holds
// durably (rule 2). Without the overlap the leader's entries are durable once stored.
func (s *Store) clampCommit(commit uint64) uint64 {
	if !s.overlapping() {
		return commit
	}
	return min(commit, s.DurableIndex())
}

// gatedLog is the raft.LogStore Raft is given when the overlap is on (rule 3): GetLog of an
// entry this node holds but has not synced waits for the sync when the node is not leading.
type gatedLog struct {
	raft.LogStore
	s *Store
}

// IsMonotonic passes the wrapped store's answer on (raft.MonotonicLogStore).
func (g gatedLog) IsMonotonic() bool {
	m, ok := g.LogStore.(raft.MonotonicLogStore)
	return ok && m.IsMonotonic()
}

// GetLog implements raft.LogStore.
func (g gatedLog) GetLog(index uint64, l *raft.Log) error {
	if g.s.overlapping() && !g.s.isLeading() {
		if err := g.s.waitDurable(index); err != nil {
			return err
		}
	}
	return g.LogStore.GetLog(index, l)
}
