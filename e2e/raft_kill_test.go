package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/rocketraft/rocketraft/app/cluster"
	"github.com/rocketraft/rocketraft/remoting"
)

// raftKillsEnv sets how many times TestRaftKill9Leader kills the leader (default 1; `make chaos-raft`
// runs 10).
const raftKillsEnv = "ROCKETRAFT_RAFT_KILLS"

// raftTimersEnv: "default" runs the child nodes with the product's election timers (dLegerHeartbeatTimeoutMs
// and dLegerElectionTimeoutMs 500, lease 250), as `make chaos-raft` does to measure failover; otherwise
// they run with twice those, which keeps a loaded test machine from electing anew without a fault.
const raftTimersEnv = "ROCKETRAFT_RAFT_TIMERS"

// raftChild is one node of a Raft group running as a child process (the mqbroker command).
type raftChild struct {
	addr string
	dir  string // storePathRootDir
	args []string
	cmd  *exec.Cmd
}

// TestRaftKill9Leader: a three-node Raft group of child processes (SYNC_FLUSH), the official Go client
// sending and a push consumer reading; the leader is killed with SIGKILL during the load, and brought
// back (it rejoins as a follower) before the next kill. Every message the client saw acknowledged with
// SEND_OK is consumed at the queue offset its send got, no queue offset is used twice, per-queue order
// holds. The test logs, per kill, the time until the name server routes brokerId 0 to the new master and
// until the client's first SEND_OK from it (the official client finds a new master at its route
// refresh, every 30 s), with median and worst.
func TestRaftKill9Leader(t *testing.T) { runRaftKill9(t, "") }

// TestRaftKill9LeaderVIP is TestRaftKill9Leader with the master's virtual address (masterVipAddress
// 127.0.0.100; nodes at 127.0.0.11-13 on one listenPort): the client's cached route names the address,
// which the new master takes after its barrier, so the client's sends reach it without a route refresh.
// It logs, per kill, the time until the new master listens on the address and until the client's first
// SEND_OK from it, with median and worst (compare TestRaftKill9Leader's).
func TestRaftKill9LeaderVIP(t *testing.T) { runRaftKill9(t, "127.0.0.100") }

// runRaftKill9 runs the SIGKILL test, with the master's virtual address vip unless it is "".
func runRaftKill9(t *testing.T, vip string) {
	if testing.Short() {
		t.Skip("starts broker processes")
	}
	kills := 1
	if v := os.Getenv(raftKillsEnv); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("%s=%q is not a positive count", raftKillsEnv, v)
		}
		kills = n
	}
	c := cluster.Start(t, cluster.Options{NoBrokers: true})
	const group = "broker-r"
	topic := "RaftKill9"
	if vip != "" {
		topic = "RaftKill9VIP"
	}
	nodes := startRaftChildren(t, c, group, vip)
	w := newWireClient(t)
	master := func(not string) *raftChild { return raftChildMaster(t, c, w, group, vip, nodes, not) }
	m := master("")
	raftCreateTopic(t, w, m.addr, topic)
	c.WaitTopicRoute(topic)

	got := newReceived()
	startConsumer(t, c, "CG_raft_kill", topic, consumer.MessageSelector{}, got, consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset))
	p := newProducer(t, c, producer.WithRetry(2), producer.WithSendMsgTimeout(3*time.Second))
	load := startRaftLoad(p, topic, 4, 400)
	// The load's senders all wait on a send when the kill comes; the official client does not fail a
	// request when its connection drops (it waits out the send timeout, 3 s here as by default), so their
	// first SEND_OK from the new master comes after that timeout. The probe, a second producer sending
	// every 50 ms with a 1 s timeout, shows when a send begun after the kill gets through.
	probe := startRaftProbe(newProducer(t, c, producer.WithRetry(2), producer.WithSendMsgTimeout(time.Second)), topic, 100, 50*time.Millisecond)
	// With the virtual address the route's brokerId 0 is that address all along: while the group elects the
	// name server routes it as the stand-in master (namesrv/raftgroup.go), never a member's own address,
	// which a client would keep for its 30 s even if that member is the next one killed.
	var rw *routeWatch
	if vip != "" {
		rw = watchRoutes(t, c, topic, group)
	}
	var routed, served, probed []time.Duration
	for k := 0; k < kills; k++ {
		before := load.count()
		cluster.Eventually(t, 90*time.Second, func() bool { return load.count() >= before+500 }, "500 acknowledged sends before kill %d", k+1)
		m = master("") // the leader now (an election may have moved it since the last kill)
		killed := time.Now()
		if err := m.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = m.cmd.Wait()
		next := master(m.addr)
		routed = append(routed, time.Since(killed))
		cluster.Eventually(t, 90*time.Second, func() bool { return !load.firstBy(next.addr, killed).IsZero() }, "a SEND_OK from the new master %s", next.addr)
		served = append(served, load.firstBy(next.addr, killed).Sub(killed))
		cluster.Eventually(t, 90*time.Second, func() bool { return !probe.firstBy(next.addr, killed).IsZero() }, "a probe SEND_OK from the new master %s", next.addr)
		probed = append(probed, probe.firstBy(next.addr, killed).Sub(killed))
		what := "routed as brokerId 0"
		if vip != "" {
			what = "listening on " + vip
		}
		t.Logf("kill %d of %s: new master %s %s after %v, first SEND_OK from it after %v (the probe's after %v)", k+1, m.addr, next.addr, what,
			routed[k].Round(time.Millisecond), served[k].Round(time.Millisecond), probed[k].Round(time.Millisecond))
		m.cmd = startChildBroker(t, m.args...) // back as a follower: the next kill leaves a quorum
		old := m.addr
		cluster.Eventually(t, 60*time.Second, func() bool {
			addrs, err := c.BrokerAddrs(group)
			return err == nil && slices.Contains(mapValues(addrs), old)
		}, "the killed node %s registered again", old)
	}
	if rw != nil {
		rw.stop()
		rw.mu.Lock()
		others := slices.DeleteFunc(slices.Collect(maps.Keys(rw.standInAddrs)), func(a string) bool { return strings.HasPrefix(a, vip+":") })
		rw.mu.Unlock()
		t.Logf("routes read during the kills: %d, %d with a stand-in master, %d without a master", rw.answers.Load(), rw.standIn.Load(), rw.withoutMaster.Load())
		if len(others) > 0 {
			t.Errorf("the route named %v as the stand-in master, want only the virtual address %s", others, vip)
		}
		if rw.standIn.Load() == 0 {
			t.Errorf("no route read between a kill and the next master's registration: the stand-in was not exercised")
		}
	}
	before := load.count()
	cluster.Eventually(t, 60*time.Second, func() bool { return load.count() >= before+100 }, "100 acknowledged sends after the last kill")
	acks := load.stop()
	probeAcks := probe.stop()
	mode := "without masterVipAddress"
	if vip != "" {
		mode = "with masterVipAddress " + vip
	}
	t.Logf("%s, %d kills: %d sends acknowledged, %d failed; kill to new master (routed, or holding the address): median %v, worst %v; kill to the client's first SEND_OK from the new master: median %v, worst %v; to the probe's first: median %v, worst %v (%d probe sends acknowledged, %d failed)",
		mode, kills, len(acks), load.failed.Load(), median(routed), slices.Max(routed).Round(time.Millisecond), median(served), slices.Max(served).Round(time.Millisecond),
		median(probed), slices.Max(probed).Round(time.Millisecond), len(probeAcks), probe.failed.Load())
	if f := load.failures(); len(f) > 0 {
		t.Logf("failed sends by error: %v", f)
	}
	checkRaftHistory(t, append(acks, probeAcks...), got, 120*time.Second)
	assertSameTail(t, w, nodes, topic)
	assertSameCommitLog(t, w, nodes)
}

// raftHoldsVIP reports whether the node at addr says (GET_RAFT_STATUS) that it listens on the master's
// virtual address.
func raftHoldsVIP(w *remoting.Client, addr string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	resp, err := w.Invoke(ctx, addr, remoting.NewRequest(remoting.GetRaftStatus, nil, nil))
	if err != nil || resp.Code != int32(remoting.Success) {
		return false
	}
	var st struct {
		Master           bool   `json:"master"`
		MasterVipAddress string `json:"masterVipAddress"`
	}
	return json.Unmarshal(resp.Body, &st) == nil && st.Master && st.MasterVipAddress != ""
}

// startRaftChildren starts a three-node Raft group brokerName of child processes (SYNC_FLUSH, 1 s
// election timers) registered with c's name server: on 127.0.0.1 with a port each, or with vip (the
// master's virtual address) on 127.0.0.11-13 with one client port; extra are more flags of every node.
func startRaftChildren(t *testing.T, c *cluster.Cluster, brokerName, vip string, extra ...string) []*raftChild {
	t.Helper()
	hosts := []string{"127.0.0.1", "127.0.0.1", "127.0.0.1"}
	ports := []int{cluster.FreePort(t), cluster.FreePort(t), cluster.FreePort(t)}
	var peers []string
	if vip != "" {
		hosts = []string{"127.0.0.11", "127.0.0.12", "127.0.0.13"}
		port, raftPort := cluster.FreePortOn(t, append([]string{vip}, hosts...)...), cluster.FreePortOn(t, hosts...)
		for raftPort == port { // neither is bound yet
			raftPort = cluster.FreePortOn(t, hosts...)
		}
		ports = []int{port, port, port}
		for i := 0; i < 3; i++ {
			peers = append(peers, fmt.Sprintf("n%d-%s:%d", i, hosts[i], raftPort))
		}
	} else {
		for i := 0; i < 3; i++ {
			peers = append(peers, fmt.Sprintf("n%d-127.0.0.1:%d", i, cluster.FreePort(t)))
		}
	}
	var nodes []*raftChild
	for i := 0; i < 3; i++ {
		dir := filepath.Join(t.TempDir(), fmt.Sprintf("%s-n%d", brokerName, i))
		n := &raftChild{addr: net.JoinHostPort(hosts[i], strconv.Itoa(ports[i])), dir: dir, args: []string{"-n", c.NamesrvAddr(), "--brokerName=" + brokerName,
			"--brokerIP1=" + hosts[i], "--listenPort=" + strconv.Itoa(ports[i]), "--metricsPort=0",
			"--storePathRootDir=" + dir, "--flushDiskType=SYNC_FLUSH",
			"--mappedFileSizeCommitLog=4194304", "--maxMessageSize=65536", "--registerNameServerPeriod=1000",
			"--enableDLegerCommitLog=true", "--dLegerPeers=" + strings.Join(peers, ";"), fmt.Sprintf("--dLegerSelfId=n%d", i)}}
		if os.Getenv(raftTimersEnv) != "default" {
			n.args = append(n.args, "--dLegerHeartbeatTimeoutMs=1000", "--dLegerElectionTimeoutMs=1000", "--dLegerLeaderLeaseTimeoutMs=500")
		}
		if vip != "" {
			n.args = append(n.args, "--masterVipAddress="+vip)
		}
		n.args = append(n.args, extra...)
		n.cmd = startChildBroker(t, n.args...)
		nodes = append(nodes, n)
	}
	return nodes
}

// raftChildMaster waits for the master of brokerName among nodes that is not the node at address not: the
// one the name server routes as brokerId 0, or with vip the one that listens on the address (the route
// names the address all along).
func raftChildMaster(t *testing.T, c *cluster.Cluster, w *remoting.Client, brokerName, vip string, nodes []*raftChild, not string) *raftChild {
	t.Helper()
	var m *raftChild
	cluster.Eventually(t, 60*time.Second, func() bool {
		addrs, err := c.BrokerAddrs(brokerName)
		if err != nil || addrs[0] == "" {
			return false
		}
		m = nil
		for _, n := range nodes {
			if n.addr == not {
				continue
			}
			if vip == "" && n.addr == addrs[0] || vip != "" && raftHoldsVIP(w, n.addr) {
				m = n
			}
		}
		return m != nil
	}, "a master of %s registered as brokerId 0 (not %q)", brokerName, not)
	return m
}

// assertSameCommitLog checks that the nodes' CommitLog files are byte-identical up to the lowest
// dispatched position (commitLogMaxOffset: committed and applied everywhere).
func assertSameCommitLog(t *testing.T, w *remoting.Client, nodes []*raftChild) {
	t.Helper()
	to := int64(-1)
	for _, n := range nodes {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		resp, err := w.Invoke(ctx, n.addr, remoting.NewRequest(remoting.GetBrokerRuntimeInfo, nil, nil))
		cancel()
		if err != nil || resp.Code != int32(remoting.Success) {
			t.Fatalf("runtime info of %s: %v %v", n.addr, err, resp)
		}
		var kv struct {
			Table map[string]string `json:"table"`
		}
		if err := json.Unmarshal(resp.Body, &kv); err != nil {
			t.Fatal(err)
		}
		off, err := strconv.ParseInt(kv.Table["commitLogMaxOffset"], 10, 64)
		if err != nil {
			t.Fatalf("commitLogMaxOffset of %s: %v", n.addr, err)
		}
		if to < 0 || off < to {
			to = off
		}
	}
	var sums [][32]byte
	for _, n := range nodes {
		h := sha256.New()
		const fileSize = 4 << 20 // --mappedFileSizeCommitLog
		for start := int64(0); start < to; start += fileSize {
			data, err := os.ReadFile(filepath.Join(n.dir, "commitlog", fmt.Sprintf("%020d", start)))
			if err != nil {
				t.Fatal(err)
			}
			h.Write(data[:min(int64(len(data)), to-start)])
		}
		sums = append(sums, [32]byte(h.Sum(nil)))
	}
	for i := 1; i < len(sums); i++ {
		if sums[i] != sums[0] {
			t.Fatalf("CommitLog of %s differs from %s's over [0, %d): sha256 %x and %x", nodes[i].addr, nodes[0].addr, to, sums[i], sums[0])
		}
	}
	t.Logf("CommitLog files of the three nodes identical over [0, %d) (sha256 %x)", to, sums[0])
}

// assertSameTail waits until every node answers the same max offset for every queue of topic (a node
// restarted after its kill may still be catching up).
func assertSameTail(t *testing.T, w *remoting.Client, nodes []*raftChild, topic string) {
	t.Helper()
	var seen []string
	cluster.Eventually(t, 60*time.Second, func() bool {
		seen = seen[:0]
		same := true
		for q := 0; q < 4; q++ {
			var first int64 = -1
			for _, n := range nodes {
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				resp, err := w.Invoke(ctx, n.addr, remoting.NewRequest(remoting.GetMaxOffset, map[string]string{"topic": topic, "queueId": strconv.Itoa(q)}, nil))
				cancel()
				if err != nil || resp.Code != int32(remoting.Success) {
					return false
				}
				got, _ := strconv.ParseInt(resp.ExtFields["offset"], 10, 64)
				seen = append(seen, fmt.Sprintf("%s q%d=%d", n.addr, q, got))
				if first >= 0 && got != first {
					same = false
				}
				first = got
			}
		}
		return same
	}, "every node at the same max offsets: %v", seen)
}

func mapValues(m map[int64]string) []string {
	var out []string
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2].Round(time.Millisecond)
}
