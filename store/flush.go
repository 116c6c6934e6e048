package store

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// slowFlushThreshold: flushes slower than this are logged (RocketMQ logs past 500 ms).
const slowFlushThreshold = 500 * time.Millisecond

// flushWaiter is one SYNC_FLUSH put waiting for the group commit. It completes once, from
// the flusher (flushed or failed), the watcher (timeout) or Close.
type flushWaiter struct {
	need     int64
	deadline time.Time
	res      PutResult
	done     func(PutResult, error)
	fired    atomic.Bool
}

func (w *flushWaiter) complete(status PutStatus) {
	if w.fired.CompareAndSwap(false, true) {
		r := w.res
		r.Status = status
		w.done(r, nil)
	}
}

// groupCommit is RocketMQ's GroupCommitService: puts queue a waiter and wake the flusher;
// each flush covers everything written so far and completes every waiter it covers, so one
// fsync serves all the writers that queued while the previous one ran.
type groupCommit struct {
	timeout  time.Duration
	wake     chan struct{}
	gathered chan struct{}
	// expected and lastFlush belong to the flusher goroutine (see waitForBatch).
	expected  int
	lastFlush time.Duration
	// batches counts flushes that served waiters, waiters the waiters they served, and
	// gatherTimeouts the flushes that started before the expected writers had queued.
	batches, waiters, gatherTimeouts atomic.Int64

	mu struct {
		sync.Mutex
		// pending waiters, in deadline order; inflight is the batch being flushed.
		pending  []*flushWaiter
		inflight []*flushWaiter
		spare    []*flushWaiter
		closed   bool
		// target is the queue length the waiting flusher wants signalled (0: none).
		target int
	}
}

func newGroupCommit(timeout time.Duration) *groupCommit {
	return &groupCommit{timeout: timeout, wake: make(chan struct{}, 1), gathered: make(chan struct{}, 1)}
}

func (g *groupCommit) wakeup() { wake(g.wake) }

// add queues a waiter for res; done runs once with the final status.
func (g *groupCommit) add(s *Store, res PutResult, done func(PutResult, error)) {
	need := res.PhysicalOffset + int64(res.WroteBytes)
	w := &flushWaiter{need: need, res: res, done: done}
	if s.commitLog.q.flushedWhere.Load() >= need {
		w.complete(PutOK)
		return
	}
	g.mu.Lock()
	if g.mu.closed {
		g.mu.Unlock()
		if s.commitLog.q.flushedWhere.Load() >= need {
			w.complete(PutOK)
		} else {
			w.complete(PutFlushDiskTimeout)
		}
		return
	}
	w.deadline = time.Now().Add(g.timeout)
	g.mu.pending = append(g.mu.pending, w)
	if g.mu.target > 0 && len(g.mu.pending) >= g.mu.target {
		g.mu.target = 0
		wake(g.gathered)
	}
	g.mu.Unlock()
	g.wakeup()
}

// runGroupCommit is the SYNC_FLUSH flusher.
func (s *Store) runGroupCommit(ctx context.Context) {
	g := s.group
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-g.wake:
		}
		g.waitForBatch(ctx, timer)
		g.mu.Lock()
		batch := g.mu.pending
		g.mu.pending = g.mu.spare[:0]
		g.mu.inflight = batch
		g.mu.Unlock()

		start := time.Now()
		err := s.flushCommitLog(0)
		g.lastFlush = time.Since(start)
		if !s.commitLog.staged {
			s.reput.wakeup()
		}
		flushed := s.commitLog.q.flushedWhere.Load()
		if len(batch) > 0 {
			g.batches.Add(1)
			g.waiters.Add(int64(len(batch)))
		}
		for _, w := range batch {
			if err == nil && flushed >= w.need {
				w.complete(PutOK)
			} else {
				w.complete(PutFlushDiskTimeout)
			}
		}
		g.mu.Lock()
		g.expected = len(batch) + len(g.mu.pending)
		g.mu.inflight = nil
		clear(batch)
		g.mu.spare = batch[:0]
		g.mu.Unlock()
	}
}

// maxGatherWait caps how long the flusher waits for a batch to fill.
const maxGatherWait = time.Millisecond

// waitForBatch delays a flush, by at most half the last flush time, until as many writers
// have queued as the last flush saw active (its batch plus those that queued during it).
// Closed-loop writers released by a flush come back within microseconds; without the wait
// the first of them starts the next flush alone and the writers split into two cohorts that
// alternate, each flush serving half of them. With a single writer it never waits.
func (g *groupCommit) waitForBatch(ctx context.Context, t *time.Timer) {
	wait := min(g.lastFlush/2, maxGatherWait)
	if g.expected <= 1 || wait <= 0 {
		return
	}
	select {
	case <-g.gathered:
	default:
	}
	g.mu.Lock()
	if len(g.mu.pending) >= g.expected {
		g.mu.Unlock()
		return
	}
	g.mu.target = g.expected
	g.mu.Unlock()
	t.Reset(wait)
	select {
	case <-g.gathered:
	case <-t.C:
		g.gatherTimeouts.Add(1)
	case <-ctx.Done():
	}
	t.Stop()
	g.mu.Lock()
	g.mu.target = 0
	g.mu.Unlock()
}

// runFlushWatcher completes the waiters whose syncFlushTimeout passed, even while a flush
// hangs (RocketMQ's FlushDiskWatcher).
func (s *Store) runFlushWatcher(ctx context.Context) {
	g := s.group
	tick := min(max(g.timeout/10, time.Millisecond), 100*time.Millisecond)
	t := time.NewTicker(tick)
	defer t.Stop()
	var expired []*flushWaiter
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := time.Now()
		g.mu.Lock()
		for _, list := range [][]*flushWaiter{g.mu.inflight, g.mu.pending} {
			for _, w := range list {
				if w.fired.Load() {
					continue
				}
				if now.Before(w.deadline) {
					break
				}
				expired = append(expired, w)
			}
		}
		g.mu.Unlock()
		for _, w := range expired {
			w.complete(PutFlushDiskTimeout)
		}
		clear(expired)
		expired = expired[:0]
	}
}

// failAbove fails the waiters whose records end past offset: TruncateCommitLog dropped them.
func (g *groupCommit) failAbove(offset int64) {
	g.mu.Lock()
	var lost []*flushWaiter
	for _, list := range [][]*flushWaiter{g.mu.inflight, g.mu.pending} {
		for _, w := range list {
			if w.need > offset {
				lost = append(lost, w)
			}
		}
	}
	g.mu.Unlock()
	for _, w := range lost {
		w.complete(PutFlushDiskTimeout)
	}
}

// failAll completes every remaining waiter at Close (after the final flush).
func (g *groupCommit) failAll(s *Store) {
	g.mu.Lock()
	g.mu.closed = true
	waiters := append(append([]*flushWaiter(nil), g.mu.inflight...), g.mu.pending...)
	g.mu.pending, g.mu.inflight = nil, nil
	g.mu.Unlock()
	flushed := s.commitLog.q.flushedWhere.Load()
	for _, w := range waiters {
		if flushed >= w.need {
			w.complete(PutOK)
		} else {
			w.complete(PutFlushDiskTimeout)
		}
	}
}

// runPeriodic calls fn every interval ms (and on each wake-up, when wakeUp is not nil) with
// leastPages, or with 0 once thorough ms have passed since the last such call: RocketMQ's
// flush and commit services all work this way.
func runPeriodic(ctx context.Context, interval, thorough int64, leastPages int, wakeUp <-chan struct{}, fn func(leastPages int)) {
	t := time.NewTicker(time.Duration(interval) * time.Millisecond)
	defer t.Stop()
	every := time.Duration(thorough) * time.Millisecond
	last := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-wakeUp:
		}
		least := leastPages
		if time.Since(last) >= every {
			least, last = 0, time.Now()
		}
		fn(least)
	}
}

// runAsyncFlush is the ASYNC_FLUSH flusher (RocketMQ FlushRealTimeService): every
// flushIntervalCommitLog when flushCommitLogLeastPages pages are dirty, everything every
// flushCommitLogThoroughInterval.
func (s *Store) runAsyncFlush(ctx context.Context) {
	c := s.cfg
	runPeriodic(ctx, c.FlushIntervalCommitLog, c.FlushCommitLogThoroughInterval, c.FlushCommitLogLeastPages, nil,
		func(least int) { _ = s.flushCommitLog(least) })
}

// runCommit copies the transient pool buffers into the files (RocketMQ
// CommitRealTimeService): woken by puts, it commits when commitCommitLogLeastPages pages are
// waiting, and everything every commitCommitLogThoroughInterval.
func (s *Store) runCommit(ctx context.Context) {
	c := s.cfg
	q := s.commitLog.q
	runPeriodic(ctx, c.CommitIntervalCommitLog, c.CommitCommitLogThoroughInterval, c.CommitCommitLogLeastPages, s.wakeCommit,
		func(least int) {
			if before := q.committedWhere.Load(); q.commit(least) > before {
				s.reput.wakeup()
				s.newData.notify()
			}
		})
}

// flushCommitLog writes the staged records (SYNC_FLUSH), flushes the CommitLog, times both
// and moves the checkpoint. A failed write or flush turns the store read-only: after a failed
// fsync the kernel may have dropped the pages, so nothing is flushed again until the store is
// reopened (a later fsync would succeed without having written them: PostgreSQL's
// "fsyncgate"), no put waiting for a flush is acknowledged, the checkpoint stays where it was
// and Close leaves the files as a crash would, so the next Open checks every record from
// there.
func (s *Store) flushCommitLog(leastPages int) error {
	if s.notWritable.Load() {
		return fmt.Errorf("%w: no flush after an earlier write or flush failure: %v", ErrNotWritable, s.notWritableCause())
	}
	q := s.commitLog.q
	before := q.flushedWhere.Load()
	start := time.Now()
	var err error
	if s.commitLog.staged {
		if err = s.commitLog.commitStaged(); err == nil && q.maxOffset() > s.reput.from.Load() {
			// Replication to a slave runs while the flush waits for the disk. So did
			// dispatch, before readers were kept to what is durable (durableDispatch).
			if !s.durableDispatch {
				s.reput.wakeup()
			}
			s.newData.notify()
		}
	}
	flushed := before
	if err == nil {
		flushed, err = q.flush(leastPages)
	}
	d := time.Since(start)
	if err != nil {
		s.stats.flushFailures.Add(1)
		s.markNotWritable(err)
		return err
	}
	if flushed > before {
		if s.durableDispatch {
			s.reput.wakeup() // what the flush made durable may be read now
		}
		s.stats.recordFlush(d)
		if d > slowFlushThreshold {
			s.log.Warn("slow commitlog flush", "elapsed", d, "bytes", flushed-before)
		}
		ts := q.lastFlushTimestamp()
		s.checkpoint.update(func(c *checkpointData) {
			c.physicFlushedOffset = flushed
			if ts > 0 {
				c.physicMsgTimestamp = ts
			}
		})
	}
	return nil
}

// runConsumeQueueFlush flushes the ConsumeQueues every flushIntervalConsumeQueue (when
// flushConsumeQueueLeastPages pages are dirty) and everything, with the index and the
// checkpoint, every flushConsumeQueueThoroughInterval.
func (s *Store) runConsumeQueueFlush(ctx context.Context) {
	c := s.cfg
	runPeriodic(ctx, c.FlushIntervalConsumeQueue, c.FlushConsumeQueueThoroughInterval, c.FlushConsumeQueueLeastPages, nil,
		func(least int) {
			if err := s.flushConsumeQueues(least); err != nil {
				s.log.Error("flush consume queues", "err", err)
			}
		})
}

// flushConsumeQueues flushes every ConsumeQueue. A thorough flush (leastPages 0) also
// flushes the index and then records in the checkpoint how far dispatch is durable.
func (s *Store) flushConsumeQueues(leastPages int) error {
	through := s.reput.from.Load()
	throughTs := s.reput.lastStoreTimestamp.Load()
	firstErr := flushQueuesParallel(s.cqs.all(), leastPages)
	if leastPages != 0 || firstErr != nil {
		return firstErr
	}
	if s.opts.Framed {
		// The queue offsets dispatch wrote into records must be durable before the
		// checkpoint says those records are dispatched.
		if err := s.syncInPlaceWrites(through); err != nil {
			return err
		}
	}
	idxThrough, idxTs := int64(-1), int64(0)
	if s.index != nil {
		var err error
		if idxThrough, idxTs, err = s.index.flush(); err != nil {
			return err
		}
	}
	s.checkpoint.update(func(c *checkpointData) {
		c.logicsFlushedOffset = through
		if throughTs > 0 {
			c.logicsMsgTimestamp = throughTs
		}
		if idxThrough >= 0 {
			c.indexFlushedOffset = idxThrough
			c.indexMsgTimestamp = idxTs
		}
	})
	return s.checkpoint.flush()
}

// cqFlushers is how many ConsumeQueue files flushConsumeQueues syncs at once. One fdatasync per dirty
// file, one after the other, made the final flush of a broker with thousands of written queues take
// seconds; the journal commits of concurrent fdatasyncs on one file system are shared.
const cqFlushers = 16

// flushQueuesParallel flushes the queues on up to cqFlushers goroutines and returns the first error.
func flushQueuesParallel(cqs []*consumeQueue, leastPages int) error {
	var (
		next     atomic.Int64
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	for range min(cqFlushers, len(cqs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := next.Add(1) - 1; i < int64(len(cqs)); i = next.Add(1) - 1 {
				if err := cqs[i].flush(leastPages); err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	return firstErr
}
