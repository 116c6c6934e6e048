package namesrv

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"log/slog"
	"slices"
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

// TestDeleteTopicWithBrokerRegistration: with deleteTopicWithBrokerRegistration, a topic the broker's new
// table no longer lists leaves the routes when the round of that table is over (its next registration; a
// split table arrives in several), not before; without it, it stays.
func TestDeleteTopicWithBrokerRegistration(t *testing.T) {
	for _, deleteMissing := range []bool{false, true} {
		m := newManager(time.Minute, deleteMissing)
		b := brokerA
		m.RegisterBroker(regReq(b, 1, 0), time.Now())
		b.topics = topicsOf("TBW102")
		b.version++
		m.RegisterBroker(regReq(b, 1, 0), time.Now())
		if _, ok := m.PickupTopicRouteData("TopicTest"); !ok {
			t.Fatalf("deleteTopicWithBrokerRegistration=%v: TopicTest left before its round was over", deleteMissing)
		}
		m.RegisterBroker(regReq(b, 1, 0), time.Now()) // the next round
		if _, ok := m.PickupTopicRouteData("TopicTest"); ok == deleteMissing {
			t.Fatalf("deleteTopicWithBrokerRegistration=%v: TopicTest routed %v", deleteMissing, ok)
		}
		if _, ok := m.PickupTopicRouteData("TBW102"); !ok {
			t.Fatalf("deleteTopicWithBrokerRegistration=%v: TBW102 gone", deleteMissing)
		}
	}
}

// TestSplitRegistration: a table sent in chunks sharing one data version (RocketMQ 5's
// enableSplitRegistration) is applied whole: every chunk's topics are routed, a new version's chunks
// replace the queue counts of topics they list, the next round adds nothing twice, and with
// deleteTopicWithBrokerRegistration only what no chunk of the completed round listed goes.
func TestSplitRegistration(t *testing.T) {
	m := newManager(time.Minute, true)
	chunks := [][]string{{"T0", "T1", "T2"}, {"T3", "T4", "T5"}, {"T6"}, {}}
	send := func(version int64, queues int32, chunks [][]string) {
		for _, c := range chunks {
			b := brokerA
			b.version = version
			b.topics = topicsOf(c...)
			for _, tc := range b.topics {
				tc.WriteQueueNums = queues
			}
			m.RegisterBroker(regReq(b, 1, 0), time.Now())
		}
	}
	// check: the routed topics have queues write queues, and no other topic is routed unless others.
	check := func(when string, queues int32, others bool, routed ...string) {
		t.Helper()
		if got := m.AllTopics(); !slices.Equal(got, routed) && !others {
			t.Fatalf("%s: topics %v, want %v", when, got, routed)
		}
		for _, topic := range routed {
			r, ok := m.PickupTopicRouteData(topic)
			if !ok || r.QueueDatas[0].WriteQueueNums != queues {
				t.Fatalf("%s: %s routed %v with %+v, want %d write queues", when, topic, ok, r.QueueDatas, queues)
			}
		}
	}
	send(1, 4, chunks)
	check("first round", 4, false, "T0", "T1", "T2", "T3", "T4", "T5", "T6")
	send(1, 4, chunks)
	check("second round", 4, false, "T0", "T1", "T2", "T3", "T4", "T5", "T6")
	// Version 2: T5 and T6 are gone from the table, every queue count is 8.
	v2 := [][]string{{"T0", "T1", "T2"}, {"T3", "T4"}}
	send(2, 8, v2)
	check("version 2, first round", 8, true, "T0", "T1", "T2", "T3", "T4")
	if got := m.AllTopics(); !slices.Equal(got, []string{"T0", "T1", "T2", "T3", "T4", "T5", "T6"}) {
		t.Fatalf("T5 and T6 left before version 2's round was over: %v", got)
	}
	send(2, 8, v2[:1]) // the next round starts: the last was complete
	if _, ok := m.PickupTopicRouteData("T5"); ok {
		t.Fatal("T5, in no chunk of version 2, is still routed after its round")
	}
	send(2, 8, v2[1:])
	check("version 2, next round", 8, false, "T0", "T1", "T2", "T3", "T4")
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

// TestBrokerHeartbeatKeepsAlive: RocketMQ 5's BROKER_HEARTBEAT between registrations keeps a broker that
// registered with a short heartbeatTimeoutMillis alive; a heartbeat naming another cluster does not.
func TestBrokerHeartbeatKeepsAlive(t *testing.T) {
	m := newManager(120*time.Second, false)
	t0 := time.Unix(1700000000, 0)
	m.RegisterBroker(regReq(brokerA, 1, 10*time.Second), t0) // heartbeatTimeoutMillis 10 s
	for i := 1; i <= 10; i++ {                               // a heartbeat a second for 10 s
		if !m.BrokerHeartbeat(brokerA.cluster, brokerA.addr, t0.Add(time.Duration(i)*time.Second)) {
			t.Fatal("heartbeat of a registered broker not taken")
		}
	}
	if _, n := m.ScanNotActiveBroker(t0.Add(19 * time.Second)); n != 0 {
		t.Fatal("a broker that sent heartbeats expired")
	}
	if m.BrokerHeartbeat("OtherCluster", brokerA.addr, t0.Add(19*time.Second)) ||
		m.BrokerHeartbeat(brokerA.cluster, "10.9.9.9:10911", t0.Add(19*time.Second)) {
		t.Fatal("a heartbeat of another cluster or an unknown address was taken")
	}
	if _, n := m.ScanNotActiveBroker(t0.Add(21 * time.Second)); n != 1 {
		t.Fatal("the broker did not expire 10 s after its last heartbeat")
	}
}
