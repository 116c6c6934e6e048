package bench

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Publish sends one message for one goroutine and returns once a broker acknowledged it (nil), or why not.
// Only the goroutine it was made for calls it. ctx bounds the request.
type Publish func(ctx context.Context) error

// PublishConfig configures RunPublishers: the producer workload of `mqbench producer --mode sync` without the
// RocketMQ parts (name servers, topics), for driving a peer broker through its own client.
type PublishConfig struct {
	Client      string        // names the client in the summary, e.g. "nats"
	Subject     string        // names the destination in the summary
	Threads     int           // goroutines, each with one request outstanding
	MessageSize int           // body bytes (the caller builds the body; counted in MB/s)
	Duration    time.Duration // run this long (0: until Total is reached, or ctx ends)
	Total       int64         // messages over all goroutines (0: no limit)
	Rate        float64       // messages/s over all goroutines (0: unlimited)
	Timeout     time.Duration // per request
	Interval    time.Duration // report period
}

// Validate checks the config; every error names the flag of the same name as mqbench producer's.
func (c *PublishConfig) Validate() error {
	var errs []error
	if c.Threads < 1 || c.Threads > 10_000 {
		errs = append(errs, fmt.Errorf("-w: %d goroutines is not within 1..10000", c.Threads))
	}
	if c.MessageSize < 1 || c.MessageSize > 4<<20 {
		errs = append(errs, fmt.Errorf("-s: message size %d is not within 1..%d", c.MessageSize, 4<<20))
	}
	if c.Duration < 0 {
		errs = append(errs, fmt.Errorf("--duration: %v is negative", c.Duration))
	}
	if c.Total < 0 {
		errs = append(errs, fmt.Errorf("-q: %d is negative", c.Total))
	}
	if c.Rate < 0 {
		errs = append(errs, fmt.Errorf("--rate: %v is negative", c.Rate))
	}
	if c.Timeout <= 0 {
		errs = append(errs, fmt.Errorf("--timeout: %v is not positive", c.Timeout))
	}
	if c.Interval < 10*time.Millisecond {
		errs = append(errs, fmt.Errorf("--interval: %v is below 10ms", c.Interval))
	}
	return errors.Join(errs...)
}

// RunPublishers drives cfg.Threads goroutines, goroutine i sending through publish(i), with the same loop,
// rate limit, statistics, per-interval lines and summary as RunProducer's sync mode, so that a peer broker's
// figures are measured exactly as ours. publish is called for every goroutine before the run starts.
func RunPublishers(ctx context.Context, cfg PublishConfig, publish func(i int) Publish, opts Options) (*Summary, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	stats := newStats(roleProducer, opts.Report)
	pc := ProducerConfig{Mode: ModeSync, BatchSize: 1, Rate: cfg.Rate, Total: cfg.Total, Inflight: 1,
		MessageSize: cfg.MessageSize}
	pc.Threads, pc.Duration, pc.Timeout, pc.Interval = cfg.Threads, cfg.Duration, cfg.Timeout, cfg.Interval
	workers := make([]producerWorker, cfg.Threads)
	for i := range workers {
		workers[i] = &publishWorker{pub: publish(i), m: stats.NewMeter(), size: cfg.MessageSize}
	}
	sum := driveProducers(ctx, &pc, stats, workers)
	sum.Client, sum.Mode, sum.Topic = cfg.Client, string(ModeSync), cfg.Subject
	sum.Threads, sum.MessageSize = cfg.Threads, cfg.MessageSize
	return sum, nil
}

// publishWorker adapts a Publish to the producer loop.
type publishWorker struct {
	pub  Publish
	m    *Meter
	size int
}

func (w *publishWorker) send(ctx context.Context, n int, done func()) bool {
	defer done()
	start := time.Now()
	if err := w.pub(ctx); err != nil {
		w.m.Failed(err)
		return false
	}
	w.m.Sent(n, w.size, time.Since(start))
	return true
}

// NewBody is RocketMQ's benchmark body: size random alphanumeric bytes (what mqbench sends), for peers.
func NewBody(size int) []byte { return newBody(size) }
