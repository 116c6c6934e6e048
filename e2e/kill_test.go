package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/rocketraft/rocketraft/app/cluster"
	"github.com/rocketraft/rocketraft/app/servers"
)

// childBrokerEnv, when set, makes the test binary run a broker (config from the command line after "--")
// instead of the tests: the SIGKILL test needs a broker in a process of its own.
const childBrokerEnv = "ROCKETRAFT_E2E_CHILD_BROKER"

// runChildBroker runs the mqbroker command itself (config after "--"), signal handling included.
func runChildBroker() {
	args := os.Args[1:]
	for i, a := range args {
		if a == "--" {
			args = args[i+1:]
			break
		}
	}
	os.Exit(servers.RunBroker(args, os.Stdout, os.Stderr))
}

func startChildBroker(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	// --logDir= first: stderr only (the test's output), no files under the real $HOME; args may override it.
	cmd := exec.Command(os.Args[0], append([]string{"-test.run=^$", "--", "--logDir="}, args...)...)
	cmd.Env = append(os.Environ(), childBrokerEnv+"=1")
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return cmd
}

// TestKill9DuringSyncFlushLoad: a SYNC_FLUSH broker in its own process is killed with SIGKILL while
// producers send; after a restart on the same data, every message the client saw acknowledged is consumed.
func TestKill9DuringSyncFlushLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("starts broker processes")
	}
	c := cluster.Start(t, cluster.Options{NoBrokers: true})
	port := cluster.FreePort(t)
	addr := "127.0.0.1:" + strconv.Itoa(port)
	args := []string{"-n", c.NamesrvAddr(), "--brokerName=broker-k", "--brokerIP1=127.0.0.1",
		"--listenPort=" + strconv.Itoa(port), "--storePathRootDir=" + filepath.Join(t.TempDir(), "store"),
		"--flushDiskType=SYNC_FLUSH", "--mappedFileSizeCommitLog=1048576", "--maxMessageSize=65536", "--registerNameServerPeriod=1000", "--metricsPort=0"}
	child := startChildBroker(t, args...)
	w := newWireClient(t)
	waitBroker := func() {
		cluster.Eventually(t, 20*time.Second, func() bool {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			resp, err := w.Invoke(ctx, addr, remotingTopicCreate("Kill9"))
			return err == nil && resp.Code == 0
		}, "child broker at %s serving", addr)
		c.WaitTopicRoute("Kill9")
	}
	waitBroker()

	p := newProducer(t, c, producer.WithRetry(0), producer.WithSendMsgTimeout(3*time.Second))
	padding := strings.Repeat("p", 400) // ~600-byte records: 3000 of them span two 1 MiB CommitLog files
	var (
		mu    sync.Mutex
		acked []string
		seq   atomic.Int64
		stop  atomic.Bool
		wg    sync.WaitGroup
	)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				body := fmt.Sprintf("k9-%d-%s", seq.Add(1), padding)
				res, err := p.SendSync(context.Background(), primitive.NewMessage("Kill9", []byte(body)))
				if err == nil && res.Status == primitive.SendOK {
					mu.Lock()
					acked = append(acked, body)
					mu.Unlock()
				}
			}
		}()
	}
	// Kill once a few hundred sends were acknowledged, in the middle of the stream (and past several
	// 1 MiB CommitLog files).
	cluster.Eventually(t, 60*time.Second, func() bool { mu.Lock(); defer mu.Unlock(); return len(acked) >= 3000 }, "3000 acknowledged sends")
	if err := child.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = child.Wait()
	stop.Store(true)
	wg.Wait()
	mu.Lock()
	want := append([]string(nil), acked...)
	mu.Unlock()
	t.Logf("%d sends acknowledged before SIGKILL (of %d attempted)", len(want), seq.Load())

	startChildBroker(t, args...)
	waitBroker()
	got := newReceived()
	startConsumer(t, c, "CG_kill9", "Kill9", consumer.MessageSelector{}, got, consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset))
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		missing := 0
		for _, b := range want {
			if !got.has(b) {
				missing++
			}
		}
		if missing == 0 {
			return
		}
		select {
		case <-got.ch:
		case <-time.After(time.Second):
		}
	}
	var missing []string
	for _, b := range want {
		if !got.has(b) {
			missing = append(missing, b)
		}
	}
	t.Fatalf("%d of %d acknowledged messages were not consumed after the restart, e.g. %v", len(missing), len(want), missing[:min(5, len(missing))])
}

// TestSIGTERMShutsDownCleanly: the broker process exits 0 on SIGTERM after an ordered shutdown (abort file
// removed, so the next start is a normal recovery) and keeps every message.
func TestSIGTERMShutsDownCleanly(t *testing.T) {
	if testing.Short() {
		t.Skip("starts broker processes")
	}
	c := cluster.Start(t, cluster.Options{NoBrokers: true})
	port := cluster.FreePort(t)
	addr := "127.0.0.1:" + strconv.Itoa(port)
	root := filepath.Join(t.TempDir(), "store")
	args := []string{"-n", c.NamesrvAddr(), "--brokerName=broker-t", "--brokerIP1=127.0.0.1",
		"--listenPort=" + strconv.Itoa(port), "--storePathRootDir=" + root, "--mappedFileSizeCommitLog=1048576", "--maxMessageSize=65536",
		"--metricsPort=0"}
	child := startChildBroker(t, args...)
	w := newWireClient(t)
	cluster.Eventually(t, 20*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		resp, err := w.Invoke(ctx, addr, remotingTopicCreate("Term"))
		return err == nil && resp.Code == 0
	}, "child broker serving")
	c.WaitTopicRoute("Term")
	p := newProducer(t, c)
	sendN(t, p, "Term", "t", 20)
	if _, err := os.Stat(filepath.Join(root, "abort")); err != nil {
		t.Fatalf("no abort file while the broker runs: %v", err)
	}
	if err := child.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := child.Wait(); err != nil {
		t.Fatalf("broker exit after SIGTERM: %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, "abort")); !os.IsNotExist(err) {
		t.Fatalf("abort file left after a clean shutdown (stat: %v)", err)
	}
	startChildBroker(t, args...)
	cluster.Eventually(t, 20*time.Second, func() bool { return queueMaxOffset(t, w, addr, "Term") >= 0 }, "restarted")
	got := newReceived()
	c.WaitTopicRoute("Term")
	startConsumer(t, c, "CG_term", "Term", consumer.MessageSelector{}, got, consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset))
	got.waitDistinct(t, 20, 30*time.Second)
}
