package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/rocketraft/rocketraft/app/cluster"
	"github.com/rocketraft/rocketraft/broker"
	"github.com/rocketraft/rocketraft/internal/testutil"
	"github.com/rocketraft/rocketraft/message"
	"github.com/rocketraft/rocketraft/tools/admin"
)

// tracedRuns counts the runs of TestMessageTrace in this process (-count).
var tracedRuns atomic.Int32

// TestMessageTrace: the official Go client sends and consumes with tracing on (producer and consumer
// WithTrace) through a broker whose trace topic is msgTraceTopicName (traceTopicEnable creates it); mqadmin
// queryMsgTraceById then finds the message's Pub record and the consumer group's SubBefore and SubAfter.
func TestMessageTrace(t *testing.T) {
	if tracedRuns.Add(1) > 1 {
		t.Skip("the official Go client keeps one trace client per process, bound to the first name servers it was " +
			"given (internal/trace.go: GetOrNewRocketMQClient answers nil for others): run this test once per process")
	}
	const traceTopic, topic, pg, cg = "TraceTopicE2E", "TracedOrders", "PG_Traced", "CG_Traced"
	c := cluster.Start(t, cluster.Options{Configure: func(_ int, cfg *broker.Config) {
		cfg.TraceTopicEnable, cfg.MsgTraceTopicName = true, traceTopic
	}})
	c.WaitTopicRoute(traceTopic) // created by the broker itself
	createTopic(t, c, topic, 2)
	trace := func(group string) *primitive.TraceConfig {
		return &primitive.TraceConfig{TraceTopic: traceTopic, GroupName: group, NamesrvAddrs: c.NamesrvAddrs()}
	}

	p := newProducer(t, c, producerGroup(pg), producer.WithTrace(trace(pg)))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	res, err := p.SendSync(ctx, primitive.NewMessage(topic, []byte("traced order")).WithTag("TagT").WithKeys([]string{"order-T1"}))
	cancel()
	if err != nil || res.Status != primitive.SendOK {
		t.Fatalf("send: %v %v", res, err)
	}

	got := newReceived()
	pc := newPushConsumer(t, c, cg, consumer.WithTrace(trace(cg)), consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset))
	if err := pc.Subscribe(topic, consumer.MessageSelector{}, got.handler()); err != nil {
		t.Fatal(err)
	}
	if err := pc.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pc.Shutdown() })
	got.waitDistinct(t, 1, 30*time.Second)

	argv := []string{"queryMsgTraceById", "-n", strings.Join(c.NamesrvAddrs(), ";"), "-i", res.MsgID, "-t", traceTopic}
	var trc struct {
		Records []message.TraceRecord `json:"records"`
	}
	has := func(typ string) *message.TraceRecord {
		for i := range trc.Records {
			if trc.Records[i].Type == typ {
				return &trc.Records[i]
			}
		}
		return nil
	}
	testutil.WaitFor(t, 30*time.Second, "the Pub, SubBefore and SubAfter records", func() bool {
		out, _, code := runMQAdmin(t, append(argv, "--json")...)
		if code != admin.ExitOK || json.Unmarshal([]byte(out), &trc) != nil {
			return false
		}
		return has(message.TracePub) != nil && has(message.TraceSubBefore) != nil && has(message.TraceSubAfter) != nil
	})
	pub, before, after := has(message.TracePub), has(message.TraceSubBefore), has(message.TraceSubAfter)
	if pub.Group != pg || pub.Topic != topic || pub.Tags != "TagT" || pub.Keys != "order-T1" || !pub.Success ||
		pub.OffsetMsgID != res.OffsetMsgID || pub.StoreHost != c.Broker(0).Addr() || pub.BodyLength != len("traced order") {
		t.Errorf("Pub record: %+v (sent %+v)", pub, res)
	}
	if before.Group != cg || after.Group != cg || before.RequestID == "" || after.RequestID != before.RequestID ||
		!after.Success || before.RetryTimes != 0 {
		t.Errorf("Sub records:\n before %+v\n after  %+v", before, after)
	}
	if after.ClientHost == "" || pub.ClientHost == "" {
		t.Errorf("client hosts: Pub %q, SubAfter %q", pub.ClientHost, after.ClientHost)
	}

	// The text form, as RocketMQ's tool prints it.
	out, stderr, code := runMQAdmin(t, argv...)
	if code != admin.ExitOK || !strings.Contains(out, "#ProducerGroup") || !strings.Contains(out, "#ConsumerGroup") ||
		!strings.Contains(out, "Pub        "+pg) || !strings.Contains(out, "Sub        "+cg) {
		t.Fatalf("queryMsgTraceById: exit %d, stderr %q, stdout:\n%s", code, stderr, out)
	}
	t.Logf("mqadmin %s:\n%s", strings.Join(argv, " "), out)
}

// runMQAdmin runs mqadmin in the test process and returns its stdout, stderr and exit status.
func runMQAdmin(t *testing.T, argv ...string) (string, string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	code := admin.Run(ctx, argv, admin.Env{Stdout: &out, Stderr: &errOut, Logger: cluster.TestLogger(t, 0)})
	return out.String(), errOut.String(), code
}
