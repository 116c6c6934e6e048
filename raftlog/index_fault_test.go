package raftlog

import (
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/rocketraft/rocketraft/store"
)

// TestIndexWriteFaultIsAnError: a slot write the kernel cannot back with a page raises SIGBUS: a page of
// the sparse index file with no block behind it on a full disk (the chaos suite's disk-full faults found
// it: the broker died with "fatal error: fault" in denseIndex.put), or a page a failed disk cannot read in.
// Here the index file is cut beneath its mapping, which faults the same way. StoreLogs must fail with
// ErrIndexFault naming the file, leave nothing of the call visible, and store the same entries once the
// file can be written again, instead of killing the process.
func TestIndexWriteFaultIsAnError(t *testing.T) {
	root := t.TempDir()
	cfg := testStoreConfig(root, true)
	cl, err := store.Open(cfg, store.Options{Logger: testLogger(t, slog.LevelWarn), StoreHost: testHost, Framed: true})
	if err != nil {
		t.Fatal(err)
	}
	const perFile = 512 // 12 KiB: three pages of slots
	s, err := Open(cl, filepath.Join(root, "raft"), Options{Logger: testLogger(t, slog.LevelWarn), Sync: true,
		SlotsPerIndexFile: perFile})
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close(); _ = cl.Close() }()

	// Slots 0..169 lie in the first page; slot 170 starts at byte 4080 and ends in the second.
	g := &entryGen{rng: rand.New(rand.NewPCG(9, 9)), term: 1}
	mustStore(t, s, entries(g, 1, 169)...)
	path := filepath.Join(root, "raft", "index", fmt.Sprintf("%020d", 0))
	if err := os.Truncate(path, 4096); err != nil {
		t.Fatal(err)
	}
	next := entries(g, 170, 3)
	err = s.StoreLogs(next)
	if !errors.Is(err, ErrIndexFault) || !errorNames(err, path) {
		t.Fatalf("StoreLogs over a slot the kernel cannot back: %v, want ErrIndexFault naming %s", err, path)
	}
	if last, _ := s.LastIndex(); last != 169 {
		t.Fatalf("LastIndex after the failed StoreLogs: %d, want 169", last)
	}
	var got raft.Log
	if err := s.GetLog(169, &got); err != nil {
		t.Fatalf("GetLog(169) after the failed StoreLogs: %v", err)
	}

	if err := os.Truncate(path, perFile*slotSize); err != nil { // the disk has room again
		t.Fatal(err)
	}
	mustStore(t, s, next...)
	for _, l := range next {
		if err := s.GetLog(l.Index, &got); err != nil {
			t.Fatalf("GetLog(%d) after the retry: %v", l.Index, err)
		}
		if d := sameEntry(&got, l); d != "" {
			t.Fatalf("entry %d after the retry: %s", l.Index, d)
		}
	}
}

func errorNames(err error, s string) bool { return err != nil && strings.Contains(err.Error(), s) }

// TestDispatchFailureStopsTheNode: a follower's state machine cannot dispatch a committed entry because its
// store turned read-only (store.DispatchMessages met a full disk's fault writing the mapped ConsumeQueues:
// the chaos suite's disk-full-follower left such a node 1 message behind in two queues for good). The node
// must stop its Raft rather than skip the entry (which gave the entry's queue offsets to the next records on
// that node only), and once restarted on a sound store it catches up, its ConsumeQueues identical to the
// others'.
func TestDispatchFailureStopsTheNode(t *testing.T) {
	c := newCluster(t, clusterOptions{sync: true})
	li := c.leader()
	fi := (li + 1) % 3
	l := startLoad(c, 6)
	defer l.stop()
	l.progress("before the fault", 60)

	tn := c.nodes[fi]
	tn.crash.failDispatch.Store(true)
	// The node's view, not Raft's State: hashicorp/raft can report a shut-down follower as a
	// follower (Node.raftState, TestStoppedFollowerSaysShutdown).
	stopped := func() bool { return tn.n.Status().Role == "Shutdown" }
	for deadline := time.Now().Add(60 * time.Second); !stopped() && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if !stopped() {
		// Where the stop hangs, for the next person: every goroutine's stack.
		select {
		case <-tn.n.raftDown:
			t.Logf("the node told its raft to shut down; raft's state is %v", tn.n.rf().State())
		default:
			t.Logf("the node has not told its raft to shut down; raft's state is %v", tn.n.rf().State())
		}
		_ = pprof.Lookup("goroutine").WriteTo(os.Stderr, 2)
		t.Fatal("timed out after 1m0s waiting for the follower's raft to stop after its failed dispatch")
	}
	if st := tn.n.Status(); st.Role != "Shutdown" {
		t.Fatalf("the follower's status after its failed dispatch: %+v", st)
	}
	l.progress("with the follower stopped", 40)
	c.stop(fi)
	c.start(fi) // a new crashingLog: the store is sound again
	l.progress("after the follower restarted", 60)
	l.stopAndCheck()
}

// TestStoppedFollowerSaysShutdown: a follower whose store failed tells its Raft to shut down while
// Raft's run goroutine has already taken its leader's next AppendEntries. hashicorp/raft (v1.8.0)
// then sets its state back from Shutdown to Follower (appendEntries: "state != Follower") and ends:
// Raft is stopped, its State says Follower for good. TestDispatchFailureStopsTheNode timed out on it
// once under load (make test, load 17 on 2 cores: the follower stopped 2 ms after its failed dispatch,
// answered no RPC after, and its Raft's State never became Shutdown). The node must say it is shut
// down (Status, leaderCheck, IsReadyLeader: Node.raftState). Here the run goroutine is held where
// it begins to handle the AppendEntries (its response header's EncodePeer, before it looks at its
// state) while the node stops, so the order is certain.
func TestStoppedFollowerSaysShutdown(t *testing.T) {
	holds := map[string]*holdingTransport{} // written by c.start on this goroutine only
	c := newCluster(t, clusterOptions{sync: true, transport: func(id string, tr *raft.InmemTransport) raft.Transport {
		h := &holdingTransport{InmemTransport: tr, entered: make(chan struct{}), release: make(chan struct{})}
		holds[id] = h
		return h
	}})
	li := c.leader()
	fi := (li + 1) % 3
	l := startLoad(c, 6)
	defer l.stop()
	l.progress("before the fault", 20)

	tn := c.nodes[fi]
	h := holds[tn.id]
	h.armed.Store(true)
	waitFor(t, "the follower's raft to take an RPC", isClosed(h.entered))
	// The hook a failed sync, write or dispatch calls (Node.Start): the store is in fact sound.
	tn.n.log.storeFailed(errors.New("test: the store failed"))
	waitFor(t, "the node to tell its raft to shut down", isClosed(tn.n.raftDown))
	close(h.release)
	waitFor(t, "raft to set its state back to Follower after its shutdown (hashicorp/raft v1.8.0 does; "+
		"if it no longer does, Node.raftState's workaround and this test may go)",
		func() bool { return tn.n.rf().State() == raft.Follower })

	if st := tn.n.Status(); st.Role != "Shutdown" {
		t.Fatalf("the stopped follower's status: %+v, want the role Shutdown", st)
	}
	if err := tn.n.leaderCheck(); !errors.Is(err, ErrShutdown) {
		t.Fatalf("the stopped follower's leaderCheck: %v, want ErrShutdown", err)
	}
	if tn.n.IsReadyLeader() {
		t.Fatal("the stopped follower says it is the ready leader")
	}
	l.progress("with the follower stopped", 20)
	c.stop(fi)
	c.start(fi)
	l.progress("after the follower restarted", 20)
	l.stopAndCheck()
}

// holdingTransport holds the first EncodePeer after armed is set until release is closed:
// hashicorp/raft calls it (getRPCHeader) first thing when it handles an RPC.
type holdingTransport struct {
	*raft.InmemTransport
	armed   atomic.Bool
	entered chan struct{} // closed when the call is held
	release chan struct{}
}

func (h *holdingTransport) EncodePeer(id raft.ServerID, addr raft.ServerAddress) []byte {
	if h.armed.CompareAndSwap(true, false) {
		close(h.entered)
		<-h.release
	}
	return h.InmemTransport.EncodePeer(id, addr)
}

// isClosed is a waitFor condition: ch is closed.
func isClosed(ch <-chan struct{}) func() bool {
	return func() bool {
		select {
		case <-ch:
			return true
		default:
			return false
		}
	}
}
