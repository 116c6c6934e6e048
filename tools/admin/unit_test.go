package admin

import (
	"bytes"
	"testing"
	"time"

	"github.com/rocketraft/rocketraft/protocol"
)

func TestFastJSON(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"offsetTable":{}}`, `{"offsetTable":{}}`},
		{`{"consumeTps":1.5,"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:{"brokerOffset":5,"consumerOffset":3,"lastTimestamp":0},{"brokerName":"b","queueId":1,"topic":"T"}:{"brokerOffset":1,"consumerOffset":1,"lastTimestamp":7}}}`,
			`{"consumeTps":1.5,"offsetTable":[[{"brokerName":"b","queueId":0,"topic":"T"},{"brokerOffset":5,"consumerOffset":3,"lastTimestamp":0}],[{"brokerName":"b","queueId":1,"topic":"T"},{"brokerOffset":1,"consumerOffset":1,"lastTimestamp":7}]]}`},
		{` { "offsetTable" : { {"brokerName":"b}:{","queueId":2,"topic":"T"} : 12 } } `, `{"offsetTable":[[{"brokerName":"b}:{","queueId":2,"topic":"T"},12]]}`},
		{`{"a":[1,"x\"y",null,true],"b":{"c":{}}}`, `{"a":[1,"x\"y",null,true],"b":{"c":{}}}`},
	} {
		got, err := protocol.FastJSONToJSON([]byte(tc.in))
		if err != nil || string(got) != tc.want {
			t.Errorf("protocol.FastJSONToJSON(%s) = %s, %v; want %s", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{`{"a":`, `{"a" 1}`, `[1 2]`, `{"a":"x`, `{} extra`, `{{"a":1}}`} {
		if _, err := protocol.FastJSONToJSON([]byte(bad)); err == nil {
			t.Errorf("protocol.FastJSONToJSON(%s): no error", bad)
		}
	}
	var body struct {
		OffsetTable protocol.QueueTable[int64] `json:"offsetTable"`
	}
	err := protocol.UnmarshalFastJSON([]byte(`{"offsetTable":{{"brokerName":"b","queueId":1,"topic":"T"}:20,{"brokerName":"a","queueId":3,"topic":"T"}:10}}`), &body)
	if err != nil || len(body.OffsetTable) != 2 || body.OffsetTable[0].MQ.BrokerName != "a" || body.OffsetTable[1].Value != 20 {
		t.Fatalf("decode reset offset body: %+v %v", body, err)
	}
}

func TestVersionDesc(t *testing.T) {
	for v, want := range map[int32]string{0: "V3_0_0_SNAPSHOT", 15: "V3_0_0_FINAL", 28: "V3_0_7_SNAPSHOT",
		317: "V4_5_2", 401: "V4_9_4", 412: "V5_0_0_SNAPSHOT", 413: "V5_0_0", 612: "HIGHER_VERSION", 9999: "HIGHER_VERSION"} {
		if got := versionDesc(v); got != want {
			t.Errorf("versionDesc(%d) = %s, want %s", v, got, want)
		}
	}
}

func TestParseTimestamp(t *testing.T) {
	if v, err := parseTimestamp("now", true); err != nil || v != -1 {
		t.Fatalf("now: %d %v", v, err)
	}
	if _, err := parseTimestamp("now", false); err == nil {
		t.Fatal("now accepted where it means nothing")
	}
	if v, err := parseTimestamp("1700000000123", true); err != nil || v != 1700000000123 {
		t.Fatalf("millis: %d %v", v, err)
	}
	want := time.Date(2024, 5, 1, 12, 30, 45, 123e6, time.Local).UnixMilli()
	if v, err := parseTimestamp("2024-05-01#12:30:45:123", true); err != nil || v != want {
		t.Fatalf("date: %d %v, want %d", v, err, want)
	}
	if _, err := parseTimestamp("2024-05-01 12:30", true); err == nil {
		t.Fatal("bad date accepted")
	}
}

func TestTable(t *testing.T) {
	tb := newTable("#Topic", "#QID", "#Offset")
	tb.add("LongTopicName", 0, 12345)
	tb.add("T", 10, 1)
	var b bytes.Buffer
	if err := tb.write(&b); err != nil {
		t.Fatal(err)
	}
	want := "#Topic         #QID  #Offset\nLongTopicName  0     12345\nT              10    1\n"
	if b.String() != want {
		t.Fatalf("table:\n%s\nwant:\n%s", b.String(), want)
	}
}

func TestSmallHelpers(t *testing.T) {
	if got := propertiesLine("k", `a\b`+"\nc"); got != `k=a\\b\nc`+"\n" {
		t.Errorf("propertiesLine: %q", got)
	}
	for sub, want := range map[string]bool{"*": true, "": true, "TagA || TagB": true, "TagB": false} {
		if tagMatches(sub, "TagA") != want {
			t.Errorf("tagMatches(%q, TagA) != %t", sub, want)
		}
	}
	if got := permString(6); got != "RW-" {
		t.Errorf("permString(6) = %s", got)
	}
}
