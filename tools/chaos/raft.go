package chaos

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/rocketraft/rocketraft/internal/faultnet"
	"github.com/rocketraft/rocketraft/protocol"
)

// RaftGroupConfig configures a Raft group (enableDLegerCommitLog=true): one name server and Nodes brokers
// n0, n1, ... whose CommitLog is the Raft log.
type RaftGroupConfig struct {
	GroupConfig
	Nodes int // 3 unless set
}

// RaftGroup is a running Raft group. The clients' and the name server's links go through proxies as in
// MasterSlave, and so does every peer link: each node dials each other node through a proxy of its own
// (ni->nj, given to ni as dLegerPeersDial; the nodes bind dLegerPeers), so a follower's replication links
// are the proxies it dials through and those the others dial it through, both directions. Kills and
// pauses of the leader and of followers work as in MasterSlave; a killed or paused leader is replaced by
// an election, not by its restart. The nodes take a Raft snapshot every few seconds (raftSnaps), so the
// faults (power losses above all) also meet snapshots being written and the stores they leave behind.
type RaftGroup struct {
	group
	peers string
	links map[*Node][]*faultnet.Proxy // the peer-link proxies from and to each node
}

var _ Cluster = (*RaftGroup)(nil)

// raftSnaps: at the workload's rate (about 80 entries a second) a snapshot every two or three seconds, and
// 50 entries kept indexed after it (the defaults are 32768 and 100000). A follower still catches up by
// replication, not by installing a snapshot: compaction is advisory in the Raft log store (raftlog/doc.go),
// and the leader sends a snapshot only for entries whose CommitLog files retention deleted, which a
// two-minute run never does; raftlog's catch-up tests cover the install.
var raftSnaps = []string{"--raftSnapshotThreshold=200", "--raftSnapshotIntervalMs=250", "--raftTrailingLogs=50"}

// StartRaftGroup starts the name server and every node, and waits until a leader is registered as the
// group's master (brokerId 0).
func StartRaftGroup(ctx context.Context, cfg RaftGroupConfig) (_ *RaftGroup, err error) {
	if cfg.Nodes == 0 {
		cfg.Nodes = 3
	}
	c := &RaftGroup{group: group{cfg: cfg.GroupConfig}}
	defer func() {
		if err != nil {
			_ = c.Close()
		}
	}()
	var names, peers []string
	for i := range cfg.Nodes {
		names = append(names, "n"+strconv.Itoa(i))
	}
	if err := c.startNamesrv(ctx, names...); err != nil {
		return nil, err
	}
	for _, name := range names {
		if _, err := c.newNode(name, -1); err != nil { // the broker id follows leadership
			return nil, err
		}
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		peers = append(peers, fmt.Sprintf("%s-127.0.0.1:%d", name, port))
	}
	c.peers = strings.Join(peers, ";")
	c.links = map[*Node][]*faultnet.Proxy{}
	dial := make([][]string, len(c.nodes))
	for i, from := range c.nodes {
		for j, to := range c.nodes {
			if i == j {
				continue
			}
			_, addr, _ := strings.Cut(peers[j], "-")
			p, err := c.proxy(from.Name+"->"+to.Name, addr)
			if err != nil {
				return nil, err
			}
			c.links[from] = append(c.links[from], p)
			c.links[to] = append(c.links[to], p)
			dial[i] = append(dial[i], to.Name+"-"+p.Addr())
		}
	}
	for i, n := range c.nodes {
		args := append([]string{"--enableDLegerCommitLog=true", "--dLegerGroup=" + brokerName,
			"--dLegerPeers=" + c.peers, "--dLegerPeersDial=" + strings.Join(dial[i], ";"), "--dLegerSelfId=" + n.Name},
			raftSnaps...)
		n.Proc = c.brokerProcess(n, args...)
		if err := n.Proc.Start(); err != nil { // all before any wait: one node alone elects no leader
			return nil, err
		}
	}
	for _, n := range c.nodes {
		if err := waitListening(ctx, n.Proc, n.Addr, 60*time.Second); err != nil {
			return nil, err
		}
	}
	if waitWriter(ctx, c, time.Minute) == nil {
		return nil, fmt.Errorf("chaos: no leader of the Raft group registered within a minute (dLegerPeers %s)", c.peers)
	}
	return c, nil
}

func (c *RaftGroup) Mode() string { return ModeRaft }

func (c *RaftGroup) Info(ri *RunInfo) {
	ri.Mode, ri.Role, ri.Flush = c.Mode(), "raft", c.cfg.Flush
	// A send is acknowledged once a majority holds it: it survives the kill of any one node.
	ri.Durable, ri.Replicated = true, true
	ri.Nodes = []string{"namesrv " + c.nsAddr, "dLegerPeers " + c.peers}
	for _, n := range c.nodes {
		ri.Nodes = append(ri.Nodes, n.Name+" "+n.Addr)
	}
}

// Writer is the node the name server routes as the group's master (the leader past its barrier), when
// that node's process is up; nil during an election.
func (c *RaftGroup) Writer(ctx context.Context) *Node {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	ci, err := c.wire.ClusterInfoAt(ctx, c.nsAddr)
	if err != nil {
		return nil
	}
	addr := ci.BrokerAddrTable[brokerName].BrokerAddrs[protocol.MasterID]
	for _, n := range c.nodes {
		if n.Addr == addr && n.Proc.Running() {
			return n
		}
	}
	return nil
}

// Elects: a Raft group replaces a lost leader by itself.
func (c *RaftGroup) Elects() bool { return true }

// ReplicationLinks: the proxies of n's peer links, the ones n dials through and the ones the others dial n
// through (see RaftGroup).
func (c *RaftGroup) ReplicationLinks(n *Node) []*faultnet.Proxy { return c.links[n] }

// WaitCaughtUp waits for a leader, then until every follower's max offset equals the leader's in every
// queue of topic.
func (c *RaftGroup) WaitCaughtUp(ctx context.Context, topic string, queues int) error {
	w := waitWriter(ctx, c, time.Minute)
	if w == nil {
		return fmt.Errorf("chaos: no leader registered within a minute")
	}
	var followers []*Node
	for _, n := range c.nodes {
		if n != w {
			followers = append(followers, n)
		}
	}
	return waitSameOffsets(ctx, c.wire, topic, queues, w, followers)
}
