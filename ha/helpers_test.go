package ha

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/rocketraft/rocketraft/internal/testutil"
	"github.com/rocketraft/rocketraft/store"
)

// testConfig has short intervals so the tests run quickly; no test depends on their exact value.
func testConfig() Config {
	c := DefaultConfig()
	c.HASendHeartbeatInterval = 100
	c.HAHousekeepingInterval = 3000
	c.HATransferBatchSize = 4 << 10
	c.SlaveTimeout = 10000 // tests of the timeout set their own
	return c
}

const testFileSize = 64 << 10

// eventually is testutil.WaitFor with a formatted description.
func eventually(t testing.TB, timeout time.Duration, cond func() bool, format string, args ...any) {
	t.Helper()
	testutil.WaitFor(t, timeout, fmt.Sprintf(format, args...), cond)
}

// newLogSink returns the lines the code under test logs (at debug level), kept for assertions and
// passed to t.Log.
func newLogSink(t testing.TB) (*testutil.LogLines, *slog.Logger) {
	s := testutil.NewLogLines(t)
	return s, slog.New(slog.NewTextHandler(s, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// pair is a master service and a slave client on in-memory logs.
type pair struct {
	master, slave *memLog
	svc           *Service
	client        *Client
	logs          *testutil.LogLines
	log           *slog.Logger
}

// localChecker answers tail checks straight from the master's log, as the broker does over
// remoting.
type localChecker struct{ cl CommitLog }

func (c localChecker) CheckTail(_ context.Context, req CheckRequest) (CheckResponse, error) {
	return AnswerCheck(c.cl, req), nil
}

func startService(t testing.TB, cfg Config, cl CommitLog, fileSize int64, log *slog.Logger) *Service {
	t.Helper()
	svc, err := NewService(cfg, cl, ServiceOptions{Logger: log, ListenAddr: "127.0.0.1:0", FileSize: fileSize})
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Close() })
	return svc
}

func startClient(t testing.TB, cfg Config, cl CommitLog, fileSize int64, addr string, checker TailChecker, log *slog.Logger) *Client {
	t.Helper()
	cfg.HAMasterAddress = addr
	c, err := NewClient(cfg, cl, ClientOptions{Logger: log, FileSize: fileSize, Checker: checker})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// newPair starts a master on master and a slave on slave (fresh logs when nil), with the tail
// check.
func newPair(t testing.TB, master, slave *memLog) *pair {
	t.Helper()
	if master == nil {
		master = newMemLog(testFileSize)
	}
	if slave == nil {
		slave = newMemLog(testFileSize)
	}
	sink, log := newLogSink(t)
	p := &pair{master: master, slave: slave, logs: sink, log: log}
	p.svc = startService(t, testConfig(), master, testFileSize, log.With("side", "master"))
	p.client = startClient(t, testConfig(), slave, testFileSize, p.svc.Addr().String(), localChecker{master}, log.With("side", "slave"))
	return p
}

// waitIdentical waits until the slave's log equals the master's from the slave's start on.
func waitIdentical(t testing.TB, master, slave *memLog) {
	t.Helper()
	eventually(t, 20*time.Second, func() bool {
		mBase, m := master.bytes()
		sBase, s := slave.bytes()
		return len(m) > 0 && sBase >= mBase && bytes.Equal(m[sBase-mBase:], s)
	}, "slave log identical to the master's (master max %d, slave max %d)", master.MaxPhyOffset(), slave.MaxPhyOffset())
}

// waitStatus runs Wait and returns the status it completes with.
func waitStatus(t testing.TB, svc *Service, end int64) store.PutStatus {
	t.Helper()
	ch := make(chan store.PutStatus, 1)
	svc.Wait(end, func(s store.PutStatus) { ch <- s })
	select {
	case s := <-ch:
		return s
	case <-time.After(30 * time.Second):
		t.Fatalf("Wait(%d) never completed", end)
		return 0
	}
}
