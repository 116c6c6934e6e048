package raftlog

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/rocketraft/rocketraft/message"
)

// TestStatsCountWhatHappened: after concurrent puts (single messages and batches) on a
// SYNC_FLUSH group, the leader's counters hold every message it proposed (entry messages sum
// = messages put, entry puts sum = puts), one sample of every send stage per put, and its
// StoreLogs calls as leader; every node synced once per StoreLogs call, and the followers'
// calls are counted as follower appends.
func TestStatsCountWhatHappened(t *testing.T) {
	c := newCluster(t, clusterOptions{sync: true})
	li := c.leader()
	ld := c.nodes[li].n
	before := ld.Stats()
	puts, msgs := putConcurrently(t, ld, 6, 20, func(g, i int) []*message.Message {
		batch := []*message.Message{testMsg("S", int32(i%2), fmt.Sprintf("g%d-%d", g, i))}
		if i%4 == 0 {
			batch = append(batch, testMsg("S", int32(i%2), fmt.Sprintf("g%d-%d-b", g, i)))
		}
		return batch
	})
	if t.Failed() {
		return
	}
	c.converge()
	st := ld.Stats()
	if got := st.EntryMessages.Sum - before.EntryMessages.Sum; got != float64(msgs) {
		t.Errorf("entry messages sum grew by %v, %d messages were put", got, msgs)
	}
	if got := st.EntryPuts.Sum - before.EntryPuts.Sum; got != float64(puts) {
		t.Errorf("entry puts sum grew by %v, %d puts were made", got, puts)
	}
	entries := st.EntryMessages.Count() - before.EntryMessages.Count()
	if entries == 0 || entries > uint64(puts) {
		t.Errorf("%d message entries for %d puts", entries, puts)
	}
	for _, name := range SendStages {
		if got := st.Stages[name].Count() - before.Stages[name].Count(); got != uint64(puts) {
			t.Errorf("stage %s has %d samples, %d puts were answered", name, got, puts)
		}
	}
	if st.LeaderStoreEntries.Count() == 0 || st.LeaderStoreEntries.Sum < float64(entries) {
		t.Errorf("leader StoreLogs: %d calls, %v entries; %d message entries proposed", st.LeaderStoreEntries.Count(),
			st.LeaderStoreEntries.Sum, entries)
	}
	for i, tn := range c.nodes {
		ns := tn.n.Stats()
		calls := ns.LeaderStoreEntries.Count() + ns.FollowerStoreEntries.Count()
		// A follower syncs in every StoreLogs; the leader's syncer (leader_sync.go) syncs once
		// for whatever StoreLogs calls wrote since its last sync, so at most once per call.
		if ns.Syncs > calls || ns.Syncs < ns.FollowerStoreEntries.Count() || ns.SyncSeconds.Count() != ns.Syncs ||
			(i == li && ns.Syncs == 0) {
			t.Errorf("%s: %d syncs (%d timed) for %d StoreLogs calls (%d as a follower)", tn.id, ns.Syncs,
				ns.SyncSeconds.Count(), calls, ns.FollowerStoreEntries.Count())
		}
		if i != li && ns.FollowerStoreEntries.Sum < float64(entries) {
			t.Errorf("%s: follower appends stored %v entries, the leader proposed %d", tn.id, ns.FollowerStoreEntries.Sum, entries)
		}
	}
	t.Logf("%d puts, %d messages in %d entries (%.1f messages/entry); leader: %d syncs", puts, msgs, entries,
		float64(msgs)/float64(entries), st.Syncs)
}

// TestReplicateSplitOverTCP: on a group whose entries travel as append frames, every put's
// replicate stage is split into send, quorum and commit, and the three parts add up to the
// stage; the leader timed its appends with entries and the followers theirs.
func TestReplicateSplitOverTCP(t *testing.T) {
	c := newCluster(t, clusterOptions{tcp: true})
	li := c.leader()
	ld := c.nodes[li].n
	before := ld.Stats()
	puts, _ := putConcurrently(t, ld, 4, 25, func(g, i int) []*message.Message {
		return []*message.Message{testMsg("S", 0, fmt.Sprintf("g%d-%d", g, i))}
	})
	if t.Failed() {
		return
	}
	c.converge()
	st := ld.Stats()
	var parts float64
	for _, name := range ReplicateStages {
		h, b := st.Replicate[name], before.Replicate[name]
		if got := h.Count() - b.Count(); got != uint64(puts) {
			t.Errorf("replicate part %s has %d samples, %d puts were answered", name, got, puts)
		}
		parts += h.Sum - b.Sum
	}
	whole := st.Stages[StageReplicate].Sum - before.Stages[StageReplicate].Sum
	if d := parts - whole; d > 1e-6*float64(puts) || d < -1e-6*float64(puts) {
		t.Errorf("the replicate parts add up to %.6f s, the stage to %.6f s", parts, whole)
	}
	if n := st.AppendSeconds[AppendLeader].Count() - before.AppendSeconds[AppendLeader].Count(); n == 0 {
		t.Error("the leader timed no append")
	}
	for i, tn := range c.nodes {
		if i == li {
			continue
		}
		if n := tn.n.Stats().AppendSeconds[AppendFollower].Count(); n == 0 {
			t.Errorf("%s timed no append as a follower", tn.id)
		}
	}
	per := func(sum float64) float64 { return 1e3 * sum / float64(puts) }
	t.Logf("replicate %.3f ms per put: send %.3f, quorum %.3f, commit %.3f", per(whole),
		per(st.Replicate[ReplicateSend].Sum-before.Replicate[ReplicateSend].Sum),
		per(st.Replicate[ReplicateQuorum].Sum-before.Replicate[ReplicateQuorum].Sum),
		per(st.Replicate[ReplicateCommit].Sum-before.Replicate[ReplicateCommit].Sum))
}

// putConcurrently makes each puts on node from goroutines goroutines at once, put i of goroutine g
// being batch(g, i), and returns the puts and messages acknowledged; a failed put fails the test.
func putConcurrently(t *testing.T, node *Node, goroutines, each int, batch func(g, i int) []*message.Message) (puts, msgs int) {
	t.Helper()
	var wg sync.WaitGroup
	var mu sync.Mutex
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				b := batch(g, i)
				if _, err := node.PutMessages(context.Background(), b); err != nil {
					t.Errorf("put: %v", err)
					return
				}
				mu.Lock()
				puts++
				msgs += len(b)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return puts, msgs
}
