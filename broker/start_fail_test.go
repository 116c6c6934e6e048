package broker_test

import (
	"net"
	"strings"
	"testing"

	"github.com/rocketraft/rocketraft/app/cluster"
	"github.com/rocketraft/rocketraft/broker"
	"github.com/rocketraft/rocketraft/raftlog"
)

// TestFailedStartReleasesStore: a Raft node whose Raft address is taken fails Start naming the address,
// and releases what it had started: a broker started next on the same store (the store lock) and the
// same listenPort (the client listener) comes up once the Raft address is free.
func TestFailedStartReleasesStore(t *testing.T) {
	cfg := cluster.RaftGroupConfigs(t, "", "broker-a", 1)[0]
	peers, err := raftlog.ParsePeers(cfg.Raft.DLegerPeers)
	if err != nil {
		t.Fatal(err)
	}
	taken, err := net.Listen("tcp", peers[0].Addr)
	if err != nil {
		t.Fatal(err)
	}
	b, err := broker.New(cfg, broker.Options{Logger: cluster.TestLogger(t, 0)})
	if err != nil {
		t.Fatal(err)
	}
	err = b.Start()
	if err == nil || !strings.Contains(err.Error(), peers[0].Addr) {
		t.Fatalf("Start with the Raft address taken: %v, want an error naming %s", err, peers[0].Addr)
	}
	taken.Close()

	b2, err := broker.New(cfg, broker.Options{Logger: cluster.TestLogger(t, 0)})
	if err != nil {
		t.Fatalf("a broker on the store of one whose Start failed: %v", err)
	}
	if err := b2.Start(); err != nil {
		t.Fatalf("a broker on the store and port of one whose Start failed: %v", err)
	}
	if err := b2.Close(); err != nil {
		t.Fatal(err)
	}
}
