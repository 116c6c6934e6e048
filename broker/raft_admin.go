package broker

import (
	"context"
	"errors"
	"time"

	"github.com/rocketraft/rocketraft/raftlog"
	"github.com/rocketraft/rocketraft/remoting"
)

// registerRaftAdmin adds the Raft mode's own requests (remoting.GetRaftStatus,
// remoting.TransferRaftLeadership; mqadmin getRaftStatus and transferLeadership). A classic broker does not
// register them and answers REQUEST_CODE_NOT_SUPPORTED.
func (b *Broker) registerRaftAdmin() {
	pool := remoting.NewPool("raft-admin", 2, 1_000)
	b.pools = append(b.pools, pool)
	b.server.Register(remoting.GetRaftStatus, pool, b.processGetRaftStatus)
	b.server.Register(remoting.TransferRaftLeadership, pool, b.processTransferRaftLeadership)
	b.registerRaftMembership(pool) // raft_membership.go
}

// processGetRaftStatus answers this node's RaftStatus as JSON.
func (b *Broker) processGetRaftStatus(ctx context.Context, conn *remoting.Conn, req *remoting.Command) *remoting.Command {
	st, ok := b.RaftStatus()
	if !ok {
		return errResponse(remoting.SystemError, "broker %s is not in the Raft mode (enableDLegerCommitLog=false)", b.addr)
	}
	return remoting.NewJSONResponse(st)
}

// processTransferRaftLeadership hands leadership to ext targetId (a dLegerSelfId; empty: Raft picks the
// most up-to-date follower) and answers once the transfer is over. A follower answers
// SERVICE_NOT_AVAILABLE naming the leader. With ext holdPreferredMillis (mqadmin transferLeadership
// --drain), the group first commits a metaHold entry: no node hands leadership to preferredLeaderId for
// that long, so a preferred leader being drained for a restart does not get leadership back meanwhile.
func (b *Broker) processTransferRaftLeadership(ctx context.Context, conn *remoting.Conn, req *remoting.Command) *remoting.Command {
	target := req.OptString("targetId", "")
	if target == b.cfg.Raft.DLegerSelfId {
		return errResponse(remoting.InvalidParameter, "node %s already is the target %q", b.addr, target)
	}
	hold, err := req.OptInt64("holdPreferredMillis", 0)
	if err != nil || hold < 0 {
		return errResponse(remoting.InvalidParameter, "TRANSFER_RAFT_LEADERSHIP header holdPreferredMillis %q: want milliseconds >= 0", req.OptString("holdPreferredMillis", ""))
	}
	if hold > 0 {
		until := time.Now().Add(time.Duration(hold) * time.Millisecond).UnixMilli()
		if _, err := b.raft.proposeMeta(&metaCmd{Op: metaHold, Name: b.cfg.Raft.DLegerSelfId, HoldUntil: until}); err != nil {
			return errResponse(remoting.ServiceNotAvailable, "hold preferred-leader moves of Raft group %s for %d ms before the transfer: %v",
				b.cfg.raftGroup(), hold, err)
		}
	}
	err = b.TransferLeadership(target)
	var nl *raftlog.NotLeaderError
	switch {
	case errors.As(err, &nl):
		return errResponse(remoting.ServiceNotAvailable, "node %s (%s) is not the leader of Raft group %s; the leader is %q: ask it",
			b.cfg.Raft.DLegerSelfId, b.addr, b.cfg.raftGroup(), nl.LeaderID)
	case err != nil:
		return errResponse(remoting.SystemError, "transfer the leadership of Raft group %s to %q: %v", b.cfg.raftGroup(), target, err)
	}
	b.log.Info("raft: leadership handed over on request", "to", target, "by", conn.RemoteAddr())
	return remoting.NewResponse(remoting.Success, "")
}
