package metrics

import (
	"sort"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rocketraft/rocketraft/protocol"
)

// RaftSource is what the Raft mode implements for the rocketmq_raft_* series; the broker registers them
// only in that mode.
type RaftSource interface {
	// RaftStatus is called at every scrape, on the scrape's goroutine, concurrently with everything the
	// node does. It must return promptly from state the node already holds: no wait on the Raft loop, a
	// quorum or the disk. The series read Role ("leader", "follower", "candidate" or "shutdown", any case),
	// Term, CommitIndex, AppliedIndex (consumers see nothing above it) and Failovers (leader changes seen
	// since the node started, never decreasing); the other fields may be left empty.
	RaftStatus() protocol.RaftStatus
}

// RaftPerfSource is what a RaftSource implements as well for the performance series (fsyncs, entry sizes,
// the stages of a send); the collector reads it at every scrape when the source has it.
type RaftPerfSource interface {
	// RaftPerf has RaftStatus's contract: prompt, from counters the node holds.
	RaftPerf() RaftPerf
}

// RaftPerf are a Raft node's performance counters, monotonic since the node started.
type RaftPerf struct {
	// Fsyncs counts the syncs of the Raft log (SYNC_FLUSH: one per StoreLogs call); FsyncSeconds their
	// durations.
	Fsyncs       uint64
	FsyncSeconds SizeHistogram
	// StoreEntries are the entries per StoreLogs call by role ("leader": a dispatch of new entries,
	// "follower": one AppendEntries request); StoreSeconds those calls' durations (write and sync).
	StoreEntries map[string]SizeHistogram
	StoreSeconds map[string]SizeHistogram
	// EntryMessages are the messages per message entry this node proposed as leader; EntryPuts the
	// sends per entry.
	EntryMessages SizeHistogram
	EntryPuts     SizeHistogram
	// SendStages is the time of each stage of a send answered SEND_OK, by stage name (queue, dispatch,
	// store, replicate, apply, answer).
	SendStages map[string]SizeHistogram
	// ReplicateStages splits those sends' replicate stage, by part (send, quorum, commit), where the
	// node can tell (entries sent as append frames).
	ReplicateStages map[string]SizeHistogram
	// AppendSeconds is the time of the AppendEntries carrying entries, by side ("leader": write to
	// answer read, "follower": request read to answer ready).
	AppendSeconds map[string]SizeHistogram
}

// SizeHistogram is a histogram as counted by its owner: Counts[i] counts the samples at or below
// Bounds[i] and above Bounds[i-1], Counts[len(Bounds)] (if present) those above every bound; Sum is the
// samples' sum, in the histogram's unit (seconds or a count).
type SizeHistogram struct {
	Bounds []float64
	Counts []uint64
	Sum    float64
}

// metric is h as a histogram sample of d.
func (h SizeHistogram) metric(d *prometheus.Desc, labels ...string) prometheus.Metric {
	buckets := make(map[float64]uint64, len(h.Bounds))
	var cum uint64
	for i, b := range h.Bounds {
		if i < len(h.Counts) {
			cum += h.Counts[i]
		}
		buckets[b] = cum
	}
	for i := len(h.Bounds); i < len(h.Counts); i++ {
		cum += h.Counts[i]
	}
	return prometheus.MustNewConstHistogram(d, cum, h.Sum, buckets, labels...)
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

	raftFsyncsDesc       = Desc("rocketmq_raft_fsyncs_total", "Syncs of the Raft log (SYNC_FLUSH: one per StoreLogs call).")
	raftFsyncSecondsDesc = Desc("rocketmq_raft_fsync_seconds", "Duration of the syncs of the Raft log.")
	raftStoreEntriesDesc = Desc("rocketmq_raft_store_entries",
		"Entries per StoreLogs call: role leader for a dispatch of new entries, follower for one AppendEntries request.", "role")
	raftStoreSecondsDesc = Desc("rocketmq_raft_store_seconds",
		"Duration of the StoreLogs calls (write and, with SYNC_FLUSH, sync), by role as rocketmq_raft_store_entries.", "role")
	raftEntryMessagesDesc = Desc("rocketmq_raft_entry_messages", "Messages per message entry this node proposed as leader.")
	raftEntryPutsDesc     = Desc("rocketmq_raft_entry_puts", "Sends (puts) per message entry this node proposed as leader.")
	raftSendStageDesc     = Desc("rocketmq_raft_send_stage_seconds",
		"Time of each stage of a send answered SEND_OK on the leader: queue (until proposed), dispatch (until the leader "+
			"stores it), store (leader write and sync), replicate (until a quorum stored it and the state machine starts it), "+
			"apply, answer.", "stage")
	raftReplicateStageDesc = Desc("rocketmq_raft_replicate_stage_seconds",
		"The replicate stage of a send answered SEND_OK, split on the leader: send (until the first AppendEntries with its "+
			"entry starts), quorum (until the first successful answer is read), commit (until the state machine starts it).", "stage")
	raftAppendSecondsDesc = Desc("rocketmq_raft_append_seconds",
		"Time of an AppendEntries carrying entries: side leader from its write to its answer, side follower from the "+
			"request read to the answer ready (Raft's follower loop and the store).", "side")
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
		if ps, ok := src.(RaftPerfSource); ok {
			collectRaftPerf(ch, ps.RaftPerf())
		}
	}, raftRoleDesc, raftTermDesc, raftCommitDesc, raftAppliedDesc, raftFailoversDesc,
		raftFsyncsDesc, raftFsyncSecondsDesc, raftStoreEntriesDesc, raftStoreSecondsDesc, raftEntryMessagesDesc,
		raftEntryPutsDesc, raftSendStageDesc, raftReplicateStageDesc, raftAppendSecondsDesc)
}

func collectRaftPerf(ch chan<- prometheus.Metric, p RaftPerf) {
	ch <- Counter(raftFsyncsDesc, float64(p.Fsyncs))
	ch <- p.FsyncSeconds.metric(raftFsyncSecondsDesc)
	for _, role := range sortedKeys(p.StoreEntries) {
		ch <- p.StoreEntries[role].metric(raftStoreEntriesDesc, role)
	}
	for _, role := range sortedKeys(p.StoreSeconds) {
		ch <- p.StoreSeconds[role].metric(raftStoreSecondsDesc, role)
	}
	ch <- p.EntryMessages.metric(raftEntryMessagesDesc)
	ch <- p.EntryPuts.metric(raftEntryPutsDesc)
	for _, stage := range sortedKeys(p.SendStages) {
		ch <- p.SendStages[stage].metric(raftSendStageDesc, stage)
	}
	for _, stage := range sortedKeys(p.ReplicateStages) {
		ch <- p.ReplicateStages[stage].metric(raftReplicateStageDesc, stage)
	}
	for _, side := range sortedKeys(p.AppendSeconds) {
		ch <- p.AppendSeconds[side].metric(raftAppendSecondsDesc, side)
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
