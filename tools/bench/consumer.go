package bench

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rocketraft/rocketraft/client"

	"github.com/rocketraft/rocketraft/remoting"
)

// consumerClient is one client library driving a consumer run: run consumes until ctx ends, then stops the
// client and returns once every goroutine it started has finished.
type consumerClient interface {
	run(ctx context.Context) error
}

// progress counts consumed messages over every worker and ends the run when the quota is reached.
type progress struct {
	quota  int64 // 0: no limit
	n      atomic.Int64
	last   atomic.Int64 // unix nanos of the latest message, for --idle
	cancel context.CancelFunc
}

// take claims up to k messages of the quota and returns how many to count (k when there is no quota). The
// caller that reaches the quota ends the run.
func (p *progress) take(k int) int {
	p.last.Store(time.Now().UnixNano())
	if p.quota <= 0 {
		p.n.Add(int64(k))
		return k
	}
	for {
		cur := p.n.Load()
		if cur >= p.quota {
			return 0
		}
		got := min(int64(k), p.quota-cur)
		if p.n.CompareAndSwap(cur, cur+got) {
			if cur+got >= p.quota {
				p.cancel()
			}
			return int(got)
		}
	}
}

// RunConsumer runs `mqbench consumer`: subscribes to the topic (creating it if missing) as cfg.Group and
// consumes until cfg.Duration passes, cfg.Total messages are consumed, nothing arrived for cfg.Idle, or ctx
// ends.
func RunConsumer(ctx context.Context, cfg ConsumerConfig, opts Options) (*Summary, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	log := opts.logger()
	stats := newStats(roleConsumer, opts.Report)
	runCtx, cancel := runContext(ctx, cfg.Duration)
	defer cancel()
	prog := &progress{quota: cfg.Total, cancel: cancel}
	admin := newClient(cfg.Common, remoting.SerializeJSON, log)
	route, err := admin.EnsureTopic(ctx, cfg.Topic, cfg.Queues, log)
	_ = admin.Close()
	if err != nil {
		return nil, err
	}
	var cons consumerClient
	switch cfg.Client {
	case ClientNative:
		cons, err = newNativeConsumer(ctx, &cfg, client.RouteQueues(route, cfg.Topic, "", false), stats, prog, log)
	case ClientGRPC:
		cons, err = newGRPCConsumer(&cfg, client.RouteQueues(route, cfg.Topic, "", false), stats, prog, log)
	default:
		cons, err = newOfficialConsumer(&cfg, stats, prog, log)
	}
	if err != nil {
		return nil, err
	}
	start := time.Now()
	stats.Start(start)
	prog.last.Store(start.UnixNano())
	stopReport := startReporter(stats, cfg.Interval)
	var wg sync.WaitGroup
	if cfg.Idle > 0 {
		wg.Go(func() { watchIdle(runCtx, cancel, prog, cfg.Idle) })
	}
	runErr := cons.run(runCtx)
	end := time.Now()
	cancel()
	wg.Wait()
	stopReport()
	sum := stats.Summary(end)
	sum.Client, sum.Topic, sum.Group, sum.Threads = string(cfg.Client), cfg.Topic, cfg.Group, cfg.Threads
	if runErr != nil {
		return sum, fmt.Errorf("%s consumer: %w", cfg.Client, runErr)
	}
	return sum, nil
}

// watchIdle ends the run once no message arrived for idle.
func watchIdle(ctx context.Context, cancel context.CancelFunc, prog *progress, idle time.Duration) {
	t := time.NewTicker(min(idle/4, 100*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			if now.Sub(time.Unix(0, prog.last.Load())) >= idle {
				cancel()
				return
			}
		}
	}
}
