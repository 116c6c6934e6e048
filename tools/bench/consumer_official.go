package bench

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
)

// officialConsumer drives the official Go client's push consumer, cfg.Threads consume goroutines, as
// RocketMQ's benchmark consumer drives a DefaultMQPushConsumer.
type officialConsumer struct {
	cfg    *ConsumerConfig
	stats  *Stats
	prog   *progress
	log    *slog.Logger
	meters []*Meter // the client's consume goroutines are its own: they share these meters round robin
	next   atomic.Uint32
	pc     rocketmq.PushConsumer
	ids    *idLog // --ids
	seen   *distinct
	// gate holds the run's end back until every callback in flight has recorded what it took: the client's
	// Shutdown does not wait for its consume goroutines, and a callback that had claimed its share of the
	// quota but not yet recorded it was missing from the summary (issue 36: "consumed 699 messages, want
	// 700"). A callback holds it for reading; the end takes it for writing and sets ended.
	gate struct {
		sync.RWMutex
		ended bool
	}
}

// newOfficialConsumer creates a push consumer subscribed to the topic; run starts it.
func newOfficialConsumer(cfg *ConsumerConfig, stats *Stats, prog *progress, log *slog.Logger) (*officialConsumer, error) {
	c := &officialConsumer{cfg: cfg, stats: stats, prog: prog, log: log, seen: newDistinct()}
	for range cfg.Threads {
		c.meters = append(c.meters, stats.NewMeter())
	}
	from := consumer.ConsumeFromFirstOffset
	if cfg.From == "last" {
		from = consumer.ConsumeFromLastOffset
	}
	var err error
	c.pc, err = rocketmq.NewPushConsumer(
		consumer.WithNsResolver(primitive.NewPassthroughResolver(cfg.NamesrvAddrs)),
		consumer.WithGroupName(cfg.Group),
		consumer.WithInstance(instanceName("consumer")),
		consumer.WithConsumeFromWhere(from),
		consumer.WithConsumeGoroutineNums(cfg.Threads),
		consumer.WithPullBatchSize(int32(cfg.PullBatch)),
	)
	if err != nil {
		return nil, fmt.Errorf("new push consumer: %w", err)
	}
	if err := c.pc.Subscribe(cfg.Topic, consumer.MessageSelector{}, c.handle); err != nil {
		return nil, fmt.Errorf("subscribe %s: %w", cfg.Topic, err)
	}
	if c.ids, err = openIDLog(cfg.IDs); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *officialConsumer) run(ctx context.Context) error {
	pc := c.pc
	if err := pc.Start(); err != nil {
		_ = pc.Shutdown()
		_ = c.ids.close()
		return fmt.Errorf("start push consumer: %w", err)
	}
	c.log.Info("official consumer", "topic", c.cfg.Topic, "group", c.cfg.Group)
	<-ctx.Done()
	c.end()
	if err := pc.Shutdown(); err != nil {
		_ = c.ids.close()
		return fmt.Errorf("shut down push consumer: %w", err)
	}
	return c.ids.close()
}

// end waits for the callbacks in flight to record what they took; a later callback counts nothing.
func (c *officialConsumer) end() {
	c.gate.Lock()
	c.gate.ended = true
	c.gate.Unlock()
}

// handle is the push consumer's callback: it counts each message not counted before (by its queue and
// queue offset; the others as duplicates), up to what is left of the quota, and acknowledges all.
func (c *officialConsumer) handle(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
	c.gate.RLock()
	defer c.gate.RUnlock()
	if c.gate.ended {
		return consumer.ConsumeSuccess, nil // the run is over and summarised
	}
	now := time.Now()
	nowMs := now.UnixMilli()
	m := c.meters[int(c.next.Add(1))%len(c.meters)]
	fresh := make([]*primitive.MessageExt, 0, len(msgs))
	for _, msg := range msgs {
		if c.seen.add(officialPosition(msg)) {
			fresh = append(fresh, msg)
		}
	}
	if dups := len(msgs) - len(fresh); dups > 0 {
		m.Duplicates(dups)
	}
	for _, msg := range fresh[:c.prog.take(len(fresh))] {
		m.Consumed(len(msg.Body), ms(nowMs-msg.BornTimestamp), ms(nowMs-msg.StoreTimestamp), now)
		c.ids.add(msg.MsgId)
	}
	return consumer.ConsumeSuccess, nil
}

// officialPosition is where a message was read: its queue (the client sets Queue on every pulled message)
// and queue offset, or else its store host and CommitLog offset.
func officialPosition(msg *primitive.MessageExt) (queueKey, int64) {
	if q := msg.Queue; q != nil {
		return queueKey{topic: q.Topic, broker: q.BrokerName, queue: q.QueueId}, msg.QueueOffset
	}
	return queueKey{topic: msg.Topic, broker: msg.StoreHost, queue: -1}, msg.CommitLogOffset
}
