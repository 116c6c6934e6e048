package e2e

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/admin"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"golang.org/x/sys/unix"

	"github.com/rocketraft/rocketraft/app/cluster"
	"github.com/rocketraft/rocketraft/internal/metrics"
)

// The README's quick start on one host, as RocketMQ's own: `mqnamesrv &`, then `mqbroker -n 127.0.0.1:9876 &`,
// and a second broker with its own listenPort, name and store, all on the default ports (9876, 10911, 10912,
// metrics 5556 and 5557) in a fresh HOME. Default ports may be taken on a shared machine (another developer's
// make run), so the test runs itself in a network namespace of its own (CLONE_NEWNET, with a user namespace
// when not root): its own loopback, every port free, nothing of the host's disturbed. Where namespaces are
// not allowed it runs on the host if the default ports are free there, and skips saying which one is taken
// otherwise.
const (
	quickStartNetnsEnv = "ROCKETRAFT_E2E_QUICKSTART_NETNS" // "1": this process is the one inside the namespace
)

// The quick start's name server is the test binary in the childNamesrvEnv mode (raft_vip_netns_test.go).

// quickStartPorts are the default ports the quick start takes.
var quickStartPorts = []int{9876, 10911, 10912, 5556, 5557, 10921, 10922}

func TestQuickStartOneHost(t *testing.T) {
	if os.Getenv(quickStartNetnsEnv) == "1" {
		runQuickStart(t)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestQuickStartOneHost$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), quickStartNetnsEnv+"=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET, Pdeathsig: syscall.SIGKILL}
	if os.Getuid() != 0 {
		cmd.SysProcAttr.Cloneflags |= syscall.CLONE_NEWUSER
		cmd.SysProcAttr.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}}
		cmd.SysProcAttr.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}}
	}
	out := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Logf("no network namespace (%v): running on the host's ports", err)
		for _, p := range quickStartPorts {
			if ln, err := net.Listen("tcp", fmt.Sprintf(":%d", p)); err != nil {
				t.Skipf("port %d is taken on this host and no network namespace is allowed (%v): the quick start needs the default ports", p, err)
			} else {
				ln.Close()
			}
		}
		runQuickStart(t)
		return
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		t.Logf("inside the network namespace:\n%s", out.String())
		if err != nil {
			t.Fatalf("the quick start in its network namespace failed: %v", err)
		}
		if !strings.Contains(out.String(), "--- PASS: TestQuickStartOneHost") {
			t.Fatal("the quick start did not run inside its namespace")
		}
	case <-time.After(5 * time.Minute):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("the quick start did not finish in 5 minutes:\n%s", out.String())
	}
}

// loopbackUp sets the loopback interface of a new network namespace up (it starts down).
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("SIOCGIFFLAGS lo: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("SIOCSIFFLAGS lo: %w", err)
	}
	return nil
}

// server is a quick-start process: the test binary as mqnamesrv or mqbroker, in HOME, its output kept.
type server struct {
	name string
	cmd  *exec.Cmd
	out  *lockedBuffer
	done chan error
}

func startServer(t *testing.T, name, home, childEnv string, extraEnv []string, args ...string) *server {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"-test.run=^$", "--"}, args...)...)
	env := []string{"HOME=" + home, childEnv + "=1"}
	for _, kv := range os.Environ() { // as a fresh login: no NAMESRV_ADDR or ROCKETMQ_HOME of the caller
		k, _, _ := strings.Cut(kv, "=")
		if k != "HOME" && k != "NAMESRV_ADDR" && k != "ROCKETMQ_HOME" && k != "ROCKETRAFT_LOG" && k != quickStartNetnsEnv {
			env = append(env, kv)
		}
	}
	cmd.Env = append(env, extraEnv...)
	s := &server{name: name, cmd: cmd, out: &lockedBuffer{}, done: make(chan error, 1)}
	cmd.Stdout, cmd.Stderr = s.out, s.out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() { s.done <- cmd.Wait() }()
	t.Cleanup(func() {
		select {
		case <-s.done:
		default:
			_ = cmd.Process.Kill()
			<-s.done
		}
		if t.Failed() {
			t.Logf("%s output:\n%s", name, s.out.String())
		}
	})
	return s
}

// waitOutput waits until the process printed want (its boot line), failing if it exits first.
func (s *server) waitOutput(t *testing.T, want string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(s.out.String(), want) {
		select {
		case err := <-s.done:
			s.done <- err
			t.Fatalf("%s exited (%v) before printing %q:\n%s", s.name, err, want, s.out.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not print %q in 60 s:\n%s", s.name, want, s.out.String())
		}
	}
}

// stop sends SIGTERM and expects a clean exit (status 0).
func (s *server) stop(t *testing.T) {
	t.Helper()
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-s.done:
		s.done <- err
		if err != nil {
			t.Errorf("%s exited with %v after SIGTERM", s.name, err)
		}
	case <-time.After(60 * time.Second):
		t.Errorf("%s still running 60 s after SIGTERM", s.name)
	}
}

func runQuickStart(t *testing.T) {
	if os.Getenv(quickStartNetnsEnv) == "1" {
		if err := loopbackUp(); err != nil {
			t.Fatalf("loopback up in the new network namespace: %v", err)
		}
	}
	home := t.TempDir()
	logs := filepath.Join(home, "logs", "rocketmqlogs")
	// The name server with its metrics on (the default port, 5556) from a config file, so that SIGHUP has a
	// logLevel to re-read.
	nsConf := filepath.Join(home, "namesrv.properties")
	if err := os.WriteFile(nsConf, []byte("metricsExporterType=PROM\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ns := startServer(t, "mqnamesrv", home, childNamesrvEnv, nil, "-c", nsConf)
	ns.waitOutput(t, "The Name Server boot success")
	// mqbroker -n 127.0.0.1:9876, metrics on at the default 5557.
	ba := startServer(t, "mqbroker a", home, childBrokerEnv, nil, "-n", "127.0.0.1:9876", "--brokerName=broker-a", "--metricsExporterType=PROM")
	ba.waitOutput(t, "boot success")
	// A second broker on the same host: its own listenPort, name and store, NAMESRV_ADDR instead of -n, and
	// nothing said about metrics: they are off, so no port clashes with broker a's.
	bb := startServer(t, "mqbroker b", home, childBrokerEnv, []string{"NAMESRV_ADDR=127.0.0.1:9876"},
		"--listenPort=10921", "--brokerName=broker-b", "--storePathRootDir="+filepath.Join(home, "store-b"), "--isolateLogEnable=true")
	bb.waitOutput(t, "boot success")
	// A third with only its own listenPort would share broker a's ~/store: refused at once, as RocketMQ's lock
	// file refuses it, naming the key.
	bc := startServer(t, "mqbroker c", home, childBrokerEnv, nil, "-n", "127.0.0.1:9876", "--listenPort=10931", "--brokerName=broker-c")
	select {
	case err := <-bc.done:
		bc.done <- err // for the cleanup
		if err == nil || !strings.Contains(bc.out.String(), "config key storePathRootDir") {
			t.Errorf("a broker on broker a's store: exit %v, output:\n%s", err, bc.out.String())
		}
	case <-time.After(60 * time.Second):
		t.Errorf("a broker on broker a's store is still running:\n%s", bc.out.String())
	}
	for s, want := range map[*server][]string{
		ns: {"metrics on http://", ":5556/metrics", "logs in " + logs},
		ba: {"name server is 127.0.0.1:9876", "store " + filepath.Join(home, "store") + ";", ":5557/metrics (metricsExporterType=PROM)", "logs in " + logs},
		bb: {"name server is 127.0.0.1:9876", "metrics off (metricsExporterType=DISABLE", "logs in " + filepath.Join(logs, "broker-b_0")},
	} {
		for _, w := range want {
			if !strings.Contains(s.out.String(), w) {
				t.Errorf("%s's start-up lines lack %q:\n%s", s.name, w, s.out.String())
			}
		}
	}
	nsAddr := []string{"127.0.0.1:9876"}
	cluster.Eventually(t, 30*time.Second, func() bool {
		f, err := metrics.Scrape(context.Background(), "127.0.0.1:5556")
		if err != nil {
			return false
		}
		v, _ := f.Value("rocketmq_namesrv_brokers", "cluster", "DefaultCluster", "role", "master")
		return v == 2
	}, "both brokers registered with the name server")

	// Produce and consume with the official Go client, on a topic of broker a.
	const topic, group, n = "QuickStartTopic", "QuickStartGroup", 20
	adm, err := admin.NewAdmin(admin.WithResolver(primitive.NewPassthroughResolver(nsAddr)))
	if err != nil {
		t.Fatal(err)
	}
	err = adm.CreateTopic(context.Background(), admin.WithTopicCreate(topic), admin.WithBrokerAddrCreate("127.0.0.1:10911"),
		admin.WithReadQueueNums(4), admin.WithWriteQueueNums(4))
	adm.Close()
	if err != nil {
		t.Fatal(err)
	}
	p, err := rocketmq.NewProducer(producer.WithNsResolver(primitive.NewPassthroughResolver(nsAddr)),
		producer.WithGroupName("QuickStartProducer"), producer.WithInstanceName(instance("qp")), producer.WithRetry(2))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	defer p.Shutdown()
	cluster.Eventually(t, 30*time.Second, func() bool {
		_, err := p.SendSync(context.Background(), primitive.NewMessage(topic, []byte("probe")))
		return err == nil
	}, "a first send once the route is there")
	for i := 0; i < n; i++ {
		if _, err := p.SendSync(context.Background(), primitive.NewMessage(topic, []byte(fmt.Sprintf("quick-%d", i)))); err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
	}
	got := newReceived()
	pc, err := rocketmq.NewPushConsumer(consumer.WithNsResolver(primitive.NewPassthroughResolver(nsAddr)),
		consumer.WithGroupName(group), consumer.WithInstance(instance("qc")), consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset))
	if err != nil {
		t.Fatal(err)
	}
	if err := pc.Subscribe(topic, consumer.MessageSelector{}, got.handler()); err != nil {
		t.Fatal(err)
	}
	if err := pc.Start(); err != nil {
		t.Fatal(err)
	}
	got.waitDistinct(t, n+1, 60*time.Second)
	_ = pc.Shutdown()
	t.Logf("produced and consumed %d messages through broker a", n+1)

	// Broker a's metrics at the default port count them.
	f, err := metrics.Scrape(context.Background(), "127.0.0.1:5557")
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := f.Value("rocketmq_messages_in_total", "topic", topic); v != n+1 {
		t.Errorf("rocketmq_messages_in_total{topic=%s} = %v, want %d", topic, v, n+1)
	}
	if v, _ := f.Value("rocketmq_messages_out_total", "topic", topic); v < n+1 {
		t.Errorf("rocketmq_messages_out_total{topic=%s} = %v, want at least %d", topic, v, n+1)
	}

	// SIGHUP: the name server re-reads logLevel from its file.
	if err := os.WriteFile(nsConf, []byte("metricsExporterType=PROM\nlogLevel=DEBUG\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_ = ns.cmd.Process.Signal(syscall.SIGHUP)
	cluster.Eventually(t, 10*time.Second, func() bool {
		b, _ := os.ReadFile(filepath.Join(logs, "namesrv.log"))
		return strings.Contains(string(b), `msg="SIGHUP: logLevel re-read" logLevel=DEBUG`)
	}, "the name server at DEBUG after SIGHUP")

	for _, s := range []*server{bb, ba, ns} {
		s.stop(t)
	}
	t.Logf("start-up lines:\n%s\n%s\n%s", firstLines(ns.out.String(), 2), firstLines(ba.out.String(), 2), firstLines(bb.out.String(), 2))
	// RocketMQ's layout in the fresh HOME: the store of broker a in ~/store, broker b's where it was told, the
	// log files in ~/logs/rocketmqlogs (broker b's in its isolated folder).
	for _, path := range []string{
		filepath.Join(home, "store", "commitlog"), filepath.Join(home, "store-b", "commitlog"),
		filepath.Join(logs, "namesrv.log"), filepath.Join(logs, "broker.log"), filepath.Join(logs, "store.log"),
		filepath.Join(logs, "remoting.log"), filepath.Join(logs, "stats.log"), filepath.Join(logs, "broker-b_0", "broker.log"),
	} {
		if _, err := os.Stat(path); err != nil {
			t.Errorf("quick start layout: %v", err)
		}
	}
	brokerLog, _ := os.ReadFile(filepath.Join(logs, "broker.log"))
	if !strings.Contains(string(brokerLog), "broker started") || strings.Contains(string(brokerLog), "broker-b") {
		t.Errorf("broker.log should hold broker a's records only:\n%s", tail(string(brokerLog), 2000))
	}
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	return strings.Join(lines[:min(n, len(lines))], "\n")
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// lockedBuffer is an io.Writer safe for a process's stdout and stderr together, read while written.
type lockedBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

var _ io.Writer = (*lockedBuffer)(nil)
