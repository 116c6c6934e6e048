package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/rocketraft/rocketraft/app/cluster"
	"github.com/rocketraft/rocketraft/broker"
)

// startConsumer subscribes a push consumer and starts it; it is shut down at the end of the test.
func startConsumer(t *testing.T, c *cluster.Cluster, group, topic string, sel consumer.MessageSelector, got *received, opts ...consumer.Option) {
	t.Helper()
	pc := newPushConsumer(t, c, group, opts...)
	if err := pc.Subscribe(topic, sel, got.handler()); err != nil {
		t.Fatal(err)
	}
	if err := pc.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pc.Shutdown() })
}

func TestSendModes(t *testing.T) {
	c := cluster.Start(t, cluster.Options{})
	const topic = "SendModes"
	createTopic(t, c, topic, 4)
	got := newReceived()
	startConsumer(t, c, "CG_modes", topic, consumer.MessageSelector{}, got, consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset))
	p := newProducer(t, c)
	ctx := context.Background()
	var want []string

	for i := 0; i < 10; i++ {
		body := fmt.Sprintf("sync-%d", i)
		want = append(want, body)
		if _, err := p.SendSync(ctx, primitive.NewMessage(topic, []byte(body))); err != nil {
			t.Fatalf("sync send: %v", err)
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, 10)
	for i := 0; i < 10; i++ {
		body := fmt.Sprintf("async-%d", i)
		want = append(want, body)
		wg.Add(1)
		err := p.SendAsync(ctx, func(_ context.Context, r *primitive.SendResult, err error) {
			defer wg.Done()
			if err == nil && r.Status != primitive.SendOK {
				err = fmt.Errorf("status %v", r.Status)
			}
			if err != nil {
				errs <- err
			}
		}, primitive.NewMessage(topic, []byte(body)))
		if err != nil {
			t.Fatalf("async send: %v", err)
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("async send callback: %v", err)
	}
	for i := 0; i < 10; i++ {
		body := fmt.Sprintf("oneway-%d", i)
		want = append(want, body)
		if err := p.SendOneWay(ctx, primitive.NewMessage(topic, []byte(body))); err != nil {
			t.Fatalf("oneway send: %v", err)
		}
	}
	var batch []*primitive.Message
	for i := 0; i < 10; i++ {
		body := fmt.Sprintf("batch-%d", i)
		want = append(want, body)
		batch = append(batch, primitive.NewMessage(topic, []byte(body)))
	}
	res, err := p.SendSync(ctx, batch...)
	if err != nil {
		t.Fatalf("batch send: %v", err)
	}
	if res.Status != primitive.SendOK || len(strings.Split(res.OffsetMsgID, ",")) != 10 {
		t.Fatalf("batch result %v: want SendOK and 10 offset ids", res)
	}

	got.waitDistinct(t, len(want), 30*time.Second)
	for _, w := range want {
		if !got.has(w) {
			t.Errorf("message %q not consumed", w)
		}
	}
	// A batch is stored with consecutive queue offsets in one queue.
	var batchOffsets []int64
	queue := -1
	for _, m := range got.snapshot() {
		if strings.HasPrefix(string(m.Body), "batch-") {
			batchOffsets = append(batchOffsets, m.QueueOffset)
			if queue >= 0 && m.Queue.QueueId != queue {
				t.Errorf("batch members in queues %d and %d", queue, m.Queue.QueueId)
			}
			queue = m.Queue.QueueId
		}
	}
	if lo, hi := minMax(batchOffsets); hi-lo != 9 {
		t.Errorf("batch queue offsets span %d..%d, want 10 consecutive", lo, hi)
	}
}

func minMax(xs []int64) (int64, int64) {
	lo, hi := xs[0], xs[0]
	for _, x := range xs {
		lo, hi = min(lo, x), max(hi, x)
	}
	return lo, hi
}

func TestTagExpression(t *testing.T) {
	c := cluster.Start(t, cluster.Options{})
	const topic = "Tags"
	createTopic(t, c, topic, 1) // one queue: the marker is consumed after every message sent before it
	got := newReceived()
	startConsumer(t, c, "CG_tags", topic, consumer.MessageSelector{Type: consumer.TAG, Expression: "A || B"}, got,
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset))
	p := newProducer(t, c)
	for i, tag := range []string{"A", "B", "C", "A", "C", "B"} {
		m := primitive.NewMessage(topic, []byte(fmt.Sprintf("%s-%d", tag, i)))
		m.WithTag(tag)
		if _, err := p.SendSync(context.Background(), m); err != nil {
			t.Fatal(err)
		}
	}
	marker := primitive.NewMessage(topic, []byte("A-marker"))
	marker.WithTag("A")
	if _, err := p.SendSync(context.Background(), marker); err != nil {
		t.Fatal(err)
	}
	got.waitDistinct(t, 5, 30*time.Second)
	for _, m := range got.snapshot() {
		if tag := m.GetTags(); tag != "A" && tag != "B" {
			t.Errorf("consumer of \"A || B\" received tag %q (%s)", tag, m.Body)
		}
	}
}

func TestLargeMessages(t *testing.T) {
	c := cluster.Start(t, cluster.Options{})
	const topic = "Large"
	createTopic(t, c, topic, 1)
	// Random bodies do not compress; turn the client's compression off so 4 MiB travels as 4 MiB.
	p := newProducer(t, c, producer.WithCompressMsgBodyOverHowmuch(64<<20), producer.WithRetry(0))
	limit := broker.DefaultConfig().MaxMessageSize
	body := make([]byte, limit)
	if _, err := rand.Read(body); err != nil {
		t.Fatal(err)
	}
	if _, err := p.SendSync(context.Background(), primitive.NewMessage(topic, body)); err != nil {
		t.Fatalf("send of a %d-byte message (the limit): %v", len(body), err)
	}
	_, err := p.SendSync(context.Background(), primitive.NewMessage(topic, append(body, 'x')))
	if err == nil {
		t.Fatalf("a %d-byte message (limit %d) was accepted", len(body)+1, limit)
	}
	if !strings.Contains(err.Error(), "13") || !strings.Contains(err.Error(), fmt.Sprint(limit)) {
		t.Fatalf("oversize refusal %q should carry MESSAGE_ILLEGAL (13) and the limit %d", err, limit)
	}
	got := newReceived()
	startConsumer(t, c, "CG_large", topic, consumer.MessageSelector{}, got, consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset))
	got.waitDistinct(t, 1, 30*time.Second)
	if m := got.snapshot()[0]; !bytes.Equal(m.Body, body) {
		t.Fatalf("the %d-byte message came back as %d bytes, or altered", len(body), len(m.Body))
	}
}

func TestUserErrors(t *testing.T) {
	c := cluster.Start(t, cluster.Options{Configure: func(_ int, cfg *broker.Config) { cfg.AutoCreateTopicEnable = false }})
	p := newProducer(t, c, producer.WithRetry(0))
	_, err := p.SendSync(context.Background(), primitive.NewMessage("NoSuchTopic", []byte("x")))
	if err == nil {
		t.Fatal("send to a missing topic with autoCreateTopicEnable=false succeeded")
	}
	t.Logf("missing topic: %v", err)
	_, err = p.SendSync(context.Background(), primitive.NewMessage("bad topic!", []byte("x")))
	if err == nil {
		t.Fatal("send to an invalid topic name succeeded")
	}
	t.Logf("bad name: %v", err)
}

// TestAutoCreateTopic: a producer's first send to an unknown topic goes through the TBW102 route; the
// broker creates the topic and registers it, and a consumer started afterwards reads from the start.
func TestAutoCreateTopic(t *testing.T) {
	c := cluster.Start(t, cluster.Options{})
	const topic = "AutoCreated"
	p := newProducer(t, c)
	want := sendN(t, p, topic, "auto", 5)
	c.WaitTopicRoute(topic)
	got := newReceived()
	startConsumer(t, c, "CG_auto", topic, consumer.MessageSelector{}, got)
	got.waitDistinct(t, len(want), 30*time.Second)
}

// TestOrderlyConsumer: an orderly push consumer locks its queues on the broker and sees each queue's
// messages in send order.
func TestOrderlyConsumer(t *testing.T) {
	c := cluster.Start(t, cluster.Options{})
	const topic = "Orderly"
	createTopic(t, c, topic, 4)
	p := newProducer(t, c, producer.WithQueueSelector(producer.NewHashQueueSelector()))
	const perKey = 25
	keys := []string{"k0", "k1", "k2", "k3", "k4", "k5"}
	for i := 0; i < perKey; i++ {
		for _, k := range keys {
			m := primitive.NewMessage(topic, []byte(fmt.Sprintf("%s:%03d", k, i)))
			m.WithShardingKey(k)
			if _, err := p.SendSync(context.Background(), m); err != nil {
				t.Fatal(err)
			}
		}
	}
	got := newReceived()
	startConsumer(t, c, "CG_orderly", topic, consumer.MessageSelector{}, got,
		consumer.WithConsumerOrder(true), consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset))
	got.waitDistinct(t, perKey*len(keys), 60*time.Second)
	last := map[string]string{}
	for _, m := range got.snapshot() {
		k, seq, _ := strings.Cut(string(m.Body), ":")
		if prev, ok := last[k]; ok && seq <= prev {
			t.Fatalf("key %s: %s consumed after %s", k, seq, prev)
		}
		last[k] = seq
	}
}

// TestOrderlyRebalance: per-key order holds while a second orderly consumer joins the group and takes
// half of the queues, and after it leaves again. Each key's messages must first appear in send order
// (a redelivery after a rebalance may repeat earlier ones; that is at-least-once, not disorder).
func TestOrderlyRebalance(t *testing.T) {
	// Locks renewed every second by the clients, leased for 3 s by the broker: a queue a consumer gave
	// up passes to the other within seconds.
	c := cluster.Start(t, cluster.Options{Configure: func(_ int, cfg *broker.Config) { cfg.RebalanceLockMaxLiveTime = 3000 }})
	const topic = "OrderlyRebalance"
	createTopic(t, c, topic, 4)
	var mu sync.Mutex
	var log []string
	handler := func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		mu.Lock()
		for _, m := range msgs {
			log = append(log, string(m.Body))
		}
		mu.Unlock()
		return consumer.ConsumeSuccess, nil
	}
	opts := []consumer.Option{consumer.WithConsumerOrder(true), consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
		consumer.WithRebalanceLockInterval(time.Second)}
	start := func() func() error {
		pc := newPushConsumer(t, c, "CG_orderly_rb", opts...)
		if err := pc.Subscribe(topic, consumer.MessageSelector{}, handler); err != nil {
			t.Fatal(err)
		}
		if err := pc.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = pc.Shutdown() })
		return pc.Shutdown
	}
	start()
	p := newProducer(t, c, producer.WithQueueSelector(producer.NewHashQueueSelector()))
	keys := []string{"k0", "k1", "k2", "k3", "k4", "k5", "k6", "k7"}
	sent := 0
	send := func(rounds int) {
		for i := 0; i < rounds; i++ {
			for _, k := range keys {
				m := primitive.NewMessage(topic, []byte(fmt.Sprintf("%s:%05d", k, sent)))
				m.WithShardingKey(k)
				if _, err := p.SendSync(context.Background(), m); err != nil {
					t.Fatal(err)
				}
			}
			sent++
		}
	}
	distinct := func() int {
		mu.Lock()
		defer mu.Unlock()
		set := map[string]bool{}
		for _, b := range log {
			set[b] = true
		}
		return len(set)
	}
	send(20)
	stopSecond := start() // a second member joins: rebalance while messages flow
	send(40)
	cluster.Eventually(t, 60*time.Second, func() bool { return distinct() == sent*len(keys) }, "all %d messages consumed with two members", sent*len(keys))
	if err := stopSecond(); err != nil { // and leaves again
		t.Fatal(err)
	}
	send(20)
	cluster.Eventually(t, 60*time.Second, func() bool { return distinct() == sent*len(keys) }, "all %d messages consumed after the second left", sent*len(keys))

	mu.Lock()
	defer mu.Unlock()
	next := map[string]int{}
	seen := map[string]bool{}
	for _, b := range log {
		if seen[b] {
			continue // a redelivery
		}
		seen[b] = true
		k, n, _ := strings.Cut(b, ":")
		seq, _ := strconv.Atoi(n)
		if seq != next[k] {
			t.Fatalf("key %s: message %d consumed first when %d was next", k, seq, next[k])
		}
		next[k]++
	}
}
