package filter

import (
	"context"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/rocketraft/rocketraft/internal/testutil"
	"github.com/rocketraft/rocketraft/message"
	"github.com/rocketraft/rocketraft/store"
)

// testStoreHost is the broker address written into test records.
func testStoreHost() netip.AddrPort { return netip.MustParseAddrPort("10.0.0.5:10911") }

func testMessage(topic string, queueID int32, body string, props map[string]string) *message.Message {
	return &message.Message{
		Topic:         topic,
		QueueID:       queueID,
		Body:          []byte(body),
		Properties:    message.EncodeProperties(props),
		BornTimestamp: 1700000000000,
		BornHost:      netip.MustParseAddrPort("192.168.1.20:50000"),
	}
}

func encodeRecord(t testing.TB, props map[string]string) []byte {
	t.Helper()
	rec, err := message.EncodeRecord(nil, &message.MessageExt{Message: *testMessage("T", 0, "body", props), StoreHost: testStoreHost()})
	if err != nil {
		t.Fatalf("EncodeRecord: %v", err)
	}
	return rec
}

func TestFilterMatchByCommitLog(t *testing.T) {
	f := NewFilter(mustCompile(t, "a > 5 AND TAGS = 'x'"))
	if !f.MatchByConsumeQueue(12345) || !f.MatchByConsumeQueue(0) {
		t.Errorf("MatchByConsumeQueue is false")
	}
	if f.Expression().String() != "a > 5 AND TAGS = 'x'" {
		t.Errorf("Expression() = %v", f.Expression())
	}
	match := encodeRecord(t, map[string]string{"a": "6", message.PropertyTags: "x"})
	miss := encodeRecord(t, map[string]string{"a": "4", message.PropertyTags: "x"})
	for _, tc := range []struct {
		name   string
		record []byte
		props  map[string]string
		want   bool
	}{
		{"record", match, nil, true},
		{"record-miss", miss, nil, false},
		{"props-win-over-record", miss, map[string]string{"a": "6", "TAGS": "x"}, true},
		{"empty-props-are-used", match, map[string]string{}, false},
		{"no-properties", encodeRecord(t, nil), nil, false},
		{"corrupt", match[:20], nil, false},
		{"nil-record", nil, nil, false},
	} {
		if got := f.MatchByCommitLog(tc.record, tc.props); got != tc.want {
			t.Errorf("%s: MatchByCommitLog = %v, want %v", tc.name, got, tc.want)
		}
	}

	all := NewFilter(nil)
	if !all.MatchByConsumeQueue(1) || !all.MatchByCommitLog(nil, nil) {
		t.Errorf("a filter without expression does not match everything")
	}
}

// TestFilterGetMessage runs a selector through Store.GetMessage, as a pull does.
func TestFilterGetMessage(t *testing.T) {
	cfg := store.DefaultConfig()
	cfg.StorePathRootDir = t.TempDir()
	cfg.MappedFileSizeCommitLog = 64 << 10
	cfg.MaxMessageSize = 4 << 10
	cfg.MappedFileSizeConsumeQueue = 64 * 20
	cfg.MaxHashSlotNum = 64
	cfg.MaxIndexNum = 128
	s, err := store.Open(cfg, store.Options{StoreHost: testStoreHost()})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if err := s.Start(); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })

	const n = 40
	var want []string
	for i := range n {
		props := map[string]string{
			message.PropertyTags: []string{"TagA", "TagB"}[i%2],
			"seq":                fmt.Sprint(i),
		}
		if i%3 == 0 {
			props["region"] = "eu"
		}
		body := fmt.Sprintf("m%02d", i)
		if _, err := s.PutMessage(context.Background(), testMessage("FilterTopic", 0, body, props)); err != nil {
			t.Fatalf("PutMessage: %v", err)
		}
		if i%2 == 1 && i >= 10 && i%3 != 0 {
			want = append(want, body)
		}
	}
	testutil.WaitFor(t, 20*time.Second, "the messages dispatched", func() bool { return s.MaxOffsetInQueue("FilterTopic", 0) >= n })

	f := NewFilter(mustCompile(t, "TAGS = 'TagB' AND seq >= 10 AND region IS NULL"))
	var got []string
	for off := int64(0); off < n; {
		r, err := s.GetMessage("g", "FilterTopic", 0, off, 32, 1<<20, f)
		if err != nil {
			t.Fatalf("GetMessage: %v", err)
		}
		for _, rec := range r.Records {
			m, err := message.DecodeMessage(rec, true)
			if err != nil {
				t.Fatalf("DecodeMessage: %v", err)
			}
			got = append(got, string(m.Body))
		}
		r.Release()
		if r.NextBeginOffset <= off {
			t.Fatalf("GetMessage from %d did not advance (status %v)", off, r.Status)
		}
		off = r.NextBeginOffset
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("filtered pull returned %v, want %v", got, want)
	}
}

func BenchmarkMatchByCommitLog(b *testing.B) {
	f := NewFilter(mustCompile(b, benchExpr))
	props := benchProps()
	rec := encodeRecord(b, props)
	b.Run("props", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			f.MatchByCommitLog(rec, props)
		}
	})
	b.Run("record", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(rec)))
		for b.Loop() {
			f.MatchByCommitLog(rec, nil)
		}
	})
}
