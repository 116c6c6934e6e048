package stats

import "testing"

// TypeOf is RocketMQ's TopicMessageType of a send, the message_type label.
func TestTypeOf(t *testing.T) {
	for props, want := range map[string]string{
		"":                            "normal",
		"TRAN_MSG\x01true\x02":        "transaction",
		"__SHARDINGKEY\x01k\x02":      "fifo",
		"DELAY\x013\x02":              "delay",
		"TIMER_DELIVER_MS\x01123\x02": "delay",
		"KEYS\x01a\x02TAGS\x01b\x02":  "normal",
		"TRAN_MSG\x01false\x02":       "normal",
	} {
		if got := TypeOf(props).String(); got != want { // the message_type label
			t.Errorf("%q: %s, want %s", props, got, want)
		}
	}
}
