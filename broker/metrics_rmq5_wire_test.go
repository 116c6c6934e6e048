package broker_test

import (
	"context"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/rocketraft/rocketraft/app/cluster"
	"github.com/rocketraft/rocketraft/broker"
	"github.com/rocketraft/rocketraft/internal/metrics"
	"github.com/rocketraft/rocketraft/remoting"
)

// RocketMQ 5's series follow requests sent over the wire: the in and out counters and the size histogram
// count the messages, the consumer progress gauges split the backlog into inflight (pulled, not committed)
// and ready (not pulled), and rpc latency counts each request by code, result and long polling.
func TestRMQ5SeriesOverTheWire(t *testing.T) {
	var port int
	c := cluster.Start(t, cluster.Options{Configure: func(_ int, cfg *broker.Config) {
		cfg.MetricsPort = cluster.FreePort(t)
		port = cfg.MetricsPort
	}})
	scrape := func() metrics.Families {
		t.Helper()
		f, err := metrics.Scrape(context.Background(), net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	w := newWire(t, c.Broker(0).Addr())
	expectCode(t, "create", w.call(remoting.UpdateAndCreateTopic, map[string]string{"topic": "RM", "readQueueNums": "1",
		"writeQueueNums": "1", "perm": "6"}, nil), remoting.Success)
	for i := range 10 {
		expectCode(t, "send", w.send("RM", 0, []byte("m"+strconv.Itoa(i)), ""), remoting.Success)
	}
	cluster.Eventually(t, 10*time.Second, func() bool { return c.Broker(0).Store().MaxOffsetInQueue("RM", 0) == 10 }, "dispatch")
	resp := w.pull("G", "RM", 0, 0, 0, "*")
	expectCode(t, "pull", resp, remoting.Success)
	expectCode(t, "commit", w.call(remoting.UpdateConsumerOffset, map[string]string{"consumerGroup": "G", "topic": "RM",
		"queueId": "0", "commitOffset": "4"}, nil), remoting.Success)

	group := []string{"consumer_group", "G", "topic", "RM", "is_retry", "false", "is_system", "false"}
	want := func(f metrics.Families, name string, v float64, labels ...string) {
		t.Helper()
		if got, ok := f.Value(name, labels...); !ok || got != v {
			t.Errorf("%s%v = %v (%v), want %v", name, labels, got, ok, v)
		}
	}
	f := scrape()
	want(f, "rocketmq_messages_in_total", 10, "topic", "RM", "message_type", "normal", "is_system", "false",
		"cluster", "DefaultCluster", "node_type", "broker")
	want(f, "rocketmq_message_size", 10, "topic", "RM") // the histogram's count: one per put
	want(f, "rocketmq_messages_out_total", 10, "topic", "RM", "consumer_group", "G")
	want(f, "rocketmq_consumer_lag_messages", 6, group...)
	want(f, "rocketmq_consumer_inflight_messages", 6, group...)
	want(f, "rocketmq_consumer_ready_messages", 0, group...)
	want(f, "rocketmq_consumer_queueing_latency_milliseconds", 0, group...)
	if v, _ := f.Value("rocketmq_consumer_lag_latency_milliseconds", group...); v <= 0 {
		t.Errorf("lag latency %v with 6 messages uncommitted", v)
	}

	// Five more stored: ready to pull.
	for i := range 5 {
		expectCode(t, "send", w.send("RM", 0, []byte("n"+strconv.Itoa(i)), ""), remoting.Success)
	}
	cluster.Eventually(t, 10*time.Second, func() bool { return c.Broker(0).Store().MaxOffsetInQueue("RM", 0) == 15 }, "dispatch")
	f = scrape()
	want(f, "rocketmq_consumer_lag_messages", 11, group...)
	want(f, "rocketmq_consumer_ready_messages", 5, group...)
	want(f, "rocketmq_consumer_inflight_messages", 6, group...)

	// A pull held for its suspend time, then answered PULL_NOT_FOUND.
	expectCode(t, "held pull", w.pull("G", "RM", 0, 15, 100*time.Millisecond, "*"), remoting.PullNotFound)
	// The reply observer counts an answer once it is queued for writing (remoting.Conn.Reply), so the
	// client may read it, and scrape, a moment before the count moves.
	heldPulls := func(f metrics.Families) float64 {
		n, _ := f.Value("rocketmq_rpc_latency_milliseconds", "request_code", "pull_message", "response_code",
			"pull_not_found", "is_long_polling", "true")
		return n
	}
	sends := func(f metrics.Families) float64 {
		n, _ := f.Value("rocketmq_rpc_latency_milliseconds", "request_code", "send_message", "response_code", "success",
			"is_long_polling", "false", "result", "success", "protocol_type", "remoting")
		return n
	}
	cluster.Eventually(t, 10*time.Second, func() bool { f = scrape(); return heldPulls(f) >= 1 && sends(f) >= 15 },
		"the sends and the held pull counted")
	if n := sends(f); n != 15 {
		t.Errorf("rpc latency counts %v sends, want 15", n)
	}
	if n := heldPulls(f); n != 1 {
		t.Errorf("rpc latency counts %v held pulls, want 1", n)
	}
	if v, _ := f.Value("rocketmq_topic_number"); v < 1 {
		t.Errorf("rocketmq_topic_number %v", v)
	}
}
