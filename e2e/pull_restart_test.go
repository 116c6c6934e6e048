package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/rocketraft/rocketraft/internal/cluster"
)

func TestPullConsumer(t *testing.T) {
	c := cluster.Start(t, cluster.Options{})
	const topic = "PullTopic"
	createTopic(t, c, topic, 2)
	p := newProducer(t, c)
	want := sendN(t, p, topic, "pull", 30)

	pc, err := rocketmq.NewPullConsumer(
		consumer.WithNsResolver(primitive.NewPassthroughResolver(c.NamesrvAddrs())),
		consumer.WithGroupName("CG_pull"),
		consumer.WithInstance(instance("pull")),
	)
	if err != nil {
		t.Fatal(err)
	}
	if err := pc.Subscribe(topic, consumer.MessageSelector{}); err != nil {
		t.Fatal(err)
	}
	if err := pc.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pc.Shutdown() })
	mqs, err := pc.GetTopicRouteInfo(topic)
	if err != nil || len(mqs) != 2 {
		t.Fatalf("route of %s: %v queues, err %v", topic, len(mqs), err)
	}
	got := map[string]bool{}
	for _, mq := range mqs {
		offset := int64(0)
		for {
			res, err := pc.PullFrom(context.Background(), mq, offset, 8)
			if err != nil {
				t.Fatalf("pull %v at %d: %v", mq, offset, err)
			}
			if res.Status != primitive.PullFound {
				if res.Status != primitive.PullNoNewMsg {
					t.Fatalf("pull %v at %d: status %v", mq, offset, res.Status)
				}
				break
			}
			for _, m := range res.GetMessageExts() {
				if m.QueueOffset != offset {
					t.Fatalf("queue %d: message at offset %d, expected %d", mq.QueueId, m.QueueOffset, offset)
				}
				got[string(m.Body)] = true
				offset++
			}
			if res.NextBeginOffset != offset {
				t.Fatalf("nextBeginOffset %d, want %d", res.NextBeginOffset, offset)
			}
			if offset >= res.MaxOffset {
				break // caught up: another pull would be held by long polling until its timeout
			}
		}
	}
	for _, w := range want {
		if !got[w] {
			t.Errorf("pull consumer missed %s", w)
		}
	}
}

// TestBrokerRestartKeepsMessagesAndOffsets: after an ordered restart every message is still there and the
// group resumes from its committed offsets (it does not read the consumed messages again).
func TestBrokerRestartKeepsMessagesAndOffsets(t *testing.T) {
	c := cluster.Start(t, cluster.Options{})
	const topic = "Restart"
	createTopic(t, c, topic, 4)
	p := newProducer(t, c)
	sendN(t, p, topic, "before", 40)

	got := newReceived()
	pc := newPushConsumer(t, c, "CG_restart", consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset))
	if err := pc.Subscribe(topic, consumer.MessageSelector{}, got.handler()); err != nil {
		t.Fatal(err)
	}
	if err := pc.Start(); err != nil {
		t.Fatal(err)
	}
	got.waitDistinct(t, 40, 30*time.Second)
	// Shutdown persists the consumer's offsets to the broker before it returns.
	if err := pc.Shutdown(); err != nil {
		t.Fatal(err)
	}

	c.StopBroker(0)
	c.StartBroker(0)
	c.WaitTopicRoute(topic)

	// Every message is still readable from offset 0 by a fresh group.
	all := newReceived()
	startConsumer(t, c, "CG_fresh", topic, consumer.MessageSelector{}, all, consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset))
	all.waitDistinct(t, 40, 30*time.Second)

	// The first group resumes where it stopped: only what is sent now arrives.
	again := newReceived()
	startConsumer(t, c, "CG_restart", topic, consumer.MessageSelector{}, again, consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset))
	p2 := newProducer(t, c)
	sendN(t, p2, topic, "after", 8)
	again.waitDistinct(t, 8, 30*time.Second)
	for _, m := range again.snapshot() {
		if string(m.Body[:6]) == "before" {
			t.Errorf("after the restart CG_restart re-read %s: its committed offset was lost", m.Body)
		}
	}
}

// TestTwoNameServersOneStopped: brokers register with both; with one stopped, clients keep working.
func TestTwoNameServersOneStopped(t *testing.T) {
	c := cluster.Start(t, cluster.Options{NameServers: 2})
	const topic = "TwoNS"
	createTopic(t, c, topic, 2)
	addrs := c.NamesrvAddrs() // both, the stopped one first
	c.StopNameServer(0)
	// Clients still list the stopped name server; they must fail over to the other.
	p, err := rocketmq.NewProducer(
		producerNS(addrs), producerGroup("PG_twons"), producerInstance(instance("p2ns")))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Shutdown() })
	sendN(t, p, topic, "ns", 10)
	got := newReceived()
	pc, err := rocketmq.NewPushConsumer(consumer.WithNsResolver(primitive.NewPassthroughResolver(addrs)),
		consumer.WithGroupName("CG_twons"), consumer.WithInstance(instance("c2ns")),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset))
	if err != nil {
		t.Fatal(err)
	}
	if err := pc.Subscribe(topic, consumer.MessageSelector{}, got.handler()); err != nil {
		t.Fatal(err)
	}
	if err := pc.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pc.Shutdown() })
	got.waitDistinct(t, 10, 30*time.Second)
}
