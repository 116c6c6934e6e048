package raftlog

import (
	"context"
	"sync"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/rocketraft/rocketraft/message"
)

// TestLeaderSyncOverlapAppliesNothingUnsynced: SYNC_FLUSH with the leader's sync overlapped
// (leader_sync.go). The leader's syncs are held; a put's entry is replicated and synced by the
// followers and Raft commits it on the leader (which the old order, sync before replication,
// could not do while the leader's sync is held: this shows the overlap), yet no node applies
// it and the put is not answered (rules 1 and 2). Once the leader's sync runs, the put is
// answered and every node applies the entry.
func TestLeaderSyncOverlapAppliesNothingUnsynced(t *testing.T) {
	// Every AppendEntries each node sends: how many carried entries or a commit index at or
	// past watchFrom, and the highest commit index sent.
	var sent struct {
		sync.Mutex
		watchFrom   uint64
		after       map[string]int
		maxCommitOf map[string]uint64
	}
	sent.after, sent.maxCommitOf = map[string]int{}, map[string]uint64{}
	c := newCluster(t, clusterOptions{sync: true, sent: func(from string, a *raft.AppendEntriesRequest) {
		sent.Lock()
		defer sent.Unlock()
		if sent.watchFrom == 0 {
			return
		}
		sent.after[from]++
		sent.maxCommitOf[from] = max(sent.maxCommitOf[from], a.LeaderCommitIndex)
	}})
	li := c.leader()
	ld := c.nodes[li]
	if !ld.n.log.overlapping() {
		t.Fatal("the leader's sync is not overlapped (Config.OverlapLeaderSync, a transport with pre-vote)")
	}
	if _, err := ld.n.PutMessages(context.Background(), []*message.Message{testMsg("O", 0, "first")}); err != nil {
		t.Fatal(err)
	}
	c.converge()
	before, _ := ld.n.log.LastIndex()

	release := make(chan struct{})
	ld.crash.hold.Store(&release)
	released := false
	defer func() {
		if !released {
			close(release)
		}
	}()
	done := make(chan error, 1)
	go func() {
		_, err := ld.n.PutMessages(context.Background(), []*message.Message{testMsg("O", 0, "held")})
		done <- err
	}()
	var want uint64
	waitFor(t, "the leader to store the held put's entry", func() bool {
		want, _ = ld.n.log.LastIndex()
		return want > before
	})
	waitFor(t, "Raft to commit the entry on the followers' copies while the leader's sync is held", func() bool {
		return ld.n.rf().CommitIndex() >= want
	})
	if d := ld.n.log.DurableIndex(); d >= want {
		t.Fatalf("the leader holds entry %d durably (%d) although its sync is held", want, d)
	}
	// Let the leader send a few more requests (every CommitTimeout, 5 ms, each follower gets
	// one with the commit index): what it sends stays below the entry (rule 2).
	sent.Lock()
	sent.watchFrom = want
	sent.Unlock()
	waitFor(t, "the leader to send ten more AppendEntries", func() bool {
		sent.Lock()
		defer sent.Unlock()
		return sent.after[ld.id] >= 10
	})
	sent.Lock()
	maxSent := sent.maxCommitOf[ld.id]
	sent.Unlock()
	if maxSent >= want {
		t.Fatalf("the leader told its followers commit index %d, covering entry %d it has not synced", maxSent, want)
	}
	for i, tn := range c.nodes {
		if i == li {
			continue
		}
		f := tn.n.fsm
		waitFor(t, tn.id+" to store the entry", func() bool { l, _ := tn.n.log.LastIndex(); return l >= want })
		if got := f.AppliedIndex(); got >= want {
			t.Fatalf("%s applied entry %d before the leader synced it", tn.id, got)
		}
	}
	select {
	case err := <-done:
		t.Fatalf("the put was answered (%v) before the leader synced its entry", err)
	default:
	}
	if got := ld.n.fsm.AppliedIndex(); got >= want {
		t.Fatalf("the leader applied entry %d before syncing it", got)
	}

	close(release)
	released = true
	if err := <-done; err != nil {
		t.Fatalf("put after the leader's sync: %v", err)
	}
	for _, tn := range c.nodes {
		waitFor(t, tn.id+" to apply the entry", func() bool { return tn.n.fsm.AppliedIndex() >= want })
	}
}

// watchedTransport is an in-memory transport that shows every AppendEntries it sends, alone
// or through a pipeline, to sent.
type watchedTransport struct {
	*raft.InmemTransport
	sent func(*raft.AppendEntriesRequest)
}

func (w *watchedTransport) AppendEntries(id raft.ServerID, target raft.ServerAddress, args *raft.AppendEntriesRequest,
	resp *raft.AppendEntriesResponse) error {
	w.sent(args)
	return w.InmemTransport.AppendEntries(id, target, args, resp)
}

func (w *watchedTransport) AppendEntriesPipeline(id raft.ServerID, target raft.ServerAddress) (raft.AppendPipeline, error) {
	p, err := w.InmemTransport.AppendEntriesPipeline(id, target)
	if err != nil {
		return nil, err
	}
	return watchedPipeline{AppendPipeline: p, sent: w.sent}, nil
}

type watchedPipeline struct {
	raft.AppendPipeline
	sent func(*raft.AppendEntriesRequest)
}

func (p watchedPipeline) AppendEntries(args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) (raft.AppendFuture, error) {
	p.sent(args)
	return p.AppendPipeline.AppendEntries(args, resp)
}
