package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/rocketraft/rocketraft/app/cluster"
)

// TestRequestReply: the client's Request blocks until a responder's reply comes back through the broker.
func TestRequestReply(t *testing.T) {
	c := cluster.Start(t, cluster.Options{})
	const topic = "RPC"
	createTopic(t, c, topic, 1)
	responder := newProducer(t, c)
	pc := newPushConsumer(t, c, "CG_rpc", consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset))
	err := pc.Subscribe(topic, consumer.MessageSelector{}, func(ctx context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		for _, m := range msgs {
			reply, err := consumer.CreateReplyMessage(m, nil)
			if err != nil {
				t.Errorf("create reply: %v", err)
				continue
			}
			reply.Body = append([]byte("re: "), m.Body...)
			if _, err := responder.SendSync(ctx, reply); err != nil {
				t.Errorf("send reply: %v", err)
			}
		}
		return consumer.ConsumeSuccess, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := pc.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pc.Shutdown() })

	requester := newProducer(t, c)
	for _, q := range []string{"ping", "pong"} {
		reply, err := requester.Request(context.Background(), 10*time.Second, primitive.NewMessage(topic, []byte(q)))
		if err != nil {
			t.Fatalf("request %s: %v", q, err)
		}
		if string(reply.Body) != "re: "+q {
			t.Fatalf("reply to %s: %q", q, reply.Body)
		}
	}
	// The reply was also stored (storeReplyMessageEnable is on by default).
	w := newWireClient(t)
	cluster.Eventually(t, 5*time.Second, func() bool {
		return queueMaxOffset(t, w, c.Broker(0).Addr(), "DefaultCluster_REPLY_TOPIC") == 2
	}, "two replies stored in DefaultCluster_REPLY_TOPIC")
}
