package chaos

import (
	"context"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// binaries returns the folder holding mqnamesrv and mqbroker: $CHAOS_BIN when set (make test sets it to
// the bin/ that make build has just filled), else a build of this tree's commands into a temporary folder.
func binaries(t *testing.T) string {
	t.Helper()
	if dir := os.Getenv("CHAOS_BIN"); dir != "" {
		for _, b := range []string{"mqnamesrv", "mqbroker"} {
			if _, err := os.Stat(filepath.Join(dir, b)); err != nil {
				t.Fatalf("CHAOS_BIN=%s: %v (run make build)", dir, err)
			}
		}
		return dir
	}
	dir := t.TempDir()
	cmd := exec.Command("go", "build", "-o", dir+string(filepath.Separator), "../../cmd/mqnamesrv", "../../cmd/mqbroker")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return dir
}

type logWriter struct{ t *testing.T }

func (w logWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(b), "\n"))
	return len(b), nil
}

// TestShortSuite is the short version of make chaos: a SYNC_MASTER + SYNC_FLUSH master and slave, as
// processes, through a kill -9 of the master (restarted) and a partition of the replication link, under
// load. The checker must find nothing: no acknowledged message lost, none missing on the slave when the
// master died, no duplicate of a send made once, no order violation, no offset used twice, replicas alike.
func TestShortSuite(t *testing.T) {
	if testing.Short() {
		t.Skip("starts broker processes")
	}
	bin := binaries(t)
	rep := runShortSuite(t, bin, ModeMasterSlave, "master", "slave")
	// The suite did what it says: faults ran, writes resumed after the kill, the slave was scanned at it.
	if len(rep.Faults) != 2 || rep.Acked == 0 || len(rep.ReplicaLost) != 1 || rep.ReplicaLost[0].Before == 0 {
		t.Fatalf("faults %d, acked %d, kill scans %v", len(rep.Faults), rep.Acked, rep.ReplicaLost)
	}
	if d, ok := rep.maxFailover(); !ok || d < 0 {
		t.Fatalf("no write after the kill of the master")
	}
	checkPopConsumer(t, rep)
}

// checkPopConsumer: the pop consumer ran through the faults, held messages unacked and got them back.
func checkPopConsumer(t *testing.T, rep *Report) {
	t.Helper()
	if p := rep.Pop; p == nil || !rep.Info.PopDrained || p.IDs < rep.Acked || p.Held == 0 || p.AfterHeld < p.Held {
		t.Fatalf("pop consumer %+v, drained %v, acked %d: want every acknowledged id, some held, each back", p, rep.Info.PopDrained, rep.Acked)
	}
}

// netShapes is the short suites' schedule of the network shapes beyond partitions: a one-way partition of a
// follower's replication links, lossy replication links, and the clients cut from the writer alone.
func netShapes(t *testing.T) func(*RunConfig) {
	return func(cfg *RunConfig) {
		s, err := NewSchedule(ScheduleConfig{Seed: 3, Rounds: 3, Kinds: []string{OneWayRepl, LossyRepl, CutClientWriter},
			MinFor: 2 * time.Second, MaxFor: 3 * time.Second, MinGap: 2 * time.Second, MaxGap: 3 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		cfg.Schedule = s
	}
}

// checkNetShapes: every fault of netShapes ran on its target (none skipped), and writes resumed after each.
func checkNetShapes(t *testing.T, rep *Report) {
	t.Helper()
	if len(rep.Faults) != 3 || rep.Acked == 0 {
		t.Fatalf("faults %d, acked %d", len(rep.Faults), rep.Acked)
	}
	for _, f := range rep.Faults {
		if strings.HasPrefix(f.Note, "skipped") || !strings.Contains(f.Target, "->") {
			t.Fatalf("fault %s on %q (%s): not on a proxy", f.Kind, f.Target, f.Note)
		}
		if f.FirstAck < 0 {
			t.Fatalf("fault %s: no write acknowledged after it began", f.Kind)
		}
	}
}

// TestShortSuiteNetShapes: the master and slave through a one-way partition of the HA link, a lossy HA
// link and the clients cut from the master alone, under load; the checker must find nothing.
func TestShortSuiteNetShapes(t *testing.T) {
	if testing.Short() {
		t.Skip("starts broker processes")
	}
	checkNetShapes(t, runShortSuiteWith(t, binaries(t), ModeMasterSlave, netShapes(t), "master", "slave"))
}

// runShortSuite runs a short suite in mode: a kill -9 of the writer and a partition of the replication
// links, two rounds, under load; it fails the test (with the tail of each named process's log) when the
// checker finds anything.
func runShortSuite(t *testing.T, bin, mode string, logs ...string) *Report {
	t.Helper()
	return runShortSuiteWith(t, bin, mode, nil, logs...)
}

// runShortSuiteWith is runShortSuite with tune applied to the run's config.
func runShortSuiteWith(t *testing.T, bin, mode string, tune func(*RunConfig), logs ...string) *Report {
	t.Helper()
	s, err := NewSchedule(ScheduleConfig{Seed: 8, Rounds: 2, Kinds: []string{KillWriter, PartitionRepl},
		MinFor: 2 * time.Second, MaxFor: 3 * time.Second, MinGap: 2 * time.Second, MaxGap: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultRunConfig()
	cfg.Mode = mode
	cfg.Bin, cfg.Dir, cfg.Schedule = bin, t.TempDir(), s
	cfg.FileSize = 4 << 20
	cfg.Warmup, cfg.Settle = 2*time.Second, 2*time.Second
	cfg.Out = logWriter{t}
	cfg.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	if tune != nil {
		tune(&cfg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	rep, err := Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + rep.String())
	if f := rep.Failures(); len(f) > 0 {
		for _, name := range logs {
			b, _ := os.ReadFile(filepath.Join(cfg.Dir, "logs", name+".log"))
			t.Logf("%s.log, last 3000 bytes:\n%s", name, b[max(0, len(b)-3000):])
		}
		t.Fatalf("FAIL: %v", f)
	}
	return rep
}
