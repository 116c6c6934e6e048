package broker

import (
	"github.com/rocketraft/rocketraft/internal/metrics"
	"github.com/rocketraft/rocketraft/protocol"
)

// RaftStatus returns this node's Raft status from state it holds (no wait on the Raft loop); ok is false
// in classic mode.
func (b *Broker) RaftStatus() (protocol.RaftStatus, bool) {
	if b.raft == nil {
		return protocol.RaftStatus{}, false
	}
	st := b.raft.node.Status()
	return protocol.RaftStatus{Group: b.cfg.raftGroup(), SelfID: b.cfg.Raft.DLegerSelfId, Peers: b.cfg.Raft.DLegerPeers,
		BrokerAddr: b.addr, BrokerID: b.role.brokerID(), Role: st.Role, Master: b.raft.master.Load(), Term: st.Term,
		CommitIndex: st.CommitIndex, AppliedIndex: st.AppliedIndex, LastIndex: st.LastIndex, LeaderID: st.LeaderID,
		LeaderAddr: st.LeaderAddr, Failovers: st.Failovers, Members: b.raftMembers(), MasterVipAddress: b.raft.vip.heldAddr(),
		Forwarded: b.raft.forward.forwarded.Load(), ForwardFailed: b.raft.forward.forwardFailed.Load(),
		MasterBrokerAddr: b.raft.forward.masterAddr()}, true
}

// raftMetrics is the broker's metrics.RaftSource.
type raftMetrics struct{ b *Broker }

var _ metrics.RaftSource = raftMetrics{}

func (m raftMetrics) RaftStatus() protocol.RaftStatus {
	st := m.b.raft.node.Status()
	return protocol.RaftStatus{Role: st.Role, Term: st.Term, CommitIndex: st.CommitIndex, AppliedIndex: st.AppliedIndex,
		Failovers: st.Failovers}
}
