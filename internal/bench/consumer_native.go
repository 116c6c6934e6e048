package bench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

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
	w      *wire
	stats  *Stats
	prog   *progress
	log    *slog.Logger
	queues []queueRef
	start  []int64 // first offset to pull, by index in queues
}

// newNativeConsumer finds where to start in each of queues (the topic's read queues).
func newNativeConsumer(ctx context.Context, cfg *ConsumerConfig, queues []queueRef, stats *Stats, prog *progress, log *slog.Logger) (*nativeConsumer, error) {
	w := newWire(cfg.Common, remoting.SerializeRocketMQ, 1, log)
	c := &nativeConsumer{cfg: cfg, w: w, stats: stats, prog: prog, log: log, queues: queues}
	if err := c.init(ctx); err != nil {
		_ = w.close()
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
		off, found, err := c.w.queryOffset(ctx, c.cfg.Group, c.cfg.Topic, q)
		if err != nil {
			return fmt.Errorf("offset of %s: %w", q, err)
		}
		if !found {
			code := remoting.GetMinOffset
			if c.cfg.From == "last" {
				code = remoting.GetMaxOffset
			}
			if off, err = c.w.queueOffset(ctx, code, c.cfg.Topic, q); err != nil {
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
	return c.w.close()
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
	ext := PullExt(c.cfg.Group, c.cfg.Topic, q.broker, q.id, offset, c.cfg.PullBatch, pullSuspend, offset > 0)
	reqCtx, cancel := context.WithTimeout(ctx, pullTimeout)
	err := c.w.rc.InvokeAsync(reqCtx, q.addr, c.w.request(remoting.PullMessage, ext, nil),
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
	resp := a.resp
	nextBegin, err := resp.ExtInt64("nextBeginOffset")
	switch remoting.ResponseCode(resp.Code) {
	case remoting.Success:
		if err != nil {
			pw.m.Rejected(fmt.Sprintf("pull %s: answer without a nextBeginOffset: %v", q, err))
			return offset, false
		}
		next, err := pw.consume(resp.Body, nextBegin)
		if err != nil {
			pw.m.Rejected(fmt.Sprintf("pull %s from offset %d: %v", q, offset, err))
		}
		return next, true
	case remoting.PullNotFound, remoting.PullRetryImmediately:
		if err != nil {
			return offset, true
		}
		return nextBegin, true
	case remoting.PullOffsetMoved:
		c.log.Warn("pull offset moved", "queue", q, "offset", offset, "next", nextBegin, "remark", resp.Remark)
		if err != nil {
			return offset, false
		}
		return nextBegin, true
	default:
		pw.m.Rejected(fmt.Sprintf("pull %s: %s (%d) %s", q, remoting.ResponseCode(resp.Code), resp.Code, resp.Remark))
		return offset, false
	}
}

// consume decodes the stored records of a pull answer and records each message, up to what is left of the
// quota. It returns the offset to go on from: nextBegin, or the one after the last message counted when the
// quota cut the answer short.
func (pw *pullWorker) consume(body []byte, nextBegin int64) (int64, error) {
	now := time.Now()
	nowMs := now.UnixMilli()
	var msgs []*message.MessageExt
	for off := 0; off < len(body); {
		m, err := message.DecodeMessage(body[off:], true)
		if err != nil {
			return nextBegin, fmt.Errorf("record at byte %d of %d: %w", off, len(body), err)
		}
		if m.StoreSize <= 0 {
			return nextBegin, errors.New("record of size 0")
		}
		msgs = append(msgs, m)
		off += int(m.StoreSize)
	}
	taken := pw.c.prog.take(len(msgs))
	for _, m := range msgs[:taken] {
		pw.m.Consumed(len(m.Body), ms(nowMs-m.BornTimestamp), ms(nowMs-m.StoreTimestamp), now)
	}
	if taken < len(msgs) {
		return msgs[taken].QueueOffset, nil
	}
	return nextBegin, nil
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
		err := c.w.commitOffset(ctx, c.cfg.Group, c.cfg.Topic, c.queues[qi], off)
		cancel()
		if err != nil {
			c.log.Warn("commit offset", "queue", c.queues[qi], "offset", off, "err", err)
		}
	}
}
