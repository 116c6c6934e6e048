package raftlog

import (
	"math"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
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
//
// With the append frames (append_transport.go) the leader also splits the replicate stage
// (ReplicateStages), from the first times an entry went out and came back in any follower's
// AppendEntries:
//
//	leader StoreLogs returned --send--> the first AppendEntries carrying the entry starts its
//	  write (Raft's leader loop and replication goroutine) --quorum--> the first successful
//	  answer covering it is read (write, network, the follower's serve, network, the reader)
//	  --commit--> the state machine starts it (commit notice, leader loop, FSM hand-off; with
//	  SYNC_FLUSH also the leader's own sync, where that ends later)
//
// and times each AppendEntries with entries on both sides (AppendSeconds): the leader from the
// start of its write to its answer read, the follower from its frame read to its answer
// ready to write (the wait for Raft's follower loop and the StoreLogs).

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

// Parts of the replicate stage (the label values of rocketmq_raft_replicate_stage_seconds).
const (
	ReplicateSend   = "send"
	ReplicateQuorum = "quorum"
	ReplicateCommit = "commit"
)

// ReplicateStages are the parts of the replicate stage, in order.
var ReplicateStages = [...]string{ReplicateSend, ReplicateQuorum, ReplicateCommit}

// Sides of AppendSeconds (the label values of rocketmq_raft_append_seconds).
const (
	AppendLeader   = "leader"
	AppendFollower = "follower"
)

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
	// Replicate: the parts of those puts' replicate stage, by ReplicateStages name (only puts
	// whose entry went out and came back as append frames; none with msgpack).
	Replicate map[string]HistogramSnapshot
	// AppendSeconds: AppendEntries carrying entries, as frames, by side: AppendLeader from the
	// start of the write to the successful answer read, AppendFollower from the frame read to
	// the answer ready to write.
	AppendSeconds map[string]HistogramSnapshot
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
	replicate            [len(ReplicateStages)]*histogram
	appendLeader         *histogram
	appendFollower       *histogram
	storedAt             markRing // the leader's StoreLogs returned
	sentAt               markRing // the first AppendEntries carrying the entry began its write
	ackedAt              markRing // the first successful answer covering it was read
}

// storedRing is how many recent entries' times are remembered for the send stages.
const storedRing = 4096

// markRing remembers a time per entry index for the last storedRing indexes.
type markRing [storedRing]storedMark

// storedMark is a time (unix ns) of entry index.
type storedMark struct {
	index atomic.Uint64
	at    atomic.Int64
}

// markClaimed is the index of a slot being written by markFirst.
const markClaimed = math.MaxUint64

// mark sets the time of entries first..last to ns.
func (r *markRing) mark(first, last uint64, ns int64) {
	for i := first; i <= last; i++ {
		m := &r[i%storedRing]
		m.index.Store(0)
		m.at.Store(ns)
		m.index.Store(i)
	}
}

// markFirst sets the time of entries first..last to ns where it is not set yet: one of several
// callers racing for a slot wins its CAS (not always the one with the earliest ns, by the few
// instructions between taking ns and the CAS). A slot still holding index from an earlier term
// (the same index proposed again after a truncation) keeps its older time; recordReplicate then
// finds it before the entry's store and drops that sample.
func (r *markRing) markFirst(first, last uint64, ns int64) {
	for i := first; i <= last; i++ {
		m := &r[i%storedRing]
		old := m.index.Load()
		if old == i || old == markClaimed || !m.index.CompareAndSwap(old, markClaimed) {
			continue
		}
		m.at.Store(ns)
		m.index.Store(i)
	}
}

// get is the time of entry index, if it is still remembered.
func (r *markRing) get(index uint64) (time.Time, bool) {
	m := &r[index%storedRing]
	if m.index.Load() != index {
		return time.Time{}, false
	}
	at := m.at.Load()
	if m.index.Load() != index {
		return time.Time{}, false
	}
	return time.Unix(0, at), true
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
	for i := range s.replicate {
		s.replicate[i] = newHistogram(durationBounds, 1e-9)
	}
	s.appendLeader = newHistogram(durationBounds, 1e-9)
	s.appendFollower = newHistogram(durationBounds, 1e-9)
	return s
}

// markStored remembers that the leader's StoreLogs of entries first..last returned at t.
func (s *nodeStats) markStored(first, last uint64, t time.Time) {
	s.storedAt.mark(first, last, t.UnixNano())
}

// storedTime is when the leader stored entry index, if it is still remembered.
func (s *nodeStats) storedTime(index uint64) (time.Time, bool) { return s.storedAt.get(index) }

// appendSent: the leader began writing an AppendEntries with args's entries at start (a nil
// s, a test's transport without a node, records nothing).
func (s *nodeStats) appendSent(args *raft.AppendEntriesRequest, start time.Time) {
	if s == nil || len(args.Entries) == 0 {
		return
	}
	s.sentAt.markFirst(args.Entries[0].Index, args.Entries[len(args.Entries)-1].Index, start.UnixNano())
}

// appendAnswered: the answer to an AppendEntries whose write began at start was read at end.
func (s *nodeStats) appendAnswered(args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse, start, end time.Time) {
	if s == nil || len(args.Entries) == 0 || !resp.Success {
		return
	}
	s.ackedAt.markFirst(args.Entries[0].Index, args.Entries[len(args.Entries)-1].Index, end.UnixNano())
	s.appendLeader.observeDuration(end.Sub(start))
}

// appendServed: a follower has the answer to an AppendEntries with entries read at start.
func (s *nodeStats) appendServed(req *raft.AppendEntriesRequest, start time.Time) {
	if s == nil || len(req.Entries) == 0 {
		return
	}
	s.appendFollower.observeDuration(time.Since(start))
}

// recordReplicate splits the replicate stage of entry index (stored at stored, started by the
// state machine at applied) when its send and answer times are remembered and in order.
func (s *nodeStats) recordReplicate(index uint64, stored, applied time.Time) {
	sent, ok1 := s.sentAt.get(index)
	acked, ok2 := s.ackedAt.get(index)
	if !ok1 || !ok2 || sent.Before(stored) || acked.Before(sent) || applied.Before(acked) {
		return
	}
	s.replicate[0].observeDuration(sent.Sub(stored))
	s.replicate[1].observeDuration(acked.Sub(sent))
	s.replicate[2].observeDuration(applied.Sub(acked))
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
		Replicate:            make(map[string]HistogramSnapshot, len(ReplicateStages)),
		AppendSeconds: map[string]HistogramSnapshot{
			AppendLeader: s.appendLeader.snapshot(), AppendFollower: s.appendFollower.snapshot()},
	}
	for i, name := range SendStages {
		st.Stages[name] = s.stages[i].snapshot()
	}
	for i, name := range ReplicateStages {
		st.Replicate[name] = s.replicate[i].snapshot()
	}
	return st
}

// Stats returns the node's performance counters (safe at any time, also before Start).
func (n *Node) Stats() Stats { return n.log.stats.snapshot() }
