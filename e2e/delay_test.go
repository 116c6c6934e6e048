package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/rocketraft/rocketraft/app/cluster"
)

// TestDelayLevel: a level-2 message (5 s by default) arrives after 5 s and not before, in its real topic.
func TestDelayLevel(t *testing.T) {
	c := cluster.Start(t, cluster.Options{})
	const topic = "Delayed"
	createTopic(t, c, topic, 2)
	got := newReceived()
	startConsumer(t, c, "CG_delay", topic, consumer.MessageSelector{}, got)
	p := newProducer(t, c)
	m := primitive.NewMessage(topic, []byte("later"))
	m.WithDelayTimeLevel(2)
	sent := time.Now()
	if _, err := p.SendSync(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	got.waitDistinct(t, 1, 30*time.Second)
	arrived := time.Since(sent)
	t.Logf("level-2 message consumed %v after the send", arrived)
	if arrived < 5*time.Second {
		t.Fatalf("a level-2 message arrived after %v, before its 5 s delay", arrived)
	}
	if msg := got.snapshot()[0]; msg.Topic != topic {
		t.Fatalf("delayed message delivered with topic %q", msg.Topic)
	}
}

// TestDelayedSurvivesRestart: the broker restarts between the send and the delivery time of a delayed and
// a timed message; each is delivered once, after the restart (and one delivered before it is not repeated).
func TestDelayedSurvivesRestart(t *testing.T) {
	c := cluster.Start(t, cluster.Options{})
	const topic = "DelayedRestart"
	createTopic(t, c, topic, 1)
	p := newProducer(t, c)
	for _, level := range []int{1, 3} { // 1 s and 10 s
		m := primitive.NewMessage(topic, []byte{byte('0' + level)})
		m.WithDelayTimeLevel(level)
		if _, err := p.SendSync(context.Background(), m); err != nil {
			t.Fatal(err)
		}
	}
	// And one with a delivery time, due after the restart too.
	timed := primitive.NewMessage(topic, []byte("timed"))
	timed.WithDelayTimestamp(time.Now().Add(8 * time.Second))
	if _, err := p.SendSync(context.Background(), timed); err != nil {
		t.Fatal(err)
	}
	// The 1 s message is delivered before the restart, the 10 s one after it.
	w := newWireClient(t)
	cluster.Eventually(t, 20*time.Second, func() bool {
		return queueMaxOffset(t, w, c.Broker(0).Addr(), topic) >= 1
	}, "the level-1 message delivered")
	c.StopBroker(0)
	c.StartBroker(0)
	c.WaitTopicRoute(topic)
	got := newReceived()
	startConsumer(t, c, "CG_delay_restart", topic, consumer.MessageSelector{}, got, consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset))
	got.waitDistinct(t, 3, 30*time.Second)
	if n := len(got.snapshot()); n != 3 {
		t.Fatalf("%d deliveries of 3 delayed messages: the restart re-delivered one", n)
	}
}

// TestDeliveryTimestamp: a message with an arbitrary delivery time (the client's WithDelayTimestamp)
// arrives at that time, not before.
func TestDeliveryTimestamp(t *testing.T) {
	c := cluster.Start(t, cluster.Options{})
	const topic = "Timed"
	createTopic(t, c, topic, 1)
	got := newReceived()
	startConsumer(t, c, "CG_timed", topic, consumer.MessageSelector{}, got)
	p := newProducer(t, c)
	// The client sends a delivery time in whole milliseconds, truncated (primitive.WithDelayTimestamp), so the
	// broker may deliver up to 1 ms before the instant asked for: compare at the milliseconds it was given.
	// (Run H of 2026-12-07, a quiet machine, received both within that millisecond and failed.)
	at := time.Now().Add(3 * time.Second).Truncate(time.Millisecond)
	for i, d := range []time.Duration{3 * time.Second, 2 * time.Second} { // the later one is sent first
		m := primitive.NewMessage(topic, []byte{byte('a' + i)})
		m.WithDelayTimestamp(time.Now().Add(d))
		if _, err := p.SendSync(context.Background(), m); err != nil {
			t.Fatal(err)
		}
	}
	got.waitDistinct(t, 2, 30*time.Second)
	if time.Now().Before(at) {
		t.Fatalf("both timed messages arrived before %v", at)
	}
	msgs := got.snapshot()
	if string(msgs[0].Body) != "b" {
		t.Fatalf("the message due later arrived first: %q then %q", msgs[0].Body, msgs[1].Body)
	}
}
