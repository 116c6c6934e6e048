package raftlog

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/rocketraft/rocketraft/store"
)

// TestPartitionedLeader runs the group on TCP through fault-injecting proxies and cuts the
// leader off from both followers while producers send: the old leader stops accepting puts
// (typed errors), the majority elects a new leader and keeps accepting, and after healing
// the old leader's uncommitted tail (appended in the old term, never committed) is replaced,
// its files match the others' again and nothing acknowledged is lost.
func TestPartitionedLeader(t *testing.T) {
	c := newCluster(t, clusterOptions{tcp: true, proxied: true, sync: true})
	li := c.leader()
	old := c.nodes[li].n
	l := startLoad(c, 6)
	defer l.stop()
	l.progress("before the partition", 40)

	cut := time.Now()
	c.isolate(li)
	// A put straight to the cut-off leader: appended to its log, never committed.
	tailErr := make(chan error, 1)
	old.PutMessageAsync(testMsg("A", 0, "uncommitted"), func(_ store.PutResult, err error) { tailErr <- err })
	waitFor(t, "the cut-off leader to step down", func() bool { return old.Status().Role != "Leader" })
	t.Logf("the cut-off leader stepped down %v after the cut (lease %v)", time.Since(cut), testRaftConfig(true).LeaderLeaseTimeout)
	err := <-tailErr
	if err == nil {
		t.Fatalf("a put on the cut-off leader succeeded")
	}
	if !errors.Is(err, ErrLeadershipLost) && !errors.Is(err, ErrNotLeader) {
		t.Fatalf("the put on the cut-off leader failed with %v, want ErrLeadershipLost or ErrNotLeader", err)
	}
	tailIndex := old.Raft().LastIndex()
	var tail raft.Log
	if err := old.Log().GetLog(tailIndex, &tail); err != nil {
		t.Fatalf("GetLog(%d) on the old leader: %v", tailIndex, err)
	}
	hadTail := errors.Is(err, ErrLeadershipLost) && tailIndex > old.Raft().CommitIndex()
	if _, err := old.PutMessage(context.Background(), testMsg("A", 0, "refused")); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("put on the stepped-down leader = %v, want ErrNotLeader", err)
	}

	waitFor(t, "a new leader among the majority", func() bool {
		for i, tn := range c.nodes {
			if i != li && tn.n.IsReadyLeader() {
				return true
			}
		}
		return false
	})
	l.progress("with the old leader cut off", 40)

	c.heal()
	l.progress("after healing", 40)
	acks := l.stopAndCheck()
	var now raft.Log
	if err := old.Log().GetLog(tailIndex, &now); err != nil {
		t.Fatalf("GetLog(%d) on the old leader after healing: %v", tailIndex, err)
	}
	t.Logf("old leader's last entry at the cut: %d (term %d, uncommitted tail: %v); now term %d; %d puts acknowledged, %d unknown",
		tailIndex, tail.Term, hadTail, now.Term, len(acks), l.unknown.Load())
	if hadTail && now.Term == tail.Term {
		t.Fatalf("entry %d of the old leader still has term %d after healing: its uncommitted tail was not truncated", tailIndex, tail.Term)
	}
}
