package store

import (
	"math"
	"sync/atomic"
	"time"
)

// latencyBucketCount is the number of histogram buckets: the bounds below plus +Inf.
const latencyBucketCount = 15

// latencyBounds are the upper bounds of the histogram buckets.
func latencyBounds() [latencyBucketCount - 1]time.Duration {
	return [...]time.Duration{
		10 * time.Microsecond, 50 * time.Microsecond, 100 * time.Microsecond, 250 * time.Microsecond,
		500 * time.Microsecond, time.Millisecond, 2 * time.Millisecond, 5 * time.Millisecond,
		10 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond, 500 * time.Millisecond,
		time.Second, 5 * time.Second,
	}
}

// LatencyHistogram is a snapshot of a latency distribution: Counts[i] counts the samples at
// or below Bounds[i]; the last count is for the samples above every bound.
type LatencyHistogram struct {
	Bounds []time.Duration
	Counts []int64
	Count  int64
	Sum    time.Duration
	Max    time.Duration
}

// Mean is the average sample, 0 without samples.
func (h LatencyHistogram) Mean() time.Duration {
	if h.Count == 0 {
		return 0
	}
	return h.Sum / time.Duration(h.Count)
}

// latencyRecorder accumulates a LatencyHistogram with atomics.
type latencyRecorder struct {
	counts [latencyBucketCount]atomic.Int64
	count  atomic.Int64
	sum    atomic.Int64
	max    atomic.Int64
}

func (r *latencyRecorder) record(d time.Duration) {
	bounds := latencyBounds()
	i := 0
	for i < len(bounds) && d > bounds[i] {
		i++
	}
	r.counts[i].Add(1)
	r.count.Add(1)
	r.sum.Add(int64(d))
	for {
		m := r.max.Load()
		if int64(d) <= m || r.max.CompareAndSwap(m, int64(d)) {
			return
		}
	}
}

func (r *latencyRecorder) snapshot() LatencyHistogram {
	bounds := latencyBounds()
	h := LatencyHistogram{Bounds: bounds[:], Counts: make([]int64, latencyBucketCount)}
	for i := range r.counts {
		h.Counts[i] = r.counts[i].Load()
	}
	h.Count, h.Sum, h.Max = r.count.Load(), time.Duration(r.sum.Load()), time.Duration(r.max.Load())
	return h
}

// storeStats are the store's counters.
type storeStats struct {
	putCount      atomic.Int64
	putBytes      atomic.Int64
	putFailures   atomic.Int64
	putLatency    latencyRecorder
	flushLatency  latencyRecorder
	slowFlushes   atomic.Int64
	flushFailures atomic.Int64
	getFound      atomic.Int64
	getMiss       atomic.Int64
	diskRatioBits atomic.Uint64
	// queueOffsetsWritten counts the records framed dispatch wrote a queue offset into.
	queueOffsetsWritten atomic.Int64
}

func (st *storeStats) recordPut(count, bytes int, d time.Duration) {
	st.putCount.Add(int64(count))
	st.putBytes.Add(int64(bytes))
	st.putLatency.record(d)
}

func (st *storeStats) recordFlush(d time.Duration) {
	st.flushLatency.record(d)
	if d > slowFlushThreshold {
		st.slowFlushes.Add(1)
	}
}

func (st *storeStats) setDiskRatio(r float64) { st.diskRatioBits.Store(math.Float64bits(r)) }
func (st *storeStats) diskRatio() float64     { return math.Float64frombits(st.diskRatioBits.Load()) }

// Stats is a snapshot of the store's counters and gauges.
type Stats struct {
	// PutMessages and PutBytes count stored messages and record bytes; PutFailures puts refused.
	PutMessages, PutBytes, PutFailures int64
	// PutLatency times the CommitLog append of each put (lock, copy), not the flush wait.
	PutLatency LatencyHistogram
	// FlushLatency times every CommitLog flush that wrote something; SlowFlushes counts those
	// past 500 ms, FlushFailures the failed ones (each turns the store read-only).
	FlushLatency               LatencyHistogram
	SlowFlushes, FlushFailures int64
	// SyncFlushBatches counts the SYNC_FLUSH group-commit flushes that served waiting puts,
	// SyncFlushWaiters the puts they served, and GatherTimeouts the flushes that started
	// before as many puts as the previous flush saw had queued (see waitForBatch).
	SyncFlushBatches, SyncFlushWaiters, GatherTimeouts int64
	// WarmBytes counts the zeros written to warm CommitLog files ahead of the writes (by the
	// warm service, at Open and in a flush); WarmStalls the SYNC_FLUSH flushes that found
	// the warm frontier behind their records and warmed first (see warm.go).
	WarmBytes, WarmStalls int64
	// FlushLagBytes is written but not yet durable; CommitLagBytes is in the transient pool
	// but not yet in the file; DispatchBehindBytes is not yet in the ConsumeQueues.
	FlushLagBytes, CommitLagBytes, DispatchBehindBytes int64
	// MinPhyOffset and MaxPhyOffset bound the CommitLog.
	MinPhyOffset, MaxPhyOffset int64
	// GetFound and GetMiss count GetMessage calls that found messages or not.
	GetFound, GetMiss int64
	// DiskUsedRatio is the last measured disk use (0..1); DiskFull means writes are refused.
	DiskUsedRatio float64
	DiskFull      bool
	// Writable is false after a write or flush failure.
	Writable bool
	// TransientPoolFree is the number of free transient pool buffers (-1 without a pool).
	TransientPoolFree int
	// ColdReadChunks counts the CommitLog chunks read with O_DIRECT for consumers (cold_read.go)
	// and ColdReadBytes their bytes (and those of records read alone across a chunk's end);
	// ColdReadNoBuffer the cold chunks read through the mapping because every buffer was held,
	// ColdReadFailures the direct reads that failed (the mapping served them).
	ColdReadChunks, ColdReadBytes, ColdReadNoBuffer, ColdReadFailures int64
	// QueueOffsetsWritten counts the records framed dispatch (DispatchMessages with assign)
	// wrote their queue offset into because they did not carry it already: in Raft mode the
	// log store writes the offsets it predicts before the entry's sync, so this stays 0 unless
	// a prediction was missing or wrong (raftlog/queue_predict.go).
	QueueOffsetsWritten int64
}

// Stats returns a snapshot of the counters.
func (s *Store) Stats() Stats {
	st := &s.stats
	q := s.commitLog.q
	out := Stats{
		PutMessages:         st.putCount.Load(),
		PutBytes:            st.putBytes.Load(),
		PutFailures:         st.putFailures.Load(),
		PutLatency:          st.putLatency.snapshot(),
		FlushLatency:        st.flushLatency.snapshot(),
		SlowFlushes:         st.slowFlushes.Load(),
		FlushFailures:       st.flushFailures.Load(),
		FlushLagBytes:       max(q.maxOffset()-q.flushedWhere.Load(), 0),
		CommitLagBytes:      max(q.maxWrote()-q.maxOffset(), 0),
		DispatchBehindBytes: s.DispatchBehindBytes(),
		MinPhyOffset:        s.MinPhyOffset(),
		MaxPhyOffset:        s.MaxPhyOffset(),
		GetFound:            st.getFound.Load(),
		GetMiss:             st.getMiss.Load(),
		DiskUsedRatio:       st.diskRatio(),
		DiskFull:            s.diskFull.Load(),
		Writable:            !s.notWritable.Load(),
		TransientPoolFree:   -1,
		WarmBytes:           s.commitLog.warmBytes.Load(),
		WarmStalls:          s.commitLog.warmStalls.Load(),
		QueueOffsetsWritten: st.queueOffsetsWritten.Load(),
	}
	if s.pool != nil {
		out.TransientPoolFree = s.pool.available()
	}
	if c := s.cold; c != nil {
		out.ColdReadChunks, out.ColdReadBytes = c.loads.Load(), c.loadBytes.Load()
		out.ColdReadNoBuffer, out.ColdReadFailures = c.fallbacks.Load(), c.failures.Load()
	}
	if g := s.group; g != nil {
		out.SyncFlushBatches, out.SyncFlushWaiters = g.batches.Load(), g.waiters.Load()
		out.GatherTimeouts = g.gatherTimeouts.Load()
	}
	return out
}
