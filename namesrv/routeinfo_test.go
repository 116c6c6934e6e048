package namesrv

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/rocketraft/rocketraft/protocol"
)

func newManager(expiry time.Duration, deleteMissing bool) *RouteInfoManager {
	return NewRouteInfoManager(expiry, deleteMissing, slog.New(slog.DiscardHandler))
}

func regReq(b broker, connID uint64, timeout time.Duration) RegisterBrokerRequest {
	return RegisterBrokerRequest{ClusterName: b.cluster, BrokerAddr: b.addr, BrokerName: b.name, BrokerID: b.id,
		Body: b.body(), ConnID: connID, Timeout: timeout}
}

func TestScanNotActiveBroker(t *testing.T) {
	m := newManager(120*time.Second, false)
	t0 := time.Unix(1700000000, 0)
	m.RegisterBroker(regReq(brokerA, 7, 0), t0)
	b := broker{cluster: "c", name: "broker-b", addr: "10.0.0.6:10911", topics: topicsOf("TopicTest")}
	m.RegisterBroker(regReq(b, 8, 10*time.Second), t0) // heartbeatTimeoutMillis 10 s

	if ids, n := m.ScanNotActiveBroker(t0.Add(10 * time.Second)); n != 0 || len(ids) != 0 {
		t.Fatalf("removed %d at exactly the timeout", n)
	}
	if ids, n := m.ScanNotActiveBroker(t0.Add(11 * time.Second)); n != 1 || len(ids) != 1 || ids[0] != 8 {
		t.Fatalf("after broker-b's own timeout: removed %d, conns %v", n, ids)
	}
	m.RegisterBroker(regReq(brokerA, 7, 0), t0.Add(100*time.Second)) // refreshed
	if _, n := m.ScanNotActiveBroker(t0.Add(200 * time.Second)); n != 0 {
		t.Fatal("a refreshed broker expired")
	}
	if _, n := m.ScanNotActiveBroker(t0.Add(221 * time.Second)); n != 1 || m.BrokerCount() != 0 {
		t.Fatal("broker-a did not expire 120 s after its last registration")
	}
	if _, ok := m.PickupTopicRouteData("TopicTest"); ok || len(m.AllTopics()) != 0 {
		t.Fatal("topics outlived their brokers")
	}
}

func TestOnConnCloseOnlyItsBrokers(t *testing.T) {
	m := newManager(time.Minute, false)
	now := time.Now()
	m.RegisterBroker(regReq(brokerA, 1, 0), now)
	m.OnConnClose(2)
	m.OnConnClose(0)
	if m.BrokerCount() != 1 {
		t.Fatal("another connection's close removed the broker")
	}
	// Re-registered on a new connection: the old one's close no longer concerns it.
	m.RegisterBroker(regReq(brokerA, 3, 0), now)
	m.OnConnClose(1)
	if m.BrokerCount() != 1 {
		t.Fatal("the old connection's close removed a re-registered broker")
	}
	m.OnConnClose(3)
	if m.BrokerCount() != 0 {
		t.Fatal("the broker outlived its connection")
	}
}

func TestDeleteTopicWithBrokerRegistration(t *testing.T) {
	for _, deleteMissing := range []bool{false, true} {
		m := newManager(time.Minute, deleteMissing)
		b := brokerA
		m.RegisterBroker(regReq(b, 1, 0), time.Now())
		b.topics = topicsOf("TBW102")
		b.version++
		m.RegisterBroker(regReq(b, 1, 0), time.Now())
		if _, ok := m.PickupTopicRouteData("TopicTest"); ok == deleteMissing {
			t.Fatalf("deleteTopicWithBrokerRegistration=%v: TopicTest routed %v", deleteMissing, ok)
		}
	}
}

func zlibBytes(t *testing.T, parts ...[]byte) []byte {
	var buf bytes.Buffer
	zw := zlib.NewWriter(&buf)
	for _, p := range parts {
		zw.Write(p)
	}
	zw.Close()
	return buf.Bytes()
}

func i32(v int32) []byte { return binary.BigEndian.AppendUint32(nil, uint32(v)) }

func TestDecodeRegisterBrokerBody(t *testing.T) {
	good, err := protocol.EncodeRegisterBrokerBodyCompressed(brokerA.body())
	if err != nil {
		t.Fatal(err)
	}
	rb, err := protocol.DecodeRegisterBrokerBody(good, true)
	if err != nil || len(rb.TopicConfigSerializeWrapper.TopicConfigTable) != 2 ||
		rb.TopicConfigSerializeWrapper.DataVersion.Counter != 1 {
		t.Fatalf("round trip: %+v %v", rb, err)
	}
	// A Java 5.x line with attributes, and trailing queue mappings.
	line := []byte(`T 8 4 7 SINGLE_TAG {"+message.type":"NORMAL"}`)
	dv := []byte(`{"stateVersion":0,"timestamp":1,"counter":2}`)
	java5 := zlibBytes(t, i32(int32(len(dv))), dv, i32(1), i32(int32(len(line))), line, i32(2), []byte("[]"), i32(0))
	rb, err = protocol.DecodeRegisterBrokerBody(java5, true)
	if tc := rb.TopicConfigSerializeWrapper.TopicConfigTable["T"]; err != nil || tc.ReadQueueNums != 8 ||
		tc.WriteQueueNums != 4 || tc.Perm != 7 {
		t.Fatalf("Java 5 body: %+v %v", rb, err)
	}
	for _, tc := range []struct {
		name string
		body []byte
		want string
	}{
		{"not zlib", []byte("garbage"), "compressed register broker body"},
		{"truncated", good[:len(good)/2], "compressed register broker body"},
		{"huge topic count", zlibBytes(t, i32(2), []byte("{}"), i32(1<<30)), "topic count"},
		{"negative length", zlibBytes(t, i32(-5)), "out of range"},
		{"length beyond data", zlibBytes(t, i32(1000), []byte("{}")), "unexpected EOF"},
		{"short topic line", zlibBytes(t, i32(2), []byte("{}"), i32(1), i32(3), []byte("T 1")), "want at least 5"},
		{"bad number", zlibBytes(t, i32(2), []byte("{}"), i32(1), i32(16), []byte("T x 1 6 SINGLE_T")), "not an integer"},
		// Found by FuzzDecodeRegisterBrokerBody: an empty filter type was taken, then encoded as SINGLE_TAG.
		{"empty filter type", zlibBytes(t, i32(2), []byte("{}"), i32(1), i32(9), []byte("T 4 4 7  ")), "neither SINGLE_TAG nor MULTI_TAG"},
	} {
		if _, err := protocol.DecodeRegisterBrokerBody(tc.body, true); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
	if rb, err := protocol.DecodeRegisterBrokerBody(nil, false); err != nil || rb.TopicConfigSerializeWrapper.TopicConfigTable != nil {
		t.Fatalf("empty body: %+v %v", rb, err)
	}
}
