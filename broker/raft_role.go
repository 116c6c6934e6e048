package broker

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rocketraft/rocketraft/internal/loop"
	"github.com/rocketraft/rocketraft/raftlog"
	"github.com/rocketraft/rocketraft/remoting"
	"github.com/rocketraft/rocketraft/store"
)

// raftRole is the replicationRole of the Raft mode (enableDLegerCommitLog=true): the node of package
// raftlog over the framed store, and the role that follows its leadership. The broker also keeps it as
// Broker.raft (nil in classic mode) for the Raft mode's own request handlers and state machine side
// (raft_*.go).
//
// Role: a node starts as a slave (brokerId = its position in dLegerPeers + 1, never 0 before it was
// elected, so a restarting node cannot clobber the master's route). The node reports RoleLeader once it
// leads and every entry of earlier terms is applied here (so the topic table, the offsets and the queue
// offsets are current); the broker then becomes master: brokerId 0, leader-only services started (delay
// delivery, timer, transaction check-back), registration with every name server at once; with
// masterVipAddress it takes that address first (raft_vip.go). On RoleFollower it lets the address go
// (closing its connections), turns slave (sends refused at once), then stops those services and registers
// with its slave id. Between Raft losing leadership and the event, the proposer refuses puts with ErrNotLeader.
type raftRole struct {
	b       *Broker
	node    *raftlog.Node // built by open
	slaveID int64
	// master is set on RoleLeader and cleared on RoleFollower; sends are accepted only while it is set.
	master atomic.Bool

	offsets *raftOffsetSync
	meta    *raftMeta // the node's state machine side for metadata entries (raft_meta.go)
	// vip holds masterVipAddress while this node is master (raft_vip.go); nil when the key is unset.
	vip     *raftVIP
	forward *raftForwarder // raft_forward.go
}

var _ replicationRole = (*raftRole)(nil)

// storeOptions makes the store framed: its CommitLog is the Raft log.
func (r *raftRole) storeOptions(o *store.Options) { o.Framed = true }

// open opens the Raft node over the framed store (recovering the log), registers the Raft requests and
// series, and makes the topic and group managers propose their changes. Nothing runs until start.
func (r *raftRole) open() error {
	b := r.b
	cfg := b.cfg
	r.slaveID = cfg.raftSlaveID()
	peerTLS, err := cfg.peerTLSMaterial(cfg.raftGroup(), b.log)
	if err != nil {
		return err
	}
	clientTLS, err := cfg.TLS.ClientTLS()
	if err != nil {
		return err
	}
	r.meta = &raftMeta{topics: b.topics, groups: b.groups, offsets: b.offsets, schedule: b.schedule, timer: b.timer,
		queues: b.store, role: r, changed: b.triggerRegister, log: b.log}
	r.forward = newRaftForwarder(b, remoting.NewClient(remoting.ClientConfig{TLS: clientTLS, ConnsPerAddr: 2},
		b.log.With("component", "raft-forward")))
	node, err := raftlog.OpenNode(b.store, cfg.raftNodeConfig(), raftlog.NodeOptions{
		Logger:       b.log,
		Dir:          filepath.Join(cfg.StorePathRootDir, "raft"),
		Meta:         r.meta,
		AddressOf:    cfg.raftDialOf(),
		PeerTLS:      peerTLS,
		OnRoleChange: r.roleChanged,
	})
	if err != nil {
		return fmt.Errorf("broker: open the raft log (enableDLegerCommitLog): %w", err)
	}
	r.node = node
	if r.vip, err = newRaftVIP(cfg, b.server, b.log); err != nil {
		_ = node.Close()
		r.node = nil
		return err
	}
	r.offsets = newRaftOffsetSync(r, b.offsets, b.schedule, b.timer, b.log, cfg.Raft.DLegerSelfId)
	b.topics.proposeThrough(r)
	b.groups.proposeThrough(r)
	b.metrics.registerRaft(raftMetrics{b})
	b.registerRaftAdmin()
	return nil
}

func (r *raftRole) putter() messagePutter { return r.node }

// start starts the Raft node (bootstrapping a new group from dLegerPeers on first start) and the offset
// sync. The master services start on leadership (roleChanged).
func (r *raftRole) start() error {
	if err := r.vip.clearStale(); err != nil {
		return err
	}
	if err := r.node.Start(); err != nil {
		return err
	}
	loop.Every(r.b.stop, &r.b.wg, ms(r.b.cfg.Raft.DLegerOffsetSyncIntervalMs), r.offsets.sync)
	return nil
}

// beforeClose stops the master services for good, then a master proposes its last offsets and timer
// progress, so the node it hands leadership to loses none of them, and hands leadership to the most
// up-to-date follower when this node leads a group of more than one voter (raftlog.Node.HandOver): the
// master's virtual address and its clients move to the new master at once, and the requests that still
// reach this node are forwarded while its pools run, instead of meeting drained pools (SYSTEM_BUSY). A
// failed hand-over is logged and Close goes on (raftlog.Node.Close tries again).
func (r *raftRole) beforeClose() {
	b := r.b
	if err := b.services.closeForGood(); err != nil {
		b.log.Error("stop the master services", "err", err)
	}
	r.offsets.sync()
	if err := r.node.HandOver(); err != nil {
		b.log.Warn("raft: hand leadership over before stopping", "err", err)
	}
}

// close stops the node: a master lets its virtual address go (its clients reconnect to the next holder),
// then the leader hands leadership over (raftlog.Node.Close). Runs after the last sends were answered.
func (r *raftRole) close() error {
	r.vip.close()
	r.master.Store(false)
	return r.node.Close()
}

// afterClose closes the forwarding client: forwards still in flight were relayed or failed by then.
func (r *raftRole) afterClose() error {
	return r.forward.client.Close()
}

// RaftNode is the Raft node (nil in classic mode), for tests and tools in this module.
func (b *Broker) RaftNode() *raftlog.Node {
	if b.raft == nil {
		return nil
	}
	return b.raft.node
}

// IsRaftMaster reports whether this node is the Raft group's master (leader, barrier passed).
func (b *Broker) IsRaftMaster() bool { return b.raft != nil && b.raft.master.Load() }

// roleChanged moves the broker's role with the node's (raftlog.NodeOptions.OnRoleChange: in order, one
// at a time).
func (r *raftRole) roleChanged(ev raftlog.RoleEvent) {
	b := r.b
	switch {
	case ev.Role == raftlog.RoleLeader && !r.master.Load():
		r.offsets.reset()
		r.master.Store(true)
		b.log.Info("raft: this node leads its group: master (brokerId 0)", "group", b.cfg.raftGroup(), "term", ev.Term)
		r.vip.take() // after the barrier (the event), before the registration that names it
		b.services.start()
		b.triggerRegister()
		b.announceLeader(ev.Term) // raft_forward.go: the other nodes forward writes here
		r.forward.wake()
	case ev.Role == raftlog.RoleLeader:
		b.announceLeader(ev.Term) // re-elected in a new term while master: forwarding follows the term
	case ev.Role == raftlog.RoleFollower && r.master.Load():
		// The virtual address goes first: its clients' connections end now and they reconnect to the next
		// holder instead of being refused here.
		r.vip.release("no longer the leader")
		r.master.Store(false)
		b.log.Info("raft: this node no longer leads its group: slave", "group", b.cfg.raftGroup(), "brokerId", r.slaveID,
			"term", ev.Term, "leader", ev.LeaderID)
		if err := b.services.stop(); err != nil {
			b.log.Error("stop the master services", "err", err)
		}
		b.triggerRegister()
		r.forward.wake()
	}
}

// TransferLeadership hands leadership to the node id (dLegerSelfId), or to the most up-to-date follower
// when id is empty, and returns once Raft did or gave up (raftlog.Node.TransferLeadership). Only the
// leader can.
func (b *Broker) TransferLeadership(id string) error {
	if b.raft == nil {
		return errors.New("broker: not in the Raft mode (enableDLegerCommitLog=false)")
	}
	return b.raft.node.TransferLeadership(id)
}

// brokerID is 0 while this node is master, else its slave id.
func (r *raftRole) brokerID() int64 {
	if r.master.Load() {
		return 0
	}
	return r.slaveID
}

// acceptsWrites: only the master (not yet master: a slave).
func (r *raftRole) acceptsWrites() bool { return r.master.Load() }

// name is SYNC_MASTER or ASYNC_MASTER (brokerRole) on the master, SLAVE elsewhere.
func (r *raftRole) name() string {
	if r.master.Load() {
		return r.b.cfg.BrokerRole
	}
	return RoleSlave
}

// refuseWrite answers a write that reached a follower: SERVICE_NOT_AVAILABLE, which the official clients
// retry (on another broker, with the route refreshed), with the leader's id in the remark.
func (r *raftRole) refuseWrite() *remoting.Command {
	if r.master.Load() {
		return nil
	}
	b := r.b
	st := r.node.Status()
	return errResponse(remoting.ServiceNotAvailable, "broker %s is not the master of Raft group %s (node %s is %s, leader %q): send to the master",
		b.addr, b.cfg.raftGroup(), b.cfg.Raft.DLegerSelfId, st.Role, st.LeaderID)
}

// registration carries brokerId 0 on the master, which first confirms with a quorum that it still leads
// (raft VerifyLeader): a leader that was paused or cut off can wake up with its role event still queued,
// and a registration as brokerId 0 from it would replace the real master's address at the name servers
// until the master's next registration (the chaos suite saw 9.4 s without a routed master after a
// SIGSTOP). Unconfirmed, it registers with its slave id. The name server orders master registrations by
// the term and routes a stand-in master while a group elects (namesrv/raftgroup.go): the virtual address
// when the master registered it (raftMasterVip). RocketMQ's name server ignores raftTerm, raftSlaveId and
// raftMasterVip.
func (r *raftRole) registration() (int64, string, map[string]string) {
	id := r.brokerID()
	if id == 0 && r.node.Raft() != nil {
		if err := r.node.Raft().VerifyLeader().Error(); err != nil {
			r.b.log.Warn("raft: leadership not confirmed by a quorum; registering as a slave", "brokerId", r.slaveID, "err", err)
			id = r.slaveID
		}
	}
	addr := r.registrationAddr(id)
	ext := map[string]string{
		"raftTerm":    itoa(int64(r.node.Status().Term)),
		"raftSlaveId": itoa(r.slaveID),
	}
	if id == 0 && addr != r.b.addr {
		// The master's virtual address (raft_vip.go): the name servers route it, not a member's own
		// address, as the group's stand-in master while it elects.
		ext["raftMasterVip"] = "true"
	}
	return id, addr, ext
}

func (r *raftRole) routeAddr() string { return r.registrationAddr(r.brokerID()) }

// collect sends nothing: the Raft series are registered by open.
func (r *raftRole) collect(chan<- prometheus.Metric) {}
