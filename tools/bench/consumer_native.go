package bench

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/rocketraft/rocketraft/client"
	"github.com/rocketraft/rocketraft/message"
	"github.com/rocketraft/rocketraft/remoting"
)

// The long-poll timing the official client uses.
const (
	pullSuspend = 20 * time.Second // suspendTimeoutMillis: the broker holds an empty pull this long
	pullTimeout = 30 * time.Second // the request's own timeout, well past the hold
)

// nativeConsumer pulls with our own remoting.Client: every read queue of the topic is owned by one of
// cfg.Threads workers, which keeps one long-polling PULL_MESSAGE outstanding per queue (subscription "*"
// carried in the request, so no heartbeat is needed) and decodes the answers with message.DecodeMessage.
// Offsets start at the group's committed offset (else the queue's min or max, per --from) and are committed
// with every pull and at the end.
type nativeConsumer struct {
	cfg    *ConsumerConfig
	c      *client.Client
	stats  *Stats
	prog   *progress
	log    *slog.Logger
	queues []client.Queue
	start  []int64 // first offset to pull, by index in queues
}

// newNativeConsumer finds where to start in each of queues (the topic's read queues).
func newNativeConsumer(ctx context.Context, cfg *ConsumerConfig, queues []client.Queue, stats *Stats, prog *progress, log *slog.Logger) (*nativeConsumer, error) {
	cl := newClient(cfg.Common, remoting.SerializeRocketMQ, log)
	c := &nativeConsumer{cfg: cfg, c: cl, stats: stats, prog: prog, log: log, queues: queues}
	if err := c.init(ctx); err != nil {
		_ = cl.Close()
		return nil, err
	}
	return c, nil
}

// init finds where to start in each queue.
func (c *nativeConsumer) init(ctx context.Context) error {
	if len(c.queues) == 0 {
		return fmt.Errorf("topic %s has no readable queue on a broker master", c.cfg.Topic)
	}
	for _, q := range c.queues {
		off, found, err := c.c.QueryConsumerOffset(ctx, c.cfg.Group, q)
		if err != nil {
			return fmt.Errorf("offset of %s: %w", q, err)
		}
		if !found {
			code := remoting.GetMinOffset
			if c.cfg.From == "last" {
				code = remoting.GetMaxOffset
			}
			if off, err = c.c.QueueOffset(ctx, code, q, 0); err != nil {
				return fmt.Errorf("start offset of %s: %w", q, err)
			}
		}
		c.start = append(c.start, off)
	}
	c.log.Info("native consumer", "topic", c.cfg.Topic, "group", c.cfg.Group, "queues", len(c.queues))
	return nil
}

func (c *nativeConsumer) run(ctx context.Context) error {
	n := min(c.cfg.Threads, len(c.queues))
	var wg sync.WaitGroup
	for i := range n {
		pw := &pullWorker{c: c, m: c.stats.NewMeter()}
		for j := i; j < len(c.queues); j += n {
			pw.owned = append(pw.owned, j)
		}
		wg.Go(func() { pw.run(ctx) })
	}
	wg.Wait()
	return c.c.Close()
}

// pullWorker pulls the queues it owns, one outstanding pull per queue.
type pullWorker struct {
	c     *nativeConsumer
	m     *Meter
	owned []int // indexes in c.queues
}

type pullAnswer struct {
	qi   int
	resp *remoting.Command
	err  error
}

func (pw *pullWorker) run(ctx context.Context) {
	c := pw.c
	offsets := make(map[int]int64, len(pw.owned))
	answers := make(chan pullAnswer, len(pw.owned)) // one outstanding pull per queue: sends never block
	pending := 0
	pull := func(qi int) {
		pending++
		if err := pw.pull(ctx, qi, offsets[qi], answers); err != nil {
			answers <- pullAnswer{qi: qi, err: err}
		}
	}
	for _, qi := range pw.owned {
		offsets[qi] = c.start[qi]
		pull(qi)
	}
	for pending > 0 {
		a := <-answers
		pending--
		if ctx.Err() != nil {
			continue // stopping: collect the outstanding answers (cancelled pulls answer at once)
		}
		next, ok := pw.handle(a, offsets[a.qi])
		offsets[a.qi] = next
		if !ok {
			pause(ctx, failurePause)
		}
		pull(a.qi)
	}
	pw.commit(offsets)
}

// pull issues one long-polling PULL_MESSAGE for queue qi from offset; the answer goes to answers.
func (pw *pullWorker) pull(ctx context.Context, qi int, offset int64, answers chan<- pullAnswer) error {
	c := pw.c
	q := c.queues[qi]
	req := c.c.PullCommand(&client.Pull{Group: c.cfg.Group, Topic: c.cfg.Topic, BrokerName: q.BrokerName,
		QueueID: q.QueueID, Offset: offset, MaxNums: c.cfg.PullBatch, LongPoll: true, Suspend: pullSuspend,
		Commit: offset > 0, CommitOffset: offset})
	reqCtx, cancel := context.WithTimeout(ctx, pullTimeout)
	err := c.c.InvokeAsync(reqCtx, q.Addr, req,
		func(resp *remoting.Command, err error) {
			cancel()
			answers <- pullAnswer{qi: qi, resp: resp, err: err}
		})
	if err != nil {
		cancel()
	}
	return err
}

// handle records a pull's answer and returns the offset to pull next; ok is false after an error.
func (pw *pullWorker) handle(a pullAnswer, offset int64) (next int64, ok bool) {
	c := pw.c
	q := c.queues[a.qi]
	if a.err != nil {
		pw.m.Failed(fmt.Errorf("pull %s: %w", q, a.err))
		return offset, false
	}
	res, err := client.ParsePull(q.Addr, a.resp)
	if res == nil {
		pw.m.Rejected(fmt.Sprintf("pull %s: %v", q, err))
		return offset, false
	}
	switch res.Status {
	case client.PullFound:
		if res.NextBegin < 0 {
			pw.m.Rejected(fmt.Sprintf("pull %s: answer without a nextBeginOffset", q))
			return offset, false
		}
		if err != nil {
			pw.m.Rejected(fmt.Sprintf("pull %s from offset %d: %v", q, offset, err))
			return res.NextBegin, true
		}
		return pw.consume(res.Msgs, res.NextBegin), true
	case client.PullOffsetIllegal:
		c.log.Warn("pull offset moved", "queue", q, "offset", offset, "next", res.NextBegin, "remark", a.resp.Remark)
		if res.NextBegin < 0 {
			return offset, false
		}
		return res.NextBegin, true
	default: // NO_NEW_MSG, NO_MATCHED_MSG
		if res.NextBegin < 0 {
			return offset, true
		}
		return res.NextBegin, true
	}
}

// consume records each message of a pull answer, up to what is left of the quota. It returns the offset to
// go on from: nextBegin, or the one after the last message counted when the quota cut the answer short.
func (pw *pullWorker) consume(msgs []*message.MessageExt, nextBegin int64) int64 {
	now := time.Now()
	nowMs := now.UnixMilli()
	taken := pw.c.prog.take(len(msgs))
	for _, m := range msgs[:taken] {
		pw.m.Consumed(len(m.Body), ms(nowMs-m.BornTimestamp), ms(nowMs-m.StoreTimestamp), now)
	}
	if taken < len(msgs) {
		return msgs[taken].QueueOffset
	}
	return nextBegin
}

func ms(n int64) time.Duration { return time.Duration(n) * time.Millisecond }

// commit stores the worker's offsets at the brokers (UPDATE_CONSUMER_OFFSET), so a later run of the group goes
// on where this one stopped.
func (pw *pullWorker) commit(offsets map[int]int64) {
	c := pw.c
	for qi, off := range offsets {
		if off == c.start[qi] {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), c.cfg.Timeout)
		err := c.c.UpdateConsumerOffset(ctx, c.cfg.Group, c.queues[qi], off)
		cancel()
		if err != nil {
			c.log.Warn("commit offset", "queue", c.queues[qi], "offset", off, "err", err)
		}
	}
}
