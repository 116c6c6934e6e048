package broker

import (
	"github.com/rocketraft/rocketraft/internal/metrics"
	"github.com/rocketraft/rocketraft/raftlog"
)

var _ metrics.RaftPerfSource = raftMetrics{}

// RaftPerf is the Raft node's performance counters for the rocketmq_raft_* series (fsyncs, entries per
// StoreLogs by role, messages per entry, the stages of a send): raftlog.Node.Stats as the metrics package
// takes them.
func (m raftMetrics) RaftPerf() metrics.RaftPerf {
	st := m.b.raft.node.Stats()
	p := metrics.RaftPerf{
		Fsyncs:          st.Syncs,
		FsyncSeconds:    sizeHistogram(st.SyncSeconds),
		StoreEntries:    map[string]metrics.SizeHistogram{"leader": sizeHistogram(st.LeaderStoreEntries), "follower": sizeHistogram(st.FollowerStoreEntries)},
		StoreSeconds:    map[string]metrics.SizeHistogram{"leader": sizeHistogram(st.LeaderStoreSeconds), "follower": sizeHistogram(st.FollowerStoreSeconds)},
		EntryMessages:   sizeHistogram(st.EntryMessages),
		EntryPuts:       sizeHistogram(st.EntryPuts),
		SendStages:      make(map[string]metrics.SizeHistogram, len(st.Stages)),
		ReplicateStages: make(map[string]metrics.SizeHistogram, len(st.Replicate)),
		AppendSeconds:   make(map[string]metrics.SizeHistogram, len(st.AppendSeconds)),
	}
	for name, h := range st.Stages {
		p.SendStages[name] = sizeHistogram(h)
	}
	for name, h := range st.Replicate {
		p.ReplicateStages[name] = sizeHistogram(h)
	}
	for side, h := range st.AppendSeconds {
		p.AppendSeconds[side] = sizeHistogram(h)
	}
	return p
}

func sizeHistogram(h raftlog.HistogramSnapshot) metrics.SizeHistogram {
	return metrics.SizeHistogram{Bounds: h.Bounds, Counts: h.Counts, Sum: h.Sum}
}
