package raftlog

import (
	"math"
	"sync/atomic"
	"time"
)

// A node's performance counters, read by the broker's metrics (rocketmq_raft_* series) and the
// benchmarks. Every counter is monotonic from the node's start and written with atomics only,
// so recording never takes a lock on the hot path and a reader may see one histogram's buckets
// a sample ahead of its sum.
//
// The stages of a send (SendStages) are measured on the leader, per put, from the timestamps
// its entry collects on the way:
//
//	submitted --queue--> raft.Apply --dispatch--> leader StoreLogs starts (Log.AppendedAt)
//	  --store--> leader StoreLogs returned (written, synced with Sync) --replicate--> the state
//	  machine starts the entry (a quorum stored it: follower store and round trip included)
//	  --apply--> the state machine is done --answer--> the put's callback runs

// Stage names of a send, in order (the label values of rocketmq_raft_send_stage_seconds).
const (
	StageQueue     = "queue"
	StageDispatch  = "dispatch"
	StageStore     = "store"
	StageReplicate = "replicate"
	StageApply     = "apply"
	StageAnswer    = "answer"
)

// SendStages are the stage names in the order a send goes through them.
var SendStages = [...]string{StageQueue, StageDispatch, StageStore, StageReplicate, StageApply, StageAnswer}

// Bounds of the histograms: durations in seconds, sizes in entries or messages.
var (
	durationBounds = []float64{50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2e-3, 4e-3, 8e-3, 16e-3, 32e-3, 64e-3, 128e-3, 256e-3, 1}
	sizeBounds     = []float64{1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024}
)

// histogram counts samples in fixed buckets (counts[i]: at or below bounds[i] and above
// bounds[i-1]; the last: above every bound) and keeps their sum, in units of scale (1e-9 for
// durations kept in nanoseconds, 1 for sizes).
type histogram struct {
	bounds []float64
	scale  float64
	counts []atomic.Uint64
	sum    atomic.Uint64
}

func newHistogram(bounds []float64, scale float64) *histogram {
	return &histogram{bounds: bounds, scale: scale, counts: make([]atomic.Uint64, len(bounds)+1)}
}

// observe adds one sample of v units (a negative v, a clock step, counts as 0).
func (h *histogram) observe(v int64) {
	v = max(v, 0)
	x := float64(v) * h.scale
	i := 0
	for i < len(h.bounds) && x > h.bounds[i] {
		i++
	}
	h.counts[i].Add(1)
	h.sum.Add(uint64(v))
}

func (h *histogram) observeDuration(d time.Duration) { h.observe(int64(d)) }

func (h *histogram) snapshot() HistogramSnapshot {
	s := HistogramSnapshot{Bounds: h.bounds, Counts: make([]uint64, len(h.counts))}
	for i := range h.counts {
		s.Counts[i] = h.counts[i].Load()
	}
	s.Sum = float64(h.sum.Load()) * h.scale
	return s
}

// HistogramSnapshot is a histogram as read: Counts[i] counts the samples at or below Bounds[i]
// (and above Bounds[i-1]); Counts[len(Bounds)] those above every bound. Sum is in seconds for
// durations, in entries or messages for sizes.
type HistogramSnapshot struct {
	Bounds []float64
	Counts []uint64
	Sum    float64
}

// Count is the number of samples.
func (s HistogramSnapshot) Count() uint64 {
	var n uint64
	for _, c := range s.Counts {
		n += c
	}
	return n
}

// Mean is Sum/Count (NaN without samples).
func (s HistogramSnapshot) Mean() float64 {
	n := s.Count()
	if n == 0 {
		return math.NaN()
	}
	return s.Sum / float64(n)
}

// Stats is a snapshot of a node's counters (Node.Stats).
type Stats struct {
	// Syncs counts the fdatasyncs of the CommitLog by StoreLogs (Config.Sync); SyncSeconds
	// their durations.
	Syncs       uint64
	SyncSeconds HistogramSnapshot
	// LeaderStoreEntries and FollowerStoreEntries: entries per StoreLogs call, made while this
	// node led (Raft's dispatch of new entries) and while it followed (one AppendEntries
	// request each). Their Count is the calls, their Sum the entries.
	LeaderStoreEntries   HistogramSnapshot
	FollowerStoreEntries HistogramSnapshot
	// LeaderStoreSeconds, FollowerStoreSeconds: the duration of those calls (write and sync).
	LeaderStoreSeconds   HistogramSnapshot
	FollowerStoreSeconds HistogramSnapshot
	// EntryMessages: messages per message entry this node proposed (Count the entries, Sum
	// the messages); EntryPuts: puts per message entry.
	EntryMessages HistogramSnapshot
	EntryPuts     HistogramSnapshot
	// Stages: the time of each stage of a put answered SEND_OK, by SendStages name.
	Stages map[string]HistogramSnapshot
}

// nodeStats are the live counters of a node (and of its log store).
type nodeStats struct {
	syncs                atomic.Uint64
	syncSeconds          *histogram
	leaderStoreEntries   *histogram
	followerStoreEntries *histogram
	leaderStoreSeconds   *histogram
	followerStoreSeconds *histogram
	entryMessages        *histogram
	entryPuts            *histogram
	stages               [len(SendStages)]*histogram
	storedAt             [storedRing]storedMark
}

// storedRing is how many recent leader StoreLogs ends are remembered for the send stages.
const storedRing = 4096

// storedMark is when the leader's StoreLogs of entry index returned (unix ns).
type storedMark struct {
	index atomic.Uint64
	at    atomic.Int64
}

func newNodeStats() *nodeStats {
	s := &nodeStats{
		syncSeconds:          newHistogram(durationBounds, 1e-9),
		leaderStoreEntries:   newHistogram(sizeBounds, 1),
		followerStoreEntries: newHistogram(sizeBounds, 1),
		leaderStoreSeconds:   newHistogram(durationBounds, 1e-9),
		followerStoreSeconds: newHistogram(durationBounds, 1e-9),
		entryMessages:        newHistogram(sizeBounds, 1),
		entryPuts:            newHistogram(sizeBounds, 1),
	}
	for i := range s.stages {
		s.stages[i] = newHistogram(durationBounds, 1e-9)
	}
	return s
}

// markStored remembers that the leader's StoreLogs of entries first..last returned at t.
func (s *nodeStats) markStored(first, last uint64, t time.Time) {
	ns := t.UnixNano()
	for i := first; i <= last; i++ {
		m := &s.storedAt[i%storedRing]
		m.index.Store(0)
		m.at.Store(ns)
		m.index.Store(i)
	}
}

// storedTime is when the leader stored entry index, if it is still remembered.
func (s *nodeStats) storedTime(index uint64) (time.Time, bool) {
	m := &s.storedAt[index%storedRing]
	if m.index.Load() != index {
		return time.Time{}, false
	}
	at := m.at.Load()
	if m.index.Load() != index {
		return time.Time{}, false
	}
	return time.Unix(0, at), true
}

func (s *nodeStats) snapshot() Stats {
	st := Stats{
		Syncs:                s.syncs.Load(),
		SyncSeconds:          s.syncSeconds.snapshot(),
		LeaderStoreEntries:   s.leaderStoreEntries.snapshot(),
		FollowerStoreEntries: s.followerStoreEntries.snapshot(),
		LeaderStoreSeconds:   s.leaderStoreSeconds.snapshot(),
		FollowerStoreSeconds: s.followerStoreSeconds.snapshot(),
		EntryMessages:        s.entryMessages.snapshot(),
		EntryPuts:            s.entryPuts.snapshot(),
		Stages:               make(map[string]HistogramSnapshot, len(SendStages)),
	}
	for i, name := range SendStages {
		st.Stages[name] = s.stages[i].snapshot()
	}
	return st
}

// Stats returns the node's performance counters (safe at any time, also before Start).
func (n *Node) Stats() Stats { return n.log.stats.snapshot() }
