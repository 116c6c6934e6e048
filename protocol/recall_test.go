package protocol

import (
	"encoding/base64"
	"errors"
	"testing"
)

func TestRecallHandleRoundTrip(t *testing.T) {
	h := RecallHandle{Topic: "T", BrokerName: "broker-a", DeliverMs: 1733222222123, MessageID: "7F0000010001ABCD"}
	s := h.Encode()
	// The layout RocketMQ's RecallMessageHandle.HandleV1 writes.
	if raw, _ := base64.URLEncoding.DecodeString(s); string(raw) != "v1 T broker-a 1733222222123 7F0000010001ABCD" {
		t.Fatalf("handle %q decodes to %q", s, raw)
	}
	for _, in := range []string{s, base64.RawURLEncoding.EncodeToString([]byte("v1 T broker-a 1733222222123 7F0000010001ABCD"))} {
		got, err := ParseRecallHandle(in)
		if err != nil || got != h {
			t.Errorf("ParseRecallHandle(%q) = %+v, %v; want %+v", in, got, err, h)
		}
	}
}

func TestRecallHandleRefused(t *testing.T) {
	enc := func(s string) string { return base64.URLEncoding.EncodeToString([]byte(s)) }
	for name, in := range map[string]string{
		"not base64":   "!!!",
		"v2":           enc("v2 T b 1 id"),
		"four fields":  enc("v1 T b 1"),
		"six fields":   enc("v1 T b 1 id x"),
		"bad time":     enc("v1 T b soon id"),
		"empty topic":  enc("v1  b 1 id"),
		"empty string": "",
	} {
		if _, err := ParseRecallHandle(in); !errors.Is(err, ErrRecallHandle) {
			t.Errorf("%s: ParseRecallHandle(%q) error %v, want ErrRecallHandle", name, in, err)
		}
	}
}

func TestRecallMessageRequestHeader(t *testing.T) {
	h := &RecallMessageRequestHeader{ProducerGroup: "P", Topic: "T", RecallHandle: "x"}
	got, err := ParseRecallMessageRequestHeader(h.Ext())
	if err != nil || *got != *h {
		t.Fatalf("round trip: %+v %v", got, err)
	}
	if _, err := ParseRecallMessageRequestHeader(map[string]string{"topic": "T"}); err == nil {
		t.Error("a header without recallHandle was taken")
	}
}
