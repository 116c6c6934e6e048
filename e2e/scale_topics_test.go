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

	"github.com/rocketraft/rocketraft/app/cluster"
	"github.com/rocketraft/rocketraft/client"
	"github.com/rocketraft/rocketraft/protocol"
)

// scaleTopicsEnv turns TestScaleTopics on: the number of topics (make scale-topics sets 10000).
const scaleTopicsEnv = "ROCKETRAFT_SCALE_TOPICS"

// TestScaleTopics (issue 16, points 2 and 3; a long run, off unless ROCKETRAFT_SCALE_TOPICS=N): a SYNC_FLUSH
// broker in its own process gets N topics of 8 queues (created one after the other through the admin
// API), one message to each topic (queue i % 8), a SIGTERM and a restart, a second message to each topic
// and a SIGKILL right after the last acknowledgement and a restart; every acknowledged message is pulled
// back after each restart. The log prints the times (creation, stop, start until serving) and the broker
// process's memory mappings, open files and resident memory at each step: figures, not assertions.
func TestScaleTopics(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv(scaleTopicsEnv))
	if n <= 0 {
		t.Skipf("set %s=N to run (make scale-topics)", scaleTopicsEnv)
	}
	const queues = 8
	c := cluster.Start(t, cluster.Options{NoBrokers: true})
	port := cluster.FreePort(t)
	addr := "127.0.0.1:" + strconv.Itoa(port)
	args := []string{"-n", c.NamesrvAddr(), "--brokerName=broker-s", "--brokerIP1=127.0.0.1",
		"--listenPort=" + strconv.Itoa(port), "--storePathRootDir=" + filepath.Join(t.TempDir(), "store"),
		"--flushDiskType=SYNC_FLUSH", "--metricsPort=0", "--autoCreateTopicEnable=false"}
	cl := client.New(client.Config{Namesrvs: []string{c.NamesrvAddr()}, Timeout: 10 * time.Second, ConnsPerAddr: 4})
	t.Cleanup(func() { _ = cl.Close() })
	ctx := context.Background()
	topic := func(i int) string { return "Scale_" + strconv.Itoa(i) }

	// start runs the broker and returns once it answers a send, with the time that took.
	start := func() (*exec.Cmd, time.Duration) {
		t0 := time.Now()
		child := startChildBroker(t, args...)
		cluster.Eventually(t, 120*time.Second, func() bool {
			cctx, cancel := context.WithTimeout(ctx, time.Second)
			defer cancel()
			_, err := cl.SendMessage(cctx, addr, &client.Send{Group: "PG_scale", Topic: "SELF_TEST_TOPIC", BrokerName: "broker-s", Body: []byte("probe")})
			return err == nil
		}, "broker at %s serving", addr)
		return child, time.Since(t0)
	}
	child, took := start()
	t.Logf("first start: serving after %v; %s", took.Round(time.Millisecond), procCounts(child.Process.Pid))

	t0 := time.Now()
	for i := range n {
		tc := &protocol.TopicConfig{TopicName: topic(i), ReadQueueNums: queues, WriteQueueNums: queues, Perm: protocol.PermRead | protocol.PermWrite}
		if err := cl.CreateTopic(ctx, addr, tc); err != nil {
			t.Fatalf("create %s: %v", topic(i), err)
		}
	}
	t.Logf("created %d topics x %d queues one after the other in %v; %s", n, queues, time.Since(t0).Round(time.Millisecond), procCounts(child.Process.Pid))
	if r, err := cl.Route(ctx, topic(n-1)); err != nil || len(r.QueueDatas) == 0 {
		t.Fatalf("route of the last topic created: %v, %v", r, err)
	}

	sendRound := func(round int) int64 {
		t0 := time.Now()
		var acked atomic.Int64
		each(n, func(i int) {
			body := fmt.Sprintf("r%d-%s", round, topic(i))
			res, err := cl.SendMessage(ctx, addr, &client.Send{Group: "PG_scale", Topic: topic(i), BrokerName: "broker-s", QueueID: int32(i % queues), Body: []byte(body)})
			if err == nil && res.SendStatus == "SEND_OK" {
				acked.Add(1)
			} else if err != nil {
				t.Errorf("send to %s: %v", topic(i), err)
			}
		})
		t.Logf("round %d: %d of %d sends acknowledged (SYNC_FLUSH) in %v; %s", round, acked.Load(), n, time.Since(t0).Round(time.Millisecond), procCounts(child.Process.Pid))
		return acked.Load()
	}
	// pullAll pulls queue i % 8 of every topic from offset 0 and checks it holds rounds messages (long
	// polls: a send is acknowledged before dispatch indexes it).
	pullAll := func(rounds int) {
		t0 := time.Now()
		var bad atomic.Int64
		each(n, func(i int) {
			got, offset := 0, int64(0)
			var err error
			for deadline := time.Now().Add(30 * time.Second); got < rounds && time.Now().Before(deadline); {
				var res *client.PullResult
				res, err = cl.PullMessage(ctx, addr, &client.Pull{Group: "CG_scale", Topic: topic(i), BrokerName: "broker-s",
					QueueID: int32(i % queues), Offset: offset, MaxNums: 32, LongPoll: true, Suspend: 2 * time.Second})
				if err != nil {
					break
				}
				for _, m := range res.Msgs {
					if strings.HasSuffix(string(m.Body), "-"+topic(i)) {
						got++
					}
				}
				if res.NextBegin >= 0 {
					offset = res.NextBegin
				}
			}
			if got != rounds && bad.Add(1) <= 5 {
				t.Errorf("%s queue %d: %d messages pulled (err %v), want %d", topic(i), i%queues, got, err, rounds)
			}
		})
		t.Logf("pulled every topic back (%d rounds each) in %v, %d wrong", rounds, time.Since(t0).Round(time.Millisecond), bad.Load())
	}

	if got := sendRound(1); got != int64(n) {
		t.Fatalf("round 1: %d of %d acknowledged", got, n)
	}
	pullAll(1)

	t0 = time.Now()
	_ = child.Process.Signal(syscall.SIGTERM)
	_ = child.Wait()
	t.Logf("stop (SIGTERM until the process exited): %v", time.Since(t0).Round(time.Millisecond))
	child, took = start()
	t.Logf("restart after SIGTERM: serving after %v; %s", took.Round(time.Millisecond), procCounts(child.Process.Pid))
	pullAll(1)

	if got := sendRound(2); got != int64(n) {
		t.Fatalf("round 2: %d of %d acknowledged", got, n)
	}
	_ = child.Process.Signal(syscall.SIGKILL)
	_ = child.Wait()
	child, took = start()
	t.Logf("restart after SIGKILL: serving after %v; %s", took.Round(time.Millisecond), procCounts(child.Process.Pid))
	pullAll(2)
	t0 = time.Now()
	_ = child.Process.Signal(syscall.SIGTERM)
	_ = child.Wait()
	t.Logf("stop after the SIGKILL restart: %v", time.Since(t0).Round(time.Millisecond))
}

// each runs fn(0..n-1) on 16 goroutines.
func each(n int, fn func(i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := next.Add(1) - 1; i < int64(n); i = next.Add(1) - 1 {
				fn(int(i))
			}
		}()
	}
	wg.Wait()
}

// procCounts is a process's memory mappings, open files and resident memory, from /proc.
func procCounts(pid int) string {
	maps, _ := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid))
	fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	rss := "?"
	if st, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid)); err == nil {
		for _, l := range strings.Split(string(st), "\n") {
			if strings.HasPrefix(l, "VmRSS:") {
				rss = strings.Join(strings.Fields(l)[1:], " ")
			}
		}
	}
	return fmt.Sprintf("broker pid %d: %d mappings, %d open files, RSS %s", pid, strings.Count(string(maps), "\n"), len(fds), rss)
}
