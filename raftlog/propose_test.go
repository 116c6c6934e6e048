package raftlog

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/rocketraft/rocketraft/message"
	"github.com/rocketraft/rocketraft/store"
)

// TestProposeGroupsConcurrentPuts: puts from many goroutines (single messages and batches) on
// the leader are answered with the offsets every node assigned; the group's CommitLogs and
// ConsumeQueues come out identical; a follower refuses with a NotLeaderError naming the
// leader. Then the leader is closed: it hands leadership over before it shuts down, so when
// Close returns another node already runs for leader (it does not wait for an election
// timeout to notice the leader is gone), and a put on the closed node fails with ErrShutdown.
func TestProposeGroupsConcurrentPuts(t *testing.T) {
	c := newCluster(t, clusterOptions{})
	li := c.leader()
	ld := c.nodes[li].n
	ctx := context.Background()
	// Raft never hands its no-op and barrier entries to the state machine; the leader's
	// barrier and the empty command after it move every node's dispatch past them.
	waitFor(t, "every node dispatching the new leader's first entries", func() bool {
		end := ld.Log().End()
		for _, tn := range c.nodes {
			if tn.cl.DispatchedOffset() != end {
				return false
			}
		}
		return true
	})

	var mu sync.Mutex
	var acks []acked
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 25 {
				topic := fmt.Sprintf("T%d", g%2)
				q := int32(i % 3)
				msgs := []*message.Message{testMsg(topic, q, fmt.Sprintf("g%d-%d", g, i))}
				if i%5 == 0 {
					msgs = append(msgs, testMsg(topic, q, fmt.Sprintf("g%d-%d-b", g, i)))
				}
				res, err := ld.PutMessages(ctx, msgs)
				if err != nil {
					t.Errorf("put: %v", err)
					return
				}
				if res.Status != store.PutOK || res.Count != len(msgs) || strings.Count(res.MsgID, ",") != len(msgs)-1 {
					t.Errorf("put answered %+v", res)
				}
				mu.Lock()
				acks = append(acks, acked{res, msgs})
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	if got, err := ld.ProposeMeta(ctx, []byte("meta")); err != nil || got != nil {
		t.Fatalf("ProposeMeta without a MetaApplier = %v, %v", got, err)
	}
	c.converge()
	c.checkIdentical(map[string]int32{"T0": 3, "T1": 3})
	c.checkAcked(acks)
	if st := ld.Raft().Stats(); st != nil {
		t.Logf("leader: last index %s for %d puts", st["last_log_index"], len(acks))
	}

	f := c.nodes[(li+1)%3].n
	_, err := f.PutMessage(ctx, testMsg("T0", 0, "to a follower"))
	var nl *NotLeaderError
	if !errors.As(err, &nl) || !errors.Is(err, ErrNotLeader) || nl.LeaderID != c.nodes[li].id || nl.LeaderAddr != c.nodes[li].addr {
		t.Fatalf("put on a follower = %v, want a NotLeaderError naming %s", err, c.nodes[li].id)
	}
	_, err = ld.PutMessage(ctx, testMsg("T0", 0, strings.Repeat("x", 5<<10)))
	if !errors.Is(err, store.ErrMessageTooLarge) {
		t.Fatalf("put of a body over maxMessageSize = %v, want store.ErrMessageTooLarge", err)
	}

	c.stop(li)
	var states []raft.RaftState
	for i, tn := range c.nodes {
		if i != li {
			states = append(states, tn.n.Raft().State())
		}
	}
	if states[0] == raft.Follower && states[1] == raft.Follower {
		t.Fatalf("both remaining nodes are followers right after the leader closed: no handover")
	}
	if _, err := ld.PutMessage(ctx, testMsg("T0", 0, "closed")); !errors.Is(err, ErrShutdown) {
		t.Fatalf("put on a closed node = %v, want ErrShutdown", err)
	}
	c.leader()
}

// TestMetaCommands: metadata commands are applied on every node in log order, interleaved with
// puts, and the proposer gets what its node's MetaApplier answered.
func TestMetaCommands(t *testing.T) {
	metas := map[string]*mapMeta{}
	var mu sync.Mutex
	c := newCluster(t, clusterOptions{meta: func(id string) MetaApplier {
		mu.Lock()
		defer mu.Unlock()
		metas[id] = newMapMeta()
		return metas[id]
	}})
	ld := c.nodes[c.leader()].n
	ctx := context.Background()
	var last uint64
	for i := range 20 {
		resp, err := ld.ProposeMeta(ctx, []byte(fmt.Sprintf("k%d=v%d", i%7, i)))
		if err != nil {
			t.Fatalf("ProposeMeta: %v", err)
		}
		idx, ok := resp.(uint64)
		if !ok || idx <= last {
			t.Fatalf("ProposeMeta answered %v after index %d", resp, last)
		}
		last = idx
		if _, err := ld.PutMessage(ctx, testMsg("M", 0, fmt.Sprint(i))); err != nil {
			t.Fatalf("put: %v", err)
		}
	}
	c.converge()
	want := metas[c.nodes[0].id].snapshot()
	if len(want) != 7 || want["k6"] != "v13" {
		t.Fatalf("metadata %v", want)
	}
	for _, tn := range c.nodes[1:] {
		if got := metas[tn.id].snapshot(); !maps.Equal(got, want) {
			t.Fatalf("%s holds %v, n0 %v", tn.id, got, want)
		}
	}
	c.checkIdentical(map[string]int32{"M": 1})
	if _, err := c.nodes[(c.leader()+1)%3].n.ProposeMeta(ctx, []byte("x=y")); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("ProposeMeta on a follower = %v", err)
	}
}

// TestProposerBatchesWhileSlotsAreBusy: while every in-flight slot is taken, puts queue up;
// once a slot frees, everything queued goes into one entry: 16 concurrent puts (one of them
// a batch of 5) make one entry of 16 puts and 20 messages, the batch's records get
// consecutive queue offsets, and each put's offsets are its own.
func TestProposerBatchesWhileSlotsAreBusy(t *testing.T) {
	c := newCluster(t, clusterOptions{tune: func(cfg *Config) {
		cfg.MaxInFlight = 1
		cfg.MaxEntryMessages = 64
		cfg.MaxEntryBytes = 64 << 10
	}})
	ld := c.nodes[c.leader()].n
	if _, err := ld.PutMessage(context.Background(), testMsg("Q", 0, "first")); err != nil {
		t.Fatal(err)
	}
	before := ld.Stats()
	ld.prop.slots <- struct{}{} // the one slot is busy, as with an entry in flight
	type answer struct {
		res store.PutResult
		err error
		n   int
	}
	answers := make(chan answer, 16)
	for i := range 16 {
		n := 1
		if i == 7 {
			n = 5
		}
		var msgs []*message.Message
		for j := range n {
			msgs = append(msgs, testMsg("Q", 0, fmt.Sprintf("p%d-%d", i, j)))
		}
		ld.PutMessagesAsync(msgs, func(res store.PutResult, err error) { answers <- answer{res, err, n} })
	}
	waitFor(t, "16 puts queued", func() bool {
		ld.prop.mu.Lock()
		defer ld.prop.mu.Unlock()
		return len(ld.prop.mu.queue) == 16
	})
	<-ld.prop.slots
	seen := map[int64]bool{}
	for range 16 {
		a := <-answers
		if a.err != nil {
			t.Fatalf("put: %v", a.err)
		}
		if a.res.Count != a.n {
			t.Fatalf("a put of %d answered for %d", a.n, a.res.Count)
		}
		for k := range int64(a.n) {
			if seen[a.res.QueueOffset+k] {
				t.Fatalf("queue offset %d given twice", a.res.QueueOffset+k)
			}
			seen[a.res.QueueOffset+k] = true
		}
	}
	st := ld.Stats()
	if n, puts, msgs := st.EntryPuts.Count()-before.EntryPuts.Count(), st.EntryPuts.Sum-before.EntryPuts.Sum,
		st.EntryMessages.Sum-before.EntryMessages.Sum; n != 1 || puts != 16 || msgs != 20 {
		t.Fatalf("%d entries carried %v puts and %v messages; want 1 entry of 16 puts, 20 messages", n, puts, msgs)
	}
	for off := int64(1); off <= 20; off++ {
		if !seen[off] {
			t.Fatalf("queue offsets %v: %d missing after the first put's 0", seen, off)
		}
	}
}
