package e2e

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/rocketraft/rocketraft/app/cluster"
	"github.com/rocketraft/rocketraft/broker"
)

// txListener decides each transaction from the message body: "commit", "rollback", or "unknown" (then the
// check-back resolves it to commit).
type txListener struct {
	mu      sync.Mutex
	checked map[string]int
}

func (l *txListener) ExecuteLocalTransaction(m *primitive.Message) primitive.LocalTransactionState {
	switch string(m.Body) {
	case "commit":
		return primitive.CommitMessageState
	case "rollback":
		return primitive.RollbackMessageState
	}
	return primitive.UnkonwnState
}

func (l *txListener) CheckLocalTransaction(m *primitive.MessageExt) primitive.LocalTransactionState {
	l.mu.Lock()
	l.checked[string(m.Body)]++
	l.mu.Unlock()
	if string(m.Body) == "forever" {
		return primitive.UnkonwnState
	}
	return primitive.CommitMessageState
}

func (l *txListener) checks(body string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.checked[body]
}

// TestTransactions: commit is delivered, rollback never, an unknown state is resolved by the check-back.
func TestTransactions(t *testing.T) {
	c := cluster.Start(t, cluster.Options{Configure: func(_ int, cfg *broker.Config) {
		cfg.TransactionCheckInterval = 500
		cfg.TransactionTimeOut = 1000
	}})
	const topic = "Tx"
	createTopic(t, c, topic, 2)
	got := newReceived()
	startConsumer(t, c, "CG_tx", topic, consumer.MessageSelector{}, got, consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset))

	l := &txListener{checked: map[string]int{}}
	tp, err := rocketmq.NewTransactionProducer(l,
		producer.WithNsResolver(primitive.NewPassthroughResolver(c.NamesrvAddrs())),
		producer.WithGroupName("PG_tx"), producer.WithInstanceName(instance("tx")), producer.WithRetry(1))
	if err != nil {
		t.Fatal(err)
	}
	if err := tp.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tp.Shutdown() })
	for _, body := range []string{"commit", "rollback", "unknown"} {
		res, err := tp.SendMessageInTransaction(context.Background(), primitive.NewMessage(topic, []byte(body)))
		if err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		if res.Status != primitive.SendOK {
			t.Fatalf("%s: half message status %v", body, res.Status)
		}
	}
	got.waitDistinct(t, 1, 30*time.Second)
	cluster.Eventually(t, 30*time.Second, func() bool { return got.has("unknown") }, "the unknown transaction committed by the check-back")
	if l.checks("unknown") == 0 {
		t.Fatal("the unknown transaction was delivered without a check-back")
	}
	if l.checks("commit") != 0 || l.checks("rollback") != 0 {
		t.Errorf("resolved transactions were checked back: commit %d, rollback %d", l.checks("commit"), l.checks("rollback"))
	}
	// A marker sent after everything: once it is consumed, a rolled-back message would have been too.
	p := newProducer(t, c)
	sendN(t, p, topic, "marker", 4)
	got.waitDistinct(t, 2+4, 30*time.Second)
	if got.has("rollback") {
		t.Fatal("a rolled-back transaction message was delivered")
	}
	for _, m := range got.snapshot() {
		if m.Topic != topic {
			t.Errorf("message %s delivered with topic %s", m.Body, m.Topic)
		}
	}
}

// TestTransactionGivenUp: a transaction whose state stays unknown is checked transactionCheckMax times,
// then kept aside and never delivered.
func TestTransactionGivenUp(t *testing.T) {
	c := cluster.Start(t, cluster.Options{Configure: func(_ int, cfg *broker.Config) {
		cfg.TransactionCheckInterval = 300
		cfg.TransactionTimeOut = 300
		cfg.TransactionCheckMax = 2
	}})
	const topic = "TxForever"
	createTopic(t, c, topic, 1)
	l := &txListener{checked: map[string]int{}}
	tp, err := rocketmq.NewTransactionProducer(l,
		producer.WithNsResolver(primitive.NewPassthroughResolver(c.NamesrvAddrs())),
		producer.WithGroupName("PG_txf"), producer.WithInstanceName(instance("txf")))
	if err != nil {
		t.Fatal(err)
	}
	if err := tp.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tp.Shutdown() })
	if _, err := tp.SendMessageInTransaction(context.Background(), primitive.NewMessage(topic, []byte("forever"))); err != nil {
		t.Fatal(err)
	}
	w := newWireClient(t)
	cluster.Eventually(t, 30*time.Second, func() bool {
		return queueMaxOffset(t, w, c.Broker(0).Addr(), "TRANS_CHECK_MAX_TIME_TOPIC") == 1
	}, "the transaction kept aside after 2 checks")
	if n := l.checks("forever"); n != 2 {
		t.Fatalf("checked %d times, want transactionCheckMax = 2", n)
	}
	if n := queueMaxOffset(t, w, c.Broker(0).Addr(), topic); n != 0 {
		t.Fatalf("the given-up transaction reached its topic (%d messages)", n)
	}
}
