package broker_test

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/rocketraft/rocketraft/app/cluster"
	"github.com/rocketraft/rocketraft/broker"
	"github.com/rocketraft/rocketraft/internal/metrics"
	"github.com/rocketraft/rocketraft/internal/testutil"
	"github.com/rocketraft/rocketraft/protocol"
	"github.com/rocketraft/rocketraft/remoting"
)

// A pop group's messages popped and not acked are its inflight ones: GET_CONSUME_STATS reports its
// consumer offset at the first of them and its pull offset at the next to pop; the consumer progress
// series count them as inflight and into the lag; the revive series count the records put (none while
// the pop's check point is in the merge buffer).
func TestPopProgress(t *testing.T) {
	for _, merge := range []bool{true, false} {
		t.Run(fmt.Sprintf("enablePopBufferMerge=%v", merge), func(t *testing.T) { popProgress(t, merge) })
	}
}

func popProgress(t *testing.T, merge bool) {
	var port int
	c := cluster.Start(t, cluster.Options{Configure: func(_ int, cfg *broker.Config) {
		cfg.BrokerName = "broker-a"
		cfg.Pop.ReviveInterval = 20
		cfg.Pop.EnablePopBufferMerge = merge
		cfg.Pop.PopCkStayBufferTime = 120_000 // the check point stays in memory for the whole test
		cfg.MetricsPort = cluster.FreePort(t)
		port = cfg.MetricsPort
	}})
	h := newPopHarness(t, c.Broker(0).Addr, "POPG", 1)
	for _, b := range []string{"g0", "g1", "g2", "g3", "g4"} {
		h.send(0, b)
	}
	testutil.WaitFor(t, 20*time.Second, "5 messages dispatched", func() bool {
		return c.Broker(0).Store().MaxOffsetInQueue(h.topic, 0) == 5
	})
	got := h.pop(3, time.Hour).Msgs
	if len(got) != 3 || string(got[0].Body) != "g0" {
		t.Fatalf("pop of 3: %d messages", len(got))
	}
	if err := h.ack(got[0]); err != nil {
		t.Fatal(err)
	}
	resp, err := h.c.Call(context.Background(), h.addr(), remoting.GetConsumeStats,
		map[string]string{"consumerGroup": h.group, "topic": h.topic}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var cs struct {
		OffsetTable protocol.QueueTable[protocol.OffsetWrapper] `json:"offsetTable"`
	}
	if err := protocol.UnmarshalFastJSON(resp.Body, &cs); err != nil {
		t.Fatal(err)
	}
	if len(cs.OffsetTable) != 1 {
		t.Fatalf("consume stats %s", resp.Body)
	}
	w := cs.OffsetTable[0].Value
	if w.BrokerOffset != 5 || w.ConsumerOffset != 1 || w.PullOffset != 3 {
		t.Errorf("consume stats of the pop group %+v, want broker 5, consumer 1 (first unacked), pull 3", w)
	}
	f, err := metrics.Scrape(context.Background(), net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		t.Fatal(err)
	}
	labels := []string{"consumer_group", h.group, "topic", h.topic}
	for name, want := range map[string]float64{"rocketmq_consumer_lag_messages": 4, "rocketmq_consumer_inflight_messages": 2,
		"rocketmq_consumer_ready_messages": 2} {
		if v, ok := f.Value(name, labels...); !ok || v != want {
			t.Errorf("%s = %v (%v), want %v", name, v, ok, want)
		}
	}
	for kind, want := range map[string]float64{"CK": 1, "ACK": 1} {
		v, ok := f.Value("rocketmq_pop_revive_in_message_total", append(labels, "revive_message_type", kind, "put_status", "PUT_OK")...)
		if merge && ok || !merge && (!ok || v != want) {
			t.Errorf("revive in %s = %v (%v), want %v (none with the merge buffer)", kind, v, ok, want)
		}
	}
}
