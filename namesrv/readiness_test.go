package namesrv

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rocketraft/rocketraft/remoting"
)

// routeCode asks for a topic's route and returns the answer's code and remark.
func (f *fixture) routeCode(topic string) (remoting.ResponseCode, string) {
	f.t.Helper()
	resp := f.call(remoting.GetRouteInfoByTopic, map[string]string{"topic": topic}, nil)
	return remoting.ResponseCode(resp.Code), resp.Remark
}

// restart closes f's name server and starts another on the same folder (and so kvConfig.json and
// brokerNames.json), configured by cfg.
func (f *fixture) restart(t *testing.T, cfg Config) *fixture {
	t.Helper()
	if err := f.ns.Close(); err != nil {
		t.Fatal(err)
	}
	ns := startNamesrv(t, cfg)
	return &fixture{t: t, ns: ns, addr: ns.Addr(), cl: f.cl}
}

// TestRestartWaitsForItsBrokers: a name server restarted on the folder of one that routed two broker
// names answers routes "name server not ready" (SYSTEM_ERROR, RocketMQ 5's remark) until both have
// registered their masters again, then complete routes; registrations and the cluster info are served
// meanwhile. A first start serves at once.
func TestRestartWaitsForItsBrokers(t *testing.T) {
	cfg := testConfig(t)
	f := &fixture{t: t, ns: startNamesrv(t, cfg)}
	f.addr = f.ns.Addr()
	f.cl = remoting.NewClient(remoting.ClientConfig{}, testLogger(t))
	t.Cleanup(func() { _ = f.cl.Close() })
	if code, _ := f.routeCode("TopicTest"); code != remoting.TopicNotExist { // a first start serves at once
		t.Fatalf("first start: %s", code)
	}
	brokerB := broker{cluster: "DefaultCluster", name: "broker-b", addr: "10.0.0.7:10911", topics: topicsOf("TopicTest"), version: 1}
	slaveB := broker{cluster: "DefaultCluster", name: "broker-b", addr: "10.0.0.8:10911", id: 1}
	f.register(f.cl, brokerA)
	f.register(f.cl, brokerB)
	file := filepath.Join(filepath.Dir(cfg.kvPath()), brokerNamesFile)
	waitFor(t, "brokerNames.json lists broker-a and broker-b", func() bool {
		b, _ := os.ReadFile(file)
		return strings.Contains(string(b), `"broker-a"`) && strings.Contains(string(b), `"broker-b"`)
	})

	f = f.restart(t, cfg)
	if code, remark := f.routeCode("TopicTest"); code != remoting.SystemError || remark != remarkNotReady {
		t.Fatalf("restarted, no broker back: %s %q", code, remark)
	}
	f.register(f.cl, brokerA)
	f.register(f.cl, slaveB) // a slave brings no queue data: broker-b is not back
	if code, _ := f.routeCode("TopicTest"); code != remoting.SystemError {
		t.Fatalf("restarted, broker-b's master not back: %s", code)
	}
	if resp := f.call(remoting.GetBrokerClusterInfo, nil, nil); resp.Code != int32(remoting.Success) {
		t.Fatalf("cluster info while waiting: %v", resp)
	}
	f.register(f.cl, brokerB)
	r, _, ok := f.route("TopicTest")
	if !ok || len(r.BrokerDatas) != 2 || len(r.QueueDatas) != 2 {
		t.Fatalf("restarted, both back: route %+v", r)
	}

	// Without needWaitForService a restart serves at once.
	cfg.NeedWaitForService = false
	f = f.restart(t, cfg)
	if code, _ := f.routeCode("TopicTest"); code != remoting.TopicNotExist {
		t.Fatalf("restarted with needWaitForService=false: %s", code)
	}
}

// TestRestartWaitIsBounded: a broker name that does not come back holds routes back for at most
// waitSecondsForService.
func TestRestartWaitIsBounded(t *testing.T) {
	cfg := testConfig(t)
	cfg.WaitSecondsForService = 1
	f := &fixture{t: t, ns: startNamesrv(t, cfg)}
	f.addr = f.ns.Addr()
	f.cl = remoting.NewClient(remoting.ClientConfig{}, testLogger(t))
	t.Cleanup(func() { _ = f.cl.Close() })
	gone := broker{cluster: "DefaultCluster", name: "broker-gone", addr: "10.0.0.9:10911", topics: topicsOf("Gone"), version: 1}
	f.register(f.cl, brokerA)
	f.register(f.cl, gone)
	file := filepath.Join(filepath.Dir(cfg.kvPath()), brokerNamesFile)
	waitFor(t, "brokerNames.json lists broker-gone", func() bool {
		b, _ := os.ReadFile(file)
		return strings.Contains(string(b), `"broker-gone"`)
	})
	f = f.restart(t, cfg)
	f.register(f.cl, brokerA)
	if code, _ := f.routeCode("TopicTest"); code != remoting.SystemError {
		t.Fatalf("right after the restart, broker-gone missing: %s", code)
	}
	waitFor(t, "routes served once waitSecondsForService passed", func() bool {
		code, _ := f.routeCode("TopicTest")
		return code == remoting.Success
	})
}

// TestRestartWaitsForEverySplitChunk: a broker name counts as back when it routes as many topics as it
// did before the restart, not at its first registration: a master whose table comes in chunks of one data
// version (enableSplitRegistration) would otherwise make routes served between its chunks, and the
// route of a topic of a later chunk would lack its group until the client's next poll. A broker that
// deleted topics while the name server was down (fewer topics than before) counts as back once its
// master begins its next round, well before waitSecondsForService.
func TestRestartWaitsForEverySplitChunk(t *testing.T) {
	cfg := testConfig(t)
	cfg.WaitSecondsForService = 3600 // only the brokers can end the wait here
	f := &fixture{t: t, ns: startNamesrv(t, cfg)}
	f.addr = f.ns.Addr()
	f.cl = remoting.NewClient(remoting.ClientConfig{}, testLogger(t))
	t.Cleanup(func() { _ = f.cl.Close() })
	chunks := [][]string{{"T0", "T1", "T2"}, {"T3", "T4", "T5"}, {"T6"}, {}}
	send := func(chunks [][]string) {
		for _, c := range chunks {
			b := brokerA
			b.topics = topicsOf(c...)
			f.register(f.cl, b)
		}
	}
	other := broker{cluster: "DefaultCluster", name: "broker-b", addr: "10.0.0.7:10911", topics: topicsOf("T6"), version: 1}
	send(chunks)
	f.register(f.cl, other)
	file := filepath.Join(filepath.Dir(cfg.kvPath()), brokerNamesFile)
	waitFor(t, "brokerNames.json counts broker-a's 7 topics and broker-b's 1", func() bool {
		b, _ := os.ReadFile(file)
		return strings.Contains(string(b), `"broker-a":7`) && strings.Contains(string(b), `"broker-b":1`)
	})
	// complete: T6's route lists both broker names.
	complete := func(when string) {
		t.Helper()
		r, _, ok := f.route("T6")
		if !ok || len(r.QueueDatas) != 2 || len(r.BrokerDatas) != 2 {
			t.Fatalf("%s: T6 routed %v: %+v", when, ok, r)
		}
	}
	notReady := func(when string) {
		t.Helper()
		if code, remark := f.routeCode("T6"); code != remoting.SystemError || remark != remarkNotReady {
			t.Fatalf("%s: %s %q, want not ready", when, code, remark)
		}
	}

	f = f.restart(t, cfg)
	f.register(f.cl, other)
	for i, c := range chunks[:2] {
		send([][]string{c})
		notReady(fmt.Sprintf("broker-a's chunk %d of 4 back", i+1))
	}
	send(chunks[2:])
	complete("every chunk back")

	// T6 deleted on broker-a while the name server was down: 6 topics of 7 come back, then the round again.
	f = f.restart(t, cfg)
	f.register(f.cl, other)
	fewer := [][]string{{"T0", "T1", "T2"}, {"T3", "T4", "T5"}, {}}
	send(fewer)
	notReady("broker-a back with 6 topics of 7, its round not repeated yet")
	send(fewer[:1]) // the periodic round begins: the one before was whole
	if r, _, ok := f.route("T0"); !ok || len(r.QueueDatas) != 1 || r.QueueDatas[0].BrokerName != "broker-a" {
		t.Fatalf("broker-a's round repeated: T0 routed %v: %+v", ok, r)
	}
}
