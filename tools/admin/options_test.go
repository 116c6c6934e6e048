package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/rocketraft/rocketraft/app/cluster"
	"github.com/rocketraft/rocketraft/client"
	"github.com/rocketraft/rocketraft/message"
	"github.com/rocketraft/rocketraft/remoting"
)

// topicAttributes reads topic's attributes from the broker's topic table.
func topicAttributes(t *testing.T, cl *client.Client, addr, topic string) map[string]string {
	t.Helper()
	resp, err := cl.Call(context.Background(), addr, remoting.GetAllTopicConfig, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var w struct {
		Table map[string]struct {
			Attributes map[string]string `json:"attributes"`
		} `json:"topicConfigTable"`
	}
	if err := json.Unmarshal(resp.Body, &w); err != nil {
		t.Fatal(err)
	}
	return w.Table[topic].Attributes
}

// TestRocketMQ5Options: the options RocketMQ 5 gives these commands, each checked by its effect.
func TestRocketMQ5Options(t *testing.T) {
	c := cluster.Start(t, cluster.Options{})
	ns, addr := c.NamesrvAddr(), c.Broker(0).Addr()
	const topic, group = "TopicOpts", "GroupOpts"
	cl := client.New(client.Config{Namesrvs: c.NamesrvAddrs(), Timeout: 5 * time.Second})
	defer cl.Close()

	// updateTopic -a: attributes on create and update, RocketMQ's rules.
	ok(t, "updateTopic", "-n", ns, "-b", addr, "-t", topic, "-r", "2", "-w", "2", "-a", "+message.type=FIFO,+queue.type=SimpleCQ")
	c.WaitTopicRoute(topic)
	if a := topicAttributes(t, cl, addr, topic); a["message.type"] != "FIFO" || a["queue.type"] != "SimpleCQ" {
		t.Fatalf("attributes after create: %v", a)
	}
	ok(t, "updateTopic", "-n", ns, "-b", addr, "-t", topic, "-r", "2", "-w", "2", "-a", "-message.type")
	if a := topicAttributes(t, cl, addr, topic); a["message.type"] != "" || a["queue.type"] != "SimpleCQ" {
		t.Fatalf("attributes after -message.type: %v", a)
	}
	ok(t, "updateTopic", "-n", ns, "-b", addr, "-t", topic, "-r", "2", "-w", "2") // no -a: attributes kept
	if a := topicAttributes(t, cl, addr, topic); a["queue.type"] != "SimpleCQ" {
		t.Fatalf("attributes after an update without -a: %v", a)
	}
	failing(t, ExitFailed, []string{"attempt to update an unchangeable attribute. key: cleanup.policy"},
		"updateTopic", "-n", ns, "-b", addr, "-t", topic, "-a", "+cleanup.policy=DELETE")
	failing(t, ExitFailed, []string{"only add attribute is supported while creating topic"},
		"updateTopic", "-n", ns, "-b", addr, "-t", "TopicOptsNew", "-a", "-message.type")
	failing(t, ExitFailed, []string{"unsupported key: color"}, "updateTopic", "-n", ns, "-b", addr, "-t", topic, "-a", "+color=red")
	failing(t, ExitFailed, []string{"queue.type=BatchCQ is not supported"}, "updateTopic", "-n", ns, "-b", addr,
		"-t", "TopicOptsBatch", "-a", "+queue.type=BatchCQ")

	// sendMessage -m: trace off is accepted, trace on is refused as not there yet.
	ok(t, "sendMessage", "-n", ns, "-t", topic, "-p", "one", "-k", "optKey", "-m", "false")
	ok(t, "sendMessage", "-n", ns, "-t", topic, "-p", "two", "-k", "optKey")
	failing(t, ExitBadArgs, []string{"-m (--msgTraceEnable) true"}, "sendMessage", "-n", ns, "-t", topic, "-p", "x", "-m", "true")

	// queryMsgByKey: -m is maxNum, -c the cluster whose masters are asked.
	eventually(t, 5*time.Second, func() string {
		var res queryByKeyResult
		okJSON(t, &res, "queryMsgByKey", "-n", ns, "-t", topic, "-k", "optKey", "-c", "DefaultCluster")
		if len(res.Messages) != 2 {
			return fmt.Sprintf("queryMsgByKey -c found %d", len(res.Messages))
		}
		return ""
	})
	var one queryByKeyResult
	okJSON(t, &one, "queryMsgByKey", "-n", ns, "-t", topic, "-k", "optKey", "-m", "1")
	if len(one.Messages) != 1 {
		t.Fatalf("queryMsgByKey -m 1: %+v", one)
	}
	failing(t, ExitFailed, []string{"cluster Nope is not known"}, "queryMsgByKey", "-n", ns, "-t", topic, "-k", "optKey", "-c", "Nope")
	contains(t, ok(t, "queryMsgById", "-n", ns, "-t", topic, "-i", one.Messages[0].MsgID, "-u", "unitA", "-c", "DefaultCluster"),
		"MsgId:               "+one.Messages[0].MsgID)

	// resetOffsetByTime -b -q -o: one queue's offset; -c: the cluster's masters.
	for range 3 {
		props := message.EncodeProperties(map[string]string{message.PropertyUniqKey: client.NewUniqID()})
		if _, err := cl.SendMessage(context.Background(), addr, &client.Send{Group: "PG_opts", Topic: topic,
			BrokerName: "broker-a", Properties: props, Body: []byte("q0")}); err != nil {
			t.Fatal(err)
		}
	}
	q0 := client.Queue{Addr: addr}
	q0.Topic, q0.BrokerName = topic, "broker-a"
	eventually(t, 5*time.Second, func() string { // the three sends are dispatched (queue 0 may hold a sendMessage too)
		if n, err := cl.QueueOffset(context.Background(), remoting.GetMaxOffset, q0, 0); err != nil || n < 3 {
			return fmt.Sprintf("max offset of queue 0: %d, %v", n, err)
		}
		return ""
	})
	out := ok(t, "resetOffsetByTime", "-n", ns, "-g", group, "-t", topic, "-s", "now", "-b", addr, "-q", "0", "-o", "2")
	contains(t, out, "queueId[0], broker["+addr+"]", "reset consumer offset to 2")
	if off := committed(t, cl, addr, group, topic, 0); off != 2 {
		t.Fatalf("offset after resetOffsetByTime -q 0 -o 2: %d", off)
	}
	ok(t, "resetOffsetByTime", "-n", ns, "-g", group, "-t", topic, "-s", "now", "-c", "DefaultCluster")
	if off := committed(t, cl, addr, group, topic, 0); off < 3 {
		t.Fatalf("offset after resetOffsetByTime -c -s now: %d", off)
	}
	failing(t, ExitBadArgs, []string{"-b (--broker) needs -q (--queue)"}, "resetOffsetByTime", "-n", ns, "-g", group, "-t", topic,
		"-s", "now", "-b", addr)

	// clusterList -c and topicStatus -c.
	var cls struct {
		Brokers []clusterRow `json:"brokers"`
	}
	okJSON(t, &cls, "clusterList", "-n", ns, "-c", "DefaultCluster")
	if len(cls.Brokers) != 1 || cls.Brokers[0].Addr != addr {
		t.Fatalf("clusterList -c: %+v", cls)
	}
	failing(t, ExitFailed, []string{"cluster Nope is not known"}, "clusterList", "-n", ns, "-c", "Nope")
	var st topicStatusResult
	okJSON(t, &st, "topicStatus", "-n", ns, "-t", topic, "-c", "DefaultCluster")
	if len(st.Queues) != 2 || st.Queues[0].MaxOffset < 3 {
		t.Fatalf("topicStatus -c: %+v", st)
	}
}
