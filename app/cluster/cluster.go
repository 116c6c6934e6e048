package cluster

import (
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rocketraft/rocketraft/client"

	"github.com/rocketraft/rocketraft/internal/freeport"

	"github.com/rocketraft/rocketraft/broker"
	"github.com/rocketraft/rocketraft/namesrv"
)

// Options describe a cluster. The zero value is one name server and one broker with test-sized files.
type Options struct {
	NameServers int                           // default 1
	Brokers     int                           // default 1
	NoBrokers   bool                          // name servers only (tests that run brokers as child processes)
	Configure   func(i int, c *broker.Config) // adjusts broker i's config before it starts
	LogLevel    slog.Level                    // default slog.LevelWarn: test output stays readable; LevelInfo for Info lines
	// Slaves gives every broker that many classic-replication slaves (ha.go): broker i's slave j is
	// broker index SlaveIndex(i, j), with the master's brokerName, brokerId j+1 and brokerRole SLAVE,
	// started after all masters. Configure sees slaves too.
	Slaves int
	// RaftNodes, when > 0, starts one Raft group (raft.go) of that many nodes instead of the classic
	// brokers: broker indexes 0..RaftNodes-1, brokerName broker-a, dLegerSelfId n0, n1, ...; Configure
	// sees each node. Start returns once every node is registered (as a slave or the master); RaftMaster
	// waits for the master.
	RaftNodes int
	// MasterVIP, with RaftNodes, gives the group a master's virtual address (masterVipAddress, a 127.x
	// address): node i runs at 127.0.0.(11+i), every node on one listenPort (RaftVIPGroupConfigs).
	MasterVIP string
	// ConfigureNamesrv adjusts name server i's config before it starts.
	ConfigureNamesrv func(i int, c *namesrv.Config)
	// ClientTLS, when set, is the TLS the harness's own client dials name servers with (needed when they
	// run with tlsServerMode=enforcing).
	ClientTLS *tls.Config
	// Logs, when set, gets the servers' log lines (LogLevel and above) in place of t.Log: a
	// testutil.LogLines keeps them to assert on and passes them to t.Log.
	Logs io.Writer
}

// LevelInfo is the Options.LogLevel that keeps Info lines (and above): slog.LevelInfo is 0, which is taken by
// the default (Warn).
const LevelInfo = slog.LevelInfo - 1

// Cluster is a running set of name servers and brokers.
type Cluster struct {
	t       testing.TB
	log     *slog.Logger
	mu      sync.Mutex
	nsrvs   []*namesrv.Server
	brokers []*broker.Broker
	configs []broker.Config
	client  *client.Client // the harness's own view of the name servers
}

// Start starts the cluster and registers its shutdown with t.Cleanup. It returns once every broker is
// registered with every name server.
func Start(t testing.TB, opts Options) *Cluster {
	t.Helper()
	if opts.NameServers == 0 {
		opts.NameServers = 1
	}
	if opts.Brokers == 0 && !opts.NoBrokers && opts.RaftNodes == 0 {
		opts.Brokers = 1
	}
	c := &Cluster{t: t, log: testLogger(t, opts.LogLevel, opts.Logs)}
	c.client = client.New(client.Config{Timeout: 2 * time.Second, TLS: opts.ClientTLS,
		Log: c.log.With("component", "cluster-client")})
	// A TempDir made before Cleanup(c.Stop) is removed after it: brokers stop before their folders go.
	_ = t.TempDir()
	t.Cleanup(c.Stop)
	for i := 0; i < opts.NameServers; i++ {
		cfg := namesrv.DefaultConfig()
		cfg.ListenPort = FreePort(t)
		cfg.RocketmqHome = filepath.Join(t.TempDir(), fmt.Sprintf("namesrv%d", i))
		cfg.KvConfigPath = filepath.Join(cfg.RocketmqHome, "kvConfig.json")
		cfg.ListenAddr = "127.0.0.1"
		cfg.MetricsPort = 0 // tests that scrape set a FreePort
		if opts.ConfigureNamesrv != nil {
			opts.ConfigureNamesrv(i, &cfg)
		}
		ns, err := namesrv.New(cfg, c.log.With("namesrv", i))
		if err != nil {
			t.Fatalf("name server %d: %v", i, err)
		}
		if err := ns.Start(); err != nil {
			t.Fatalf("name server %d: %v", i, err)
		}
		c.nsrvs = append(c.nsrvs, ns)
	}
	for i := 0; i < opts.Brokers; i++ {
		cfg := TestBrokerConfig(t, c.NamesrvAddr(), fmt.Sprintf("broker-%c", 'a'+i))
		if opts.Configure != nil {
			opts.Configure(i, &cfg)
		}
		c.configs = append(c.configs, cfg)
		c.brokers = append(c.brokers, nil)
		c.StartBroker(i)
	}
	c.startSlaves(opts)
	c.startRaft(opts)
	return c
}

// TestBrokerConfig is a broker config for tests: loopback, a free port, small files, short intervals.
func TestBrokerConfig(t testing.TB, namesrvAddr, name string) broker.Config {
	cfg := broker.DefaultConfig()
	cfg.BrokerName = name
	cfg.BrokerIP1 = "127.0.0.1"
	cfg.ListenPort = FreePort(t)
	cfg.MetricsPort = 0 // tests that scrape set a FreePort
	cfg.NamesrvAddr = namesrvAddr
	cfg.StorePathRootDir = filepath.Join(t.TempDir(), name)
	cfg.MappedFileSizeCommitLog = 64 << 20
	cfg.MappedFileSizeConsumeQueue = 300_000 * 20 / 100
	cfg.RegisterNameServerPeriod = 2_000
	cfg.ClientHousekeepingInterval = 1_000
	return cfg
}

// StartBroker starts (or restarts) broker i with its config.
func (c *Cluster) StartBroker(i int) *broker.Broker {
	c.t.Helper()
	b := c.startBroker(i)
	c.WaitRegistered(i)
	return b
}

// startBroker starts broker i without waiting for its registration.
func (c *Cluster) startBroker(i int) *broker.Broker {
	c.t.Helper()
	c.mu.Lock()
	cfg := c.configs[i]
	c.mu.Unlock()
	b, err := broker.New(cfg, broker.Options{Logger: c.log.With("broker", cfg.BrokerName)})
	if err != nil {
		c.t.Fatalf("broker %d: %v", i, err)
	}
	if err := b.Start(); err != nil {
		c.t.Fatalf("broker %d: %v", i, err)
	}
	c.mu.Lock()
	c.brokers[i] = b
	c.mu.Unlock()
	return b
}

// StopBroker closes broker i (an ordered shutdown); StartBroker brings it back on the same data.
func (c *Cluster) StopBroker(i int) {
	c.mu.Lock()
	b := c.brokers[i]
	c.brokers[i] = nil
	c.mu.Unlock()
	if b != nil {
		if err := b.Close(); err != nil {
			c.t.Errorf("close broker %d: %v", i, err)
		}
	}
}

// StopNameServer closes name server i.
func (c *Cluster) StopNameServer(i int) {
	c.mu.Lock()
	ns := c.nsrvs[i]
	c.nsrvs[i] = nil
	c.mu.Unlock()
	if ns != nil {
		if err := ns.Close(); err != nil {
			c.t.Errorf("close name server %d: %v", i, err)
		}
	}
}

// Broker returns broker i (nil while stopped).
func (c *Cluster) Broker(i int) *broker.Broker {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.brokers[i]
}

// NameServer returns name server i (nil while stopped).
func (c *Cluster) NameServer(i int) *namesrv.Server {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nsrvs[i]
}

// NamesrvAddrs lists every name server address (stopped ones included: clients must cope).
func (c *Cluster) NamesrvAddrs() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, ns := range c.nsrvs {
		if ns != nil {
			out = append(out, ns.Addr())
		}
	}
	return out
}

// NamesrvAddr is NamesrvAddrs joined with ';' (the namesrvAddr config form).
func (c *Cluster) NamesrvAddr() string { return strings.Join(c.NamesrvAddrs(), ";") }

// WaitRegistered waits until broker i is in the cluster info of every running name server.
func (c *Cluster) WaitRegistered(i int) {
	c.t.Helper()
	b := c.Broker(i)
	Eventually(c.t, 10*time.Second, func() bool {
		for _, ns := range c.NamesrvAddrs() {
			info, err := c.clusterInfo(ns)
			if err != nil || !hasAddr(info, b.RouteAddr()) {
				return false
			}
		}
		return true
	}, "broker %s registered with every name server", b.RouteAddr())
}

// WaitTopicRoute waits until every running name server routes topic to every running broker.
func (c *Cluster) WaitTopicRoute(topic string) {
	c.t.Helper()
	Eventually(c.t, 10*time.Second, func() bool {
		for _, ns := range c.NamesrvAddrs() {
			route, err := c.topicRoute(ns, topic)
			if err != nil {
				return false
			}
			for i := 0; i < c.BrokerCount(); i++ {
				if b := c.Broker(i); b != nil && !hasBroker(route, b.Config().BrokerName) {
					return false
				}
			}
		}
		return true
	}, "route of topic %s on every name server", topic)
}

// BrokerCount is the number of broker slots (running or stopped).
func (c *Cluster) BrokerCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.brokers)
}

// Stop closes every broker, newest first (slaves before their masters), then every name server.
func (c *Cluster) Stop() {
	for i := c.BrokerCount() - 1; i >= 0; i-- {
		c.StopBroker(i)
	}
	for i := range c.nsrvs {
		c.StopNameServer(i)
	}
	_ = c.client.Close()
}

// FreePort returns a TCP port free on 127.0.0.1 at the time of the call, and the next one too (a broker's
// HA port is listenPort+1).
func FreePort(t testing.TB) int {
	t.Helper()
	port, err := freeport.Pair()
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// Eventually polls cond every 10 ms until it holds or timeout passes, then fails the test.
func Eventually(t testing.TB, timeout time.Duration, cond func() bool, format string, args ...any) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if cond() {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for: %s", timeout, fmt.Sprintf(format, args...))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestLogger logs through t.Log at level and above; lines after the test ended go to stderr.
func TestLogger(t testing.TB, level slog.Level) *slog.Logger { return testLogger(t, level, nil) }

// testLogger is TestLogger writing to out instead of t.Log when out is not nil.
func testLogger(t testing.TB, level slog.Level, out io.Writer) *slog.Logger {
	if level == 0 {
		level = slog.LevelWarn
	}
	if os.Getenv("ROCKETRAFT_TEST_LOG") == "debug" {
		level = slog.LevelDebug
	}
	if out == nil {
		w := &testWriter{t: t}
		t.Cleanup(w.done)
		out = w
	}
	return slog.New(slog.NewTextHandler(out, &slog.HandlerOptions{Level: level}))
}

type testWriter struct {
	t     testing.TB
	mu    sync.Mutex
	ended bool
}

func (w *testWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ended {
		return os.Stderr.Write(p)
	}
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func (w *testWriter) done() {
	w.mu.Lock()
	w.ended = true
	w.mu.Unlock()
}
