package admin

// The Raft commands (issue 6's Raft mode, enableDLegerCommitLog) are in cmd_raft.go:
//
//   - getRaftStatus -b brokerAddr | -c clusterName [-g dLegerGroup]: per node of each Raft group its
//     dLegerSelfId, address, brokerId, role (Leader/Follower/Candidate), term, commit index, applied index
//     and the leader it knows, from the broker's GET_RAFT_STATUS (remoting.GetRaftStatus, a code of ours).
//   - transferLeadership -b brokerAddr [-t targetSelfId]: the leader of the Raft group of the broker at -b
//     hands leadership to -t, or to the most up-to-date follower (TRANSFER_RAFT_LEADERSHIP, ours; Raft's
//     LeadershipTransferToServer), asked again within --wait when Raft gave the transfer up or the
//     leader changed meanwhile; the command then waits until the name servers route the group's
//     brokerId 0 to the new leader, and prints the old and new leader.
//
// Both print tables and take --json like the other commands.

// plannedCommands names, by lower-case name, the commands not available yet and why.
var plannedCommands = map[string]string{}

// plannedNames are the planned commands' spellings.
var plannedNames = map[string]string{}
