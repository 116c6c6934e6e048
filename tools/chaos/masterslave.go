package chaos

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/rocketraft/rocketraft/internal/faultnet"
	"github.com/rocketraft/rocketraft/protocol"
)

// MasterSlaveConfig configures a classic master/slave group: one name server, a master and its slave.
type MasterSlaveConfig struct {
	GroupConfig
	Role string // the master's brokerRole: SYNC_MASTER or ASYNC_MASTER
}

// MasterSlave is a running classic group. Every link between processes goes through a proxy: the slave's
// HA connection to the master, each broker's connection to the name server, and the clients' connections
// to each broker. There is no automatic failover: the master stays the writer while it is down, producers
// wait for its restart, and consumers read from the slave meanwhile.
type MasterSlave struct {
	group
	role   string
	master *Node
	slave  *Node
	ha     *faultnet.Proxy // the slave's HA connection to the master
}

var _ Cluster = (*MasterSlave)(nil)

// StartMasterSlave starts the name server, the master and the slave, with their proxies, and waits until
// both brokers listen.
func StartMasterSlave(ctx context.Context, cfg MasterSlaveConfig) (_ *MasterSlave, err error) {
	c := &MasterSlave{group: group{cfg: cfg.GroupConfig}, role: cfg.Role}
	defer func() {
		if err != nil {
			_ = c.Close()
		}
	}()
	if err := c.startNamesrv(ctx, "master", "slave"); err != nil {
		return nil, err
	}
	if c.master, err = c.newNode("master", 0); err != nil {
		return nil, err
	}
	if c.slave, err = c.newNode("slave", 1); err != nil {
		return nil, err
	}
	if c.ha, err = c.proxy("ha:slave->master", haAddr(c.master.Addr)); err != nil {
		return nil, err
	}
	c.master.Proc = c.brokerProcess(c.master, "--brokerId=0", "--brokerRole="+cfg.Role)
	c.slave.Proc = c.brokerProcess(c.slave, "--brokerId=1", "--brokerRole=SLAVE", "--haMasterAddress="+c.ha.Addr(),
		"--slaveSynchronizeInterval=1000")
	for _, n := range []*Node{c.master, c.slave} {
		if err := n.Proc.Start(); err != nil {
			return nil, err
		}
		if err := waitListening(ctx, n.Proc, n.Addr, 60*time.Second); err != nil {
			return nil, err
		}
	}
	// The run creates its topic at the master the name server routes: listening comes before registering.
	if err := c.waitMasterRouted(ctx, 60*time.Second); err != nil {
		return nil, err
	}
	return c, nil
}

// waitMasterRouted polls the name server until it routes a master of the group.
func (c *MasterSlave) waitMasterRouted(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		ci, err := c.wire.ClusterInfoAt(cctx, c.nsAddr)
		cancel()
		if err == nil && ci.BrokerAddrTable[brokerName].BrokerAddrs[protocol.MasterID] != "" {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("chaos: the name server routes no master of %s after %v (last error: %v)", brokerName, timeout, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (c *MasterSlave) Mode() string { return ModeMasterSlave }

// Elects: classic replication has no failover.
func (c *MasterSlave) Elects() bool { return false }

func (c *MasterSlave) Info(ri *RunInfo) {
	ri.Mode, ri.Role, ri.Flush = c.Mode(), c.role, c.cfg.Flush
	ri.Durable = c.role == "SYNC_MASTER" && c.cfg.Flush == "SYNC_FLUSH"
	ri.Replicated = c.role == "SYNC_MASTER"
	ri.Nodes = []string{"namesrv " + c.nsAddr, "master " + c.master.Addr, "slave " + c.slave.Addr}
}

// Writer is the master, up or not: classic replication has no failover.
func (c *MasterSlave) Writer(context.Context) *Node { return c.master }

// ReplicationLinks: the single HA link, whichever end n is.
func (c *MasterSlave) ReplicationLinks(*Node) []*faultnet.Proxy { return []*faultnet.Proxy{c.ha} }

// WaitCaughtUp waits until the slave's max offset equals the master's in every queue of topic.
func (c *MasterSlave) WaitCaughtUp(ctx context.Context, topic string, queues int) error {
	return waitSameOffsets(ctx, c.wire, topic, queues, c.master, []*Node{c.slave})
}

// haAddr is a broker's HA address: listenPort+1 (haListenPort's default).
func haAddr(addr string) string {
	host, port, _ := net.SplitHostPort(addr)
	p, _ := strconv.Atoi(port)
	return host + ":" + strconv.Itoa(p+1)
}
