package cluster

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rocketraft/rocketraft/internal/freeport"

	"github.com/rocketraft/rocketraft/broker"
	"github.com/rocketraft/rocketraft/protocol"
)

// startRaft starts the Raft group of Options.RaftNodes (broker indexes 0..RaftNodes-1, brokerName
// broker-a).
func (c *Cluster) startRaft(opts Options) {
	c.t.Helper()
	if opts.RaftNodes == 0 {
		return
	}
	cfgs := RaftGroupConfigs(c.t, c.NamesrvAddr(), "broker-a", opts.RaftNodes)
	if opts.MasterVIP != "" {
		cfgs = RaftVIPGroupConfigs(c.t, c.NamesrvAddr(), "broker-a", opts.RaftNodes, opts.MasterVIP)
	}
	for i := range cfgs {
		if opts.Configure != nil {
			opts.Configure(i, &cfgs[i])
		}
	}
	c.AddRaftGroup(cfgs)
}

// RaftGroupConfigs are the test configs of an n-node Raft group brokerName: enableDLegerCommitLog,
// dLegerPeers n0..n(n-1) on free ports of 127.0.0.1, dLegerSelfId per node, the test brokers' sizes and
// intervals (TestBrokerConfig).
func RaftGroupConfigs(t testing.TB, namesrvAddr, brokerName string, n int) []broker.Config {
	t.Helper()
	var peers []string
	for i := 0; i < n; i++ {
		peers = append(peers, fmt.Sprintf("n%d-127.0.0.1:%d", i, FreePort(t)))
	}
	var out []broker.Config
	for i := 0; i < n; i++ {
		cfg := TestBrokerConfig(t, namesrvAddr, brokerName)
		cfg.StorePathRootDir = fmt.Sprintf("%s-n%d", cfg.StorePathRootDir, i)
		cfg.Raft.EnableDLegerCommitLog = true
		cfg.Raft.DLegerPeers = strings.Join(peers, ";")
		cfg.Raft.DLegerSelfId = fmt.Sprintf("n%d", i)
		// Four times the LAN defaults: three nodes, their clients and other tests (under -race) share a
		// loaded test machine, where a 250 ms lease lapses and the leader steps down for nothing.
		cfg.Raft.DLegerHeartbeatTimeoutMs = 2000
		cfg.Raft.DLegerElectionTimeoutMs = 2000
		cfg.Raft.DLegerLeaderLeaseTimeoutMs = 1000
		out = append(out, cfg)
	}
	return out
}

// RaftVIPGroupConfigs are RaftGroupConfigs with a master's virtual address vip (masterVipAddress, a 127.x
// address, so nothing is added to an interface): node i at brokerIP1 127.0.0.(11+i), every node on one
// listenPort and one Raft port, free on vip and on every node's address.
func RaftVIPGroupConfigs(t testing.TB, namesrvAddr, brokerName string, n int, vip string) []broker.Config {
	t.Helper()
	hosts := []string{vip}
	for i := 0; i < n; i++ {
		hosts = append(hosts, fmt.Sprintf("127.0.0.%d", 11+i))
	}
	port, raftPort := FreePortOn(t, hosts...), FreePortOn(t, hosts[1:]...)
	for raftPort == port { // neither is bound yet
		raftPort = FreePortOn(t, hosts[1:]...)
	}
	var peers []string
	for i := 0; i < n; i++ {
		peers = append(peers, fmt.Sprintf("n%d-%s:%d", i, hosts[1+i], raftPort))
	}
	cfgs := RaftGroupConfigs(t, namesrvAddr, brokerName, n)
	for i := range cfgs {
		cfgs[i].BrokerIP1 = hosts[1+i]
		cfgs[i].ListenPort = port
		cfgs[i].Raft.DLegerPeers = strings.Join(peers, ";")
		cfgs[i].Raft.MasterVipAddress = vip
	}
	return cfgs
}

// FreePortOn is a TCP port free on every one of hosts (IP addresses of this machine, such as 127.x).
func FreePortOn(t testing.TB, hosts ...string) int {
	t.Helper()
	port, err := freeport.One(hosts...)
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// AddRaftGroup starts the nodes of a Raft group (all of them before waiting for any registration: a
// single node cannot elect a leader) and returns their broker indexes.
func (c *Cluster) AddRaftGroup(cfgs []broker.Config) []int {
	c.t.Helper()
	var idx []int
	for _, cfg := range cfgs {
		c.mu.Lock()
		c.configs = append(c.configs, cfg)
		c.brokers = append(c.brokers, nil)
		idx = append(idx, len(c.brokers)-1)
		c.mu.Unlock()
	}
	for _, i := range idx {
		c.startBroker(i)
	}
	for _, i := range idx {
		c.WaitRegistered(i)
	}
	return idx
}

// RaftMaster waits until exactly one running broker of brokerName is the Raft master and registered as
// brokerId 0 with every running name server, and returns its index.
func (c *Cluster) RaftMaster(brokerName string) int {
	c.t.Helper()
	master := -1
	Eventually(c.t, 30*time.Second, func() bool {
		var ok bool
		master, ok = c.raftMasterNow(brokerName)
		return ok
	}, "one Raft master of %s registered as brokerId 0", brokerName)
	return master
}

// WaitRaftMaster waits until node want is the only Raft master of brokerName and every name server
// routes its brokerId 0 to it: after a leadership transfer, the old master stays master until it has
// handled its own role event, so RaftMaster could still answer it.
func (c *Cluster) WaitRaftMaster(brokerName string, want int) {
	c.t.Helper()
	Eventually(c.t, 30*time.Second, func() bool {
		master, ok := c.raftMasterNow(brokerName)
		return ok && master == want
	}, "node %d the one Raft master of %s, registered as brokerId 0", want, brokerName)
}

// raftMasterNow is the one node of brokerName that is Raft master, if there is exactly one, it listens on
// the master's virtual address when the group has one, and every name server routes brokerId 0 to it.
func (c *Cluster) raftMasterNow(brokerName string) (int, bool) {
	master := -1
	for i := 0; i < c.BrokerCount(); i++ {
		b := c.Broker(i)
		if b == nil || b.Config().BrokerName != brokerName || !b.IsRaftMaster() {
			continue
		}
		if master >= 0 {
			return -1, false
		}
		master = i
	}
	if master < 0 {
		return -1, false
	}
	if b := c.Broker(master); b.Config().Raft.MasterVipAddress != "" && !b.MasterVipHeld() {
		return -1, false // master, but not listening on the virtual address yet
	}
	addr := c.Broker(master).RouteAddr() // the virtual address with MasterVIP
	for _, ns := range c.NamesrvAddrs() {
		info, err := c.clusterInfo(ns)
		if err != nil || info.BrokerAddrTable[brokerName].BrokerAddrs[protocol.MasterID] != addr {
			return -1, false
		}
	}
	return master, true
}
