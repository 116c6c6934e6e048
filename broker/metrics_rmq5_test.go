package broker

import (
	"container/heap"
	"testing"
	"time"
)

// The names follow OpenTelemetry's Prometheus exporter (1.29, RocketMQ 5.1.4 and later) applied to RocketMQ
// 5's instrument names and units.
func TestOtelPromNames(t *testing.T) {
	for _, c := range []struct {
		name, unit string
		counter    bool
		want       string
	}{
		{"rocketmq_rpc_latency", "milliseconds", false, "rocketmq_rpc_latency_milliseconds"},
		{"rocketmq_consumer_lag_latency", "milliseconds", false, "rocketmq_consumer_lag_latency_milliseconds"},
		{"rocketmq_storage_size", "bytes", false, "rocketmq_storage_size_bytes"},
		{"rocketmq_storage_flush_behind_bytes", "bytes", false, "rocketmq_storage_flush_behind_bytes"},
		{"rocketmq_finish_message_latency", "ms", false, "rocketmq_finish_message_latency_milliseconds"},
		{"rocketmq_delay_message_latency", "seconds", false, "rocketmq_delay_message_latency_seconds"},
		{"rocketmq_messages_in_total", "", true, "rocketmq_messages_in_total"},
		{"rocketmq_timer_enqueue_total", "", true, "rocketmq_timer_enqueue_total"},
		{"rocketmq_consumer_ready_messages", "", false, "rocketmq_consumer_ready_messages"},
	} {
		if got := otelPromName(c.name, c.unit, c.counter); got != c.want {
			t.Errorf("%s (%q): %s, want %s", c.name, c.unit, got, c.want)
		}
	}
}

// The version label: MQVersion's names, checked against ordinals of RocketMQ's enum.
func TestMQVersionDesc(t *testing.T) {
	for v, want := range map[int32]string{16: "v3_0_1_snapshot", 17: "v3_0_1", 105: "v3_4_1", 317: "v4_5_2",
		401: "v4_9_4", 410: "v4_9_9_snapshot", 611: "v5_9_9", 612: "higher_version", 3: "3"} {
		if got := mqVersionDesc(v); got != want {
			t.Errorf("version %d: %s, want %s", v, got, want)
		}
	}
}

func TestMessageTypeOf(t *testing.T) {
	for props, want := range map[string]string{
		"":                            "normal",
		"TRAN_MSG\x01true\x02":        "transaction",
		"__SHARDINGKEY\x01k\x02":      "fifo",
		"DELAY\x013\x02":              "delay",
		"TIMER_DELIVER_MS\x01123\x02": "delay",
		"KEYS\x01a\x02TAGS\x01b\x02":  "normal",
		"TRAN_MSG\x01false\x02":       "normal",
	} {
		if got := messageTypeOf(props).String(); got != want { // the message_type label
			t.Errorf("%q: %s, want %s", props, got, want)
		}
	}
}

// The timer's backlog: overdue entries count as due with the lateness of the oldest, the others as waiting
// and by how far ahead they are (RocketMQ's timer distribution bounds).
func TestTimerStatus(t *testing.T) {
	b := startMetricsBroker(t, metricsTestConfig(t))
	s := newTimerService(timerOptions{store: b.store, clock: b.clock, log: b.log, dir: t.TempDir()}) // not started: nothing delivers the entries below
	now := time.Now()
	ms := now.UnixMilli()
	for _, due := range []int64{ms - 3000, ms - 10, ms + 2000, ms + 5000, ms + 59_000, ms + 3_600_000, ms + 90_000_000} {
		heap.Push(&s.pending, timerEntry{due: due})
	}
	st := s.status(now)
	if st.due != 2 || st.lateMillis != 3000 || st.waiting != 5 {
		t.Fatalf("status %+v, want 2 due (3 s late), 5 waiting", st)
	}
	want := [len(timerDistBounds)]int64{2, 1, 0, 0, 1, 0, 0, 0} // <=5 s: 2 s and 5 s; <=60 s; <=1 h; beyond 24 h: none
	if st.ahead != want {
		t.Fatalf("distribution %v, want %v", st.ahead, want)
	}
}
