package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/rocketraft/rocketraft/app/cluster"
	"github.com/rocketraft/rocketraft/broker"
)

// TestSQL92Subscription: a push consumer with an SQL92 selector receives exactly the matching messages.
func TestSQL92Subscription(t *testing.T) {
	c := cluster.Start(t, cluster.Options{Configure: func(_ int, cfg *broker.Config) { cfg.EnablePropertyFilter = true }})
	const topic = "SQL"
	createTopic(t, c, topic, 1)
	got := newReceived()
	startConsumer(t, c, "CG_sql", topic, consumer.MessageSelector{Type: consumer.SQL92, Expression: "a BETWEEN 2 AND 4 AND (b = 'x' OR b IS NULL)"}, got,
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset))
	p := newProducer(t, c)
	want := map[string]bool{}
	for a := 0; a < 6; a++ {
		for _, b := range []string{"x", "y", ""} {
			body := fmt.Sprintf("a=%d,b=%s", a, b)
			m := primitive.NewMessage(topic, []byte(body))
			m.WithProperty("a", fmt.Sprint(a))
			if b != "" {
				m.WithProperty("b", b)
			}
			if _, err := p.SendSync(context.Background(), m); err != nil {
				t.Fatal(err)
			}
			if a >= 2 && a <= 4 && b != "y" {
				want[body] = true
			}
		}
	}
	// A final matching marker: once it arrives every earlier message in the (single) queue was examined.
	marker := primitive.NewMessage(topic, []byte("marker"))
	marker.WithProperty("a", "3")
	if _, err := p.SendSync(context.Background(), marker); err != nil {
		t.Fatal(err)
	}
	want["marker"] = true
	got.waitDistinct(t, len(want), 30*time.Second)
	for _, m := range got.snapshot() {
		if !want[string(m.Body)] {
			t.Errorf("SQL92 consumer received %s, which does not match", m.Body)
		}
	}
}

// TestSQL92Refused: with enablePropertyFilter off, or with an expression that does not compile, the
// pull consumer's pulls are answered with a clear error.
func TestSQL92Refused(t *testing.T) {
	c := cluster.Start(t, cluster.Options{})
	const topic = "SQLOff"
	createTopic(t, c, topic, 1)
	w := newWireClient(t)
	pull := func(expr string) string {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		resp, err := w.Invoke(ctx, c.Broker(0).Addr(), remotingPull("G", topic, expr, "SQL92"))
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("%d %s", resp.Code, resp.Remark)
	}
	if got := pull("a > 1"); got[:3] != "23 " {
		t.Fatalf("SQL92 pull on a broker without enablePropertyFilter answered %q, want 23 SUBSCRIPTION_PARSE_FAILED", got)
	}
	c2 := cluster.Start(t, cluster.Options{Configure: func(_ int, cfg *broker.Config) { cfg.EnablePropertyFilter = true }})
	createTopic(t, c2, topic, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := w.Invoke(ctx, c2.Broker(0).Addr(), remotingPull("G", topic, "a >", "SQL92"))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Code != 23 || resp.Remark == "" {
		t.Fatalf("a bad expression answered %d %q", resp.Code, resp.Remark)
	}
	t.Logf("bad expression: %s", resp.Remark)
}
