package raftlog

import (
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
	waitFor(t, "the follower's raft to stop after its failed dispatch", func() bool { return tn.n.rf().State() == raft.Shutdown })
	if st := tn.n.Status(); st.Role != "Shutdown" {
		t.Fatalf("the follower's status after its failed dispatch: %+v", st)
	}
	l.progress("with the follower stopped", 40)
	c.stop(fi)
	c.start(fi) // a new crashingLog: the store is sound again
	l.progress("after the follower restarted", 60)
	l.stopAndCheck()
}
