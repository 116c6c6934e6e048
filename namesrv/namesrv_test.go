package namesrv

import (
	"context"
	"encoding/json"
	"hash/crc32"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rocketraft/rocketraft/internal/testutil"
	"github.com/rocketraft/rocketraft/protocol"
	"github.com/rocketraft/rocketraft/remoting"
)

type tWriter struct{ t *testing.T }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func testLogger(t *testing.T) *slog.Logger {
	var w io.Writer = tWriter{t}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

func testConfig(t *testing.T) Config {
	cfg := DefaultConfig()
	cfg.ListenAddr = "127.0.0.1"
	cfg.ListenPort = 0
	cfg.MetricsPort = 0
	cfg.RocketmqHome = t.TempDir()
	cfg.KvConfigPath = filepath.Join(cfg.RocketmqHome, "namesrv", "kvConfig.json")
	cfg.ClientRequestThreadPoolNums = 2
	cfg.DefaultThreadPoolNums = 2
	return cfg
}

// startNamesrv starts a name server on a free port; closed at cleanup.
func startNamesrv(t *testing.T, cfg Config) *Server {
	t.Helper()
	s, err := New(cfg, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// fixture is a name server and a remoting client talking to it.
type fixture struct {
	t    *testing.T
	ns   *Server
	addr string
	cl   *remoting.Client
}

func newFixture(t *testing.T, mutate func(*Config)) *fixture {
	cfg := testConfig(t)
	if mutate != nil {
		mutate(&cfg)
	}
	ns := startNamesrv(t, cfg)
	cl := remoting.NewClient(remoting.ClientConfig{}, testLogger(t))
	t.Cleanup(func() { _ = cl.Close() })
	return &fixture{t: t, ns: ns, addr: ns.Addr(), cl: cl}
}

func (f *fixture) call(code remoting.RequestCode, ext map[string]string, body []byte) *remoting.Command {
	f.t.Helper()
	return f.callOn(f.cl, code, ext, body)
}

func (f *fixture) callOn(cl *remoting.Client, code remoting.RequestCode, ext map[string]string,
	body []byte) *remoting.Command {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := cl.Invoke(ctx, f.addr, remoting.NewRequest(code, ext, body))
	if err != nil {
		f.t.Fatalf("%s: %v", code, err)
	}
	return resp
}

// broker describes one registration.
type broker struct {
	cluster, name, addr string
	id                  int64
	topics              map[string]*protocol.TopicConfig
	version             int64 // DataVersion counter
}

func topicsOf(names ...string) map[string]*protocol.TopicConfig {
	m := make(map[string]*protocol.TopicConfig)
	for _, n := range names {
		m[n] = &protocol.TopicConfig{TopicName: n, ReadQueueNums: 4, WriteQueueNums: 4, Perm: protocol.PermRead | protocol.PermWrite,
			TopicFilterType: "SINGLE_TAG"}
	}
	return m
}

func (b broker) header() map[string]string {
	return map[string]string{"brokerName": b.name, "brokerAddr": b.addr, "clusterName": b.cluster,
		"haServerAddr": strings.Replace(b.addr, ":10911", ":10912", 1), "brokerId": strconv.FormatInt(b.id, 10)}
}

func (b broker) body() protocol.RegisterBrokerBody {
	return protocol.RegisterBrokerBody{FilterServerList: []string{}, TopicConfigSerializeWrapper: protocol.TopicConfigSerializeWrapper{
		TopicConfigTable: b.topics, DataVersion: protocol.DataVersion{Timestamp: 1700000000000, Counter: b.version}}}
}

func (f *fixture) register(cl *remoting.Client, b broker) *remoting.Command {
	f.t.Helper()
	resp := f.registerWith(cl, b, nil)
	if resp.Code != int32(remoting.Success) {
		f.t.Fatalf("register %s: %v", b.addr, resp)
	}
	return resp
}

// registerWith sends b's REGISTER_BROKER with the header fields extra added, and returns the answer.
func (f *fixture) registerWith(cl *remoting.Client, b broker, extra map[string]string) *remoting.Command {
	f.t.Helper()
	body, err := json.Marshal(b.body())
	if err != nil {
		f.t.Fatal(err)
	}
	ext := b.header()
	ext["compressed"] = "false"
	ext["bodyCrc32"] = strconv.FormatUint(uint64(crc32.ChecksumIEEE(body)&0x7FFFFFFF), 10)
	maps.Copy(ext, extra)
	return f.callOn(cl, remoting.RegisterBroker, ext, body)
}

func (f *fixture) unregister(b broker) {
	f.t.Helper()
	ext := b.header()
	delete(ext, "haServerAddr")
	if resp := f.call(remoting.UnregisterBroker, ext, nil); resp.Code != int32(remoting.Success) {
		f.t.Fatalf("unregister %s: %v", b.addr, resp)
	}
}

// route asks for a topic's route; ok is false on TOPIC_NOT_EXIST.
func (f *fixture) route(topic string) (protocol.TopicRouteData, string, bool) {
	f.t.Helper()
	resp := f.call(remoting.GetRouteInfoByTopic, map[string]string{"topic": topic}, nil)
	switch resp.Code {
	case int32(remoting.TopicNotExist):
		if !strings.Contains(resp.Remark, topic) {
			f.t.Fatalf("TOPIC_NOT_EXIST remark %q does not name the topic", resp.Remark)
		}
		return protocol.TopicRouteData{}, "", false
	case int32(remoting.Success):
		var r protocol.TopicRouteData
		if err := json.Unmarshal(resp.Body, &r); err != nil {
			f.t.Fatalf("route body %s: %v", resp.Body, err)
		}
		return r, string(resp.Body), true
	}
	f.t.Fatalf("route of %s: %v", topic, resp)
	return protocol.TopicRouteData{}, "", false
}

// waitFor is testutil.WaitFor with this package's deadline.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	testutil.WaitFor(t, 10*time.Second, what, cond)
}

var brokerA = broker{cluster: "DefaultCluster", name: "broker-a", addr: "10.0.0.5:10911", topics: topicsOf("TopicTest", "TBW102"), version: 1}

func TestRegisterRouteUnregister(t *testing.T) {
	f := newFixture(t, nil)
	if resp := f.register(f.cl, brokerA); len(resp.ExtFields) != 0 {
		t.Fatalf("a master's registration answered ext %v", resp.ExtFields)
	}
	r, raw, ok := f.route("TopicTest")
	if !ok {
		t.Fatal("no route after registration")
	}
	want := `{"queueDatas":[{"brokerName":"broker-a","readQueueNums":4,"writeQueueNums":4,"perm":6,"topicSysFlag":0}],` +
		`"brokerDatas":[{"cluster":"DefaultCluster","brokerName":"broker-a","brokerAddrs":{"0":"10.0.0.5:10911"}}],` +
		`"filterServerTable":{}}`
	if raw != want {
		t.Fatalf("route body\n%s\nwant\n%s", raw, want)
	}
	if len(r.BrokerDatas) != 1 {
		t.Fatal(r)
	}
	if _, _, ok := f.route("Unknown"); ok {
		t.Fatal("route of an unknown topic")
	}
	f.unregister(brokerA)
	if _, _, ok := f.route("TopicTest"); ok {
		t.Fatal("route after unregistration")
	}
	var ci protocol.ClusterInfo
	resp := f.call(remoting.GetBrokerClusterInfo, nil, nil)
	if err := json.Unmarshal(resp.Body, &ci); err != nil || len(ci.BrokerAddrTable) != 0 || len(ci.ClusterAddrTable) != 0 {
		t.Fatalf("cluster info after unregistration: %s %v", resp.Body, err)
	}
}

func TestRegisterErrors(t *testing.T) {
	f := newFixture(t, nil)
	ext := brokerA.header()
	delete(ext, "brokerName")
	resp := f.call(remoting.RegisterBroker, ext, nil)
	if resp.Code != int32(remoting.InvalidParameter) || !strings.Contains(resp.Remark, "missing header field brokerName") {
		t.Fatalf("missing brokerName: %v", resp)
	}
	ext = brokerA.header()
	ext["bodyCrc32"] = "12345"
	resp = f.call(remoting.RegisterBroker, ext, []byte(`{}`))
	if resp.Code != int32(remoting.SystemError) || resp.Remark != "crc32 not match" {
		t.Fatalf("bad crc: %v", resp)
	}
	ext = brokerA.header()
	resp = f.call(remoting.RegisterBroker, ext, []byte(`{not json`))
	if resp.Code != int32(remoting.SystemError) || !strings.Contains(resp.Remark, "RegisterBrokerBody") {
		t.Fatalf("bad body: %v", resp)
	}
	if f.ns.Routes().BrokerCount() != 0 {
		t.Fatal("a failed registration registered")
	}
}

func TestCompressedRegistration(t *testing.T) {
	f := newFixture(t, nil)
	body, err := protocol.EncodeRegisterBrokerBodyCompressed(brokerA.body())
	if err != nil {
		t.Fatal(err)
	}
	ext := brokerA.header()
	ext["compressed"] = "true"
	ext["bodyCrc32"] = strconv.FormatUint(uint64(crc32.ChecksumIEEE(body)&0x7FFFFFFF), 10)
	if resp := f.call(remoting.RegisterBroker, ext, body); resp.Code != int32(remoting.Success) {
		t.Fatal(resp)
	}
	r, _, ok := f.route("TopicTest")
	if !ok || r.QueueDatas[0].WriteQueueNums != 4 || r.QueueDatas[0].Perm != 6 {
		t.Fatalf("route after a compressed registration: %+v", r)
	}
}

func TestBrokerExpires(t *testing.T) {
	f := newFixture(t, func(c *Config) {
		c.ScanNotActiveBrokerInterval = 20
		c.BrokerChannelExpiredTime = 200
	})
	// The name server closes the connection an expired broker registered on: register on a connection of its own.
	brokerSide := remoting.NewClient(remoting.ClientConfig{}, testLogger(t))
	defer brokerSide.Close()
	f.register(brokerSide, brokerA)
	if _, _, ok := f.route("TopicTest"); !ok {
		t.Fatal("no route after registration")
	}
	waitFor(t, "the silent broker to expire", func() bool { return f.ns.Routes().BrokerCount() == 0 })
	if _, _, ok := f.route("TopicTest"); ok {
		t.Fatal("route of an expired broker")
	}

}

func TestClosedConnectionRemovesBroker(t *testing.T) {
	f := newFixture(t, nil)
	brokerSide := remoting.NewClient(remoting.ClientConfig{}, testLogger(t))
	defer brokerSide.Close()
	f.register(brokerSide, brokerA)
	f.register(f.cl, broker{cluster: "c2", name: "broker-b", addr: "10.0.0.6:10911", topics: topicsOf("TopicTest")})
	brokerSide.CloseAddr(f.addr)
	waitFor(t, "the broker of the closed connection to leave", func() bool { return f.ns.Routes().BrokerCount() == 1 })
	r, _, ok := f.route("TopicTest")
	if !ok || len(r.QueueDatas) != 1 || r.QueueDatas[0].BrokerName != "broker-b" {
		t.Fatalf("route after broker-a's connection closed: %+v", r)
	}
}

func TestMasterAndSlave(t *testing.T) {
	f := newFixture(t, nil)
	master := brokerA
	slave := broker{cluster: master.cluster, name: master.name, addr: "10.0.0.6:10911", id: 1,
		topics: topicsOf("TopicTest", "OnlyOnSlave"), version: 7}
	f.register(f.cl, master)
	resp := f.register(f.cl, slave)
	if resp.ExtFields["masterAddr"] != master.addr || resp.ExtFields["haServerAddr"] != "10.0.0.5:10912" {
		t.Fatalf("slave's registration answered %v", resp.ExtFields)
	}
	_, raw, _ := f.route("TopicTest")
	if !strings.Contains(raw, `"brokerAddrs":{"0":"10.0.0.5:10911","1":"10.0.0.6:10911"}`) {
		t.Fatalf("route with master and slave: %s", raw)
	}
	if _, _, ok := f.route("OnlyOnSlave"); ok {
		t.Fatal("a slave's topic table was taken")
	}
	// The master goes: consumers may still read from the slave, producers find no master.
	f.unregister(master)
	r, raw, ok := f.route("TopicTest")
	if !ok || len(r.QueueDatas) != 1 || !strings.Contains(raw, `"brokerAddrs":{"1":"10.0.0.6:10911"}`) {
		t.Fatalf("route with the slave only: %s", raw)
	}
	f.unregister(slave)
	if _, _, ok := f.route("TopicTest"); ok {
		t.Fatal("route after the last address of broker-a left")
	}
	// A slave promoted to master under id 0 replaces its id-1 entry.
	f.register(f.cl, slave)
	promoted := slave
	promoted.id = 0
	f.register(f.cl, promoted)
	_, raw, ok = f.route("OnlyOnSlave")
	if !ok || !strings.Contains(raw, `"brokerAddrs":{"0":"10.0.0.6:10911"}`) {
		t.Fatalf("route after promotion: %s", raw)
	}
}

func TestDataVersionGatesTopicTable(t *testing.T) {
	f := newFixture(t, nil)
	b := brokerA
	f.register(f.cl, b)
	// Same data version: the topics the broker name lacks are added (RocketMQ's isTopicConfigChanged: how
	// the chunks of a split registration are applied), the others are not re-read.
	b.topics = topicsOf("TopicTest", "TBW102", "Later")
	b.topics["TopicTest"].WriteQueueNums = 8
	f.register(f.cl, b)
	if _, _, ok := f.route("Later"); !ok {
		t.Fatal("a topic the broker lacked was not added at the same data version")
	}
	if r, _, _ := f.route("TopicTest"); r.QueueDatas[0].WriteQueueNums != 4 {
		t.Fatalf("a known topic's table was re-read at the same data version: %+v", r.QueueDatas)
	}
	dv, _ := json.Marshal(b.body().TopicConfigSerializeWrapper.DataVersion)
	resp := f.call(remoting.QueryDataVersion, b.header(), dv)
	if resp.ExtFields["changed"] != "false" {
		t.Fatalf("QUERY_DATA_VERSION with the registered version: %v", resp)
	}
	b.version++
	dv, _ = json.Marshal(b.body().TopicConfigSerializeWrapper.DataVersion)
	if resp = f.call(remoting.QueryDataVersion, b.header(), dv); resp.ExtFields["changed"] != "true" {
		t.Fatalf("QUERY_DATA_VERSION with a new version: %v", resp)
	}
	f.register(f.cl, b)
	if r, _, _ := f.route("TopicTest"); r.QueueDatas[0].WriteQueueNums != 8 {
		t.Fatalf("a new data version's table was not read: %+v", r.QueueDatas)
	}
}

func TestClusterInfoAndTopicLists(t *testing.T) {
	f := newFixture(t, nil)
	f.register(f.cl, brokerA)
	f.register(f.cl, broker{cluster: "c2", name: "broker-b", addr: "10.0.0.6:10911", topics: topicsOf("TopicTest", "B")})
	var ci protocol.ClusterInfo
	if err := json.Unmarshal(f.call(remoting.GetBrokerClusterInfo, nil, nil).Body, &ci); err != nil {
		t.Fatal(err)
	}
	if ci.BrokerAddrTable["broker-b"].BrokerAddrs[0] != "10.0.0.6:10911" || ci.BrokerAddrTable["broker-a"].Cluster != "DefaultCluster" ||
		strings.Join(ci.ClusterAddrTable["c2"], ",") != "broker-b" {
		t.Fatalf("cluster info %+v", ci)
	}
	list := func(code remoting.RequestCode, ext map[string]string) string {
		var tl protocol.TopicList
		if err := json.Unmarshal(f.call(code, ext, nil).Body, &tl); err != nil {
			t.Fatal(err)
		}
		return strings.Join(tl.TopicList, ",")
	}
	if got := list(remoting.GetAllTopicListFromNameServer, nil); got != "B,TBW102,TopicTest" {
		t.Fatalf("all topics %s", got)
	}
	if got := list(remoting.GetTopicsByCluster, map[string]string{"cluster": "c2"}); got != "B,TopicTest" {
		t.Fatalf("topics of c2 %s", got)
	}
	if got := list(remoting.GetSystemTopicListFromNs, nil); got != "DefaultCluster,broker-a,broker-b,c2" {
		t.Fatalf("system topics %s", got)
	}
	resp := f.call(remoting.WipeWritePermOfBroker, map[string]string{"brokerName": "broker-a"}, nil)
	if resp.ExtFields["wipeTopicCount"] != "2" {
		t.Fatalf("wipe write perm: %v", resp)
	}
	if r, _, _ := f.route("TBW102"); r.QueueDatas[0].Perm != protocol.PermRead {
		t.Fatalf("perm after wipe %d", r.QueueDatas[0].Perm)
	}
}

func TestDeleteTopic(t *testing.T) {
	f := newFixture(t, nil)
	f.register(f.cl, brokerA)
	f.register(f.cl, broker{cluster: "c2", name: "broker-b", addr: "10.0.0.6:10911", topics: topicsOf("TopicTest")})
	f.call(remoting.DeleteTopicInNamesrv, map[string]string{"topic": "TopicTest", "clusterName": "c2"}, nil)
	r, _, ok := f.route("TopicTest")
	if !ok || len(r.QueueDatas) != 1 || r.QueueDatas[0].BrokerName != "broker-a" {
		t.Fatalf("after deleting in c2: %+v", r)
	}
	f.call(remoting.DeleteTopicInNamesrv, map[string]string{"topic": "TopicTest"}, nil)
	if _, _, ok := f.route("TopicTest"); ok {
		t.Fatal("route after deletion")
	}
	if resp := f.call(remoting.DeleteTopicInNamesrv, nil, nil); resp.Code != int32(remoting.InvalidParameter) {
		t.Fatalf("delete without topic: %v", resp)
	}
}

func TestKVConfig(t *testing.T) {
	cfg := testConfig(t)
	f := newFixture(t, func(c *Config) { *c = cfg })
	kv := func(code remoting.RequestCode, ns, key, value string) *remoting.Command {
		ext := map[string]string{"namespace": ns, "key": key}
		if value != "" {
			ext["value"] = value
		}
		return f.call(code, ext, nil)
	}
	if resp := kv(remoting.PutKVConfig, "ORDER_TOPIC_CONFIG", "TopicTest", "broker-a:4"); resp.Code != int32(remoting.Success) {
		t.Fatal(resp)
	}
	kv(remoting.PutKVConfig, "ns", "k2", "v2")
	if resp := kv(remoting.GetKVConfig, "ns", "k2", ""); resp.ExtFields["value"] != "v2" {
		t.Fatalf("get: %v", resp)
	}
	if resp := kv(remoting.GetKVConfig, "ns", "nope", ""); resp.Code != int32(remoting.QueryNotFound) {
		t.Fatalf("get of a missing key: %v", resp)
	}
	resp := f.call(remoting.GetKVListByNamespace, map[string]string{"namespace": "ORDER_TOPIC_CONFIG"}, nil)
	if string(resp.Body) != `{"table":{"TopicTest":"broker-a:4"}}` {
		t.Fatalf("list: %v %s", resp, resp.Body)
	}
	// The order-topic table goes back to brokers on registration.
	if resp := f.register(f.cl, brokerA); string(resp.Body) != `{"table":{"TopicTest":"broker-a:4"}}` {
		t.Fatalf("registration body %s", resp.Body)
	}
	kv(remoting.DeleteKVConfig, "ns", "k2", "")
	if resp := kv(remoting.GetKVConfig, "ns", "k2", ""); resp.Code != int32(remoting.QueryNotFound) {
		t.Fatalf("get after delete: %v", resp)
	}
	data, err := os.ReadFile(cfg.KvConfigPath)
	if err != nil || !strings.Contains(string(data), `"configTable"`) || !strings.Contains(string(data), "broker-a:4") {
		t.Fatalf("kvConfig.json: %s %v", data, err)
	}
	// A new name server on the same file has the settings.
	_ = f.ns.Close()
	again, err := New(cfg, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if v, ok := again.KV().Get("ORDER_TOPIC_CONFIG", "TopicTest"); !ok || v != "broker-a:4" {
		t.Fatalf("reloaded KV %q %v", v, ok)
	}
}

func TestTwoNameServersSideBySide(t *testing.T) {
	f1, f2 := newFixture(t, nil), newFixture(t, nil)
	f1.register(f1.cl, brokerA)
	f2.register(f2.cl, brokerA)
	_ = f1.ns.Close()
	if _, _, ok := f2.route("TopicTest"); !ok {
		t.Fatal("the second name server lost the route when the first stopped")
	}
}

func TestConfigValidate(t *testing.T) {
	cfg := DefaultConfig()
	cfg.ListenPort = 70000
	cfg.ScanNotActiveBrokerInterval = 0
	cfg.ListenAddr = "nowhere"
	err := cfg.Validate()
	for _, key := range []string{"listenPort", "scanNotActiveBrokerInterval", "bindAddress"} {
		if err == nil || !strings.Contains(err.Error(), "config key "+key) {
			t.Errorf("error %v does not name %s", err, key)
		}
	}
	if _, err := New(cfg, nil); err == nil {
		t.Fatal("New accepted a bad config")
	}
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatal(err)
	}
}
