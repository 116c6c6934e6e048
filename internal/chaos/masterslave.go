package chaos

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/rocketraft/rocketraft/internal/bench"
	"github.com/rocketraft/rocketraft/internal/faultnet"
	"github.com/rocketraft/rocketraft/remoting"
)

// MasterSlaveConfig configures a classic master/slave group: one name server, a master and its slave.
type MasterSlaveConfig struct {
	Bin      string // folder holding mqnamesrv and mqbroker
	Dir      string // data and logs go under it
	Role     string // the master's brokerRole: SYNC_MASTER or ASYNC_MASTER
	Flush    string // flushDiskType of both: SYNC_FLUSH or ASYNC_FLUSH
	FileSize int64  // mappedFileSizeCommitLog (small files keep SYNC_FLUSH's file warm-up cheap)
	Log      *slog.Logger
}

// MasterSlave is a running classic group. Every link between processes goes through a proxy: the slave's
// HA connection to the master, each broker's connection to the name server, and the clients' connections
// to each broker. There is no automatic failover: the master stays the writer while it is down, producers
// wait for its restart, and consumers read from the slave meanwhile.
type MasterSlave struct {
	cfg     MasterSlaveConfig
	nsAddr  string
	namesrv *Process
	master  *Node
	slave   *Node
	ha      *faultnet.Proxy // the slave's HA connection to the master
	proxies []*faultnet.Proxy
	wire    *bench.Wire
}

var _ Cluster = (*MasterSlave)(nil)

const brokerName = "chaos"

// StartMasterSlave starts the name server, the master and the slave, with their proxies, and waits until
// the slave replicates.
func StartMasterSlave(ctx context.Context, cfg MasterSlaveConfig) (_ *MasterSlave, err error) {
	c := &MasterSlave{cfg: cfg}
	defer func() {
		if err != nil {
			_ = c.Close()
		}
	}()
	for _, d := range []string{"namesrv", "master", "slave", "logs"} {
		if err := os.MkdirAll(filepath.Join(cfg.Dir, d), 0o755); err != nil {
			return nil, err
		}
	}
	nsPort, err := freePort()
	if err != nil {
		return nil, err
	}
	c.nsAddr = "127.0.0.1:" + strconv.Itoa(nsPort)
	nsHome := filepath.Join(cfg.Dir, "namesrv")
	c.namesrv = NewProcess("namesrv", filepath.Join(cfg.Bin, "mqnamesrv"), filepath.Join(cfg.Dir, "logs", "namesrv.log"),
		"--listenPort="+strconv.Itoa(nsPort), "--metricsPort=0", "--rocketmqHome="+nsHome,
		"--kvConfigPath="+filepath.Join(nsHome, "kvConfig.json"))
	if err := c.namesrv.Start(); err != nil {
		return nil, err
	}
	if err := waitListening(ctx, c.namesrv, c.nsAddr, 30*time.Second); err != nil {
		return nil, err
	}
	c.wire = bench.NewWire([]string{c.nsAddr}, 3*time.Second, cfg.Log)

	if c.master, err = c.newNode("master", 0); err != nil {
		return nil, err
	}
	if c.slave, err = c.newNode("slave", 1); err != nil {
		return nil, err
	}
	if c.ha, err = c.proxy("ha:slave->master", haAddr(c.master.Addr)); err != nil {
		return nil, err
	}
	c.master.Proc = c.brokerProcess(c.master, "--brokerRole="+cfg.Role)
	c.slave.Proc = c.brokerProcess(c.slave, "--brokerRole=SLAVE", "--haMasterAddress="+c.ha.Addr(),
		"--slaveSynchronizeInterval=1000")
	for _, n := range []*Node{c.master, c.slave} {
		if err := n.Proc.Start(); err != nil {
			return nil, err
		}
		if err := waitListening(ctx, n.Proc, n.Addr, 60*time.Second); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// newNode picks the node's ports and makes its client and name server proxies.
func (c *MasterSlave) newNode(name string, id int64) (*Node, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	n := &Node{Name: name, ID: id, Addr: "127.0.0.1:" + strconv.Itoa(port)}
	if n.Client, err = c.proxy("client->"+name, n.Addr); err != nil {
		return nil, err
	}
	if n.Namesrv, err = c.proxy(name+"->namesrv", c.nsAddr); err != nil {
		return nil, err
	}
	return n, nil
}

func (c *MasterSlave) proxy(name, target string) (*faultnet.Proxy, error) {
	p, err := faultnet.Listen(name, target, c.cfg.Log)
	if err != nil {
		return nil, err
	}
	c.proxies = append(c.proxies, p)
	return p, nil
}

func (c *MasterSlave) brokerProcess(n *Node, extra ...string) *Process {
	_, port, _ := net.SplitHostPort(n.Addr)
	args := []string{"-n", n.Namesrv.Addr(), "--brokerName=" + brokerName, "--brokerId=" + strconv.FormatInt(n.ID, 10),
		"--brokerIP1=127.0.0.1", "--listenPort=" + port, "--metricsPort=0", "--flushDiskType=" + c.cfg.Flush,
		"--storePathRootDir=" + filepath.Join(c.cfg.Dir, n.Name),
		"--mappedFileSizeCommitLog=" + strconv.FormatInt(c.cfg.FileSize, 10),
		// a message must fit a CommitLog file with its end-of-file marker
		"--maxMessageSize=" + strconv.FormatInt(min(4<<20, c.cfg.FileSize/2), 10)}
	return NewProcess(n.Name, filepath.Join(c.cfg.Bin, "mqbroker"), filepath.Join(c.cfg.Dir, "logs", n.Name+".log"),
		append(args, extra...)...)
}

func (c *MasterSlave) Mode() string { return "masterslave" }

func (c *MasterSlave) Info(ri *RunInfo) {
	ri.Mode, ri.Role, ri.Flush = c.Mode(), c.cfg.Role, c.cfg.Flush
	ri.Durable = c.cfg.Role == "SYNC_MASTER" && c.cfg.Flush == "SYNC_FLUSH"
	ri.Replicated = c.cfg.Role == "SYNC_MASTER"
	ri.Nodes = []string{"namesrv " + c.nsAddr, "master " + c.master.Addr, "slave " + c.slave.Addr}
}

func (c *MasterSlave) NamesrvAddr() string { return c.nsAddr }
func (c *MasterSlave) BrokerName() string  { return brokerName }
func (c *MasterSlave) Nodes() []*Node      { return []*Node{c.master, c.slave} }

// Writer is the master, up or not: classic replication has no failover.
func (c *MasterSlave) Writer(context.Context) *Node { return c.master }

// ReplicationLinks: the single HA link, whichever end n is.
func (c *MasterSlave) ReplicationLinks(*Node) []*faultnet.Proxy { return []*faultnet.Proxy{c.ha} }

func (c *MasterSlave) Restart(n *Node) error {
	if err := n.Proc.Start(); err != nil {
		return err
	}
	return waitListening(context.Background(), n.Proc, n.Addr, 120*time.Second)
}

// WaitCaughtUp waits until the slave's max offset equals the master's in every queue of topic.
func (c *MasterSlave) WaitCaughtUp(ctx context.Context, topic string, queues int) error {
	return waitSameOffsets(ctx, c.wire, topic, queues, c.master, []*Node{c.slave})
}

// waitSameOffsets polls until every follower's max offset equals the writer's in every queue (at most 2 min).
func waitSameOffsets(ctx context.Context, w *bench.Wire, topic string, queues int, writer *Node, followers []*Node) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	var last string
	for {
		same := true
		for q := range int32(queues) {
			want, err := w.QueueOffset(ctx, remoting.GetMaxOffset, writer.Addr, brokerName, topic, q)
			if err != nil {
				same, last = false, err.Error()
				break
			}
			for _, f := range followers {
				got, err := w.QueueOffset(ctx, remoting.GetMaxOffset, f.Addr, brokerName, topic, q)
				if err != nil || got != want {
					same, last = false, fmt.Sprintf("queue %d: %s at %d, %s at %d (%v)", q, writer.Name, want, f.Name, got, err)
					break
				}
			}
			if !same {
				break
			}
		}
		if same {
			return nil
		}
		if err := sleepCtx(ctx, 100*time.Millisecond); err != nil {
			return fmt.Errorf("chaos: followers not caught up: %s: %w", last, err)
		}
	}
}

func (c *MasterSlave) Close() error {
	var errs []error
	for _, p := range c.proxies {
		p.Heal() // a paused link must not hold a shutdown
	}
	for _, n := range []*Node{c.slave, c.master} {
		if n != nil && n.Proc != nil {
			errs = append(errs, n.Proc.Stop(30*time.Second))
		}
	}
	if c.namesrv != nil {
		errs = append(errs, c.namesrv.Stop(10*time.Second))
	}
	for _, p := range c.proxies {
		errs = append(errs, p.Close())
	}
	if c.wire != nil {
		errs = append(errs, c.wire.Close())
	}
	return errors.Join(errs...)
}

// haAddr is a broker's HA address: listenPort+1 (haListenPort's default).
func haAddr(addr string) string {
	host, port, _ := net.SplitHostPort(addr)
	p, _ := strconv.Atoi(port)
	return host + ":" + strconv.Itoa(p+1)
}
