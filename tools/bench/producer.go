package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/rocketraft/rocketraft/remoting"
	"golang.org/x/time/rate"
)

// producerClient is one client library driving a producer run. worker is called once per goroutine, before
// the run starts; close is called after every worker has finished and every send has completed.
type producerClient interface {
	worker(i int, m *Meter) producerWorker
	close() error
}

// producerWorker sends for one goroutine; only that goroutine calls it.
type producerWorker interface {
	// send sends n messages: one message, or a batch of n in batch mode. It records the outcome in the
	// worker's Meter and calls done once the request is finished with: before it returns for sync, batch and
	// oneway sends, from the answer's callback for async sends. reqCtx bounds the request (the run's
	// cancellation does not cancel requests already made). ok is false when the send failed at once; the
	// worker then pauses before the next one.
	send(reqCtx context.Context, n int, done func()) (ok bool)
}

// failurePause is how long a worker waits after a send that failed at once (RocketMQ's tool waits 3 s after a
// remoting or broker error); it keeps a stopped broker from turning the benchmark into a busy loop.
const failurePause = 100 * time.Millisecond

// Options are what a run needs besides its config.
type Options struct {
	// Report receives a line per interval; nil prints none.
	Report io.Writer
	// Log receives diagnostics; nil discards.
	Log *slog.Logger
}

func (o *Options) logger() *slog.Logger {
	if o.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return o.Log
}

// RunProducer runs `mqbench producer`: creates the topic if missing, then sends from cfg.Threads goroutines
// until cfg.Duration passes, cfg.Total messages are sent, or ctx ends. It waits for every outstanding send
// before it returns the summary.
func RunProducer(ctx context.Context, cfg ProducerConfig, opts Options) (*Summary, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	log := opts.logger()
	stats := newStats(roleProducer, opts.Report)
	admin := newClient(cfg.Common, remoting.SerializeJSON, log)
	defer admin.Close()
	targets, err := ensureTargets(ctx, admin, cfg.Topics(), cfg.Queues, log)
	if err != nil {
		return nil, err
	}
	queues := targetQueues(targets, cfg.Topic)
	var client producerClient
	switch cfg.Client {
	case ClientNative:
		client = newNativeProducer(&cfg, targets, log)
	case ClientGRPC:
		client, err = newGRPCProducer(&cfg, log)
	default:
		client, err = newOfficialProducer(&cfg, log)
	}
	if err != nil {
		return nil, err
	}
	var stored0 int64
	if cfg.Mode == ModeOneway {
		// Messages of an earlier run may still be on their way to the consume queues: count from after them.
		if err = waitDispatched(ctx, admin, queues); err == nil {
			stored0, err = storedCount(ctx, admin, queues)
		}
		if err != nil {
			_ = client.close()
			return nil, err
		}
	}
	workers := make([]producerWorker, cfg.Threads)
	meters := make([]*Meter, cfg.Threads)
	for i := range workers {
		meters[i] = stats.NewMeter()
		workers[i] = client.worker(i, meters[i])
	}
	sum := driveProducers(ctx, &cfg, stats, workers)
	if cfg.Mode == ModeOneway {
		// Nothing acknowledges a oneway send: wait until the broker has stored what was handed to the
		// connections, before closing them could lose it, and report how much that is.
		sum.Stored = waitStored(context.WithoutCancel(ctx), admin, cfg.Topic, queues, stored0+sum.Messages, log) - stored0
	}
	cerr := client.close()
	sum.Client, sum.Mode, sum.Topic = string(cfg.Client), string(cfg.Mode), cfg.Topic
	sum.Threads, sum.MessageSize = cfg.Threads, cfg.MessageSize
	if cfg.TopicCount > 1 {
		sum.Topics = cfg.TopicCount
	}
	if cerr != nil {
		return sum, fmt.Errorf("close %s client: %w", cfg.Client, cerr)
	}
	return sum, nil
}

// driveProducers runs workers (one goroutine each) until cfg.Duration passes, cfg.Total messages are sent, or
// ctx ends, reporting every cfg.Interval, and returns the summary once every outstanding send has finished.
func driveProducers(ctx context.Context, cfg *ProducerConfig, stats *Stats, workers []producerWorker) *Summary {
	var limiter *rate.Limiter
	if cfg.Rate > 0 {
		burst := 1
		if cfg.Mode == ModeBatch {
			burst = cfg.BatchSize
		}
		limiter = rate.NewLimiter(rate.Limit(cfg.Rate), burst)
	}
	runCtx, cancel := runContext(ctx, cfg.Duration)
	defer cancel()

	start := time.Now()
	stats.Start(start)
	stopReport := startReporter(stats, cfg.Interval)
	var wg sync.WaitGroup
	for i, w := range workers {
		quota := workerQuota(cfg.Total, len(workers), i)
		wg.Go(func() { runProducerWorker(runCtx, cfg, w, quota, limiter) })
	}
	wg.Wait()
	end := time.Now()
	stopReport()
	return stats.Summary(end)
}

// runContext is ctx, ended after d when d > 0.
func runContext(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if d > 0 {
		return context.WithTimeout(ctx, d)
	}
	return context.WithCancel(ctx)
}

// workerQuota splits total over n workers as RocketMQ's tool does (the remainder to the first); -1 is no limit.
func workerQuota(total int64, n, i int) int64 {
	if total <= 0 {
		return -1
	}
	q := total / int64(n)
	if i == 0 {
		q += total % int64(n)
	}
	return q
}

// runProducerWorker sends until quota messages are sent (quota < 0: no limit) or ctx ends, then waits for its
// outstanding sends.
func runProducerWorker(ctx context.Context, cfg *ProducerConfig, w producerWorker, quota int64, limiter *rate.Limiter) {
	inflight := 1
	if cfg.Mode == ModeAsync {
		inflight = cfg.Inflight
	}
	slots := make(chan struct{}, inflight)
	release := func() { <-slots }
	reqBase := context.WithoutCancel(ctx)
	for quota != 0 && ctx.Err() == nil {
		n := 1
		if cfg.Mode == ModeBatch {
			n = cfg.BatchSize
		}
		if quota > 0 {
			n = int(min(int64(n), quota))
		}
		if limiter != nil && limiter.WaitN(ctx, n) != nil {
			break
		}
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			continue // the loop ends
		}
		reqCtx, cancel := context.WithTimeout(reqBase, cfg.Timeout)
		ok := w.send(reqCtx, n, func() { cancel(); release() })
		if quota > 0 {
			quota -= int64(n)
		}
		if !ok {
			pause(ctx, failurePause)
		}
	}
	for range inflight { // wait for the outstanding sends
		slots <- struct{}{}
	}
}

// sendByMode sends one request of n messages the way mode asks, through one of a client's three calls: async
// (the callback gets the answer), oneway, or sync. outcome records an answer in the worker's Meter; a oneway
// send counts as sent once queued. done is called when the request is finished with. The result is false
// when the send failed at once.
func sendByMode[R any](mode Mode, m *Meter, n, size int, start time.Time, done func(),
	async func(cb func(R, error)) error, oneway func() error, sync func() (R, error),
	outcome func(R, error) bool) bool {
	switch mode {
	case ModeAsync:
		err := async(func(r R, err error) {
			outcome(r, err)
			done()
		})
		if err != nil {
			m.Failed(err)
			done()
			return false
		}
		return true
	case ModeOneway:
		err := oneway()
		if err != nil {
			m.Failed(err)
		} else {
			m.Sent(n, size, time.Since(start))
		}
		done()
		return err == nil
	default: // sync, batch
		r, err := sync()
		ok := outcome(r, err)
		done()
		return ok
	}
}

// pause waits for d or until ctx ends.
func pause(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// startReporter prints a line every interval until the returned stop is called; stop waits for it.
func startReporter(s *Stats, interval time.Duration) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case now := <-t.C:
				s.Report(now)
			case <-done:
				return
			}
		}
	})
	return func() {
		close(done)
		wg.Wait()
	}
}
