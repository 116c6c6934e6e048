package message

import (
	"strings"
	"testing"
)

// traceBody joins records as a client writes them: fields by TraceContentSep, each record ended by
// TraceFieldSep.
func traceBody(records ...[]string) []byte {
	var b strings.Builder
	for _, r := range records {
		b.WriteString(strings.Join(r, string(rune(TraceContentSep))))
		b.WriteRune(TraceFieldSep)
	}
	return []byte(b.String())
}

// The records as the official Go client (rocketmq-client-go/v2 internal/trace.go, marshal2Bean) writes them.
func TestDecodeTraceGoClient(t *testing.T) {
	body := traceBody(
		[]string{"Pub", "1700000000123", "DefaultRegion", "pg", "Orders", "7F00000100002A9F0000000000000001", "TagA",
			"k1", "127.0.0.1:10911", "11", "3", "0", "7F000001000004D20000000000001234", "true", "10.0.0.9"},
		[]string{"SubBefore", "1700000000200", "DefaultRegion", "cg", "REQ1", "7F00000100002A9F0000000000000001", "0",
			"null", "10.0.0.8"},
		[]string{"SubAfter", "REQ1", "7F00000100002A9F0000000000000001", "5", "false", "null", "2", "1700000000205", "cg"},
	)
	got, err := DecodeTrace(body)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 {
		t.Fatalf("%d records, want 3: %+v", len(got), got)
	}
	pub := TraceRecord{Type: TracePub, Timestamp: 1700000000123, RegionID: "DefaultRegion", Group: "pg", Topic: "Orders",
		MsgID: "7F00000100002A9F0000000000000001", OffsetMsgID: "7F000001000004D20000000000001234", Tags: "TagA", Keys: "k1",
		StoreHost: "127.0.0.1:10911", ClientHost: "10.0.0.9", BodyLength: 11, CostTime: 3, Success: true}
	if got[0] != pub {
		t.Errorf("Pub:\n got %+v\nwant %+v", got[0], pub)
	}
	before := TraceRecord{Type: TraceSubBefore, Timestamp: 1700000000200, RegionID: "DefaultRegion", Group: "cg",
		RequestID: "REQ1", MsgID: "7F00000100002A9F0000000000000001", ClientHost: "10.0.0.8", Success: true}
	if got[1] != before {
		t.Errorf("SubBefore:\n got %+v\nwant %+v", got[1], before)
	}
	after := TraceRecord{Type: TraceSubAfter, Timestamp: 1700000000205, Group: "cg", RequestID: "REQ1",
		MsgID: "7F00000100002A9F0000000000000001", CostTime: 5, ContextCode: 2}
	if got[2] != after {
		t.Errorf("SubAfter:\n got %+v\nwant %+v", got[2], after)
	}
}

// Older clients write fewer fields; Java writes EndTransaction records too.
func TestDecodeTraceOlderForms(t *testing.T) {
	body := traceBody(
		[]string{"Pub", "1", "r", "pg", "T", "M1", "", "", "h:1", "4", "2", "3", "true"}, // 13 fields: no offsetMsgId
		[]string{"SubAfter", "R", "M1", "7", "true", "k"},                                // 6 fields
		[]string{"EndTransaction", "2", "r", "pg", "T", "M1", "", "", "h:1", "1", "TX1", "COMMIT_MESSAGE", "true"},
	)
	got, err := DecodeTrace(body)
	if err != nil || len(got) != 3 {
		t.Fatalf("%+v %v", got, err)
	}
	if got[0].OffsetMsgID != "" || !got[0].Success || got[0].MsgType != 3 {
		t.Errorf("old Pub: %+v", got[0])
	}
	if got[1].Group != "" || got[1].Keys != "k" || got[1].CostTime != 7 || !got[1].Success {
		t.Errorf("old SubAfter: %+v", got[1])
	}
	if got[2].TransactionID != "TX1" || got[2].TransactionState != "COMMIT_MESSAGE" || !got[2].FromCheck {
		t.Errorf("EndTransaction: %+v", got[2])
	}
}

// A record that cannot be read is skipped and named; the others are kept.
func TestDecodeTraceBad(t *testing.T) {
	for _, tc := range []struct {
		name   string
		record []string
		want   string
	}{
		{"unknown type", []string{"Pull", "1"}, `unknown type "Pull"`},
		{"short", []string{"SubBefore", "1", "r"}, "SubBefore has 3 fields, want at least 8"},
		{"not a number", []string{"SubAfter", "R", "M", "fast", "true", "k"}, `SubAfter field 3 (costTime) "fast" is not an integer`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodeTrace(traceBody(tc.record, []string{"SubAfter", "R", "M", "1", "true", "k"}))
			if err == nil || !strings.Contains(err.Error(), "trace record 0: "+tc.want) {
				t.Fatalf("error %v, want one naming %q", err, tc.want)
			}
			if len(got) != 1 || got[0].MsgID != "M" {
				t.Fatalf("kept %+v, want the good record", got)
			}
		})
	}
}

func FuzzDecodeTrace(f *testing.F) {
	f.Add(traceBody([]string{"Pub", "1", "r", "pg", "T", "M1", "", "", "h:1", "4", "2", "3", "true"}))
	f.Add([]byte("SubAfter\x01R\x01M\x01x\x02\x02"))
	f.Fuzz(func(t *testing.T, body []byte) {
		_, _ = DecodeTrace(body) // must not panic
	})
}
