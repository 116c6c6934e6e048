package bench

import (
	"context"
	"fmt"
	"log/slog"
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
}

// newOfficialConsumer creates a push consumer subscribed to the topic; run starts it.
func newOfficialConsumer(cfg *ConsumerConfig, stats *Stats, prog *progress, log *slog.Logger) (*officialConsumer, error) {
	c := &officialConsumer{cfg: cfg, stats: stats, prog: prog, log: log}
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
	if err := pc.Shutdown(); err != nil {
		_ = c.ids.close()
		return fmt.Errorf("shut down push consumer: %w", err)
	}
	return c.ids.close()
}

// handle is the push consumer's callback: it records up to what is left of the quota and acknowledges all.
func (c *officialConsumer) handle(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
	now := time.Now()
	nowMs := now.UnixMilli()
	m := c.meters[int(c.next.Add(1))%len(c.meters)]
	for _, msg := range msgs[:c.prog.take(len(msgs))] {
		m.Consumed(len(msg.Body), ms(nowMs-msg.BornTimestamp), ms(nowMs-msg.StoreTimestamp), now)
		c.ids.add(msg.MsgId)
	}
	return consumer.ConsumeSuccess, nil
}
