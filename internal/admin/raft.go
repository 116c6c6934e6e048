package admin

// The Raft commands of issue 7 wait for the Raft mode (issue 6: enableDLegerCommitLog, the CommitLog as the
// Raft log), which does not exist yet. They are deliberately not in commands(): asking for one fails with
// the reason below instead of pretending to work.
//
// When the Raft mode lands, add them to commands() in a file cmd_raft.go:
//
//   - getRaftStatus -b brokerAddr | -c clusterName [-g dLegerGroup]: per node of each Raft group its
//     dLegerSelfId, address, role (LEADER/FOLLOWER/CANDIDATE), term, commit index and applied index, from a
//     broker request code the Raft mode will answer (RocketMQ's DLedger tools read GET_BROKER_RUNTIME_INFO
//     and the DLedger metadata; pick a code and document it in remoting/codes.go).
//   - transferLeadership -b brokerAddr -t targetSelfId (or --peer addr): ask the leader to hand leadership to
//     a follower (hashicorp/raft LeadershipTransferToServer), then wait until the name servers route the
//     group's brokerId 0 to the new leader, and print the old and new leader.
//
// Both print tables and take --json like the other commands; their tests belong with the Raft cluster
// harness in internal/cluster.

// plannedCommands names, by lower-case name, the commands not available yet and why.
var plannedCommands = map[string]string{
	"getraftstatus":      "the Raft mode (issue 6) does not exist yet; it will show role, term, commit and applied index per node",
	"transferleadership": "the Raft mode (issue 6) does not exist yet; it will move a Raft group's leadership to another node",
}

// plannedNames are the planned commands' spellings.
var plannedNames = map[string]string{
	"getraftstatus":      "getRaftStatus",
	"transferleadership": "transferLeadership",
}
