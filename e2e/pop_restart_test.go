package e2e

import (
	"context"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/rocketraft/rocketraft/app/cluster"
	"github.com/rocketraft/rocketraft/remoting"
)

// TestPopBrokerRestart: RocketMQ 5's pop across a restart of a single broker in its own process
// (SYNC_FLUSH, the same store), four messages popped and two acked before it (popAcrossFault says what
// comes back in each case):
//
//   - kill9-stored: SIGKILL after the check point and its acks reached the revive log;
//   - kill9-buffered: SIGKILL with the check point and its acks in the merge buffer (the four are handed
//     out again from the queue, nothing lost);
//   - term-buffered: SIGTERM with them in the merge buffer: Close writes the buffer, so the acked stay
//     acked and the two not acked come back from the revive service.
func TestPopBrokerRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("starts broker processes")
	}
	for _, tc := range []struct {
		name             string
		stored, graceful bool
	}{{"kill9-stored", true, false}, {"kill9-buffered", false, false}, {"term-buffered", false, true}} {
		t.Run(tc.name, func(t *testing.T) {
			popAcrossFault(t, "broker-r", tc.stored, tc.graceful, func(c *cluster.Cluster, w *remoting.Client, flags ...string) (string, func() string) {
				return startRestartableBroker(t, c, w, "broker-r", tc.graceful, flags...)
			})
		})
	}
}

// startRestartableBroker starts a SYNC_FLUSH broker named name in a process of its own, registered with c's
// name server, and returns its address and a restart: SIGTERM (graceful) or SIGKILL, then the same broker
// again on the same store and port.
func startRestartableBroker(t *testing.T, c *cluster.Cluster, w *remoting.Client, name string, graceful bool, flags ...string) (string, func() string) {
	t.Helper()
	port := cluster.FreePort(t)
	addr := "127.0.0.1:" + strconv.Itoa(port)
	args := append([]string{"-n", c.NamesrvAddr(), "--brokerName=" + name, "--brokerIP1=127.0.0.1",
		"--listenPort=" + strconv.Itoa(port), "--storePathRootDir=" + filepath.Join(t.TempDir(), "store"),
		"--flushDiskType=SYNC_FLUSH", "--mappedFileSizeCommitLog=4194304", "--maxMessageSize=65536",
		"--registerNameServerPeriod=1000", "--metricsPort=0"}, flags...)
	serving := func() {
		cluster.Eventually(t, 30*time.Second, func() bool {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			resp, err := w.Invoke(ctx, addr, remoting.NewRequest(remoting.GetBrokerRuntimeInfo, nil, nil))
			return err == nil && resp.Code == int32(remoting.Success)
		}, "broker %s at %s serving", name, addr)
	}
	child := startChildBroker(t, args...)
	serving()
	return addr, func() string {
		sig := syscall.SIGKILL
		if graceful {
			sig = syscall.SIGTERM
		}
		if err := child.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
		if err := child.Wait(); err != nil && graceful {
			t.Fatalf("broker after SIGTERM: %v", err)
		}
		child = startChildBroker(t, args...)
		serving()
		return addr
	}
}
