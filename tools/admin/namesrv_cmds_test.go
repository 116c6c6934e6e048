package admin

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/rocketraft/rocketraft/app/cluster"
	"github.com/rocketraft/rocketraft/client"
	"github.com/rocketraft/rocketraft/message"
	"github.com/rocketraft/rocketraft/protocol"
	"github.com/rocketraft/rocketraft/remoting"
)

// brokersOfSends sends n messages with a fresh official Go producer (so it reads the route now) and counts
// the broker names they were stored on.
func brokersOfSends(t *testing.T, c *cluster.Cluster, topic string, n int) map[string]int {
	t.Helper()
	p := startProducer(t, c, "PG_"+instance("perm"))
	got := map[string]int{}
	for i := range n {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		res, err := p.SendSync(ctx, primitive.NewMessage(topic, []byte("m")))
		cancel()
		if err != nil || res.Status != primitive.SendOK {
			t.Fatalf("send %d: %v %v", i, res, err)
		}
		got[res.MessageQueue.BrokerName]++
	}
	_ = p.Shutdown()
	return got
}

// queuePerm is the perm of brokerName's queues of topic at the name server ns.
func queuePerm(t *testing.T, cl *client.Client, ns, topic, brokerName string) int32 {
	t.Helper()
	route, err := cl.RouteAt(context.Background(), ns, topic)
	if err != nil {
		t.Fatal(err)
	}
	for _, qd := range route.QueueDatas {
		if qd.BrokerName == brokerName {
			return qd.Perm
		}
	}
	t.Fatalf("%s routes no queue of %s on %s", ns, topic, brokerName)
	return 0
}

// directSend stores one message on queue 0 of topic at the broker at addr, without asking the route.
func directSend(cl *client.Client, addr, brokerName, topic string) error {
	_, err := cl.SendMessage(context.Background(), addr, &client.Send{Group: "PG_direct", Topic: topic, BrokerName: brokerName,
		Properties: message.EncodeProperties(map[string]string{message.PropertyUniqKey: client.NewUniqID()}), Body: []byte("direct")})
	return err
}

// TestWritePermCommands drains a broker the RocketMQ way and opens it again. wipeWritePerm takes the write
// permission off broker-a's queues at every name server: a producer that reads the route then sends only to
// broker-b. The broker itself is not told (RocketMQ's name server does not tell it either), so a send made
// straight to it still succeeds; to refuse sends at the broker, updateTopicPerm (or brokerPermission) does it,
// answered NO_PERMISSION. addWritePerm and updateTopicPerm -p 6 open it again.
func TestWritePermCommands(t *testing.T) {
	c := cluster.Start(t, cluster.Options{NameServers: 2, Brokers: 2})
	ns, nss := c.NamesrvAddr(), c.NamesrvAddrs()
	addrA := c.Broker(0).Addr()
	const topic = "TopicDrain"
	ok(t, "updateTopic", "-n", ns, "-c", "DefaultCluster", "-t", topic, "-r", "2", "-w", "2")
	c.WaitTopicRoute(topic)
	cl := client.New(client.Config{Namesrvs: nss, Timeout: 5 * time.Second})
	defer cl.Close()

	out := ok(t, "wipeWritePerm", "-n", ns, "-b", "broker-a")
	for _, a := range nss {
		contains(t, out, "wipe write perm of broker[broker-a] in name server["+a+"] OK, ")
		if p := queuePerm(t, cl, a, topic, "broker-a"); p != protocol.PermRead {
			t.Fatalf("perm of broker-a at %s after wipeWritePerm: %d", a, p)
		}
	}
	if got := brokersOfSends(t, c, topic, 12); got["broker-a"] != 0 || got["broker-b"] != 12 {
		t.Fatalf("sends after wipeWritePerm landed on %v, want all on broker-b", got)
	}
	if err := directSend(cl, addrA, "broker-a", topic); err != nil {
		t.Fatalf("a send straight to the wiped broker (the broker is not told, as in RocketMQ): %v", err)
	}

	var res writePermResult
	okJSON(t, &res, "addWritePerm", "-n", ns, "-b", "broker-a")
	if len(res.Rows) != 2 || res.Rows[0].Topics == 0 || res.Rows[1].Failed != "" {
		t.Fatalf("addWritePerm --json: %+v", res)
	}
	if p := queuePerm(t, cl, nss[1], topic, "broker-a"); p != protocol.PermRead|protocol.PermWrite {
		t.Fatalf("perm of broker-a after addWritePerm: %d", p)
	}
	if got := brokersOfSends(t, c, topic, 12); got["broker-a"] == 0 {
		t.Fatalf("sends after addWritePerm landed on %v, want some on broker-a", got)
	}

	// updateTopicPerm changes the broker's own topic config: the broker refuses the send.
	out = ok(t, "updateTopicPerm", "-n", ns, "-b", addrA, "-t", topic, "-p", "4")
	contains(t, out, "update topic perm from 6 to 4 in "+addrA+" success.", "perm=R--")
	err := directSend(cl, addrA, "broker-a", topic)
	if !client.HasCode(err, remoting.NoPermission) || !strings.Contains(err.Error(), "not writable") {
		t.Fatalf("send after updateTopicPerm -p 4: %v", err)
	}
	eventually(t, 5*time.Second, func() string {
		if p := queuePerm(t, cl, nss[0], topic, "broker-a"); p != protocol.PermRead {
			return fmt.Sprintf("the route still has perm %d", p)
		}
		return ""
	})
	contains(t, ok(t, "updateTopicPerm", "-n", ns, "-b", addrA, "-t", topic, "-p", "4"), "new perm equals to the old one!")
	out = ok(t, "updateTopicPerm", "-n", ns, "-c", "DefaultCluster", "-t", topic, "-p", "6")
	contains(t, out, "update topic perm from 4 to 6 in "+addrA+" success.", "to 6 in "+c.Broker(1).Addr()+" success.")
	if err := directSend(cl, addrA, "broker-a", topic); err != nil {
		t.Fatalf("send after updateTopicPerm -p 6: %v", err)
	}
	failing(t, ExitBadArgs, []string{"-p (--perm) 9 is not 2, 4 or 6"}, "updateTopicPerm", "-n", ns, "-b", addrA, "-t", topic, "-p", "9")
	failing(t, ExitFailed, []string{"no master at 127.0.0.1:1 serves topic"}, "updateTopicPerm", "-n", ns, "-b", "127.0.0.1:1", "-t", topic, "-p", "6")
	failing(t, ExitFailed, []string{"WIPE_WRITE_PERM_OF_BROKER"}, "wipeWritePerm", "-n", "127.0.0.1:1", "-b", "broker-a")

	contains(t, ok(t, "topicClusterList", "-n", ns, "-t", topic), "DefaultCluster\n")
	failing(t, ExitFailed, []string{"NoSuchTopic"}, "topicClusterList", "-n", ns, "-t", "NoSuchTopic")
}

// TestNamesrvConfigAndKVCommands: getNamesrvConfig shows every name server's keys; updateNamesrvConfig changes
// a reloadable key on each (orderMessageEnable makes routes carry updateOrderConf's layout; enableAllTopicList
// off refuses topicList) and refuses other keys naming them; updateKvConfig and deleteKvConfig reach every
// name server.
func TestNamesrvConfigAndKVCommands(t *testing.T) {
	c := cluster.Start(t, cluster.Options{NameServers: 2})
	ns, nss := c.NamesrvAddr(), c.NamesrvAddrs()
	const topic = "TopicOrderConf"
	ok(t, "updateTopic", "-n", ns, "-c", "DefaultCluster", "-t", topic, "-r", "2", "-w", "2")
	c.WaitTopicRoute(topic)
	cl := client.New(client.Config{Namesrvs: nss, Timeout: 5 * time.Second})
	defer cl.Close()

	out := ok(t, "getNamesrvConfig", "-n", ns)
	contains(t, out, "============"+nss[0]+"============", "============"+nss[1]+"============", "kvConfigPath")
	var cfg namesrvConfigResult
	okJSON(t, &cfg, "getNamesrvConfig", "-n", ns)
	if len(cfg.Namesrvs) != 2 || cfg.Namesrvs[1].Table["orderMessageEnable"] != "false" {
		t.Fatalf("getNamesrvConfig --json: %+v", cfg)
	}

	out = ok(t, "updateOrderConf", "-n", ns, "-t", topic, "-m", "put", "-v", "broker-a:2")
	contains(t, out, "update orderConf success. topic=[TopicOrderConf], orderConf=[broker-a:2]")
	contains(t, ok(t, "updateOrderConf", "-n", ns, "-t", topic, "-m", "get"), "orderConf=[broker-a:2]")
	if r, _ := cl.RouteAt(context.Background(), nss[1], topic); r.OrderTopicConf != "" {
		t.Fatalf("orderTopicConf %q with orderMessageEnable off", r.OrderTopicConf)
	}
	out = ok(t, "updateNamesrvConfig", "-n", ns, "-k", "orderMessageEnable", "-v", "true")
	contains(t, out, "update name server config success![", "orderMessageEnable : true")
	okJSON(t, &cfg, "getNamesrvConfig", "-n", ns)
	if cfg.Namesrvs[0].Table["orderMessageEnable"] != "true" || cfg.Namesrvs[1].Table["orderMessageEnable"] != "true" {
		t.Fatalf("after updateNamesrvConfig: %+v", cfg)
	}
	for _, a := range nss {
		if r, err := cl.RouteAt(context.Background(), a, topic); err != nil || r.OrderTopicConf != "broker-a:2" {
			t.Fatalf("route at %s with orderMessageEnable on: %+v, %v", a, r, err)
		}
	}
	contains(t, ok(t, "updateOrderConf", "-n", ns, "-t", topic, "-m", "delete"), "delete orderConf success. topic=[TopicOrderConf]")
	contains(t, ok(t, "updateOrderConf", "-n", ns, "-t", topic, "-m", "get"), "orderConf=[null]")
	if r, _ := cl.RouteAt(context.Background(), nss[0], topic); r.OrderTopicConf != "" {
		t.Fatalf("orderTopicConf %q after delete", r.OrderTopicConf)
	}
	failing(t, ExitBadArgs, []string{`"broker-a" is not brokerName:queueNums`}, "updateOrderConf", "-n", ns, "-t", topic, "-m", "put", "-v", "broker-a")
	failing(t, ExitBadArgs, []string{"please set orderConf with option -v"}, "updateOrderConf", "-n", ns, "-t", topic, "-m", "put")
	failing(t, ExitBadArgs, []string{`-m (--method) "list" is not put, get or delete`}, "updateOrderConf", "-n", ns, "-t", topic, "-m", "list")

	ok(t, "updateNamesrvConfig", "-n", ns, "-k", "enableAllTopicList", "-v", "false")
	failing(t, ExitFailed, []string{"GET_ALL_TOPIC_LIST_FROM_NAMESERVER"}, "topicList", "-n", ns)
	ok(t, "updateNamesrvConfig", "-n", ns, "-k", "enableAllTopicList", "-v", "true")
	contains(t, ok(t, "topicList", "-n", ns), topic)
	failing(t, ExitFailed, []string{"listenPort cannot change while the name server runs", "reloadable: deleteTopicWithBrokerRegistration"},
		"updateNamesrvConfig", "-n", ns, "-k", "listenPort", "-v", "1")
	failing(t, ExitFailed, []string{"raftMasterHoldMillis", "must not be negative"}, "updateNamesrvConfig", "-n", ns, "-k", "raftMasterHoldMillis", "-v", "-5")
	failing(t, ExitFailed, []string{"unknown config key noSuchKey"}, "updateNamesrvConfig", "-n", ns, "-k", "noSuchKey", "-v", "1")

	contains(t, ok(t, "updateKvConfig", "-n", ns, "-s", "NS_TEST", "-k", "k1", "-v", "v1"), "create or update kv config to namespace success.")
	for _, a := range nss {
		if v, found, err := cl.KVConfig(context.Background(), a, "NS_TEST", "k1"); err != nil || !found || v != "v1" {
			t.Fatalf("KV at %s: %q %t %v", a, v, found, err)
		}
	}
	contains(t, ok(t, "deleteKvConfig", "-n", ns, "-s", "NS_TEST", "-k", "k1"), "delete kv config from namespace success.")
	for _, a := range nss {
		if _, found, err := cl.KVConfig(context.Background(), a, "NS_TEST", "k1"); err != nil || found {
			t.Fatalf("KV at %s after delete: %t %v", a, found, err)
		}
	}
}
