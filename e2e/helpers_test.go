package e2e

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/admin"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"

	"github.com/rocketraft/rocketraft/app/cluster"
	"github.com/rocketraft/rocketraft/remoting"
)

func TestMain(m *testing.M) {
	if os.Getenv(childBrokerEnv) != "" {
		runChildBroker()
		return
	}
	if os.Getenv(childNamesrvEnv) != "" { // raft_vip_netns_test.go, quickstart_test.go
		runChildNamesrv()
		return
	}
	if os.Getenv(childProducerEnv) != "" {
		runChildProducer()
		return
	}
	rlog.SetLogLevel("error")
	if os.Getenv("ROCKETRAFT_TEST_LOG") == "debug" {
		rlog.SetLogLevel("info")
	}
	os.Exit(m.Run())
}

var instanceSeq atomic.Int64

// instance gives each client in the process its own client id (the Go client keys instances by it).
func instance(prefix string) string {
	return fmt.Sprintf("%s-%d-%d", prefix, os.Getpid(), instanceSeq.Add(1))
}

func newProducer(t *testing.T, c *cluster.Cluster, opts ...producer.Option) rocketmq.Producer {
	t.Helper()
	base := []producer.Option{
		producer.WithNsResolver(primitive.NewPassthroughResolver(c.NamesrvAddrs())),
		producer.WithGroupName("PG_" + t.Name()),
		producer.WithInstanceName(instance("p")),
		producer.WithRetry(2),
		producer.WithSendMsgTimeout(5 * time.Second),
	}
	p, err := rocketmq.NewProducer(append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Shutdown() })
	return p
}

func producerNS(addrs []string) producer.Option {
	return producer.WithNsResolver(primitive.NewPassthroughResolver(addrs))
}
func producerGroup(g string) producer.Option    { return producer.WithGroupName(g) }
func producerInstance(i string) producer.Option { return producer.WithInstanceName(i) }

func newPushConsumer(t *testing.T, c *cluster.Cluster, group string, opts ...consumer.Option) rocketmq.PushConsumer {
	t.Helper()
	base := []consumer.Option{
		consumer.WithNsResolver(primitive.NewPassthroughResolver(c.NamesrvAddrs())),
		consumer.WithGroupName(group),
		consumer.WithInstance(instance("c")),
	}
	pc, err := rocketmq.NewPushConsumer(append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return pc
}

// createTopic creates topic on every broker of the cluster through the client's admin API.
func createTopic(t *testing.T, c *cluster.Cluster, topic string, queues int) {
	t.Helper()
	adm, err := admin.NewAdmin(admin.WithResolver(primitive.NewPassthroughResolver(c.NamesrvAddrs())))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	for i := 0; ; i++ {
		b := c.Broker(i)
		if b == nil {
			break
		}
		err := adm.CreateTopic(context.Background(), admin.WithTopicCreate(topic), admin.WithBrokerAddrCreate(b.Addr()),
			admin.WithReadQueueNums(queues), admin.WithWriteQueueNums(queues))
		if err != nil {
			t.Fatalf("create topic %s on %s: %v", topic, b.Addr(), err)
		}
		if i+1 >= c.BrokerCount() {
			break
		}
	}
	c.WaitTopicRoute(topic)
}

// received collects consumed messages by body, safe for the client's consume goroutines.
type received struct {
	mu     sync.Mutex
	bodies map[string]int
	msgs   []*primitive.MessageExt
	ch     chan struct{}
}

func newReceived() *received { return &received{bodies: map[string]int{}, ch: make(chan struct{}, 1)} }

func (r *received) add(msgs ...*primitive.MessageExt) {
	r.mu.Lock()
	for _, m := range msgs {
		r.bodies[string(m.Body)]++
		r.msgs = append(r.msgs, m)
	}
	r.mu.Unlock()
	select {
	case r.ch <- struct{}{}:
	default:
	}
}

func (r *received) handler() func(context.Context, ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
	return func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		r.add(msgs...)
		return consumer.ConsumeSuccess, nil
	}
}

func (r *received) distinct() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.bodies)
}

func (r *received) has(body string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.bodies[body] > 0
}

func (r *received) snapshot() []*primitive.MessageExt {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*primitive.MessageExt(nil), r.msgs...)
}

// waitDistinct waits until n distinct bodies arrived.
func (r *received) waitDistinct(t *testing.T, n int, timeout time.Duration) {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for r.distinct() < n {
		select {
		case <-r.ch:
		case <-deadline.C:
			t.Fatalf("received %d distinct messages, want %d within %v", r.distinct(), n, timeout)
		}
	}
}

func newWireClient(t *testing.T) *remoting.Client {
	c := remoting.NewClient(remoting.ClientConfig{DialTimeout: time.Second}, cluster.TestLogger(t, 0))
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// committedSum adds up a group's committed offsets over queues 0..queues-1, asking the broker over the wire.
func committedSum(t *testing.T, c *remoting.Client, addr, group, topic string, queues int) int64 {
	t.Helper()
	var sum int64
	for q := 0; q < queues; q++ {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		resp, err := c.Invoke(ctx, addr, remoting.NewRequest(remoting.QueryConsumerOffset,
			map[string]string{"consumerGroup": group, "topic": topic, "queueId": strconv.Itoa(q)}, nil))
		cancel()
		if err != nil || resp.Code != int32(remoting.Success) {
			continue
		}
		n, _ := strconv.ParseInt(resp.ExtFields["offset"], 10, 64)
		sum += n
	}
	return sum
}

// remotingTopicCreate is an UPDATE_AND_CREATE_TOPIC request for a 4-queue topic.
func remotingTopicCreate(topic string) *remoting.Command {
	return remoting.NewRequest(remoting.UpdateAndCreateTopic, map[string]string{"topic": topic,
		"readQueueNums": "4", "writeQueueNums": "4", "perm": "6"}, nil)
}

// queueMaxOffset is the max offset of queue 0 of topic (how many messages reached it).
func queueMaxOffset(t *testing.T, c *remoting.Client, addr, topic string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	resp, err := c.Invoke(ctx, addr, remoting.NewRequest(remoting.GetMaxOffset, map[string]string{"topic": topic, "queueId": "0"}, nil))
	if err != nil {
		return -1
	}
	n, _ := strconv.ParseInt(resp.ExtFields["offset"], 10, 64)
	return n
}

// remotingPull is a PULL_MESSAGE carrying its subscription (as the pull consumer sends it).
func remotingPull(group, topic, expr, typ string) *remoting.Command {
	return remoting.NewRequest(remoting.PullMessage, map[string]string{"consumerGroup": group, "topic": topic,
		"queueId": "0", "queueOffset": "0", "maxMsgNums": "32", "sysFlag": "6", "commitOffset": "0",
		"suspendTimeoutMillis": "0", "subscription": expr, "subVersion": "0", "expressionType": typ}, nil)
}

// plainClientsAfter makes clients created after t plain TCP again. The official Go client's WithTls sets
// a field of its package-global default remoting config (every producer, consumer and admin shares that
// pointer), so one TLS client turns TLS on for every later client in the process. Tests that use WithTls(true)
// call this first.
func plainClientsAfter(t *testing.T) {
	t.Cleanup(func() {
		p, err := rocketmq.NewProducer(producer.WithTls(false), producer.WithNsResolver(primitive.NewPassthroughResolver([]string{"127.0.0.1:1"})))
		if err == nil {
			_ = p.Shutdown()
		}
	})
}
