package broker_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/rocketraft/rocketraft/app/cluster"
	"github.com/rocketraft/rocketraft/broker"
	"github.com/rocketraft/rocketraft/client"
	"github.com/rocketraft/rocketraft/internal/testutil"
	"github.com/rocketraft/rocketraft/message"
	"github.com/rocketraft/rocketraft/protocol"
	"github.com/rocketraft/rocketraft/remoting"
)

// popHarness drives one broker group's pops through the native client.
type popHarness struct {
	t      testing.TB
	c      *client.Client
	addr   func() string // the master's address now
	broker string
	group  string
	topic  string
}

func newPopHarness(t testing.TB, addr func() string, topic string, queues int32) *popHarness {
	t.Helper()
	// 30 s as the wire's calls: one request may wait seconds for a worker at load 30 under the race detector
	// (5 s timed a POP_MESSAGE out in TestPopOffsetLiftedByCheckPoints).
	c := client.New(client.Config{Timeout: 30 * time.Second})
	t.Cleanup(func() { _ = c.Close() })
	h := &popHarness{t: t, c: c, addr: addr, broker: "broker-a", group: "PG_" + topic, topic: topic}
	testutil.WaitFor(t, 20*time.Second, "topic created", func() bool {
		return c.CreateTopic(context.Background(), addr(), &protocol.TopicConfig{TopicName: topic, ReadQueueNums: queues,
			WriteQueueNums: queues, Perm: 6, TopicFilterType: "SINGLE_TAG"}) == nil
	})
	return h
}

// send stores body in queue; a SERVICE_NOT_AVAILABLE (in the Raft mode: no leader at the moment, the send
// not written) is sent again to the master of the moment for up to 30 s, as a client does.
func (h *popHarness) send(queue int32, body string) {
	h.t.Helper()
	props := message.EncodeProperties(map[string]string{message.PropertyUniqKey: fmt.Sprintf("%032x", time.Now().UnixNano()), message.PropertyTags: "T"})
	for deadline := time.Now().Add(30 * time.Second); ; {
		_, err := h.c.SendMessage(context.Background(), h.addr(), &client.Send{Group: "P", Topic: h.topic, BrokerName: h.broker,
			QueueID: queue, Properties: props, Body: []byte(body)})
		if err == nil {
			return
		}
		if !client.HasCode(err, remoting.ServiceNotAvailable) || time.Now().After(deadline) {
			h.t.Fatalf("send %s: %v", body, err)
		}
		h.t.Logf("send %s: %v; sending again", body, err)
		time.Sleep(100 * time.Millisecond) // the pace of the retries, not a wait for a condition
	}
}

func (h *popHarness) pop(max int, invisible time.Duration) *client.PopResult {
	h.t.Helper()
	res, err := h.c.PopMessage(context.Background(), h.addr(), &client.Pop{Group: h.group, Topic: h.topic, BrokerName: h.broker,
		QueueID: -1, MaxNums: max, Invisible: invisible, FromStart: true})
	if err != nil {
		h.t.Fatalf("pop: %v", err)
	}
	return res
}

// popUntil pops until the bodies popped so far (acked at once unless keep) cover want; it returns the
// messages popped.
func (h *popHarness) popUntil(want []string, invisible time.Duration) map[string]*client.PoppedMessage {
	h.t.Helper()
	got := map[string]*client.PoppedMessage{}
	testutil.WaitFor(h.t, 20*time.Second, fmt.Sprintf("pop of %v", want), func() bool {
		for _, m := range h.pop(32, invisible).Msgs {
			got[string(m.Body)] = m
		}
		for _, w := range want {
			if got[w] == nil {
				return false
			}
		}
		return true
	})
	return got
}

func (h *popHarness) ack(m *client.PoppedMessage) error {
	return h.c.AckMessage(context.Background(), h.addr(), h.group, h.topic, m.ReceiptHandle)
}

func popCluster(t testing.TB) *cluster.Cluster {
	return cluster.Start(t, cluster.Options{Configure: func(_ int, cfg *broker.Config) {
		cfg.BrokerName = "broker-a"
		cfg.Pop.ReviveInterval = 20
	}})
}

// A popped message is hidden from other pops until acked; an ack of a handle no longer in flight is
// NO_MESSAGE; handles name the queue, offset, pop time, invisible time and revive queue.
func TestPopAckOverTheWire(t *testing.T) {
	c := popCluster(t)
	h := newPopHarness(t, c.Broker(0).Addr, "POPT", 2)
	for i := range 4 {
		h.send(int32(i%2), fmt.Sprintf("m%d", i))
	}
	got := h.popUntil([]string{"m0", "m1", "m2", "m3"}, time.Hour)
	if len(got) != 4 {
		t.Fatalf("popped %d distinct messages, want 4", len(got))
	}
	if res := h.pop(32, time.Hour); len(res.Msgs) != 0 || res.Status != client.PopNoNewMsg {
		t.Fatalf("a second pop got %d messages (%s): popped messages must stay hidden", len(res.Msgs), res.Status)
	}
	for body, m := range got {
		hd := m.Handle
		if hd.QueueID != m.QueueID || hd.QueueOffset != m.QueueOffset || hd.InvisibleTime != time.Hour.Milliseconds() ||
			hd.PopTime <= 0 || hd.ReviveQueueID < 0 || hd.ReviveQueueID >= 8 || hd.RetryMark != protocol.RetryMarkNormal ||
			hd.BrokerName != "broker-a" || m.Attempt != 1 || m.Topic != h.topic {
			t.Errorf("%s: handle %+v of a message at queue %d offset %d, attempt %d, topic %s", body, hd, m.QueueID, m.QueueOffset, m.Attempt, m.Topic)
		}
	}
	for _, m := range got {
		if err := h.ack(m); err != nil {
			t.Fatalf("ack: %v", err)
		}
	}
	err := h.ack(got["m0"])
	if !client.HasCode(err, remoting.NoMessage) {
		t.Fatalf("second ack of one handle: %v, want NO_MESSAGE", err)
	}
	var re *client.ResponseError
	if errors.As(err, &re) {
		t.Logf("second ack: %s", re.Remark)
	}
	// A malformed handle is refused before anything is sent; a well-formed one the broker never gave is
	// NO_MESSAGE.
	if err := h.c.AckMessage(context.Background(), h.addr(), h.group, h.topic, "1 2 3"); err == nil {
		t.Error("an ack with a 3-field handle was accepted")
	}
	fake := got["m1"].Handle
	fake.PopTime++
	if err := h.c.AckMessage(context.Background(), h.addr(), h.group, h.topic, fake.String()); !client.HasCode(err, remoting.NoMessage) {
		t.Errorf("ack of a handle never given: %v, want NO_MESSAGE", err)
	}
	h.send(0, "m4")
	more := h.popUntil([]string{"m4"}, time.Hour)
	if len(more) != 1 {
		t.Errorf("after acks a pop got %v, want only the new m4", slices.Collect(mapsKeys(more)))
	}
}

func mapsKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// A message not acked within its invisible time comes back (from %RETRY%group_topic, as the topic popped)
// with one more attempt; the old handle is then not in flight. A change of invisible time gives a new
// handle and retires the old one; once the group's retryMaxTimes is spent the message goes to %DLQ%group.
func TestPopRedeliveryChangeInvisibleAndDLQ(t *testing.T) {
	c := popCluster(t)
	h := newPopHarness(t, c.Broker(0).Addr, "POPR", 1)
	ctx := context.Background()
	// retryMaxTimes 2: three deliveries, then the dead-letter queue.
	body, _ := json.Marshal(&protocol.SubscriptionGroupConfig{GroupName: h.group, ConsumeEnable: true,
		ConsumeBroadcastEnable: true, RetryQueueNums: 1, RetryMaxTimes: 2, WhichBrokerWhenConsumeSlowly: 1})
	if _, err := h.c.Call(ctx, h.addr(), remoting.UpdateAndCreateSubscriptionGroup, nil, body); err != nil {
		t.Fatal(err)
	}
	h.send(0, "r0")
	first := h.popUntil([]string{"r0"}, 200*time.Millisecond)["r0"]
	if first.Attempt != 1 {
		t.Fatalf("first delivery attempt %d", first.Attempt)
	}
	second := h.popUntil([]string{"r0"}, time.Hour)["r0"]
	if second.Attempt != 2 || second.ReconsumeTimes != 1 || second.Topic != h.topic ||
		second.Handle.RetryMark != protocol.RetryMarkV1 || second.ReceiptHandle == first.ReceiptHandle {
		t.Fatalf("redelivery: attempt %d reconsumeTimes %d topic %s handle %q", second.Attempt, second.ReconsumeTimes, second.Topic, second.ReceiptHandle)
	}
	if p := message.ParseProperties(second.Properties); p[message.PropertyFirstPopTime] == "" || p[message.PropertyPopCK] != second.ReceiptHandle {
		t.Errorf("redelivered properties %v", p)
	}
	if err := h.ack(first); !client.HasCode(err, remoting.NoMessage) {
		t.Fatalf("ack of the handle of a redelivered message: %v, want NO_MESSAGE", err)
	}
	// Shorten the invisible time: it comes back quickly. The old handle is retired.
	handle, err := h.c.ChangeInvisibleTime(ctx, h.addr(), h.group, h.topic, second.ReceiptHandle, 200*time.Millisecond)
	if err != nil {
		t.Fatalf("change invisible time: %v", err)
	}
	if handle == second.ReceiptHandle {
		t.Fatal("change of invisible time returned the same handle")
	}
	if _, err := h.c.ChangeInvisibleTime(ctx, h.addr(), h.group, h.topic, second.ReceiptHandle, time.Hour); !client.HasCode(err, remoting.NoMessage) {
		t.Fatalf("change with a replaced handle: %v, want NO_MESSAGE", err)
	}
	third := h.popUntil([]string{"r0"}, 200*time.Millisecond)["r0"]
	if third.Attempt != 3 {
		t.Fatalf("third delivery attempt %d", third.Attempt)
	}
	dlq := broker.DLQGroupPrefix + h.group
	testutil.WaitFor(t, 20*time.Second, "the message in "+dlq, func() bool {
		return c.Broker(0).Store().MaxOffsetInQueue(dlq, 0) == 1
	})
	if res := h.pop(32, time.Hour); len(res.Msgs) != 0 {
		t.Fatalf("a dead-lettered message was popped again: %d", len(res.Msgs))
	}
	if err := h.ack(third); !client.HasCode(err, remoting.NoMessage) {
		t.Fatalf("ack after the dead-letter queue took it: %v, want NO_MESSAGE", err)
	}
}

// What the gRPC ForwardMessageToDeadLetterQueue does: CONSUMER_SEND_MSG_BACK with delay level -1 for the
// popped message, then an ack of its handle.
func TestPopForwardToDeadLetterQueue(t *testing.T) {
	c := popCluster(t)
	h := newPopHarness(t, c.Broker(0).Addr, "POPD", 1)
	h.send(0, "d0")
	m := h.popUntil([]string{"d0"}, time.Hour)["d0"]
	if err := h.c.ConsumerSendMsgBack(context.Background(), h.addr(), h.group, m.PhysicalOffset, -1, -1, "", h.topic); err != nil {
		t.Fatal(err)
	}
	if err := h.ack(m); err != nil {
		t.Fatal(err)
	}
	dlq := broker.DLQGroupPrefix + h.group
	testutil.WaitFor(t, 20*time.Second, "d0 in "+dlq, func() bool { return c.Broker(0).Store().MaxOffsetInQueue(dlq, 0) == 1 })
}

// Concurrent pops and acks of one group over one revive queue: every message is delivered once and every
// ack succeeds (check points written side by side are all seen before their acks).
func TestPopConcurrentConsumers(t *testing.T) {
	c := cluster.Start(t, cluster.Options{Configure: func(_ int, cfg *broker.Config) {
		cfg.BrokerName = "broker-a"
		cfg.Pop.ReviveQueueNum = 1
	}})
	h := newPopHarness(t, c.Broker(0).Addr, "POPCC", 4)
	const n = 200
	for i := range n {
		h.send(int32(i%4), fmt.Sprintf("c%03d", i))
	}
	var mu sync.Mutex
	seen := map[string]int{}
	errs := make(chan error, 8)
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				done := len(seen) == n
				mu.Unlock()
				if done {
					return
				}
				res, err := h.c.PopMessage(context.Background(), h.addr(), &client.Pop{Group: h.group, Topic: h.topic,
					BrokerName: h.broker, QueueID: int32(w % 4), MaxNums: 3, Invisible: time.Hour, FromStart: true})
				if err != nil {
					errs <- err
					return
				}
				for _, m := range res.Msgs {
					mu.Lock()
					seen[string(m.Body)]++
					mu.Unlock()
					if err := h.ack(m); err != nil {
						errs <- fmt.Errorf("ack %s: %w", m.Body, err)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for b, k := range seen {
		if k != 1 {
			t.Errorf("%s delivered %d times", b, k)
		}
	}
}

// A pop filters by tag: messages of other tags are skipped for the group, not handed out later.
func TestPopTagFilter(t *testing.T) {
	c := popCluster(t)
	h := newPopHarness(t, c.Broker(0).Addr, "POPTAG", 1)
	for i, tag := range []string{"A", "B", "A", "B"} {
		props := message.EncodeProperties(map[string]string{message.PropertyUniqKey: fmt.Sprintf("%032d", i), message.PropertyTags: tag})
		if _, err := h.c.SendMessage(context.Background(), h.addr(), &client.Send{Group: "P", Topic: h.topic, BrokerName: h.broker,
			Properties: props, Body: []byte(fmt.Sprintf("%s%d", tag, i))}); err != nil {
			t.Fatal(err)
		}
	}
	testutil.WaitFor(t, 20*time.Second, "4 messages dispatched", func() bool {
		return c.Broker(0).Store().MaxOffsetInQueue(h.topic, 0) == 4
	})
	pop := func() []string {
		res, err := h.c.PopMessage(context.Background(), h.addr(), &client.Pop{Group: h.group, Topic: h.topic, BrokerName: h.broker,
			QueueID: -1, MaxNums: 32, Invisible: time.Hour, FromStart: true, Exp: "A"})
		if err != nil {
			t.Fatal(err)
		}
		return bodies(res.Msgs)
	}
	if got := pop(); !slices.Equal(got, []string{"A0", "A2"}) {
		t.Fatalf("pop of tag A: %v", got)
	}
	if got := pop(); len(got) != 0 {
		t.Fatalf("a second pop of tag A: %v", got)
	}
}
