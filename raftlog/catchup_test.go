package raftlog

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/rocketraft/rocketraft/message"
)

// TestCatchUpBeyondRetention: a follower is offline while the others take snapshots and
// their retention deletes the oldest CommitLog files; back online it is behind the leader's
// first entry, so it installs a snapshot that carries the retained files (SnapshotStore),
// and from there on its CommitLog and ConsumeQueues are identical to the others'.
func TestCatchUpBeyondRetention(t *testing.T) {
	metas := map[string]*mapMeta{}
	c := newCluster(t, clusterOptions{meta: func(id string) MetaApplier {
		if metas[id] == nil {
			metas[id] = newMapMeta()
		}
		return metas[id]
	}, tune: snapshotOften})
	li := c.leader()
	off := (li + 1) % 3
	var acks []acked
	put := func(n int) {
		for i := range n {
			c.putKB(&acks, "A", int32(i%2))
		}
	}
	put(20)
	c.converge()
	offLast := c.nodes[off].n.Raft().LastIndex()
	c.stop(off)

	put(200) // about seven 32 KiB files
	leader := c.nodes[c.leader()]
	for i := range 10 {
		if _, err := leader.n.ProposeMeta(context.Background(), []byte(fmt.Sprintf("k%d=while-offline", i))); err != nil {
			t.Fatalf("ProposeMeta: %v", err)
		}
	}
	waitFor(t, "retention to delete the first commitlog files past the offline follower's log", func() bool {
		for _, tn := range c.running() {
			tn.cl.PruneCommitLog(tn.cl.DispatchedOffset())
		}
		first, _ := leader.n.Log().FirstIndex()
		return leader.cl.MinPhyOffset() >= 3*leader.cl.CommitLogFileSize() && first > offLast+1
	})
	minPhy := leader.cl.MinPhyOffset()
	first, _ := leader.n.Log().FirstIndex()
	t.Logf("leader %s: commitlog from %d, first entry %d; the offline follower's log ends at %d", leader.id, minPhy, first, offLast)

	c.start(off)
	put(30)
	c.converge()
	tn := c.nodes[off]
	if got := tn.cl.MinPhyOffset(); got == 0 {
		t.Fatalf("the follower's commitlog still starts at 0: it did not install the retained files")
	}
	c.checkIdentical(map[string]int32{"A": 2})
	c.checkAcked(acks)
	if got, want := metas[tn.id].snapshot(), metas[leader.id].snapshot(); !maps.Equal(got, want) || len(want) != 10 {
		t.Fatalf("metadata on the caught-up follower %v, on the leader %v", got, want)
	}
	t.Logf("follower %s: commitlog from %d, first entry %d, applied %d", tn.id, tn.cl.MinPhyOffset(), mustFirst(tn.n), tn.n.FSM().AppliedIndex())
}

func mustFirst(n *Node) uint64 {
	f, _ := n.Log().FirstIndex()
	return f
}

// TestCatchUpSeedsExpiredQueues: the records of queue B/0 all lie in CommitLog files that
// expired while a follower was offline, so the snapshot it installs carries none of them;
// its table of next queue offsets (snapshotHead.queues) makes the follower's B/0 go on where
// the leader's does, before and after a restart, and the next B/0 record gets the same queue
// offset on every node. Without the table the follower's B/0 started again at 0.
func TestCatchUpSeedsExpiredQueues(t *testing.T) { catchUpSeedsExpiredQueues(t, false) }

// TestCatchUpBySnapshotOverTCP is the same over the nodes' TCP transport: the snapshot travels as
// NetworkTransport's InstallSnapshot behind the listener the append frames share
// (append_transport.go), the entries after it as frames.
func TestCatchUpBySnapshotOverTCP(t *testing.T) { catchUpSeedsExpiredQueues(t, true) }

func catchUpSeedsExpiredQueues(t *testing.T, tcp bool) {
	c := newCluster(t, clusterOptions{tcp: tcp, tune: snapshotOften})
	li := c.leader()
	off := (li + 1) % 3
	var acks []acked
	put := func(topic string, n int) {
		for range n {
			c.putKB(&acks, topic, 0)
		}
	}
	put("B", 10)
	put("A", 10)
	c.converge()
	c.stop(off)
	put("A", 200)
	leader := c.nodes[c.leader()]
	waitFor(t, "retention to delete the commitlog files holding B/0's records", func() bool {
		for _, tn := range c.running() {
			tn.cl.PruneCommitLog(tn.cl.DispatchedOffset())
		}
		first, _ := leader.n.Log().FirstIndex()
		return leader.cl.MinPhyOffset() >= 3*leader.cl.CommitLogFileSize() && first > 30
	})
	c.start(off)
	put("A", 5)
	c.converge()
	tn := c.nodes[off]
	if tn.cl.MinPhyOffset() == 0 {
		t.Fatalf("the follower did not install a snapshot (its commitlog starts at 0)")
	}
	want := leader.cl.MaxOffsetInQueue("B", 0)
	if want != 10 {
		t.Fatalf("the leader's B/0 ends at %d, want 10", want)
	}
	check := func(when string) {
		t.Helper()
		if got := tn.cl.MaxOffsetInQueue("B", 0); got != want {
			t.Fatalf("%s: the caught-up follower's B/0 ends at %d, the leader's at %d", when, got, want)
		}
		if got := tn.cl.MinOffsetInQueue("B", 0); got != want {
			t.Fatalf("%s: the caught-up follower's B/0 starts at %d, want %d (its records expired)", when, got, want)
		}
	}
	check("after the install")
	c.stop(off)
	c.start(off)
	c.converge()
	check("after a restart")
	put("B", 3)
	c.converge()
	c.checkIdentical(map[string]int32{"A": 1, "B": 1})
	c.checkAcked(acks)
	for _, n := range c.running() {
		if got := n.cl.MaxOffsetInQueue("B", 0); got != want+3 {
			t.Fatalf("%s: B/0 ends at %d, want %d", n.id, got, want+3)
		}
	}
}

// snapshotOften makes the nodes snapshot and compact every few entries, so the retention can
// delete files a stopped follower still needs.
func snapshotOften(cfg *Config) {
	cfg.SnapshotThreshold = 32
	cfg.TrailingLogs = 8
	cfg.SnapshotInterval = 50 * time.Millisecond
}

// putKB puts one message of about 1 KiB to topic/q and adds it, with its answer, to acks.
func (c *cluster) putKB(acks *[]acked, topic string, q int32) {
	c.t.Helper()
	msgs := []*message.Message{testMsg(topic, q, fmt.Sprintf("%d-%s", len(*acks), strings.Repeat("x", 1000)))}
	res, err := c.put(context.Background(), msgs)
	if err != nil {
		c.t.Fatalf("put: %v", err)
	}
	*acks = append(*acks, acked{res, msgs})
}
