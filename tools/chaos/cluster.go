package chaos

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"time"

	"github.com/rocketraft/rocketraft/internal/freeport"

	"github.com/rocketraft/rocketraft/internal/faultnet"
	"github.com/rocketraft/rocketraft/internal/powerloss"
)

// The topologies (RunConfig.Mode, RunInfo.Mode).
const (
	ModeMasterSlave = "masterslave"
	ModeRaft        = "raft"
)

// Node is one broker of the group under test.
type Node struct {
	Name  string   // "master", "slave"; "n0".."n2" in a Raft group
	ID    int64    // brokerId it registers with (a Raft group's leader registers as 0)
	Addr  string   // its remoting address, host:port, as the name server routes it
	Proc  *Process // the process
	Store string   // its storePathRootDir
	// Client is the proxy clients reach the node through (the producer and consumers dial it instead of
	// Addr), so a fault can cut or delay clients from this node alone.
	Client *faultnet.Proxy
	// Namesrv is the proxy the node reaches the name server through.
	Namesrv *faultnet.Proxy
	// Disk is the disk Store lies on when the run has disk faults (GroupConfig.Disks), else nil.
	Disk *Disk
}

// journal is where the node's broker journals its syncs for the power-loss faults
// (powerloss.JournalPath): in its store, or, when the store lies on a Disk that the disk faults
// fail or fill, beside that disk's images on the run's own file system (a disk fault must not
// tear the harness's record).
func (n *Node) journal() string {
	if n.Disk != nil {
		return filepath.Join(n.Disk.dir, powerloss.FileName)
	}
	return filepath.Join(n.Store, powerloss.FileName)
}

// Cluster is the node set under test: the processes, the proxies between them, and what the checker needs
// to know of the replication mode. MasterSlave implements it today; a three-node Raft group will, with the
// same faults (kill or pause the writer or a follower, cut, partition or delay the replication links).
type Cluster interface {
	// Mode names the replication mode ("masterslave", "raft").
	Mode() string
	// Info fills the run description: role, flush type, durability, node names.
	Info(*RunInfo)
	// NamesrvAddr is the name servers' address list for clients (direct, not through a proxy).
	NamesrvAddr() string
	// BrokerName is the broker group's name.
	BrokerName() string
	// Nodes lists the brokers.
	Nodes() []*Node
	// Namesrv is the name server's process.
	Namesrv() *Process
	// Writer is the node that takes writes now (the master; a Raft group's leader), nil when none is
	// known to; followers are the others.
	Writer(ctx context.Context) *Node
	// Elects reports whether the group replaces a lost writer by itself (Raft), rather than waiting for its
	// restart (classic master/slave).
	Elects() bool
	// ReplicationLinks are the proxies that carry replication to or from n (none when the topology cannot
	// route them through proxies).
	ReplicationLinks(n *Node) []*faultnet.Proxy
	// Restart starts n again after a kill, on its data.
	Restart(n *Node) error
	// WaitCaughtUp waits until every follower holds what the writer holds (the same max offset in every
	// queue of topic), with every fault healed.
	WaitCaughtUp(ctx context.Context, topic string, queues int) error
	// Close stops every process and proxy.
	Close() error
}

// freePort returns a TCP port free on 127.0.0.1 whose next port is free too (a broker's HA port is
// listenPort+1).
func freePort() (int, error) { return freeport.Pair() }

// waitListening polls addr until it accepts a connection, the process exits, or timeout passes.
func waitListening(ctx context.Context, p *Process, addr string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		if !p.Running() {
			return fmt.Errorf("chaos: %s exited before listening on %s; the end of %s:\n%s", p.Name, addr, p.log, p.logTail(2000))
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("chaos: %s not listening on %s after %v", p.Name, addr, timeout)
		}
		if err := sleepCtx(ctx, 20*time.Millisecond); err != nil {
			return err
		}
	}
}

// waitWriter polls cl.Writer until it names a node or timeout passes (nil then).
func waitWriter(ctx context.Context, cl Cluster, timeout time.Duration) *Node {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		if w := cl.Writer(ctx); w != nil {
			return w
		}
		if sleepCtx(ctx, 100*time.Millisecond) != nil {
			return nil
		}
	}
}

// sleepCtx waits d or until ctx ends (pacing a poll; never a synchronisation).
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
