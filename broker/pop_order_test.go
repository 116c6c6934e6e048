package broker_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/rocketraft/rocketraft/app/cluster"
	"github.com/rocketraft/rocketraft/broker"
	"github.com/rocketraft/rocketraft/client"
	"github.com/rocketraft/rocketraft/internal/testutil"
	"github.com/rocketraft/rocketraft/protocol"
	"github.com/rocketraft/rocketraft/remoting"
)

func (h *popHarness) popOrder(max int, invisible time.Duration) []*client.PoppedMessage {
	h.t.Helper()
	res, err := h.c.PopMessage(context.Background(), h.addr(), &client.Pop{Group: h.group, Topic: h.topic, BrokerName: h.broker,
		QueueID: -1, MaxNums: max, Invisible: invisible, FromStart: true, Order: true})
	if err != nil {
		h.t.Fatalf("ordered pop: %v", err)
	}
	return res.Msgs
}

func bodies(ms []*client.PoppedMessage) []string {
	var out []string
	for _, m := range ms {
		out = append(out, string(m.Body))
	}
	return out
}

// An ordered pop blocks the queue for the group until every message it handed out is acked or its
// invisible time passed; then the first unacked message comes again, first, with a higher attempt.
func TestPopOrdered(t *testing.T) {
	c := popCluster(t)
	h := newPopHarness(t, c.Broker(0).Addr, "POPO", 1)
	for _, b := range []string{"o0", "o1", "o2", "o3", "o4"} {
		h.send(0, b)
	}
	testutil.WaitFor(t, 20*time.Second, "5 messages dispatched", func() bool {
		return c.Broker(0).Store().MaxOffsetInQueue(h.topic, 0) == 5
	})
	var first []*client.PoppedMessage
	testutil.WaitFor(t, 20*time.Second, "o0 o1", func() bool {
		first = h.popOrder(2, time.Hour)
		return len(first) > 0
	})
	if got := bodies(first); !slices.Equal(got, []string{"o0", "o1"}) {
		t.Fatalf("first ordered pop %v, want [o0 o1]", got)
	}
	if !first[0].Handle.Order() {
		t.Fatalf("ordered handle %q does not name revive queue 999", first[0].ReceiptHandle)
	}
	if got := h.popOrder(2, time.Hour); len(got) != 0 {
		t.Fatalf("a blocked queue handed out %v", bodies(got))
	}
	if err := h.ack(first[1]); err != nil {
		t.Fatal(err)
	}
	if got := h.popOrder(2, time.Hour); len(got) != 0 {
		t.Fatalf("with o0 unacked the queue handed out %v", bodies(got))
	}
	if err := h.ack(first[0]); err != nil {
		t.Fatal(err)
	}
	second := h.popOrder(2, 200*time.Millisecond)
	if got := bodies(second); !slices.Equal(got, []string{"o2", "o3"}) || second[0].Attempt != 1 {
		t.Fatalf("after the acks: %v (attempt %d), want [o2 o3] attempt 1", got, second[0].Attempt)
	}
	var again []*client.PoppedMessage
	testutil.WaitFor(t, 20*time.Second, "o2 o3 again after their invisible time", func() bool {
		again = h.popOrder(2, time.Hour)
		return len(again) > 0
	})
	if got := bodies(again); !slices.Equal(got, []string{"o2", "o3"}) || again[0].Attempt != 2 {
		t.Fatalf("redelivered %v attempt %d, want [o2 o3] attempt 2", got, again[0].Attempt)
	}
	if err := h.ack(second[0]); !client.HasCode(err, remoting.NoMessage) {
		t.Fatalf("ack with the handle of the superseded pop: %v, want NO_MESSAGE", err)
	}
	handles := []string{again[0].ReceiptHandle, again[1].ReceiptHandle, second[1].ReceiptHandle}
	errs, err := h.c.BatchAck(context.Background(), h.addr(), h.group, h.topic, handles)
	if err != nil || errs[0] != nil || errs[1] != nil || !client.HasCode(errs[2], remoting.NoMessage) {
		t.Fatalf("batch ack of o2 o3 and of o3's superseded handle: %v %v, want ok ok NO_MESSAGE", errs, err)
	}
	last := h.popOrder(2, time.Hour)
	if got := bodies(last); !slices.Equal(got, []string{"o4"}) {
		t.Fatalf("after the batch ack: %v, want [o4]", got)
	}
	// A change of invisible time of an ordered message moves the whole queue's block.
	if _, err := h.c.ChangeInvisibleTime(context.Background(), h.addr(), h.group, h.topic, last[0].ReceiptHandle, 200*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	var back []*client.PoppedMessage
	testutil.WaitFor(t, 20*time.Second, "o4 back after its shortened invisible time", func() bool {
		back = h.popOrder(2, time.Hour)
		return len(back) > 0
	})
	if got := bodies(back); !slices.Equal(got, []string{"o4"}) || back[0].Attempt != 2 {
		t.Fatalf("after the change: %v attempt %d, want [o4] attempt 2", got, back[0].Attempt)
	}
}

// BATCH_ACK_MESSAGE acks several messages of one pop in one request and says, per message, which were not
// in flight any more (our answer body, protocol.BatchAckResultBody).
func TestPopBatchAck(t *testing.T) {
	c := popCluster(t)
	h := newPopHarness(t, c.Broker(0).Addr, "POPB", 1)
	for _, b := range []string{"b0", "b1", "b2", "b3"} {
		h.send(0, b)
	}
	names := []string{"b0", "b1", "b2", "b3"}
	got := h.popUntil(names, time.Hour)
	if err := h.ack(got["b3"]); err != nil {
		t.Fatal(err)
	}
	var handles []string
	for _, b := range names {
		handles = append(handles, got[b].ReceiptHandle)
	}
	errs, err := h.c.BatchAck(context.Background(), h.addr(), h.group, h.topic, append(handles, "not a handle"))
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []remoting.ResponseCode{remoting.Success, remoting.Success, remoting.Success, remoting.NoMessage} {
		if want == remoting.Success && errs[i] != nil || want != remoting.Success && !client.HasCode(errs[i], want) {
			t.Errorf("batch ack of %s: %v, want %s", names[i], errs[i], want)
		}
	}
	if errs[4] == nil {
		t.Error("a malformed handle was acked")
	}
	for b, m := range got {
		if err := h.ack(m); !client.HasCode(err, remoting.NoMessage) {
			t.Errorf("%s after the batch ack: %v, want NO_MESSAGE", b, err)
		}
	}
	errs, err = h.c.BatchAck(context.Background(), h.addr(), h.group, h.topic, handles)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range errs {
		if !client.HasCode(e, remoting.NoMessage) {
			t.Errorf("batch ack of %s again: %v, want NO_MESSAGE", names[i], e)
		}
	}
}

// A pop with a pollTime is held while nothing is there and answered when a message arrives; NOTIFICATION
// likewise answers hasMsg once one does.
func TestPopLongPollingAndNotification(t *testing.T) {
	c := popCluster(t)
	h := newPopHarness(t, c.Broker(0).Addr, "POPL", 2)
	ctx := context.Background()
	held := func(n int) func() bool {
		return func() bool {
			info, err := h.c.RuntimeInfo(ctx, h.addr())
			return err == nil && info["popHoldCount"] == fmt.Sprint(n)
		}
	}
	res, err := h.c.PopMessage(ctx, h.addr(), &client.Pop{Group: h.group, Topic: h.topic, BrokerName: h.broker, QueueID: -1,
		MaxNums: 4, Invisible: time.Hour, Poll: 50 * time.Millisecond, FromStart: true})
	if err != nil || res.Status != client.PopNoNewMsg {
		t.Fatalf("a short poll on an empty topic: %v, %v", res, err)
	}
	type answer struct {
		res *client.PopResult
		err error
	}
	got := make(chan answer, 1)
	go func() {
		res, err := h.c.PopMessage(ctx, h.addr(), &client.Pop{Group: h.group, Topic: h.topic, BrokerName: h.broker, QueueID: -1,
			MaxNums: 4, Invisible: time.Hour, Poll: time.Hour, FromStart: true})
		got <- answer{res, err}
	}()
	testutil.WaitFor(t, 20*time.Second, "the pop held", held(1))
	h.send(1, "late")
	a := <-got // held for an hour unless the arrival wakes it
	if a.err != nil || len(a.res.Msgs) != 1 || string(a.res.Msgs[0].Body) != "late" {
		t.Fatalf("held pop: %+v, %v", a.res, a.err)
	}

	nh := &protocol.NotificationRequestHeader{ConsumerGroup: h.group, Topic: h.topic, QueueID: -1, PollTime: 0, BornTime: time.Now().UnixMilli()}
	if has, err := h.c.Notification(ctx, h.addr(), nh); err != nil || has {
		t.Fatalf("notification with everything popped: %v, %v", has, err)
	}
	notified := make(chan bool, 1)
	go func() {
		n := *nh
		n.PollTime = time.Hour.Milliseconds()
		has, err := h.c.Notification(ctx, h.addr(), &n)
		notified <- has && err == nil
	}()
	testutil.WaitFor(t, 20*time.Second, "the notification held", held(1))
	h.send(0, "next")
	if !<-notified {
		t.Fatal("held notification did not answer hasMsg")
	}
}

// Beyond popPollingSize held pops on a topic, a pop that finds nothing is answered POLLING_FULL at once,
// with the answer header the 5.x clients require.
func TestPopPollingFull(t *testing.T) {
	c := cluster.Start(t, cluster.Options{Configure: func(_ int, cfg *broker.Config) {
		cfg.BrokerName = "broker-a"
		cfg.Pop.PopPollingSize = 1
	}})
	h := newPopHarness(t, c.Broker(0).Addr, "POPFULL", 1)
	ctx := context.Background()
	pop := func(poll time.Duration) (*client.PopResult, error) {
		return h.c.PopMessage(ctx, h.addr(), &client.Pop{Group: h.group, Topic: h.topic, BrokerName: h.broker, QueueID: -1,
			MaxNums: 1, Invisible: time.Hour, Poll: poll, FromStart: true})
	}
	first := make(chan error, 1)
	go func() {
		res, err := pop(time.Hour)
		if err == nil && len(res.Msgs) != 1 {
			err = fmt.Errorf("held pop answered %s with %d messages", res.Status, len(res.Msgs))
		}
		first <- err
	}()
	testutil.WaitFor(t, 20*time.Second, "the first pop held", func() bool {
		info, err := h.c.RuntimeInfo(ctx, h.addr())
		return err == nil && info["popHoldCount"] == "1"
	})
	if n, err := h.c.PollingInfo(ctx, h.addr(), h.group, h.topic, -1); err != nil || n != 1 {
		t.Errorf("POLLING_INFO of any queue: %d, %v, want 1", n, err)
	}
	if n, err := h.c.PollingInfo(ctx, h.addr(), h.group, h.topic, 0); err != nil || n != 0 {
		t.Errorf("POLLING_INFO of queue 0: %d, %v; the held pop is for any queue", n, err)
	}
	res, err := pop(time.Hour)
	if err != nil || res.Status != client.PopPollingFull {
		t.Fatalf("second held pop: %+v, %v, want POLLING_FULL", res, err)
	}
	req := remoting.NewRequest(remoting.PopMessage, (&protocol.PopMessageRequestHeader{ConsumerGroup: h.group, Topic: h.topic,
		QueueID: -1, MaxMsgNums: 1, InvisibleTime: 1000, PollTime: 60_000, InitMode: protocol.PopInitModeMin}).Ext(), nil)
	resp, err := h.c.Invoke(ctx, h.addr(), req)
	if err != nil || resp.Code != int32(remoting.PollingFull) {
		t.Fatalf("raw held pop: %v, %v", resp, err)
	}
	if _, err := protocol.ParsePopMessageResponseHeader(resp.ExtFields); err != nil {
		t.Errorf("POLLING_FULL answer header: %v", err)
	}
	h.send(0, "wake")
	if err := <-first; err != nil {
		t.Fatal(err)
	}
}
