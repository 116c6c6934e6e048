package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/rocketraft/rocketraft/app/cluster"
)

// TestSendSyncAndPushConsume is the thin path through everything: the store appends and reads, the broker
// sends and pulls, the name server routes, and the official client's SendSync and push consumer meet.
func TestSendSyncAndPushConsume(t *testing.T) {
	c := cluster.Start(t, cluster.Options{})
	const topic = "ThinPath"
	createTopic(t, c, topic, 4)

	got := newReceived()
	pc := newPushConsumer(t, c, "CG_thin", consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset))
	if err := pc.Subscribe(topic, consumer.MessageSelector{}, got.handler()); err != nil {
		t.Fatal(err)
	}
	if err := pc.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pc.Shutdown() })

	p := newProducer(t, c)
	const n = 20
	for i := 0; i < n; i++ {
		res, err := p.SendSync(context.Background(), primitive.NewMessage(topic, []byte(fmt.Sprintf("hello-%d", i))))
		if err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
		if res.Status != primitive.SendOK {
			t.Fatalf("send %d: status %v", i, res.Status)
		}
		if len(res.OffsetMsgID) != 32 {
			t.Fatalf("send %d: offset msg id %q is not 32 hex characters", i, res.OffsetMsgID)
		}
	}
	got.waitDistinct(t, n, 30*time.Second)
	for _, m := range got.snapshot() {
		if m.Topic != topic {
			t.Errorf("message %s has topic %q", m.MsgId, m.Topic)
		}
		if m.StoreHost != c.Broker(0).Addr() {
			t.Errorf("message %s has store host %q, want %q", m.MsgId, m.StoreHost, c.Broker(0).Addr())
		}
	}
}
