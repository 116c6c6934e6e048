package chaos

import (
	"strings"
	"testing"
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
}
