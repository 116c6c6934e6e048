package broker

import (
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/rocketraft/rocketraft/protocol"
	"github.com/rocketraft/rocketraft/raftlog"
	"github.com/rocketraft/rocketraft/remoting"
)

// Membership of a Raft group (mqadmin addRaftPeer / removeRaftPeer): the leader adds a node with
// raftlog.Node.AddVoter, the new node having started with dLegerJoin=true (no bootstrap) so that it
// catches up from the leader's log; it removes one with RemoveServer. Both answer once the new
// configuration is committed. A follower answers SERVICE_NOT_AVAILABLE naming the leader; the leader
// refuses to remove itself (transfer leadership first: mqadmin removeRaftPeer does). With ACL on, both
// need an admin account.

// raftMembers is the latest configuration this node knows (from state it holds: hashicorp/raft answers
// GetConfiguration without the Raft loop), in the order of the configuration.
func (b *Broker) raftMembers() []protocol.RaftMember {
	r := b.raft.node.Raft()
	if r == nil {
		return nil
	}
	f := r.GetConfiguration()
	if f.Error() != nil {
		return nil
	}
	var out []protocol.RaftMember
	for _, s := range f.Configuration().Servers {
		out = append(out, protocol.RaftMember{ID: string(s.ID), Addr: string(s.Address), Suffrage: s.Suffrage.String()})
	}
	return out
}

// raftMembershipResult is the JSON body of the answer to ADD_RAFT_PEER and REMOVE_RAFT_PEER.
type raftMembershipResult struct {
	Group   string                `json:"group"`
	Leader  string                `json:"leader"` // dLegerSelfId of the leader that made the change
	Members []protocol.RaftMember `json:"members"`
}

// registerRaftMembership adds remoting.AddRaftPeer and remoting.RemoveRaftPeer to pool (the Raft admin
// pool).
func (b *Broker) registerRaftMembership(pool *remoting.Pool) {
	b.server.Register(remoting.AddRaftPeer, pool, b.processAddRaftPeer)
	b.server.Register(remoting.RemoveRaftPeer, pool, b.processRemoveRaftPeer)
}

// processAddRaftPeer adds ext peerId at ext peerAddr (its Raft host:port) as a voter.
func (b *Broker) processAddRaftPeer(ctx context.Context, conn *remoting.Conn, req *remoting.Command) *remoting.Command {
	id, addr := strings.TrimSpace(req.OptString("peerId", "")), strings.TrimSpace(req.OptString("peerAddr", ""))
	if id == "" || strings.ContainsAny(id, ";-") {
		return errResponse(remoting.InvalidParameter, "peerId %q: want a node id (dLegerSelfId) without ';' or '-'", id)
	}
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return errResponse(remoting.InvalidParameter, "peerAddr %q: want the new node's Raft address host:port (its entry in dLegerPeers): %v", addr, err)
	}
	for _, m := range b.raftMembers() {
		if m.ID != id && m.Addr == addr {
			return errResponse(remoting.InvalidParameter, "Raft address %s already belongs to node %s of group %s", addr, m.ID, b.cfg.raftGroup())
		}
	}
	wctx, cancel := context.WithTimeout(ctx, b.raftMembershipWait(req))
	defer cancel()
	err := b.raft.node.AddVoter(wctx, id, addr)
	if resp := b.raftMembershipError(err, "add node "+id+" ("+addr+") to"); resp != nil {
		return resp
	}
	b.log.Info("raft: node added on request", "id", id, "addr", addr, "by", conn.RemoteAddr())
	return b.raftMembershipAnswer()
}

// processRemoveRaftPeer removes ext peerId from the group. The leader does not remove itself.
func (b *Broker) processRemoveRaftPeer(ctx context.Context, conn *remoting.Conn, req *remoting.Command) *remoting.Command {
	id := strings.TrimSpace(req.OptString("peerId", ""))
	if id == "" {
		return errResponse(remoting.InvalidParameter, "peerId: want the dLegerSelfId of the node to remove")
	}
	if id == b.cfg.Raft.DLegerSelfId && b.raft.node.Status().Role == "Leader" {
		return errResponse(remoting.InvalidParameter, "node %s (%s) is the leader of Raft group %s: transfer leadership to another node first (mqadmin transferLeadership), then remove it",
			id, b.addr, b.cfg.raftGroup())
	}
	known := false
	for _, m := range b.raftMembers() {
		known = known || m.ID == id
	}
	if !known && b.raft.node.Status().Role == "Leader" {
		return errResponse(remoting.InvalidParameter, "node %q is not a member of Raft group %s", id, b.cfg.raftGroup())
	}
	wctx, cancel := context.WithTimeout(ctx, b.raftMembershipWait(req))
	defer cancel()
	err := b.raft.node.RemoveServer(wctx, id)
	if resp := b.raftMembershipError(err, "remove node "+id+" from"); resp != nil {
		return resp
	}
	b.log.Info("raft: node removed on request", "id", id, "by", conn.RemoteAddr())
	return b.raftMembershipAnswer()
}

// raftMembershipWait bounds the wait for a configuration change to commit: ext waitMs when the client
// gives it (mqadmin: most of its request timeout), else ten election timeouts. AddVoter commits without
// waiting for the new node to catch up.
func (b *Broker) raftMembershipWait(req *remoting.Command) time.Duration {
	if v, err := strconv.ParseInt(req.OptString("waitMs", ""), 10, 64); err == nil && v > 0 {
		return ms(v)
	}
	return 10 * ms(b.cfg.Raft.DLegerElectionTimeoutMs)
}

// raftMembershipError turns a failed AddVoter / RemoveServer into its answer (nil: no error).
func (b *Broker) raftMembershipError(err error, what string) *remoting.Command {
	var nl *raftlog.NotLeaderError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &nl):
		return errResponse(remoting.ServiceNotAvailable, "node %s (%s) is not the leader of Raft group %s; the leader is %q: ask it",
			b.cfg.Raft.DLegerSelfId, b.addr, b.cfg.raftGroup(), nl.LeaderID)
	default:
		return errResponse(remoting.SystemError, "%s Raft group %s: %v", what, b.cfg.raftGroup(), err)
	}
}

func (b *Broker) raftMembershipAnswer() *remoting.Command {
	return remoting.NewJSONResponse(raftMembershipResult{Group: b.cfg.raftGroup(), Leader: b.cfg.Raft.DLegerSelfId, Members: b.raftMembers()})
}
