package namesrv

import (
	"context"
	"encoding/json"
	"hash/crc32"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rocketraft/rocketraft/internal/metrics"
	"github.com/rocketraft/rocketraft/remoting"
)

const testACL = `accounts:
  - accessKey: adminAccount
    secretKey: adminSecret1
    admin: true
  - accessKey: brokerAccount
    secretKey: brokerSecret1
  - accessKey: clientAccount
    secretKey: clientSecret1
    defaultTopicPerm: PUB|SUB
`

// aclFixture is a name server with aclEnable and testACL (brokerAccount in aclBrokerAccessKeys), changed
// further by more.
func aclFixture(t *testing.T, more ...func(*Config)) *fixture {
	t.Helper()
	return newFixture(t, func(c *Config) {
		path := filepath.Join(c.RocketmqHome, "conf", "plain_acl.yml")
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(testACL), 0o600); err != nil {
			t.Fatal(err)
		}
		c.ACL.AclEnable = true
		c.ACL.AclBrokerAccessKeys = "brokerAccount"
		for _, m := range more {
			m(c)
		}
	})
}

func signedClient(t *testing.T, ak, sk string) *remoting.Client {
	cl := remoting.NewClient(remoting.ClientConfig{Credentials: remoting.Credentials{AccessKey: ak, SecretKey: remoting.Secret(sk)}}, testLogger(t))
	t.Cleanup(func() { _ = cl.Close() })
	return cl
}

// registerCmd is a REGISTER_BROKER of b as a broker sends it.
func registerCmd(t *testing.T, b broker) (map[string]string, []byte) {
	body, err := json.Marshal(b.body())
	if err != nil {
		t.Fatal(err)
	}
	ext := b.header()
	ext["compressed"] = "false"
	ext["bodyCrc32"] = strconv.FormatUint(uint64(crc32.ChecksumIEEE(body)&0x7FFFFFFF), 10)
	return ext, body
}

// TestACLGuardsWrites: with aclEnable a forged REGISTER_BROKER (unsigned, signed by a client account, or
// with a bad signature) and every other write without an admin signature are refused with NO_PERMISSION and
// change nothing; the broker account's registration and the admin's writes work; reads stay open.
func TestACLGuardsWrites(t *testing.T) {
	f := aclFixture(t)
	brokerCl := signedClient(t, "brokerAccount", "brokerSecret1")
	f.register(brokerCl, brokerA)
	_, before, ok := f.route("TopicTest") // unsigned read: open
	if !ok {
		t.Fatal("no route after the broker account's registration")
	}

	forged := brokerA
	forged.addr = "6.6.6.6:10911"
	forged.version = 99
	forged.topics = topicsOf("TopicTest", "Evil")
	ext, body := registerCmd(t, forged)
	refused := func(what string, resp *remoting.Command) {
		t.Helper()
		if resp.Code != int32(remoting.NoPermission) {
			t.Errorf("%s: got %s %q, want NO_PERMISSION", what, remoting.ResponseCode(resp.Code), resp.Remark)
		}
	}
	refused("unsigned register", f.call(remoting.RegisterBroker, ext, body))
	refused("register by a client account", f.callOn(signedClient(t, "clientAccount", "clientSecret1"), remoting.RegisterBroker, ext, body))
	refused("register with a wrong secret", f.callOn(signedClient(t, "brokerAccount", "guessed-secret"), remoting.RegisterBroker, ext, body))
	refused("register by an unknown account", f.callOn(signedClient(t, "nobody123", "whatever1"), remoting.RegisterBroker, ext, body))
	// A request signed, then changed on the way (the address swapped): the signature no longer matches.
	tampered := remoting.NewRequest(remoting.RegisterBroker, ext, body)
	remoting.SignRequest(tampered, "brokerAccount", "brokerSecret1")
	tampered.ExtFields["brokerAddr"] = "7.7.7.7:10911"
	if resp, err := f.cl.Invoke(t.Context(), f.addr, tampered); err != nil || resp.Code != int32(remoting.NoPermission) {
		t.Errorf("tampered register: %v %v", resp, err)
	}

	del := map[string]string{"topic": "TopicTest"}
	refused("unsigned delete topic", f.call(remoting.DeleteTopicInNamesrv, del, nil))
	refused("delete topic by the broker account", f.callOn(brokerCl, remoting.DeleteTopicInNamesrv, del, nil))
	refused("unsigned unregister", f.call(remoting.UnregisterBroker, map[string]string{"brokerName": "broker-a",
		"brokerAddr": brokerA.addr, "clusterName": brokerA.cluster, "brokerId": "0"}, nil))
	refused("unsigned wipe write perm", f.call(remoting.WipeWritePermOfBroker, map[string]string{"brokerName": "broker-a"}, nil))
	refused("unsigned put KV", f.call(remoting.PutKVConfig, map[string]string{"namespace": "ORDER_TOPIC_CONFIG", "key": "TopicTest", "value": "x"}, nil))
	refused("unsigned delete KV", f.call(remoting.DeleteKVConfig, map[string]string{"namespace": "ORDER_TOPIC_CONFIG", "key": "TopicTest"}, nil))
	refused("unsigned config update", f.call(remoting.UpdateNamesrvConfig, nil, []byte("orderMessageEnable=true\n")))
	refused("config update by the broker account", f.callOn(brokerCl, remoting.UpdateNamesrvConfig, nil, []byte("orderMessageEnable=true\n")))
	refused("unsigned query data version (refreshes the broker's liveness)", f.call(remoting.QueryDataVersion,
		map[string]string{"brokerAddr": brokerA.addr, "brokerName": "broker-a", "clusterName": brokerA.cluster, "brokerId": "0"}, nil))
	if resp := f.callOn(brokerCl, remoting.QueryDataVersion, map[string]string{"brokerAddr": brokerA.addr,
		"brokerName": "broker-a", "clusterName": brokerA.cluster, "brokerId": "0"}, nil); resp.Code != int32(remoting.Success) {
		t.Errorf("query data version by the broker account: %s %q", remoting.ResponseCode(resp.Code), resp.Remark)
	}
	hb := map[string]string{"brokerAddr": brokerA.addr, "brokerName": "broker-a", "clusterName": brokerA.cluster}
	refused("unsigned broker heartbeat (refreshes the broker's liveness)", f.call(remoting.BrokerHeartbeat, hb, nil))
	if resp := f.callOn(brokerCl, remoting.BrokerHeartbeat, hb, nil); resp.Code != int32(remoting.Success) {
		t.Errorf("broker heartbeat by the broker account: %s %q", remoting.ResponseCode(resp.Code), resp.Remark)
	}

	if _, after, _ := f.route("TopicTest"); after != before {
		t.Fatalf("the route changed:\nbefore %s\nafter  %s", before, after)
	}
	if _, _, ok := f.route("Evil"); ok {
		t.Fatal("the forged registration's topic has a route")
	}
	if _, ok := f.ns.KV().Get("ORDER_TOPIC_CONFIG", "TopicTest"); ok {
		t.Fatal("the unsigned KV write went through")
	}

	// The admin may delete; reads stayed open throughout.
	admin := signedClient(t, "adminAccount", "adminSecret1")
	if resp := f.callOn(admin, remoting.DeleteTopicInNamesrv, del, nil); resp.Code != int32(remoting.Success) {
		t.Fatalf("admin delete topic: %v", resp)
	}
	if _, _, ok := f.route("TopicTest"); ok {
		t.Fatal("route after the admin's deletion")
	}
}

// TestACLHoldsWithMetricsOn (issue 37): with the Prometheus endpoint on, the ACL still refuses a forged
// REGISTER_BROKER, and the request counter still counts what the ACL lets through, not what it refuses.
// Before the fix the counter took the ACL's place and the forged registration was answered SUCCESS.
func TestACLHoldsWithMetricsOn(t *testing.T) {
	f := aclFixture(t, func(c *Config) { c.MetricsExporterType, c.MetricsPromExporterPort = "PROM", 0 })
	forged := brokerA
	forged.topics = topicsOf("Evil")
	if resp := f.registerWith(f.cl, forged, nil); resp.Code != int32(remoting.NoPermission) {
		t.Fatalf("unsigned register with metrics on: %s %q, want NO_PERMISSION", remoting.ResponseCode(resp.Code), resp.Remark)
	}
	f.register(signedClient(t, "brokerAccount", "brokerSecret1"), brokerA)
	if _, _, ok := f.route("Evil"); ok {
		t.Fatal("the refused registration's topic has a route")
	}
	fams, err := metrics.Scrape(context.Background(), f.ns.MetricsAddr())
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := fams.Value("rocketmq_namesrv_requests_total", "request", "REGISTER_BROKER"); v != 1 {
		t.Errorf("REGISTER_BROKER counted %v times, want 1 (the signed one)", v)
	}
	if v, _ := fams.Value("rocketmq_namesrv_requests_total", "request", "GET_ROUTEINFO_BY_TOPIC"); v != 1 {
		t.Errorf("GET_ROUTEINFO_BY_TOPIC counted %v times, want 1", v)
	}
}

func TestACLConfigErrorsNameTheKey(t *testing.T) {
	cfg := testConfig(t)
	cfg.ACL.AclEnable = true
	if _, err := New(cfg, nil); err == nil || !strings.Contains(err.Error(), "aclFile") {
		t.Fatalf("aclEnable without a file: %v", err)
	}
	cfg.ACL.AclFile = ""
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "config key aclFile") {
		t.Fatalf("aclEnable with an empty aclFile: %v", err)
	}
}
