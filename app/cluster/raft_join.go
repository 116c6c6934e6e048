package cluster

import (
	"fmt"

	"github.com/rocketraft/rocketraft/broker"
)

// RaftJoinConfig is the config of a new node id of the running Raft group of broker index member (the
// operator's side of mqadmin addRaftPeer): the member's brokerName and election timing, dLegerJoin=true,
// and dLegerPeers the member's list plus id on a free port of 127.0.0.1 (the running nodes keep their
// own list: the membership is in the Raft log).
func (c *Cluster) RaftJoinConfig(member int, id string) broker.Config {
	c.t.Helper()
	c.mu.Lock()
	m := c.configs[member]
	c.mu.Unlock()
	cfg := TestBrokerConfig(c.t, c.NamesrvAddr(), m.BrokerName)
	cfg.StorePathRootDir = fmt.Sprintf("%s-%s", cfg.StorePathRootDir, id)
	cfg.Raft = m.Raft
	cfg.Raft.DLegerSelfId = id
	cfg.Raft.DLegerPeers = fmt.Sprintf("%s;%s-127.0.0.1:%d", m.Raft.DLegerPeers, id, FreePort(c.t))
	cfg.Raft.PreferredLeaderId = ""
	cfg.Raft.DLegerJoin = true
	return cfg
}

// AddRaftJoiner starts a broker with cfg (RaftJoinConfig) in a new slot without waiting for its
// registration, unlike AddBroker (a node that joins has no leader until it is added), and returns its
// index.
func (c *Cluster) AddRaftJoiner(cfg broker.Config) int {
	c.t.Helper()
	i := c.addSlot(cfg)
	c.startBroker(i)
	return i
}
