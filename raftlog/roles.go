package raftlog

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// Role is what a node is in its group, as the broker sees it.
type Role int

const (
	// RoleFollower: not the leader (a follower or a candidate); the broker is a slave.
	RoleFollower Role = iota
	// RoleLeader: the leader, with every entry of earlier terms applied (a barrier of its term
	// went through); the broker is the master.
	RoleLeader
)

func (r Role) String() string {
	if r == RoleLeader {
		return "Leader"
	}
	return "Follower"
}

// RoleEvent is one change of a node's role (NodeOptions.OnRoleChange).
type RoleEvent struct {
	Role Role
	// Term is the Raft term the event was seen in.
	Term uint64
	// LeaderID and LeaderAddr name the leader as this node knows it: itself for RoleLeader,
	// empty for a follower that knows no leader (an election is under way).
	LeaderID, LeaderAddr string
}

// roleTick is how often the role loop looks at the Raft state on its own (besides Raft's
// notifications): a dropped observation costs at most this much delay.
const roleTick = 50 * time.Millisecond

// roles follows the node's leadership. Guarded by its loop goroutine except where noted.
type roles struct {
	notify  chan bool // Config.NotifyCh: Raft blocks on it, so it is buffered and drained at once
	obsCh   chan raft.Observation
	obs     *raft.Observer
	barrier chan barrierDone

	leaderTerm   uint64    // term this node leads in, 0 when it does not
	barrierBusy  bool      // a barrier of leaderTerm is in flight
	readySince   time.Time // when the leader became ready
	lastBalance  time.Time // last preferred-leader transfer attempt
	lastEvent    RoleEvent
	emitted      bool
	lastLeaderID string
	failedPeers  map[raft.ServerID]bool

	events struct {
		sync.Mutex
		queue []RoleEvent
	}
	eventWake chan struct{}
}

type barrierDone struct {
	term uint64
	err  error
}

func newRoles() *roles {
	r := &roles{notify: make(chan bool, 64), obsCh: make(chan raft.Observation, 64), barrier: make(chan barrierDone, 1),
		failedPeers: map[raft.ServerID]bool{}, eventWake: make(chan struct{}, 1)}
	r.obs = raft.NewObserver(r.obsCh, false, func(o *raft.Observation) bool {
		switch o.Data.(type) {
		case raft.LeaderObservation, raft.FailedHeartbeatObservation, raft.ResumedHeartbeatObservation, raft.RaftState:
			return true
		}
		return false
	})
	return r
}

// IsReadyLeader reports whether this node leads and has applied every entry of earlier terms
// (the moment its RoleLeader event is sent): a broker may act as the master.
func (n *Node) IsReadyLeader() bool {
	r := n.rf()
	return r != nil && n.ready.Load() && n.raftState() == raft.Leader
}

// roleLoop follows Raft's leadership notifications and observations, runs the barrier of a
// new leader, counts failovers, balances leadership to Config.PreferredLeaderID, and queues
// the role events.
func (n *Node) roleLoop() {
	defer n.wg.Done()
	r := n.roles
	tick := time.NewTicker(roleTick)
	defer tick.Stop()
	for {
		select {
		case <-n.stop:
			return
		case leader := <-r.notify:
			if leader {
				r.leaderTerm = n.rf().CurrentTerm()
				r.barrierBusy = false
				clear(r.failedPeers)
			} else {
				r.leaderTerm = 0
			}
			n.ready.Store(false)
		case b := <-r.barrier:
			r.barrierBusy = false
			if b.term == r.leaderTerm && b.err == nil && n.raftState() == raft.Leader {
				n.ready.Store(true)
				r.readySince = time.Now()
			} else if b.err != nil && b.term == r.leaderTerm {
				n.lg.Warn("barrier of the new leader failed; retrying", "term", b.term, "err", b.err)
			}
		case o := <-r.obsCh:
			switch d := o.Data.(type) {
			case raft.FailedHeartbeatObservation:
				r.failedPeers[d.PeerID] = true
			case raft.ResumedHeartbeatObservation:
				delete(r.failedPeers, d.PeerID)
			}
		case <-tick.C:
		}
		if r.leaderTerm != 0 && !n.ready.Load() && !r.barrierBusy {
			r.barrierBusy = true
			n.wg.Add(1)
			go n.runBarrier(r.leaderTerm)
		}
		n.noteLeader()
		n.emitRole()
		n.balance()
	}
}

// runBarrier waits for a barrier of term: once it is applied, so is every earlier entry. The
// dispatched position then moves over the no-op and barrier frames that end the log (Raft
// does not hand those to the state machine), so a new leader's store reports nothing behind;
// an empty command does the same on the followers.
func (n *Node) runBarrier(term uint64) {
	defer n.wg.Done()
	f := n.rf().Barrier(0)
	err := n.await(f)
	idx, ok := f.(raft.IndexFuture)
	if ok && err == nil {
		if p, ok := n.log.Position(idx.Index()); ok {
			n.cl.AdvanceDispatch(p.End)
		}
	}
	select {
	case n.roles.barrier <- barrierDone{term: term, err: err}:
	case <-n.stop:
		return
	}
	if ok && err == nil {
		// The followers never see the barrier either: an empty metadata command after it
		// moves their dispatched position over the frames before it (MetaApplier does not
		// get it). Its fate does not matter.
		_ = n.await(n.rf().Apply([]byte{KindMeta}, 0))
	}
}

// noteLeader counts a failover when the known leader changes to another node.
func (n *Node) noteLeader() {
	_, id := n.rf().LeaderWithID()
	r := n.roles
	if id == "" || string(id) == r.lastLeaderID {
		return
	}
	if r.lastLeaderID != "" {
		n.failovers.Add(1)
	}
	r.lastLeaderID = string(id)
}

// emitRole queues an event when the role (or a follower's leader) changed.
func (n *Node) emitRole() {
	r, rf := n.roles, n.rf()
	var ev RoleEvent
	switch {
	case n.ready.Load() && n.raftState() == raft.Leader:
		ev = RoleEvent{Role: RoleLeader, Term: r.leaderTerm, LeaderID: n.cfg.SelfID, LeaderAddr: n.selfAddr()}
	case n.raftState() != raft.Leader:
		addr, id := rf.LeaderWithID()
		ev = RoleEvent{Role: RoleFollower, Term: rf.CurrentTerm(), LeaderID: string(id), LeaderAddr: string(addr)}
	default:
		return // leading, not ready yet: the last event stands
	}
	if r.emitted && ev.Role == r.lastEvent.Role && ev.LeaderID == r.lastEvent.LeaderID &&
		(ev.Role == RoleFollower || ev.Term == r.lastEvent.Term) {
		return
	}
	r.emitted, r.lastEvent = true, ev
	n.lg.Info("role changed", "role", ev.Role, "term", ev.Term, "leader", ev.LeaderID)
	if n.opts.OnRoleChange == nil {
		return
	}
	r.events.Lock()
	r.events.queue = append(r.events.queue, ev)
	r.events.Unlock()
	select {
	case r.eventWake <- struct{}{}:
	default:
	}
}

// eventLoop calls NodeOptions.OnRoleChange with the queued events, in order, one at a time.
func (n *Node) eventLoop() {
	defer n.wg.Done()
	r := n.roles
	for {
		select {
		case <-n.stop:
			return
		case <-r.eventWake:
		}
		for {
			r.events.Lock()
			q := r.events.queue
			r.events.queue = nil
			r.events.Unlock()
			if len(q) == 0 {
				break
			}
			for _, ev := range q {
				n.opts.OnRoleChange(ev)
			}
		}
	}
}

// balance hands leadership to Config.PreferredLeaderID when this node leads instead, the
// preferred node is a voter whose heartbeats succeed, this node has led for a few election
// timeouts, and no attempt was made for a while (a transfer refuses writes while it runs).
func (n *Node) balance() {
	r := n.roles
	pref := n.cfg.PreferredLeaderID
	if pref == "" || pref == n.cfg.SelfID || !n.ready.Load() || r.failedPeers[raft.ServerID(pref)] ||
		time.Now().UnixNano() < n.balanceHold.Load() {
		return
	}
	settle := 5 * n.cfg.ElectionTimeout
	if time.Since(r.readySince) < settle || time.Since(r.lastBalance) < 2*settle {
		return
	}
	addr, ok := n.voterAddr(pref)
	if !ok {
		return
	}
	r.lastBalance = time.Now()
	n.lg.Info("handing leadership to the preferred leader", "to", pref)
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		if err := n.await(n.rf().LeadershipTransferToServer(raft.ServerID(pref), addr)); err != nil {
			n.lg.Warn("leadership transfer to the preferred leader failed", "to", pref, "err", err)
		}
	}()
}

// HoldPreferredLeader keeps this node, while it leads, from handing leadership to
// Config.PreferredLeaderID before until (a rolling restart drains the preferred node before it
// stops it). A later call replaces the time.
func (n *Node) HoldPreferredLeader(until time.Time) { n.balanceHold.Store(until.UnixNano()) }

// voterAddr is the address of voter id in the latest configuration.
func (n *Node) voterAddr(id string) (raft.ServerAddress, bool) {
	f := n.rf().GetConfiguration()
	if f.Error() != nil {
		return "", false
	}
	for _, s := range f.Configuration().Servers {
		if string(s.ID) == id && s.Suffrage == raft.Voter {
			return s.Address, true
		}
	}
	return "", false
}

// TransferLeadership hands leadership to voter toID ("" lets Raft pick the most up-to-date
// follower) and returns once the transfer is over: the target then leads (it still has to
// pass its barrier before it reports RoleLeader). Writes are refused while it runs. Errors:
// ErrNotLeader, an unknown toID, or Raft's (the target did not catch up within an election
// timeout).
func (n *Node) TransferLeadership(toID string) error {
	if err := n.leaderCheck(); err != nil {
		return err
	}
	var f raft.Future
	if toID == "" {
		f = n.rf().LeadershipTransfer()
	} else {
		addr, ok := n.voterAddr(toID)
		if !ok {
			return fmt.Errorf("raftlog: transfer leadership: %q is not a voter of the group", toID)
		}
		f = n.rf().LeadershipTransferToServer(raft.ServerID(toID), addr)
	}
	if err := n.await(f); err != nil {
		return fmt.Errorf("raftlog: transfer leadership to %q: %w", toID, n.proposalError(err))
	}
	return nil
}

// HandOver transfers leadership to the most up-to-date follower when this node leads a group
// of more than one voter, and returns once the transfer is over; nil at once otherwise (a
// follower, a single node, a node not started or closed).
func (n *Node) HandOver() error {
	if r := n.rf(); r == nil || n.closed.Load() || len(n.cfg.Peers) < 2 || n.raftState() != raft.Leader {
		return nil
	}
	return n.TransferLeadership("")
}

// AddVoter adds a node to the group (or changes its address) and waits until the new
// configuration is committed; the new node starts empty (no bootstrap) and catches up from
// the log, or from the retained CommitLog files (SnapshotStore). Leader only.
func (n *Node) AddVoter(ctx context.Context, id, addr string) error {
	if err := n.leaderCheck(); err != nil {
		return err
	}
	return n.waitFuture(ctx, n.rf().AddVoter(raft.ServerID(id), raft.ServerAddress(addr), 0, 0), "add voter "+id)
}

// RemoveServer removes a node from the group and waits until the new configuration is
// committed. A leader that removes itself steps down. Leader only.
func (n *Node) RemoveServer(ctx context.Context, id string) error {
	if err := n.leaderCheck(); err != nil {
		return err
	}
	return n.waitFuture(ctx, n.rf().RemoveServer(raft.ServerID(id), 0, 0), "remove server "+id)
}

// await returns f's error, or ErrShutdown once the node stops (Close, n.stop) or its Raft is shut
// down (raftDown). A goroutine Close waits for (n.wg) must not wait on a Raft future alone:
// hashicorp/raft leaves a future it took and never answered waiting for ever once it is shut
// down (a committed entry or barrier still queued for the state machine is dropped; a request
// still in one of its queues, such as a leadership transfer, is never read), and the node's
// Raft may already be shut down when Close runs (a failed log sync stops it, node.go). The
// goroutine left waiting on such a future stays parked: one per stranded future, only after a
// shutdown.
func (n *Node) await(f raft.Future) error { return n.awaitCtx(context.Background(), f) }

// awaitCtx is await that also gives up, with ctx's error, when ctx is done.
func (n *Node) awaitCtx(ctx context.Context, f raft.Future) error {
	return n.awaitUntil(ctx, f, n.stop)
}

// awaitUntil returns f's error; ctx's error when ctx is done first; ErrShutdown when stop is
// closed (nil: never) or Raft is shut down (raftDown) before Raft answered.
func (n *Node) awaitUntil(ctx context.Context, f raft.Future, stop <-chan struct{}) error {
	done := make(chan error, 1)
	go func() { done <- f.Error() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	case <-stop:
	case <-n.raftDown:
	}
	select {
	case err := <-done: // answered meanwhile
		return err
	default:
		return fmt.Errorf("%w: the node stopped before Raft answered", ErrShutdown)
	}
}

// waitFuture waits for a configuration change. The future resolves while Raft runs (applied,
// or failed on a leadership change); ctx only bounds this caller's wait.
func (n *Node) waitFuture(ctx context.Context, f raft.IndexFuture, what string) error {
	err := n.awaitCtx(ctx, f)
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil && errors.Is(err, ctx.Err()):
		return fmt.Errorf("raftlog: %s: %w: %w", what, ErrProposalTimeout, err)
	}
	return fmt.Errorf("raftlog: %s: %w", what, n.proposalError(err))
}
