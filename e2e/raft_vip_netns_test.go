package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"

	"github.com/rocketraft/rocketraft/app/cluster"
	"github.com/rocketraft/rocketraft/app/servers"
	"github.com/rocketraft/rocketraft/message"
	"github.com/rocketraft/rocketraft/remoting"
)

// Child modes of the test binary for tests that run processes in network namespaces (TestMain).
const (
	// childNamesrvEnv: run the mqnamesrv command (arguments after "--").
	childNamesrvEnv = "ROCKETRAFT_E2E_CHILD_NAMESRV"
	// childProducerEnv: run runChildProducer (arguments after "--": name server, topic, create-topic address).
	childProducerEnv = "ROCKETRAFT_E2E_CHILD_PRODUCER"
)

// childArgs are the arguments after "--".
func childArgs() []string {
	for i, a := range os.Args {
		if a == "--" {
			return os.Args[i+1:]
		}
	}
	return nil
}

func runChildNamesrv() { os.Exit(servers.RunNamesrv(childArgs(), os.Stdout, os.Stderr)) }

// runChildProducer is an official Go client producer in a process of its own: it creates the topic
// through the given broker address (retrying until a master answers there), then sends from two
// goroutines until its stdin closes, printing a line per result to stdout:
//
//	ok <unix nanos> <storing broker host:port> <queue> <offset>
//	fail <unix nanos> <error>
func runChildProducer() {
	rlog.SetLogLevel("error")
	args := childArgs()
	if len(args) != 3 {
		fmt.Fprintln(os.Stderr, "child producer: want <namesrv> <topic> <create-topic address>")
		os.Exit(2)
	}
	ns, topic, createAt := args[0], args[1], args[2]
	w := remoting.NewClient(remoting.ClientConfig{DialTimeout: time.Second}, nil)
	for deadline := time.Now().Add(2 * time.Minute); ; {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		resp, err := w.Invoke(ctx, createAt, remotingTopicCreate(topic))
		cancel()
		if err == nil && resp.Code == int32(remoting.Success) {
			break
		}
		if time.Now().After(deadline) {
			fmt.Fprintf(os.Stderr, "child producer: create topic %s at %s: %v %v\n", topic, createAt, err, resp)
			os.Exit(1)
		}
		time.Sleep(100 * time.Millisecond) // a child process polling a broker that is not up yet
	}
	_ = w.Close()
	p, err := rocketmq.NewProducer(producer.WithNsResolver(primitive.NewPassthroughResolver([]string{ns})),
		producer.WithGroupName("PG_netns"), producer.WithInstanceName(instance("netns")),
		producer.WithRetry(2), producer.WithSendMsgTimeout(3*time.Second))
	if err == nil {
		err = p.Start()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "child producer: %v\n", err)
		os.Exit(1)
	}
	var (
		out     sync.Mutex
		stopped = make(chan struct{})
		wg      sync.WaitGroup
	)
	emit := func(format string, a ...any) {
		out.Lock()
		defer out.Unlock()
		fmt.Fprintf(os.Stdout, format+"\n", a...)
	}
	for g := 0; g < 2; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stopped:
					return
				default:
				}
				res, err := p.SendSync(context.Background(), primitive.NewMessage(topic, []byte(fmt.Sprintf("netns-%d-%d", g, i))))
				if err != nil || res.Status != primitive.SendOK {
					emit("fail %d %v", time.Now().UnixNano(), err)
					time.Sleep(20 * time.Millisecond) // back off before the next try
					continue
				}
				host := "?"
				if ap, _, err := message.DecodeOffsetMsgID(res.OffsetMsgID); err == nil {
					host = ap.String()
				}
				emit("ok %d %s %d %d", time.Now().UnixNano(), host, res.MessageQueue.QueueId, res.QueueOffset)
			}
		}()
	}
	_, _ = io.Copy(io.Discard, os.Stdin)
	close(stopped)
	wg.Wait()
	_ = p.Shutdown()
	os.Exit(0)
}

// netnsLab is a set of network namespaces made by one test, joined by a bridge in a namespace of its own
// (the host's own namespace is not touched), removed at cleanup.
type netnsLab struct {
	t      *testing.T
	prefix string
}

func newNetnsLab(t *testing.T) *netnsLab {
	t.Helper()
	if testing.Short() {
		t.Skip("starts broker processes in network namespaces")
	}
	if os.Geteuid() != 0 {
		t.Skip("network namespaces need root (CAP_SYS_ADMIN, CAP_NET_ADMIN): skipped when not run as root")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("iproute2's ip command is not installed: skipped")
	}
	l := &netnsLab{t: t, prefix: fmt.Sprintf("rrvip%d", os.Getpid()%100000)}
	l.addNS("sw")
	l.ip("-n", l.ns("sw"), "link", "add", "br0", "type", "bridge")
	l.ip("-n", l.ns("sw"), "link", "set", "br0", "up")
	return l
}

// ns is the full name of namespace name.
func (l *netnsLab) ns(name string) string { return l.prefix + "-" + name }

// ip runs the ip command and fails the test with its output when it fails.
func (l *netnsLab) ip(args ...string) string {
	l.t.Helper()
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		l.t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// addNS makes namespace name with its loopback up, and deletes it at cleanup (after the processes in it,
// whose cleanups run first).
func (l *netnsLab) addNS(name string) {
	l.t.Helper()
	full := l.ns(name)
	l.ip("netns", "add", full)
	l.t.Cleanup(func() {
		if out, err := exec.Command("ip", "netns", "del", full).CombinedOutput(); err != nil {
			l.t.Errorf("ip netns del %s: %v: %s", full, err, out)
		}
	})
	l.ip("-n", full, "link", "set", "lo", "up")
}

// addHost makes namespace name with an interface eth0 at addr/24, cabled to the bridge (port port).
func (l *netnsLab) addHost(name, port, addr string) {
	l.t.Helper()
	l.addNS(name)
	l.ip("-n", l.ns("sw"), "link", "add", port, "type", "veth", "peer", "name", "eth0", "netns", l.ns(name))
	l.ip("-n", l.ns("sw"), "link", "set", port, "master", "br0", "up")
	l.ip("-n", l.ns(name), "addr", "add", addr+"/24", "dev", "eth0")
	l.ip("-n", l.ns(name), "link", "set", "eth0", "up")
}

// hasAddr reports whether namespace name has ip on eth0.
func (l *netnsLab) hasAddr(name, ip string) bool {
	out, err := exec.Command("ip", "-n", l.ns(name), "-4", "-o", "addr", "show", "dev", "eth0").CombinedOutput()
	return err == nil && strings.Contains(string(out), " "+ip+"/")
}

// start runs the test binary in namespace name in child mode env with args after "--".
func (l *netnsLab) start(name, env string, args ...string) *exec.Cmd {
	l.t.Helper()
	cmd := exec.Command("ip", append([]string{"netns", "exec", l.ns(name), os.Args[0], "-test.run=^$", "--"}, args...)...)
	cmd.Env = append(os.Environ(), env+"=1")
	cmd.Stderr = os.Stderr
	return cmd
}

// run starts cmd and kills it at cleanup.
func (l *netnsLab) run(cmd *exec.Cmd) *exec.Cmd {
	l.t.Helper()
	if err := cmd.Start(); err != nil {
		l.t.Fatal(err)
	}
	l.t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return cmd
}

// producerLog is what the child producer printed.
type producerLog struct {
	mu    sync.Mutex
	oks   []ack
	fails []time.Time
}

func (p *producerLog) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 {
			continue
		}
		nanos, _ := strconv.ParseInt(f[1], 10, 64)
		at := time.Unix(0, nanos)
		p.mu.Lock()
		switch {
		case f[0] == "ok" && len(f) == 5:
			q, _ := strconv.Atoi(f[3])
			off, _ := strconv.ParseInt(f[4], 10, 64)
			p.oks = append(p.oks, ack{host: f[2], queue: q, offset: off, at: at})
		case f[0] == "fail":
			p.fails = append(p.fails, at)
		}
		p.mu.Unlock()
	}
}

func (p *producerLog) counts() (oks, fails int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.oks), len(p.fails)
}

// firstBy is the first SEND_OK after t stored by host (zero if none yet).
func (p *producerLog) firstBy(host string, t time.Time) time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, a := range p.oks {
		if a.host == host && a.at.After(t) {
			return a.at
		}
	}
	return time.Time{}
}

// TestRaftVIPNetns: three Raft nodes, each in a network namespace of its own with a veth interface eth0
// on a bridge (10.77.0.11-13/24), the name server and an official Go client producer in a fourth
// (10.77.0.2), masterVipAddress 10.77.0.100 on masterVipInterface eth0. The master adds the address to its
// eth0 (netlink) and announces it (gratuitous ARP); the client's cached route names it. The master is
// killed with SIGKILL, so its namespace keeps the address; the new master adds it to its own interface and
// its ARP announcement moves the client's neighbour entry, and the client's sends reach it. The killed node,
// restarted, removes the stale address. Logged: kill to the new master holding the address and to the
// client's first SEND_OK from it. Needs root and iproute2 (skipped otherwise).
func TestRaftVIPNetns(t *testing.T) {
	l := newNetnsLab(t)
	const vip, topic = "10.77.0.100", "RaftVipNetns"
	l.addHost("cl", "p9", "10.77.0.2")
	nodes := []string{"n0", "n1", "n2"}
	hosts := []string{"10.77.0.11", "10.77.0.12", "10.77.0.13"}
	var peers []string
	for i, n := range nodes {
		l.addHost(n, "p"+strconv.Itoa(i), hosts[i])
		peers = append(peers, fmt.Sprintf("%s-%s:40911", n, hosts[i]))
	}
	l.run(l.start("cl", childNamesrvEnv, "--listenPort=9876", "--metricsPort=0"))
	ns := "10.77.0.2:9876"
	args := make([][]string, 3)
	cmds := make([]*exec.Cmd, 3)
	for i, n := range nodes {
		args[i] = []string{"-n", ns, "--brokerName=broker-v", "--brokerIP1=" + hosts[i], "--listenPort=10911", "--metricsPort=0",
			"--storePathRootDir=" + filepath.Join(t.TempDir(), n), "--flushDiskType=SYNC_FLUSH",
			"--mappedFileSizeCommitLog=4194304", "--maxMessageSize=65536", "--registerNameServerPeriod=1000",
			"--enableDLegerCommitLog=true", "--dLegerPeers=" + strings.Join(peers, ";"), "--dLegerSelfId=" + n,
			"--dLegerHeartbeatTimeoutMs=1000", "--dLegerElectionTimeoutMs=1000", "--dLegerLeaderLeaseTimeoutMs=500",
			"--masterVipAddress=" + vip, "--masterVipInterface=eth0"}
		cmds[i] = l.run(l.start(n, childBrokerEnv, args[i]...))
	}
	holder := func(not int) int {
		h := -1
		cluster.Eventually(t, 60*time.Second, func() bool {
			h = -1
			for i, n := range nodes {
				if i != not && l.hasAddr(n, vip) {
					if h >= 0 {
						return false // two live holders: wait for one to let go
					}
					h = i
				}
			}
			return h >= 0
		}, "one node (not %d) holding %s on its eth0", not, vip)
		return h
	}
	m := holder(-1)

	prod := l.start("cl", childProducerEnv, ns, topic, vip+":10911")
	stdin, err := prod.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := prod.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	l.run(prod)
	plog := &producerLog{}
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		plog.read(stdout)
	}()
	cluster.Eventually(t, 90*time.Second, func() bool { n, _ := plog.counts(); return n >= 300 }, "300 SEND_OK before the kill")

	okBefore, failBefore := plog.counts()
	killed := time.Now()
	if err := cmds[m].Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmds[m].Wait()
	next := holder(m)
	took := time.Since(killed)
	newAddr := hosts[next] + ":10911"
	cluster.Eventually(t, 60*time.Second, func() bool { return !plog.firstBy(newAddr, killed).IsZero() }, "a SEND_OK from the new master %s", newAddr)
	served := plog.firstBy(newAddr, killed).Sub(killed)
	stale := l.hasAddr(nodes[m], vip)
	t.Logf("netns: kill of %s (%s): %s on %s's eth0 after %v; the client's first SEND_OK from it after %v (the killed node's namespace still has the address: %v)",
		nodes[m], hosts[m], vip, nodes[next], took.Round(time.Millisecond), served.Round(time.Millisecond), stale)

	cmds[m] = l.run(l.start(nodes[m], childBrokerEnv, args[m]...))
	cluster.Eventually(t, 60*time.Second, func() bool { return !l.hasAddr(nodes[m], vip) }, "the restarted node %s removed the stale %s", nodes[m], vip)
	cluster.Eventually(t, 60*time.Second, func() bool { n, _ := plog.counts(); return n >= okBefore+300 }, "300 more SEND_OK after the kill")
	_ = stdin.Close()
	_ = prod.Wait()
	<-readDone
	oks, fails := plog.counts()
	t.Logf("netns: %d SEND_OK (%d after the kill), %d failed sends (%d after the kill, after the client's own retries)", oks, oks-okBefore, fails, fails-failBefore)
	if h := holder(-1); h != next {
		t.Fatalf("after the restart node %d holds %s, want %d", h, vip, next)
	}
}

// TestMasterVipInterfaceNeedsCapNetAdmin: a broker with masterVipInterface set, started without
// CAP_NET_ADMIN and CAP_NET_RAW (capsh drops them from the bounding set), stops at start-up with an
// error naming the key and the capability. Skipped without root or capsh.
func TestMasterVipInterfaceNeedsCapNetAdmin(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a broker process")
	}
	if os.Geteuid() != 0 {
		t.Skip("dropping a capability from a root process: skipped when not root")
	}
	capsh, err := exec.LookPath("capsh")
	if err != nil {
		t.Skip("capsh (libcap) is not installed: skipped")
	}
	c := cluster.Start(t, cluster.Options{NoBrokers: true})
	port := cluster.FreePort(t)
	args := []string{"-n", c.NamesrvAddr(), "--brokerName=broker-cap", "--brokerIP1=127.0.0.1", "--listenPort=" + strconv.Itoa(port),
		"--metricsPort=0", "--storePathRootDir=" + filepath.Join(t.TempDir(), "store"),
		"--enableDLegerCommitLog=true", fmt.Sprintf("--dLegerPeers=n0-127.0.0.1:%d", cluster.FreePort(t)), "--dLegerSelfId=n0",
		"--masterVipAddress=10.77.0.100", "--masterVipInterface=lo"}
	quoted := []string{"exec", "'" + os.Args[0] + "'", "-test.run=^$", "--"}
	for _, a := range args {
		quoted = append(quoted, "'"+a+"'")
	}
	cmd := exec.Command(capsh, "--drop=cap_net_admin,cap_net_raw", "--", "-c", strings.Join(quoted, " "))
	cmd.Env = append(os.Environ(), childBrokerEnv+"=1")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("the broker without CAP_NET_ADMIN still runs after 60 s; stderr: %s", stderr.String())
	}
	if err == nil {
		t.Fatalf("the broker without CAP_NET_ADMIN exited 0; stderr: %s", stderr.String())
	}
	out := stderr.String()
	for _, want := range []string{"config key masterVipInterface", "CAP_NET_ADMIN"} {
		if !strings.Contains(out, want) {
			t.Fatalf("start-up error does not say %q: %s", want, out)
		}
	}
	t.Logf("without the capability: %s", lastLine(out, "masterVipInterface"))
}

// lastLine is the last line of s that contains sub.
func lastLine(s, sub string) string {
	lines := strings.Split(s, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.Contains(lines[i], sub) {
			return lines[i]
		}
	}
	return ""
}
