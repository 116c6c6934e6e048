package metrics

import (
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

// RaftStatus is one Raft node's view of its group, as the Raft mode reports it.
type RaftStatus struct {
	// Role is "leader", "follower", "candidate" or "shutdown" (any case; hashicorp/raft's
	// RaftState.String() works as it is).
	Role string
	// Term is the node's current term.
	Term uint64
	// CommitIndex is the highest log index the node knows to be committed.
	CommitIndex uint64
	// AppliedIndex is the highest log index the node's state machine has applied (dispatched to the
	// ConsumeQueues); consumers see nothing above it.
	AppliedIndex uint64
	// Failovers counts the leader changes this node has observed since it started (a new leader, itself
	// or another, after one was known). It never decreases while the node runs.
	Failovers uint64
}

// RaftSource is what the Raft mode implements for the rocketmq_raft_* series; the broker registers them
// only in that mode.
type RaftSource interface {
	// RaftStatus is called at every scrape, on the scrape's goroutine, concurrently with everything the
	// node does. It must return promptly from state the node already holds: no wait on the Raft loop, a
	// quorum or the disk.
	RaftStatus() RaftStatus
}

// RaftRoles are the values of the role label of rocketmq_raft_role, every one of them present at every
// scrape (1 for the current role, 0 for the others).
var RaftRoles = [...]string{"leader", "follower", "candidate", "shutdown"}

var (
	raftRoleDesc = Desc("rocketmq_raft_role",
		"Raft role of this node: 1 for the current role, 0 for the others.", "role")
	raftTermDesc      = Desc("rocketmq_raft_term", "Current Raft term of this node.")
	raftCommitDesc    = Desc("rocketmq_raft_commit_index", "Highest Raft log index this node knows to be committed.")
	raftAppliedDesc   = Desc("rocketmq_raft_applied_index", "Highest Raft log index applied here (visible to consumers).")
	raftFailoversDesc = Desc("rocketmq_raft_failovers_total", "Leader changes this node has observed since it started.")
)

// NewRaftCollector returns the collector of the rocketmq_raft_* series, read from src at every scrape.
func NewRaftCollector(src RaftSource) prometheus.Collector {
	return NewCollector(func(ch chan<- prometheus.Metric) {
		st := src.RaftStatus()
		role := strings.ToLower(st.Role)
		known := false
		for _, r := range RaftRoles {
			known = known || r == role
			ch <- Gauge(raftRoleDesc, Bool(r == role), r)
		}
		if !known && role != "" {
			ch <- Gauge(raftRoleDesc, 1, role)
		}
		ch <- Gauge(raftTermDesc, float64(st.Term))
		ch <- Gauge(raftCommitDesc, float64(st.CommitIndex))
		ch <- Gauge(raftAppliedDesc, float64(st.AppliedIndex))
		ch <- Counter(raftFailoversDesc, float64(st.Failovers))
	}, raftRoleDesc, raftTermDesc, raftCommitDesc, raftAppliedDesc, raftFailoversDesc)
}
