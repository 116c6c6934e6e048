package broker

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/rocketraft/rocketraft/raftlog"
	"github.com/rocketraft/rocketraft/remoting"
)

// raftState is the broker's Raft mode (enableDLegerCommitLog=true): the node of package raftlog over the
// framed store, and the role that follows its leadership.
//
// Role: a node starts as a slave (brokerId = its position in dLegerPeers + 1, never 0 before it was
// elected, so a restarting node cannot clobber the master's route). The node reports RoleLeader once it
// leads and every entry of earlier terms is applied here (so the topic table, the offsets and the queue
// offsets are current); the broker then becomes master: brokerId 0, leader-only services started (delay
// delivery, timer, transaction check-back), registration with every name server at once; with
// masterVipAddress it takes that address first (raft_vip.go). On RoleFollower it lets the address go
// (closing its connections), turns slave (sends refused at once), then stops those services and registers
// with its slave id. Between Raft losing leadership and the event, the proposer refuses puts with ErrNotLeader.
type raftState struct {
	node    *raftlog.Node
	slaveID int64
	// master is set on RoleLeader and cleared on RoleFollower; sends are accepted only while it is set.
	master atomic.Bool

	// servicesMu serialises the start and stop of the leader-only services (Broker.masterServices);
	// servicesClosed (guarded by it) is set by Close: no start after it.
	servicesMu     sync.Mutex
	servicesClosed bool

	offsets *raftOffsetSync
	// vip holds masterVipAddress while this node is master (raft_vip.go); nil when the key is unset.
	vip     *raftVIP
	forward *raftForwarder // raft_forward.go
}

// newRaft opens the Raft node over the framed store (recovering the log). Nothing runs until startRaft.
func (b *Broker) newRaft() error {
	cfg := b.cfg
	b.raft.slaveID = cfg.raftSlaveID()
	peerTLS, err := cfg.peerTLSMaterial(cfg.raftGroup(), b.log)
	if err != nil {
		return err
	}
	clientTLS, err := cfg.TLS.ClientTLS()
	if err != nil {
		return err
	}
	b.raft.forward = newRaftForwarder(b, remoting.NewClient(remoting.ClientConfig{TLS: clientTLS, ConnsPerAddr: 2},
		b.log.With("component", "raft-forward")))
	node, err := raftlog.OpenNode(b.store, cfg.raftNodeConfig(), raftlog.NodeOptions{
		Logger:       b.log,
		Dir:          filepath.Join(cfg.StorePathRootDir, "raft"),
		Meta:         &raftMeta{b: b},
		AddressOf:    cfg.raftDialOf(),
		PeerTLS:      peerTLS,
		OnRoleChange: b.raftRoleChanged,
	})
	if err != nil {
		return fmt.Errorf("broker: open the raft log (enableDLegerCommitLog): %w", err)
	}
	b.raft.node = node
	if b.raft.vip, err = newRaftVIP(cfg, b.server, b.log); err != nil {
		_ = node.Close()
		return err
	}
	b.raft.offsets = newRaftOffsetSync(b)
	b.putter = node
	b.topics.raft = b
	b.groups.raft = b
	b.metrics.registerRaft(raftMetrics{b})
	b.registerRaftAdmin()
	return nil
}

// startRaft starts the Raft node (bootstrapping a new group from dLegerPeers on first start) and the
// offset sync. The store must be started.
func (b *Broker) startRaft() error {
	if err := b.raft.vip.clearStale(); err != nil {
		return err
	}
	if err := b.raft.node.Start(); err != nil {
		return err
	}
	runEvery(b.stop, &b.wg, ms(b.cfg.Raft.DLegerOffsetSyncIntervalMs), b.raft.offsets.sync)
	return nil
}

// closeRaft stops the node: a master lets its virtual address go (its clients reconnect to the next
// holder), then the leader hands leadership over (raftlog.Node.Close). Runs after the last sends were
// answered.
func (b *Broker) closeRaft() error {
	if b.raft.node == nil {
		return nil
	}
	b.raft.vip.close()
	b.raft.master.Store(false)
	return b.raft.node.Close()
}

// raftHandOver moves leadership to the most up-to-date follower when this node leads a group of more than
// one voter (raftlog.Node.HandOver), first thing in Close: the master's virtual address and its clients
// move to the new master at once, and the requests that still reach this node are forwarded while its
// pools run, instead of meeting drained pools (SYSTEM_BUSY). A failure is logged and Close goes on
// (raftlog.Node.Close tries again).
func (b *Broker) raftHandOver() {
	if b.raft.node == nil {
		return
	}
	if err := b.raft.node.HandOver(); err != nil {
		b.log.Warn("raft: hand leadership over before stopping", "err", err)
	}
}

// raftCloseServices stops the leader-only services for good (Close, before the classic shutdown of
// those services, which then finds them stopped). A master proposes its last offsets and timer
// progress first, so the node it hands leadership to loses none of them.
func (b *Broker) raftCloseServices() {
	if !b.cfg.raftMode() {
		return
	}
	b.stopMasterServices()
	b.raft.offsets.sync()
	b.raft.servicesMu.Lock()
	b.raft.servicesClosed = true
	b.raft.servicesMu.Unlock()
}

// RaftNode is the Raft node (nil in classic mode), for tests and tools in this module.
func (b *Broker) RaftNode() *raftlog.Node { return b.raft.node }

// IsRaftMaster reports whether this node is the Raft group's master (leader, barrier passed).
func (b *Broker) IsRaftMaster() bool { return b.raft.master.Load() }

// raftRoleChanged moves the broker's role with the node's (raftlog.NodeOptions.OnRoleChange: in order,
// one at a time).
func (b *Broker) raftRoleChanged(ev raftlog.RoleEvent) {
	switch {
	case ev.Role == raftlog.RoleLeader && !b.raft.master.Load():
		b.raft.offsets.reset()
		b.raft.master.Store(true)
		b.log.Info("raft: this node leads its group: master (brokerId 0)", "group", b.cfg.raftGroup(), "term", ev.Term)
		b.raft.vip.take() // after the barrier (the event), before the registration that names it
		b.startMasterServices()
		b.triggerRegister()
		b.announceLeader(ev.Term) // raft_forward.go: the other nodes forward writes here
		b.raft.forward.wake()
	case ev.Role == raftlog.RoleLeader:
		b.announceLeader(ev.Term) // re-elected in a new term while master: forwarding follows the term
	case ev.Role == raftlog.RoleFollower && b.raft.master.Load():
		// The virtual address goes first: its clients' connections end now and they reconnect to the next
		// holder instead of being refused here.
		b.raft.vip.release("no longer the leader")
		b.raft.master.Store(false)
		b.log.Info("raft: this node no longer leads its group: slave", "group", b.cfg.raftGroup(), "brokerId", b.raft.slaveID,
			"term", ev.Term, "leader", ev.LeaderID)
		b.stopMasterServices()
		b.triggerRegister()
		b.raft.forward.wake()
	}
}

// startMasterServices starts the leader-only services unless they run or the broker is closing.
func (b *Broker) startMasterServices() {
	b.raft.servicesMu.Lock()
	defer b.raft.servicesMu.Unlock()
	if b.masterServices || b.raft.servicesClosed {
		return
	}
	b.schedule.start()
	b.timer.start()
	b.txCheck.start()
	b.masterServices = true
}

// stopMasterServices stops the leader-only services if they run.
func (b *Broker) stopMasterServices() {
	b.raft.servicesMu.Lock()
	defer b.raft.servicesMu.Unlock()
	if !b.masterServices {
		return
	}
	b.txCheck.close()
	if err := b.schedule.close(); err != nil {
		b.log.Error("persist delay offsets", "err", err)
	}
	if err := b.timer.close(); err != nil {
		b.log.Error("persist timer checkpoint", "err", err)
	}
	b.masterServices = false
}

// TransferLeadership hands leadership to the node id (dLegerSelfId), or to the most up-to-date follower
// when id is empty, and returns once Raft did or gave up (raftlog.Node.TransferLeadership). Only the
// leader can.
func (b *Broker) TransferLeadership(id string) error {
	if b.raft.node == nil {
		return errors.New("broker: not in the Raft mode (enableDLegerCommitLog=false)")
	}
	return b.raft.node.TransferLeadership(id)
}

// brokerID is the id this broker registers with: brokerId in classic mode; in the Raft mode 0 while it is
// master, else its slave id.
func (b *Broker) brokerID() int64 {
	if !b.cfg.raftMode() {
		return b.cfg.BrokerID
	}
	if b.raft.master.Load() {
		return 0
	}
	return b.raft.slaveID
}

// actsAsSlave reports whether the broker refuses writes as a slave: brokerRole=SLAVE in classic mode, not
// (yet) master in the Raft mode.
func (b *Broker) actsAsSlave() bool {
	if !b.cfg.raftMode() {
		return b.cfg.BrokerRole == RoleSlave
	}
	return !b.raft.master.Load()
}

// roleName is brokerRole as reported (runtime info, metrics): in the Raft mode SYNC_MASTER or ASYNC_MASTER
// per flushDiskType on the master, SLAVE elsewhere.
func (b *Broker) roleName() string {
	if !b.cfg.raftMode() {
		return b.cfg.BrokerRole
	}
	if b.raft.master.Load() {
		return b.cfg.BrokerRole
	}
	return RoleSlave
}

// raftRefuseSend is the answer to a write that reached a Raft follower (nil in classic mode or on the
// master): SERVICE_NOT_AVAILABLE, which the official clients retry (on another broker, with the route
// refreshed), with the leader's id in the remark.
func (b *Broker) raftRefuseSend() *remoting.Command {
	if !b.cfg.raftMode() || b.raft.master.Load() {
		return nil
	}
	st := b.raft.node.Status()
	return errResponse(remoting.ServiceNotAvailable, "broker %s is not the master of Raft group %s (node %s is %s, leader %q): send to the master",
		b.addr, b.cfg.raftGroup(), b.cfg.Raft.DLegerSelfId, st.Role, st.LeaderID)
}

// registrationID is the brokerId a registration carries. In the Raft mode a master first confirms with a
// quorum that it still leads (raft VerifyLeader): a leader that was paused or cut off can wake up with its
// role event still queued, and a registration as brokerId 0 from it would replace the real master's
// address at the name servers until the master's next registration (the chaos suite saw 9.4 s without a
// routed master after a SIGSTOP). Unconfirmed, it registers with its slave id.
func (b *Broker) registrationID() int64 {
	id := b.brokerID()
	if id != 0 || !b.cfg.raftMode() || b.raft.node == nil || b.raft.node.Raft() == nil {
		return id
	}
	if err := b.raft.node.Raft().VerifyLeader().Error(); err != nil {
		b.log.Warn("raft: leadership not confirmed by a quorum; registering as a slave", "brokerId", b.raft.slaveID, "err", err)
		return b.raft.slaveID
	}
	return id
}
