package broker_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rocketraft/rocketraft/app/cluster"
	"github.com/rocketraft/rocketraft/broker"
	"github.com/rocketraft/rocketraft/namesrv"
	"github.com/rocketraft/rocketraft/remoting"
)

// TestNamesrvACLBrokersRegisterForgersDoNot: with aclEnable on the name server, a broker signing with its
// own account (accessKey/secretKey, listed in aclBrokerAccessKeys) registers, re-registers and its topics
// get routes; a forged REGISTER_BROKER putting broker-a's route on another address, and an unsigned
// DELETE_TOPIC_IN_NAMESRV, are refused and the route stays as the broker made it.
func TestNamesrvACLBrokersRegisterForgersDoNot(t *testing.T) {
	c := cluster.Start(t, cluster.Options{
		ConfigureNamesrv: func(i int, cfg *namesrv.Config) {
			path := filepath.Join(cfg.RocketmqHome, "conf", "plain_acl.yml")
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			acl := "accounts:\n  - accessKey: brokerAccount\n    secretKey: brokerSecret1\n"
			if err := os.WriteFile(path, []byte(acl), 0o600); err != nil {
				t.Fatal(err)
			}
			cfg.ACL.AclEnable = true
			cfg.ACL.AclBrokerAccessKeys = "brokerAccount"
		},
		Configure: func(i int, cfg *broker.Config) {
			cfg.ACL.AccessKey = "brokerAccount"
			cfg.ACL.SecretKey = "brokerSecret1"
		},
	})
	b := c.Broker(0)
	w := newWire(t, b.Addr())
	expectCode(t, "create topic", w.call(remoting.UpdateAndCreateTopic, map[string]string{"topic": "Guarded", "readQueueNums": "4",
		"writeQueueNums": "4", "perm": "6"}, nil), remoting.Success)
	c.WaitTopicRoute("Guarded")

	cl := remoting.NewClient(remoting.ClientConfig{}, cluster.TestLogger(t, 0))
	t.Cleanup(func() { _ = cl.Close() })
	ns := c.NamesrvAddrs()[0]
	call := func(code remoting.RequestCode, ext map[string]string, body []byte) *remoting.Command {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		resp, err := cl.Invoke(ctx, ns, remoting.NewRequest(code, ext, body))
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	route := func() string {
		t.Helper()
		resp := call(remoting.GetRouteInfoByTopic, map[string]string{"topic": "Guarded"}, nil)
		if resp.Code != int32(remoting.Success) {
			t.Fatalf("route: %s %s", remoting.ResponseCode(resp.Code), resp.Remark)
		}
		return string(resp.Body)
	}
	before := route()

	ext, body := registerBrokerRequest(b.Config().BrokerClusterName, b.Config().BrokerName, "127.0.0.66:10911", "Guarded")
	expectCode(t, "forged register", call(remoting.RegisterBroker, ext, body), remoting.NoPermission)
	expectCode(t, "unsigned delete topic", call(remoting.DeleteTopicInNamesrv, map[string]string{"topic": "Guarded"}, nil), remoting.NoPermission)
	if after := route(); after != before {
		t.Fatalf("the route changed:\nbefore %s\nafter  %s", before, after)
	}
	// The broker's own registrations keep going through: a topic made now gets its route by the next one.
	expectCode(t, "create topic", w.call(remoting.UpdateAndCreateTopic, map[string]string{"topic": "Guarded2", "readQueueNums": "4",
		"writeQueueNums": "4", "perm": "6"}, nil), remoting.Success)
	c.WaitTopicRoute("Guarded2")
}
