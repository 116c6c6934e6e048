package broker_test

import (
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/rocketraft/rocketraft/app/cluster"
	"github.com/rocketraft/rocketraft/broker"
	"github.com/rocketraft/rocketraft/internal/peertls"
	"github.com/rocketraft/rocketraft/internal/peertls/peertlstest"
	"github.com/rocketraft/rocketraft/remoting"
)

func TestPeerTLSStartErrorsNameTheKey(t *testing.T) {
	ca := peertlstest.NewCA(t, "cluster")
	good := ca.Node("broker-a", "n0")
	base := func() broker.Config {
		c := cluster.TestBrokerConfig(t, "127.0.0.1:1", "broker-a")
		c.Raft.EnableDLegerCommitLog = true
		c.Raft.DLegerPeers = fmt.Sprintf("n0-127.0.0.1:%d", cluster.FreePort(t))
		c.Raft.DLegerSelfId = "n0"
		c.PeerTLS = good
		return c
	}
	for _, tc := range []struct {
		name string
		edit func(c *peertls.Config)
		key  string
	}{
		{"bad mode", func(c *peertls.Config) { c.Mode = "on" }, "peerTlsMode"},
		{"no key", func(c *peertls.Config) { c.KeyPath = "" }, "peerTlsKeyPath"},
		{"cert file missing", func(c *peertls.Config) { c.CertPath += ".missing" }, "peerTlsCertPath"},
		{"key of another certificate", func(c *peertls.Config) { c.KeyPath = ca.Node("broker-a", "n1").KeyPath }, "peerTlsKeyPath"},
		{"CA file missing", func(c *peertls.Config) { c.TrustCertPath += ".missing" }, "peerTlsTrustCertPath"},
		{"certificate of another group", func(c *peertls.Config) { *c = ca.Node("broker-b", "n0") }, "peerTlsCertPath"},
	} {
		cfg := base()
		tc.edit(&cfg.PeerTLS)
		b, err := broker.New(cfg, broker.Options{Logger: cluster.TestLogger(t, 0)})
		if err == nil {
			_ = b.Close()
			t.Errorf("%s: the broker started", tc.name)
			continue
		}
		if !strings.Contains(err.Error(), "config key "+tc.key) {
			t.Errorf("%s: %v does not name %s", tc.name, err, tc.key)
		}
	}
}

// TestRaftGroupUnderPeerTLS: a three-node Raft group with peerTlsMode=enforcing elects, takes sends on
// its master, replicates them to every node and fails over when the master stops.
func TestRaftGroupUnderPeerTLS(t *testing.T) {
	ca := peertlstest.NewCA(t, "cluster")
	c := cluster.Start(t, cluster.Options{RaftNodes: 3, Configure: func(i int, cfg *broker.Config) {
		cfg.PeerTLS = ca.Node("broker-a", cfg.Raft.DLegerSelfId)
	}})
	m := c.RaftMaster("broker-a")
	w := newWire(t, c.Broker(m).Addr())
	for i := 0; i < 20; i++ {
		if resp := w.send("TLSTopic", i%2, []byte("body"), ""); resp.Code != int32(remoting.Success) {
			t.Fatalf("send: %s %s", remoting.ResponseCode(resp.Code), resp.Remark)
		}
	}
	for i := 0; i < 3; i++ {
		b := c.Broker(i)
		cluster.Eventually(t, 20*time.Second, func() bool {
			return b.Store().MaxOffsetInQueue("TLSTopic", 0) == 10 && b.Store().MaxOffsetInQueue("TLSTopic", 1) == 10
		}, "node %d dispatched every message", i)
	}
	c.StopBroker(m)
	m2 := c.RaftMaster("broker-a")
	if m2 == m {
		t.Fatalf("the stopped node %d is still master", m)
	}
	if resp := newWire(t, c.Broker(m2).Addr()).send("TLSTopic", 0, []byte("after"), ""); resp.Code != int32(remoting.Success) {
		t.Fatalf("send to the new master: %s %s", remoting.ResponseCode(resp.Code), resp.Remark)
	}
}

// TestHAUnderPeerTLS: a SYNC_MASTER and its slave with peerTlsMode=enforcing: the slave streams over
// mutual TLS, so every send is SEND_OK and the replica is byte-identical.
func TestHAUnderPeerTLS(t *testing.T) {
	ca := peertlstest.NewCA(t, "cluster")
	c := haCluster(t, func(cfg *broker.Config) {
		cfg.PeerTLS = ca.Node(cfg.BrokerName, fmt.Sprint(cfg.BrokerID))
	})
	master, slave := c.Broker(0), c.Broker(1)
	waitSlaveStreaming(t, master)
	w := newWire(t, master.Addr())
	for i := 0; i < 50; i++ {
		expectCode(t, "send", w.send("TLSHA", i%2, []byte(fmt.Sprintf("body-%d", i)), ""), remoting.Success)
	}
	waitCaughtUp(t, master, slave)
	to := master.Store().MaxPhyOffset()
	if string(commitLogBytes(t, master.Config(), 0, to)) != string(commitLogBytes(t, slave.Config(), 0, to)) {
		t.Fatal("the slave's CommitLog differs from the master's")
	}
	// The HA port speaks TLS only: a plain slave's report gets no frame (at most a TLS alert).
	conn, err := net.Dial("tcp", master.HAService().Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	_, _ = conn.Write(make([]byte, 8))
	got, _ := io.ReadAll(conn)
	if len(got) > 0 && got[0] != 0x15 { // 0x15: TLS alert record
		t.Fatalf("a plain TCP slave got %d bytes: %x", len(got), got[:min(16, len(got))])
	}
}
