package message

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"net/netip"
	"strings"
	"testing"

	"github.com/apache/rocketmq-client-go/v2/primitive"
)

func sampleExt() *MessageExt {
	return &MessageExt{
		Message: Message{
			Topic:                     "TopicTest",
			QueueID:                   3,
			Flag:                      9,
			Body:                      []byte("hello, rocket"),
			Properties:                EncodeProperties(map[string]string{PropertyTags: "TagA", PropertyKeys: "k1 k2", PropertyUniqKey: "ABCDEF"}),
			SysFlag:                   0,
			BornTimestamp:             1700000000123,
			BornHost:                  netip.MustParseAddrPort("192.168.0.9:40000"),
			ReconsumeTimes:            2,
			PreparedTransactionOffset: 77,
		},
		QueueOffset:    42,
		PhysicalOffset: 1234,
		StoreTimestamp: 1700000000456,
		StoreHost:      netip.MustParseAddrPort("10.0.0.5:10911"),
	}
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name        string
		born, store string
		wantSysFlag int32
	}{
		{"ipv4", "192.168.0.9:40000", "10.0.0.5:10911", 0},
		{"born ipv6", "[2001:db8::1]:40000", "10.0.0.5:10911", SysFlagBornHostV6},
		{"both ipv6", "[2001:db8::1]:40000", "[2001:db8::2]:10911", SysFlagBornHostV6 | SysFlagStoreHostV6},
		{"ipv4-mapped", "[::ffff:192.168.0.9]:40000", "10.0.0.5:10911", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := sampleExt()
			m.BornHost = netip.MustParseAddrPort(tc.born)
			m.StoreHost = netip.MustParseAddrPort(tc.store)
			rec, err := EncodeRecord(nil, m)
			if err != nil {
				t.Fatal(err)
			}
			n, err := RecordSize(&m.Message, m.StoreHost)
			if err != nil || n != len(rec) {
				t.Fatalf("RecordSize = %d, %v; encoded %d bytes", n, err, len(rec))
			}
			got, err := DecodeMessage(rec, true)
			if err != nil {
				t.Fatal(err)
			}
			if got.SysFlag != tc.wantSysFlag {
				t.Errorf("sysFlag = %#x, want %#x", got.SysFlag, tc.wantSysFlag)
			}
			if got.Topic != m.Topic || got.QueueID != m.QueueID || got.Flag != m.Flag || !bytes.Equal(got.Body, m.Body) ||
				got.Properties != m.Properties || got.BornTimestamp != m.BornTimestamp || got.ReconsumeTimes != m.ReconsumeTimes ||
				got.PreparedTransactionOffset != m.PreparedTransactionOffset || got.QueueOffset != m.QueueOffset ||
				got.PhysicalOffset != m.PhysicalOffset || got.StoreTimestamp != m.StoreTimestamp ||
				got.StoreSize != int32(len(rec)) || got.BodyCRC != BodyCRC(m.Body) {
				t.Errorf("decoded %+v, want %+v", got, m)
			}
			if got.BornHost.Port() != m.BornHost.Port() || got.BornHost.Addr().Unmap() != m.BornHost.Addr().Unmap() ||
				got.StoreHost != m.StoreHost {
				t.Errorf("hosts %v %v, want %v %v", got.BornHost, got.StoreHost, m.BornHost, m.StoreHost)
			}
		})
	}
}

// The official Go client must decode our records as a pull body, and agree on the msg id.
func TestRecordsDecodeWithGoClient(t *testing.T) {
	var body []byte
	var want []*MessageExt
	for i := 0; i < 3; i++ {
		m := sampleExt()
		m.QueueOffset = int64(40 + i)
		m.PhysicalOffset = int64(len(body))
		m.Body = []byte(strings.Repeat("b", 10*i+1))
		var err error
		body, err = EncodeRecord(body, m)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, m)
	}
	got := primitive.DecodeMessage(body)
	if len(got) != len(want) {
		t.Fatalf("Go client decoded %d messages, want %d", len(got), len(want))
	}
	for i, g := range got {
		w := want[i]
		if g.Topic != w.Topic || g.QueueOffset != w.QueueOffset || g.CommitLogOffset != w.PhysicalOffset ||
			!bytes.Equal(g.Body, w.Body) || g.GetTags() != "TagA" || g.GetKeys() != "k1 k2" || g.StoreTimestamp != w.StoreTimestamp ||
			g.BornHost != "192.168.0.9:40000" || g.StoreHost != "10.0.0.5:10911" || int(g.ReconsumeTimes) != int(w.ReconsumeTimes) {
			t.Errorf("message %d: Go client decoded %+v", i, g)
		}
		if want := CreateOffsetMsgID(w.StoreHost, w.PhysicalOffset); g.OffsetMsgId != want {
			t.Errorf("message %d: offset msg id %s, Go client %s", i, want, g.OffsetMsgId)
		}
		if g.MsgId != "ABCDEF" {
			t.Errorf("message %d: msg id %s, want the UNIQ_KEY", i, g.MsgId)
		}
	}
}

func TestOffsetMsgID(t *testing.T) {
	id := CreateOffsetMsgID(netip.MustParseAddrPort("10.0.0.5:10911"), 1234)
	if id != "0A00000500002A9F00000000000004D2" {
		t.Fatalf("id = %s", id)
	}
	host, off, err := DecodeOffsetMsgID(id)
	if err != nil || host != netip.MustParseAddrPort("10.0.0.5:10911") || off != 1234 {
		t.Fatalf("decode = %v %d %v", host, off, err)
	}
	v6 := netip.MustParseAddrPort("[2001:db8::7]:10911")
	id6 := CreateOffsetMsgID(v6, 1<<40)
	if len(id6) != 56 {
		t.Fatalf("IPv6 id %q has %d chars", id6, len(id6))
	}
	if h, o, err := DecodeOffsetMsgID(id6); err != nil || h != v6 || o != 1<<40 {
		t.Fatalf("decode IPv6 = %v %d %v", h, o, err)
	}
	for _, bad := range []string{"", "0A00", strings.Repeat("Z", 32), "0A000005FFFFFFFF00000000000004D2"} {
		if _, _, err := DecodeOffsetMsgID(bad); err == nil {
			t.Errorf("DecodeOffsetMsgID(%q) accepted", bad)
		}
	}
}

func TestTagsHashIsJavaStringHashCode(t *testing.T) {
	for _, tc := range []struct {
		tag  string
		want int64
	}{
		{"", 0},
		{"TagA", 2598919},
		{"é", 233},
		{"😀", 0xD83D*31 + 0xDE00},
		// Overflows int32 like Java: "abcdefghij".hashCode() == -1704869886... checked below.
	} {
		if got := TagsHash(tc.tag); got != tc.want {
			t.Errorf("TagsHash(%q) = %d, want %d", tc.tag, got, tc.want)
		}
	}
	// Java: "polygenelubricants".hashCode() == Integer.MIN_VALUE.
	if got := TagsHash("polygenelubricants"); got != -2147483648 {
		t.Errorf("TagsHash overflow = %d, want -2147483648", got)
	}
}

func TestProperties(t *testing.T) {
	in := map[string]string{"b": "2", "a": "1", PropertyKeys: "x y"}
	enc := EncodeProperties(in)
	if enc != "KEYS\x01x y\x02a\x011\x02b\x012\x02" {
		t.Fatalf("EncodeProperties = %q", enc)
	}
	got := ParseProperties(enc)
	if len(got) != 3 || got["a"] != "1" || got["b"] != "2" || got[PropertyKeys] != "x y" {
		t.Fatalf("ParseProperties = %v", got)
	}
	odd := ParseProperties("k\x01v\x02\x01nokey\x02junk\x02a\x01b\x01c\x02last\x01v")
	if len(odd) != 2 || odd["k"] != "v" || odd["last"] != "v" {
		t.Fatalf("ParseProperties(odd) = %v", odd)
	}
	if v, ok := PropertyValue([]byte(enc), "b"); !ok || string(v) != "2" {
		t.Fatalf("PropertyValue = %q %v", v, ok)
	}
	if _, ok := PropertyValue([]byte(enc), "c"); ok {
		t.Fatal("PropertyValue found a missing name")
	}
}

// FindProperty takes the first item of the name with everything after its first separator; PropertyString
// passes over an item whose value holds a separator. EditProperties re-encodes what edit left.
func TestFindAndEditProperties(t *testing.T) {
	props := "a\x011\x02odd\x01x\x01y\x02odd\x01z\x02a\x012\x02"
	if v, ok := FindProperty(props, "a"); !ok || v != "1" {
		t.Fatalf("FindProperty(a) = %q %v, want the first", v, ok)
	}
	if v, ok := FindProperty(props, "odd"); !ok || v != "x\x01y" {
		t.Fatalf("FindProperty(odd) = %q %v, want the first item's value as it is", v, ok)
	}
	if v, ok := PropertyString(props, "odd"); !ok || v != "z" {
		t.Fatalf("PropertyString(odd) = %q %v, want the first well-formed item", v, ok)
	}
	if _, ok := FindProperty(props, "b"); ok {
		t.Fatal("FindProperty found a missing name")
	}
	got := EditProperties("b\x012\x02a\x011\x02", func(m map[string]string) { delete(m, "b"); m["c"] = "3" })
	if got != "a\x011\x02c\x013\x02" {
		t.Fatalf("EditProperties = %q", got)
	}
}

// RestoreReal gives a parked message its real topic and queue back and drops what parked it.
func TestRestoreReal(t *testing.T) {
	parked := &MessageExt{Message: Message{Topic: "SCHEDULE_TOPIC_XXXX", QueueID: 2, Body: []byte("b"),
		Properties: EncodeProperties(map[string]string{PropertyRealTopic: "T", PropertyRealQueueID: "3",
			PropertyDelayLevel: "3", PropertyKeys: "k"})}}
	m := RestoreReal(parked, PropertyDelayLevel)
	if m.Topic != "T" || m.QueueID != 3 || string(m.Body) != "b" {
		t.Fatalf("restored %s queue %d body %q, want T queue 3 body b", m.Topic, m.QueueID, m.Body)
	}
	if p := ParseProperties(m.Properties); len(p) != 3 || p[PropertyDelayLevel] != "" || p[PropertyKeys] != "k" {
		t.Fatalf("restored properties %v, want REAL_TOPIC, REAL_QID and KEYS", p)
	}
	if parked.Topic != "SCHEDULE_TOPIC_XXXX" {
		t.Fatal("the parked message changed")
	}
	parked.Properties = EncodeProperties(map[string]string{PropertyRealTopic: "T", PropertyRealQueueID: "x"})
	if m := RestoreReal(parked); m.QueueID != 0 {
		t.Fatalf("REAL_QID not a number: queue %d, want 0", m.QueueID)
	}
}

func TestRecordLimits(t *testing.T) {
	m := sampleExt()
	m.Topic = strings.Repeat("t", MaxTopicLength+1)
	if _, err := EncodeRecord(nil, m); !errors.Is(err, ErrTopicTooLong) {
		t.Errorf("long topic: %v", err)
	}
	m = sampleExt()
	m.Properties = strings.Repeat("p", MaxPropertiesLength+1)
	if _, err := EncodeRecord(nil, m); !errors.Is(err, ErrPropertiesTooLarge) {
		t.Errorf("large properties: %v", err)
	}
}

// Every truncation and every corrupted byte of a record decodes to an error or a record,
// never a panic.
func TestDecodeMalformedNeverPanics(t *testing.T) {
	rec, err := EncodeRecord(nil, sampleExt())
	if err != nil {
		t.Fatal(err)
	}
	for n := 0; n < len(rec); n++ {
		if _, err := DecodeMessage(rec[:n], true); err == nil {
			t.Errorf("truncated to %d bytes: no error", n)
		} else if !errors.Is(err, ErrCorruptRecord) {
			t.Errorf("truncated to %d bytes: %v does not wrap ErrCorruptRecord", n, err)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 20000; i++ {
		b := append([]byte(nil), rec...)
		for k := 0; k < 1+rng.IntN(4); k++ {
			b[rng.IntN(len(b))] = byte(rng.IntN(256))
		}
		_, _ = DecodeMessage(b, true)
		_, _ = RecordProperties(b)
	}
}
