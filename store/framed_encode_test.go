package store

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rocketraft/rocketraft/message"
)

// TestEncodeMessagesMatchesPut: the records EncodeMessages makes are the bytes a classic put
// writes, once the physical and queue offsets are the same; limits are a put's.
func TestEncodeMessagesMatchesPut(t *testing.T) {
	cfg := smallConfig(t)
	clock := newFakeClock(time.UnixMilli(1700000001234))
	opts := testOptions(t)
	opts.Clock = clock
	s := openStore(t, cfg, opts)
	batch := []*message.Message{
		testMessage("TopicE", 1, "first", map[string]string{"KEYS": "k1"}),
		testMessage("TopicE", 1, "second", nil),
	}
	res, err := s.PutMessages(context.Background(), batch)
	if err != nil {
		t.Fatalf("PutMessages: %v", err)
	}
	enc, ts, err := s.EncodeMessages([]byte("prefix"), batch)
	if err != nil {
		t.Fatalf("EncodeMessages: %v", err)
	}
	if ts != res.StoreTimestamp {
		t.Errorf("store timestamp %d, the put's %d", ts, res.StoreTimestamp)
	}
	if !strings.HasPrefix(string(enc), "prefix") {
		t.Fatalf("dst prefix lost")
	}
	recs := enc[len("prefix"):]
	if len(recs) != res.WroteBytes {
		t.Fatalf("encoded %d bytes, the put wrote %d", len(recs), res.WroteBytes)
	}
	if n, err := message.PatchRecords(recs, res.PhysicalOffset); err != nil || n != 2 {
		t.Fatalf("PatchRecords = %d, %v", n, err)
	}
	stored, release, err := s.ReadCommitLog(res.PhysicalOffset, res.WroteBytes)
	if err != nil {
		t.Fatalf("ReadCommitLog: %v", err)
	}
	defer release()
	want := append([]byte(nil), stored...)
	// The put assigned queue offsets 0 and 1; PatchRecords zeroed them.
	off := 0
	for i := 0; i < 2; i++ {
		m, err := message.DecodeMessage(want[off:], false)
		if err != nil {
			t.Fatalf("decode stored record %d: %v", i, err)
		}
		for j := 0; j < 8; j++ {
			want[off+message.OffQueueOffset+j] = 0
		}
		off += int(m.StoreSize)
	}
	if string(recs) != string(want) {
		t.Errorf("encoded records differ from the stored ones")
	}
	if _, err := message.CheckRecords(recs, res.PhysicalOffset, true); err != nil {
		t.Errorf("CheckRecords: %v", err)
	}

	for _, c := range []struct {
		name string
		msgs []*message.Message
		want error
	}{
		{"empty", nil, ErrBatchMismatch},
		{"mixed queues", []*message.Message{testMessage("TopicE", 1, "a", nil), testMessage("TopicE", 2, "b", nil)}, ErrBatchMismatch},
		{"body too large", []*message.Message{testMessage("TopicE", 1, strings.Repeat("x", cfg.MaxMessageSize+1), nil)}, ErrMessageTooLarge},
		{"no topic", []*message.Message{testMessage("", 1, "a", nil)}, ErrTopicTooLong},
	} {
		out, _, err := s.EncodeMessages([]byte("p"), c.msgs)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: err %v, want %v", c.name, err, c.want)
		}
		if string(out) != "p" {
			t.Errorf("%s: dst changed on error", c.name)
		}
	}
}
