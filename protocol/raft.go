package protocol

// Bodies of RocketRaft's own Raft admin requests (GET_RAFT_STATUS, ADD_RAFT_PEER, REMOVE_RAFT_PEER): not
// RocketMQ's, but a wire format all the same (mqadmin reads what brokers of another version write): never
// rename a tag.

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
	// Members is the group's latest Raft configuration as this node knows it (broker/raft_membership.go):
	// dLegerPeers is only the group a new node bootstraps with.
	Members []RaftMember `json:"members"`
	// MasterBrokerAddr is the broker address the group's latest master announced (broker/raft_forward.go);
	// Forwarded and ForwardFailed count the writes this node forwarded to it, answered or not.
	MasterBrokerAddr string `json:"masterBrokerAddr"`
	Forwarded        uint64 `json:"forwarded"`
	ForwardFailed    uint64 `json:"forwardFailed"`
}

// RaftMember is one server of the group's latest Raft configuration.
type RaftMember struct {
	ID       string `json:"id"`       // dLegerSelfId
	Addr     string `json:"addr"`     // Raft address (host:port)
	Suffrage string `json:"suffrage"` // Voter, Nonvoter, Staging
}
