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

	"github.com/rocketraft/rocketraft/client"
	"github.com/rocketraft/rocketraft/internal/faultnet"
	"github.com/rocketraft/rocketraft/internal/powerloss"
)

// GroupConfig is what every topology needs: where the binaries are, where data and logs go, and the
// store settings every broker shares.
type GroupConfig struct {
	Bin      string // folder holding mqnamesrv and mqbroker
	Dir      string // data and logs go under it
	Flush    string // flushDiskType of every broker: SYNC_FLUSH or ASYNC_FLUSH
	FileSize int64  // mappedFileSizeCommitLog (small files keep SYNC_FLUSH's file warm-up cheap)
	Log      *slog.Logger
	// BrokerArgs, when set, gives more arguments of broker node (e.g. the peerTls* keys with its own
	// certificate).
	BrokerArgs func(node string) []string
	// PowerLoss makes every broker journal its syncs (powerloss.EnvVar), so a power-loss fault can cut its
	// store back to them.
	PowerLoss bool
	// NamesrvArgs are more arguments of the name server (after the suite's own, so they override them).
	NamesrvArgs []string
	// Disks puts every broker's store on a disk of its own (Disk, disk.go) that the disk fault kinds fail,
	// fill or slow down; it needs root (DiskSupport).
	Disks bool
}

// group is the part of a topology every implementation shares: one name server, the brokers' nodes
// (each with a client proxy and a name server proxy), every proxy made, and a wire to the name server.
type group struct {
	cfg     GroupConfig
	nsAddr  string
	namesrv *Process
	nodes   []*Node
	proxies []*faultnet.Proxy
	wire    *client.Client
}

const brokerName = "chaos"

// startNamesrv makes the folders and starts the name server.
func (g *group) startNamesrv(ctx context.Context, dirs ...string) error {
	for _, d := range append(dirs, "namesrv", "logs") {
		if err := os.MkdirAll(filepath.Join(g.cfg.Dir, d), 0o755); err != nil {
			return err
		}
	}
	nsPort, err := freePort()
	if err != nil {
		return err
	}
	g.nsAddr = "127.0.0.1:" + strconv.Itoa(nsPort)
	nsHome := filepath.Join(g.cfg.Dir, "namesrv")
	args := append([]string{"--listenPort=" + strconv.Itoa(nsPort), "--metricsExporterType=DISABLE", "--logDir=",
		"--rocketmqHome=" + nsHome, "--kvConfigPath=" + filepath.Join(nsHome, "kvConfig.json")}, g.cfg.NamesrvArgs...)
	g.namesrv = NewProcess("namesrv", filepath.Join(g.cfg.Bin, "mqnamesrv"), filepath.Join(g.cfg.Dir, "logs", "namesrv.log"), args...)
	if err := g.namesrv.Start(); err != nil {
		return err
	}
	if err := waitListening(ctx, g.namesrv, g.nsAddr, 30*time.Second); err != nil {
		return err
	}
	g.wire = newWire(g.nsAddr, 3*time.Second, g.cfg.Log)
	return nil
}

// newNode picks the node's ports, makes its store's disk when the run has disk faults (GroupConfig.Disks),
// and makes its client and name server proxies.
func (g *group) newNode(name string, id int64) (*Node, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	n := &Node{Name: name, ID: id, Addr: "127.0.0.1:" + strconv.Itoa(port), Store: filepath.Join(g.cfg.Dir, name)}
	g.nodes = append(g.nodes, n) // before anything that may fail: Close undoes what was made
	if g.cfg.Disks {
		if n.Disk, err = NewDisk(filepath.Join(g.cfg.Dir, "disks", name), name, n.Store); err != nil {
			return nil, err
		}
	}
	if n.Client, err = g.proxy("client->"+name, n.Addr); err != nil {
		return nil, err
	}
	if n.Namesrv, err = g.proxy(name+"->namesrv", g.nsAddr); err != nil {
		return nil, err
	}
	return n, nil
}

func (g *group) proxy(name, target string) (*faultnet.Proxy, error) {
	p, err := faultnet.Listen(name, target, g.cfg.Log)
	if err != nil {
		return nil, err
	}
	g.proxies = append(g.proxies, p)
	return p, nil
}

// brokerProcess describes n's broker process: the settings every broker shares, then extra.
func (g *group) brokerProcess(n *Node, extra ...string) *Process {
	_, port, _ := net.SplitHostPort(n.Addr)
	args := []string{"-n", n.Namesrv.Addr(), "--brokerName=" + brokerName,
		"--brokerIP1=127.0.0.1", "--listenPort=" + port, "--metricsExporterType=DISABLE", "--logDir=", "--flushDiskType=" + g.cfg.Flush,
		"--storePathRootDir=" + n.Store,
		"--mappedFileSizeCommitLog=" + strconv.FormatInt(g.cfg.FileSize, 10),
		// a message must fit a CommitLog file with its end-of-file marker
		"--maxMessageSize=" + strconv.FormatInt(min(4<<20, g.cfg.FileSize/2), 10)}
	if g.cfg.Disks {
		// A full disk must not make the broker delete unexpired CommitLog files to make room
		// (RocketMQ's forced clean, on by default): that loses acknowledged messages by design.
		args = append(args, "--cleanFileForciblyEnable=false")
	}
	args = append(args, extra...)
	if g.cfg.BrokerArgs != nil {
		args = append(args, g.cfg.BrokerArgs(n.Name)...)
	}
	p := NewProcess(n.Name, filepath.Join(g.cfg.Bin, "mqbroker"), filepath.Join(g.cfg.Dir, "logs", n.Name+".log"), args...)
	if g.cfg.PowerLoss {
		p.SetEnv(powerloss.EnvVar + "=" + n.journal())
	}
	return p
}

func (g *group) NamesrvAddr() string { return g.nsAddr }
func (g *group) BrokerName() string  { return brokerName }
func (g *group) Nodes() []*Node      { return g.nodes }
func (g *group) Namesrv() *Process   { return g.namesrv }

// Restart starts n again on its data and waits until it listens.
func (g *group) Restart(n *Node) error {
	if err := n.Proc.Start(); err != nil {
		return err
	}
	return waitListening(context.Background(), n.Proc, n.Addr, 120*time.Second)
}

// Close stops every process (brokers newest first, then the name server) and every proxy.
func (g *group) Close() error {
	var errs []error
	for _, p := range g.proxies {
		p.Heal() // a paused link must not hold a shutdown
	}
	for i := len(g.nodes) - 1; i >= 0; i-- {
		if n := g.nodes[i]; n.Proc != nil {
			errs = append(errs, n.Proc.Stop(30*time.Second))
		}
	}
	if g.namesrv != nil {
		errs = append(errs, g.namesrv.Stop(10*time.Second))
	}
	for _, n := range g.nodes {
		if n.Disk != nil {
			errs = append(errs, n.Disk.Close())
		}
	}
	for _, p := range g.proxies {
		errs = append(errs, p.Close())
	}
	if g.wire != nil {
		errs = append(errs, g.wire.Close())
	}
	return errors.Join(errs...)
}

// waitSameOffsets polls until every follower's max offset equals the writer's in every queue (at most 2 min).
func waitSameOffsets(ctx context.Context, w *client.Client, topic string, queues int, writer *Node, followers []*Node) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	var last string
	for {
		same := true
		for q := range int32(queues) {
			want, err := maxOffset(ctx, w, writer.Addr, topic, q)
			if err != nil {
				same, last = false, err.Error()
				break
			}
			for _, f := range followers {
				got, err := maxOffset(ctx, w, f.Addr, topic, q)
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
