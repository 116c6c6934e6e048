package broker

import (
	"github.com/rocketraft/rocketraft/internal/metrics"
)

// RaftStatus is a Raft node's status as the broker reports it (GET_RAFT_STATUS, metrics).
type RaftStatus struct {
	Group      string `json:"group"`  // dLegerGroup (brokerName when unset)
	SelfID     string `json:"selfId"` // dLegerSelfId
	Peers      string `json:"peers"`  // dLegerPeers
	BrokerAddr string `json:"brokerAddr"`
	BrokerID   int64  `json:"brokerId"` // as registered: 0 on the master
	// MasterVipAddress is masterVipAddress:listenPort while this node listens on it (the master), else "".
	MasterVipAddress string `json:"masterVipAddress,omitempty"`
	Role             string `json:"role"`   // Leader, Follower, Candidate, Shutdown (hashicorp/raft)
	Master           bool   `json:"master"` // leader and barrier of its term passed: accepts sends
	Term             uint64 `json:"term"`
	CommitIndex      uint64 `json:"commitIndex"`
	AppliedIndex     uint64 `json:"appliedIndex"`
	LastIndex        uint64 `json:"lastIndex"`
	LeaderID         string `json:"leaderId"`
	LeaderAddr       string `json:"leaderAddr"` // the leader's Raft address
	Failovers        uint64 `json:"failovers"`
	// Members is the group's latest Raft configuration as this node knows it (raft_membership.go):
	// dLegerPeers is only the group a new node bootstraps with.
	Members []RaftMember `json:"members"`
	// MasterBrokerAddr is the broker address the group's latest master announced (raft_forward.go);
	// Forwarded and ForwardFailed count the writes this node forwarded to it, answered or not.
	MasterBrokerAddr string `json:"masterBrokerAddr"`
	Forwarded        uint64 `json:"forwarded"`
	ForwardFailed    uint64 `json:"forwardFailed"`
}

// RaftStatus returns this node's Raft status from state it holds (no wait on the Raft loop); ok is false
// in classic mode.
func (b *Broker) RaftStatus() (RaftStatus, bool) {
	if b.raft.node == nil {
		return RaftStatus{}, false
	}
	st := b.raft.node.Status()
	return RaftStatus{Group: b.cfg.raftGroup(), SelfID: b.cfg.Raft.DLegerSelfId, Peers: b.cfg.Raft.DLegerPeers,
		BrokerAddr: b.addr, BrokerID: b.brokerID(), Role: st.Role, Master: b.raft.master.Load(), Term: st.Term,
		CommitIndex: st.CommitIndex, AppliedIndex: st.AppliedIndex, LastIndex: st.LastIndex, LeaderID: st.LeaderID,
		LeaderAddr: st.LeaderAddr, Failovers: st.Failovers, Members: b.raftMembers(), MasterVipAddress: b.raft.vip.heldAddr(),
		Forwarded: b.raft.forward.forwarded.Load(), ForwardFailed: b.raft.forward.forwardFailed.Load(),
		MasterBrokerAddr: b.raft.forward.masterAddr()}, true
}

// raftMetrics is the broker's metrics.RaftSource.
type raftMetrics struct{ b *Broker }

var _ metrics.RaftSource = raftMetrics{}

func (m raftMetrics) RaftStatus() metrics.RaftStatus {
	st := m.b.raft.node.Status()
	return metrics.RaftStatus{Role: st.Role, Term: st.Term, CommitIndex: st.CommitIndex, AppliedIndex: st.AppliedIndex,
		Failovers: st.Failovers}
}
