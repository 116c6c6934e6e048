package store

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rocketraft/rocketraft/internal/powerloss"
	"github.com/rocketraft/rocketraft/message"
)

const (
	crashChildEnv = "STORE_CRASH_CHILD_DIR"
	// crashJournalEnv makes the child journal its syncs (internal/powerloss).
	crashJournalEnv = "STORE_CRASH_CHILD_JOURNAL"
)

func crashConfig(dir string) Config {
	cfg := DefaultConfig()
	cfg.StorePathRootDir = dir
	cfg.FlushDiskType = SyncFlush
	cfg.MappedFileSizeCommitLog = 64 << 10
	cfg.MaxMessageSize = 8 << 10
	cfg.MappedFileSizeConsumeQueue = 64 * cqUnitSize
	cfg.MaxHashSlotNum = 256
	cfg.MaxIndexNum = 1024
	cfg.FlushIntervalConsumeQueue = 20
	cfg.FlushConsumeQueueThoroughInterval = 50
	cfg.SyncFlushTimeout = 60000
	return cfg
}

func crashBody(writer, seq int) string {
	return fmt.Sprintf("writer-%d-seq-%d-%s", writer, seq, strings.Repeat("z", (writer*131+seq*17)%900))
}

// TestCrashChild is the writer the SIGKILL tests run in a child process: it writes with
// SYNC_FLUSH from several goroutines and prints every acknowledged message.
func TestCrashChild(t *testing.T) {
	dir := os.Getenv(crashChildEnv)
	if dir == "" {
		t.Skip("only runs as the child of TestSIGKILLWithSyncFlush and TestPowerLossWithSyncFlush")
	}
	opts := Options{StoreHost: testStoreHost}
	if os.Getenv(crashJournalEnv) != "" {
		j, err := powerloss.Open(dir)
		if err != nil {
			fmt.Println("ERR", err)
			os.Exit(2)
		}
		opts.SyncObserver = j
	}
	s, err := Open(crashConfig(dir), opts)
	if err != nil {
		fmt.Println("ERR", err)
		os.Exit(2)
	}
	if err := s.Start(); err != nil {
		fmt.Println("ERR", err)
		os.Exit(2)
	}
	var out sync.Mutex
	var wg sync.WaitGroup
	deadline := time.Now().Add(60 * time.Second)
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for seq := 0; time.Now().Before(deadline); seq++ {
				m := testMessage("Crash", int32(w), crashBody(w, seq), map[string]string{message.PropertyKeys: fmt.Sprintf("w%d-s%d", w, seq)})
				res, err := s.PutMessage(context.Background(), m)
				if err != nil {
					out.Lock()
					fmt.Println("ERR", err)
					out.Unlock()
					continue
				}
				if res.Status != PutOK {
					continue // written but not acknowledged as durable
				}
				out.Lock()
				fmt.Printf("ACK %d %d %d %d\n", w, seq, res.QueueOffset, res.PhysicalOffset)
				out.Unlock()
			}
		}(w)
	}
	wg.Wait()
	os.Exit(3) // the parent should have killed us long before
}

type ack struct {
	writer, seq  int
	queueOffset  int64
	physicalOffs int64
}

func TestSIGKILLWithSyncFlush(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns a child process")
	}
	dir := t.TempDir()
	acks := runCrashChild(t, dir, false)
	checkAcksRecovered(t, dir, acks)
}

// TestPowerLossWithSyncFlush: as TestSIGKILLWithSyncFlush, and after the SIGKILL the files are
// cut back to what the child had synced (internal/powerloss: the CommitLog and ConsumeQueue
// bytes it wrote and never fdatasynced become zeros), as a power loss may leave them. Every
// acknowledged message is still there, intact, at its queue offset; recovery is clean.
func TestPowerLossWithSyncFlush(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns a child process")
	}
	dir := t.TempDir()
	acks := runCrashChild(t, dir, true)
	rep, err := powerloss.Cut(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("power loss: %s", rep)
	if rep.Kept+len(rep.Files) == 0 {
		t.Fatal("the journal named no file: the store reported no sync")
	}
	checkAcksRecovered(t, dir, acks)
}

// runCrashChild runs TestCrashChild on dir (journaling its syncs when journal is set), kills it
// with SIGKILL after killAfter acknowledgements and returns them.
func runCrashChild(t *testing.T, dir string, journal bool) []ack {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+dir)
	if journal {
		cmd.Env = append(cmd.Env, crashJournalEnv+"=1")
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var acks []ack
	sc := bufio.NewScanner(stdout)
	const killAfter = 600
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "ERR") {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Fatalf("child: %s", line)
		}
		f := strings.Fields(line)
		if len(f) != 5 || f[0] != "ACK" {
			continue
		}
		var a ack
		a.writer, _ = strconv.Atoi(f[1])
		a.seq, _ = strconv.Atoi(f[2])
		a.queueOffset, _ = strconv.ParseInt(f[3], 10, 64)
		a.physicalOffs, _ = strconv.ParseInt(f[4], 10, 64)
		acks = append(acks, a)
		if len(acks) == killAfter {
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
		}
	}
	err = cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("child did not die of SIGKILL: %v", err)
	}
	if len(acks) < killAfter {
		t.Fatalf("child acknowledged only %d messages", len(acks))
	}
	if _, err := os.Stat(crashConfig(dir).abortPath()); err != nil {
		t.Fatalf("abort file missing after the crash: %v", err)
	}
	return acks
}

// checkAcksRecovered opens the crashed store in dir and checks that every acknowledged message
// is there, intact, dispatched at its queue offset, and that recovery left no partial record.
func checkAcksRecovered(t *testing.T, dir string, acks []ack) {
	t.Helper()
	s := openStore(t, crashConfig(dir), testOptions(t))
	if s.lastExitOK {
		t.Fatal("recovery after SIGKILL took the normal path")
	}
	waitDispatched(t, s)
	// Every acknowledged message is there, intact, dispatched at its queue offset and indexed.
	for _, a := range acks {
		m, err := s.LookMessageByOffset(a.physicalOffs)
		if err != nil {
			t.Fatalf("ack %+v: %v", a, err)
		}
		if string(m.Body) != crashBody(a.writer, a.seq) || m.QueueOffset != a.queueOffset || m.QueueID != int32(a.writer) {
			t.Fatalf("ack %+v: stored %q at queue offset %d", a, m.Body, m.QueueOffset)
		}
		phy, err := s.CommitLogOffsetInQueue("Crash", int32(a.writer), a.queueOffset)
		if err != nil || phy != a.physicalOffs {
			t.Fatalf("ack %+v: consume queue points at %d, %v", a, phy, err)
		}
	}
	r, err := s.QueryMessage("Crash", fmt.Sprintf("w%d-s%d", acks[0].writer, acks[0].seq), 4, 0, 1<<62)
	if err != nil || len(r.Records) != 1 {
		t.Fatalf("index lookup of the first ack: %d records, %v", len(r.Records), err)
	}
	r.Release()
	// No partial record: the CommitLog is a sequence of valid records up to its end, and
	// every queue is dense.
	end, reason := s.scanCommitLog(s.MinPhyOffset())
	if reason != "" || end != s.MaxPhyOffset() {
		t.Fatalf("commitlog scan stops at %d (%s), end %d", end, reason, s.MaxPhyOffset())
	}
	for w := int32(0); w < 4; w++ {
		got := readQueue(t, s, "Crash", w)
		if int64(len(got)) != s.MaxOffsetInQueue("Crash", w) {
			t.Fatalf("queue %d: read %d of %d", w, len(got), s.MaxOffsetInQueue("Crash", w))
		}
		for i, m := range got {
			if m.QueueOffset != int64(i) {
				t.Fatalf("queue %d: offset %d at position %d", w, m.QueueOffset, i)
			}
		}
	}
	t.Logf("%d acknowledged before SIGKILL; %d bytes of commitlog recovered", len(acks), s.MaxPhyOffset())
}
