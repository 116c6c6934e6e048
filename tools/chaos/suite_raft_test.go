package chaos

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rocketraft/rocketraft/internal/peertls"
	"github.com/rocketraft/rocketraft/internal/peertls/peertlstest"
)

// TestShortSuiteRaft is the Raft group's short suite: three nodes as processes, through a kill -9 of the
// leader (an election replaces it, then it restarts as a follower) and a partition of a follower's peer
// links (through their proxies, dLegerPeersDial), under load. The checker must find nothing.
func TestShortSuiteRaft(t *testing.T) {
	if testing.Short() {
		t.Skip("starts broker processes")
	}
	bin := binaries(t)
	rep := runShortSuite(t, bin, ModeRaft, "n0", "n1", "n2")
	// The suite did what it says: both faults ran (the partition on peer-link proxies, not skipped), and
	// writes resumed after the kill of the leader.
	if len(rep.Faults) != 2 || rep.Acked == 0 {
		t.Fatalf("faults %d, acked %d", len(rep.Faults), rep.Acked)
	}
	for _, f := range rep.Faults {
		if f.Kind == PartitionRepl && !strings.Contains(f.Target, "->") {
			t.Fatalf("partition-repl target %q (note %q): not the peer-link proxies", f.Target, f.Note)
		}
	}
	if d, ok := rep.maxFailover(); !ok || d < 0 {
		t.Fatalf("no write after the kill of the leader")
	}
	checkPopConsumer(t, rep)
}

// TestShortSuiteRaftNetShapes: the Raft group through a one-way partition of a follower's peer links, lossy
// peer links and the clients cut from the leader alone (its peers still reach it, so no election), under
// load; the checker must find nothing.
func TestShortSuiteRaftNetShapes(t *testing.T) {
	if testing.Short() {
		t.Skip("starts broker processes")
	}
	checkNetShapes(t, runShortSuiteWith(t, binaries(t), ModeRaft, netShapes(t), "n0", "n1", "n2"))
}

// TestShortSuiteRaftPeerTLS is TestShortSuiteRaft with peerTlsMode=enforcing: every peer link (through its
// fault proxy) is mutual TLS with certificates of a CA made for the test, naming rocketraft://chaos/<node>.
func TestShortSuiteRaftPeerTLS(t *testing.T) {
	if testing.Short() {
		t.Skip("starts broker processes")
	}
	bin := binaries(t)
	ca := peertlstest.NewCA(t, "chaos-cluster")
	var dir string
	rep := runShortSuiteWith(t, bin, ModeRaft, func(cfg *RunConfig) {
		dir = cfg.Dir
		certs := map[string]peertls.Config{}
		for _, n := range []string{"n0", "n1", "n2"} {
			certs[n] = ca.Node(brokerName, n)
		}
		cfg.BrokerArgs = func(node string) []string {
			c := certs[node]
			return []string{"--peerTlsMode=enforcing", "--peerTlsCertPath=" + c.CertPath, "--peerTlsKeyPath=" + c.KeyPath,
				"--peerTlsTrustCertPath=" + c.TrustCertPath}
		}
	}, "n0", "n1", "n2")
	if len(rep.Faults) != 2 || rep.Acked == 0 {
		t.Fatalf("faults %d, acked %d", len(rep.Faults), rep.Acked)
	}
	if d, ok := rep.maxFailover(); !ok || d < 0 {
		t.Fatalf("no write after the kill of the leader")
	}
	for _, n := range []string{"n0", "n1", "n2"} {
		b, err := os.ReadFile(filepath.Join(dir, "logs", n+".log"))
		if err != nil || !strings.Contains(string(b), "peer TLS enforcing") {
			t.Fatalf("%s.log does not say peer TLS is on (%v)", n, err)
		}
	}
}

// TestShortSuiteRaftPowerLoss is issue 12's crash test as processes: the Raft group with SYNC_FLUSH through a
// power loss of the leader (a minority including the leader: killed, its CommitLog and ConsumeQueues cut
// back to what it had synced, restarted on that) and then of all three nodes at once, under load. Nothing
// acknowledged may be lost and no queue offset may map to two messages (the checker's lost and
// offsets-twice), and the replicas must end alike.
func TestShortSuiteRaftPowerLoss(t *testing.T) {
	if testing.Short() {
		t.Skip("starts broker processes")
	}
	rep := runShortSuiteWith(t, binaries(t), ModeRaft, func(cfg *RunConfig) {
		s, err := NewSchedule(ScheduleConfig{Seed: 5, Rounds: 2, Kinds: []string{PowerLossWriter, PowerLossAll},
			MinFor: 2 * time.Second, MaxFor: 3 * time.Second, MinGap: 2 * time.Second, MaxGap: 3 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		cfg.Schedule = s
	}, "n0", "n1", "n2")
	if len(rep.Faults) != 2 || rep.Acked == 0 || rep.PowerLosses != 2 || rep.LossAllowed {
		t.Fatalf("faults %d, acked %d, power losses %d (loss allowed %v)", len(rep.Faults), rep.Acked, rep.PowerLosses, rep.LossAllowed)
	}
	for _, f := range rep.Faults {
		// Each cut node's note says what its cut dropped ("... unsynced bytes dropped ..." or "nothing
		// unsynced ..."); a skipped fault or a failed cut has no such note.
		want := 1
		if f.Kind == PowerLossAll {
			want = 3
		}
		if n := strings.Count(f.Note, "unsynced"); n != want {
			t.Fatalf("fault %s on %s: %d nodes cut, want %d (note %q)", f.Kind, f.Target, n, want, f.Note)
		}
		if f.FirstAck < 0 {
			t.Fatalf("fault %s: no write acknowledged after it began", f.Kind)
		}
	}
}

// TestShortSuiteRaftDiskFailure: the Raft group with SYNC_FLUSH through a failed disk of the leader under
// load (disk-eio-writer: the kernel answers its store disk's I/O with EIO, disk.go). The leader's sync fails,
// it stops acknowledging and its Raft steps down, another node leads and takes the writes; at the heal the
// broker is stopped, its disk repaired and the broker restarted, and it catches up. The checker must find
// nothing. Skipped where the machine cannot fail a disk (DiskSupport: root, loop devices).
func TestShortSuiteRaftDiskFailure(t *testing.T) {
	if testing.Short() {
		t.Skip("starts broker processes")
	}
	if err := DiskSupport(); err != nil {
		t.Skip(err)
	}
	rep := runShortSuiteWith(t, binaries(t), ModeRaft, func(cfg *RunConfig) {
		s, err := NewSchedule(ScheduleConfig{Seed: 6, Rounds: 1, Kinds: []string{DiskEIOWriter},
			MinFor: 3 * time.Second, MaxFor: 3 * time.Second, MinGap: 2 * time.Second, MaxGap: 2 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		cfg.Schedule = s
	}, "n0", "n1", "n2")
	if len(rep.Faults) != 1 || rep.Acked == 0 || rep.DiskFaults != 1 {
		t.Fatalf("faults %d, acked %d, disk faults %d", len(rep.Faults), rep.Acked, rep.DiskFaults)
	}
	f := rep.Faults[0]
	// The note says the broker met the failure, stopped on SIGTERM, and was restarted on its repaired disk.
	for _, want := range []string{`name "input/output error"`, "stopped", "e2fsck", "restart to listening"} {
		if !strings.Contains(f.Note, want) {
			t.Fatalf("fault note %q lacks %q", f.Note, want)
		}
	}
	if d, ok := rep.maxFailover(); !ok || d < 0 || d > f.MaxGap+time.Second {
		t.Fatalf("no write acknowledged after the leader's disk failed (failover %v)", d)
	}
}
