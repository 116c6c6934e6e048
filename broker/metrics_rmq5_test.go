package broker

import (
	"testing"
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
