package namesrv

import (
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
