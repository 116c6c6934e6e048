package raftlog

import (
	"errors"
	"fmt"
)

// Errors of a proposal (Node.PutMessage and the like, ProposeMeta). The broker answers
// ErrNotLeader with a retriable code (the client then sends to the leader); ErrLeadershipLost
// and ErrProposalTimeout mean the entry's fate is unknown: it may still commit under the next
// leader, so a client retry can store the messages twice (at least once, as RocketMQ).
// Encoding errors are the store's (store.ErrMessageTooLarge, store.ErrBatchMismatch, ...),
// wrapped, so the broker maps them as it maps a classic put's.
var (
	// ErrNotLeader: this node is not the leader, or not any more when the entry was handed
	// to Raft; nothing was proposed. Errors that wrap it are *NotLeaderError with the leader
	// this node knows of.
	ErrNotLeader = errors.New("raftlog: not the leader")
	// ErrLeadershipLost: the entry was handed to Raft, then this node lost its leadership
	// (stepped down, deposed, or handed it over) before the entry was applied. Its fate is
	// unknown.
	ErrLeadershipLost = errors.New("raftlog: leadership lost before the entry was applied")
	// ErrProposalTimeout: the caller's context ended while the entry was in flight. Its fate
	// is unknown.
	ErrProposalTimeout = errors.New("raftlog: proposal not applied before the deadline")
	// ErrShutdown: the node is not started or is closing; nothing was proposed, or the entry
	// was dropped with Raft (fate unknown when it had been handed over).
	ErrShutdown = errors.New("raftlog: node shut down")
)

// NotLeaderError is ErrNotLeader with the leader this node knows of (both empty when it
// knows none, for example during an election).
type NotLeaderError struct {
	// LeaderID is the leader's dLegerSelfId, LeaderAddr its Raft address (dLegerPeers).
	LeaderID, LeaderAddr string
}

func (e *NotLeaderError) Error() string {
	if e.LeaderID == "" {
		return "raftlog: not the leader (no leader known)"
	}
	return fmt.Sprintf("raftlog: not the leader (leader %s at %s)", e.LeaderID, e.LeaderAddr)
}

// Is makes errors.Is(err, ErrNotLeader) true.
func (e *NotLeaderError) Is(target error) bool { return target == ErrNotLeader }
