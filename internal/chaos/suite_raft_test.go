package chaos

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestShortSuiteRaft is the Raft group's short suite: three nodes as processes, through a kill -9 of the
// leader (an election replaces it, then it restarts as a follower) and a partition of a follower's peer
// links (through their proxies, dLegerPeersDial), under load. The checker must find nothing.
func TestShortSuiteRaft(t *testing.T) {
	if testing.Short() {
		t.Skip("starts broker processes")
	}
	bin := binaries(t)
	s, err := NewSchedule(ScheduleConfig{Seed: 8, Rounds: 2, Kinds: []string{KillWriter, PartitionRepl},
		MinFor: 2 * time.Second, MaxFor: 3 * time.Second, MinGap: 2 * time.Second, MaxGap: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultRunConfig()
	cfg.Mode = ModeRaft
	cfg.Bin, cfg.Dir, cfg.Schedule = bin, t.TempDir(), s
	cfg.FileSize = 4 << 20
	cfg.Warmup, cfg.Settle = 2*time.Second, 2*time.Second
	cfg.Out = logWriter{t}
	cfg.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	rep, err := Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + rep.String())
	if f := rep.Failures(); len(f) > 0 {
		for _, name := range []string{"n0", "n1", "n2"} {
			b, _ := os.ReadFile(filepath.Join(cfg.Dir, "logs", name+".log"))
			t.Logf("%s.log, last 3000 bytes:\n%s", name, b[max(0, len(b)-3000):])
		}
		t.Fatalf("FAIL: %v", f)
	}
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
