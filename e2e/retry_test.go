package e2e

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/rocketraft/rocketraft/app/cluster"
	"github.com/rocketraft/rocketraft/broker"
)

// shortDelays makes every delay level 1 s, so retries come back quickly in tests.
func shortDelays(_ int, cfg *broker.Config) { cfg.MessageDelayLevel = "1s 1s 1s 1s 1s 1s" }

// TestRetryAndDeadLetter: a message rejected once comes back with reconsume times 1 in its own topic; one
// rejected every time ends in the group's dead letter queue after maxReconsumeTimes retries.
func TestRetryAndDeadLetter(t *testing.T) {
	c := cluster.Start(t, cluster.Options{Configure: shortDelays})
	const topic = "Retry"
	createTopic(t, c, topic, 1)

	type delivery struct {
		body  string
		times int32
		topic string
	}
	var mu sync.Mutex
	var seen []delivery
	pc := newPushConsumer(t, c, "CG_retry", consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset), consumer.WithMaxReconsumeTimes(2))
	err := pc.Subscribe(topic, consumer.MessageSelector{}, func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		mu.Lock()
		defer mu.Unlock()
		result := consumer.ConsumeSuccess
		for _, m := range msgs {
			seen = append(seen, delivery{string(m.Body), m.ReconsumeTimes, m.Topic})
			switch {
			case string(m.Body) == "always":
				result = consumer.ConsumeRetryLater
			case string(m.Body) == "once" && m.ReconsumeTimes == 0:
				result = consumer.ConsumeRetryLater
			}
		}
		return result, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := pc.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pc.Shutdown() })
	p := newProducer(t, c)
	for _, b := range []string{"once", "always"} {
		if _, err := p.SendSync(context.Background(), primitive.NewMessage(topic, []byte(b))); err != nil {
			t.Fatal(err)
		}
	}
	count := func(body string) (n int, maxTimes int32) {
		mu.Lock()
		defer mu.Unlock()
		for _, d := range seen {
			if d.body == body {
				n++
				maxTimes = max(maxTimes, d.times)
				if d.topic != topic {
					t.Errorf("redelivery of %q has topic %q, want %q", d.body, d.topic, topic)
				}
			}
		}
		return n, maxTimes
	}
	cluster.Eventually(t, 60*time.Second, func() bool { n, times := count("once"); return n == 2 && times == 1 }, "\"once\" redelivered with reconsume times 1")
	cluster.Eventually(t, 60*time.Second, func() bool { n, _ := count("always"); return n == 3 }, "\"always\" delivered 1 + 2 times")
	w := newWireClient(t)
	cluster.Eventually(t, 30*time.Second, func() bool {
		return queueMaxOffset(t, w, c.Broker(0).Addr(), "%DLQ%CG_retry") == 1
	}, "\"always\" in %%DLQ%%CG_retry")
	if n, _ := count("always"); n != 3 {
		t.Fatalf("\"always\" delivered %d times, want 3 (then the DLQ)", n)
	}
}
