package admin

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/rocketraft/rocketraft/app/cluster"
	"github.com/rocketraft/rocketraft/client"
	"github.com/rocketraft/rocketraft/message"
	"github.com/rocketraft/rocketraft/remoting"
)

// sendTo stores n messages in queue qid of topic on the one broker.
func sendTo(t *testing.T, cl *client.Client, addr, topic string, qid int32, n int) {
	t.Helper()
	for range n {
		props := message.EncodeProperties(map[string]string{message.PropertyUniqKey: client.NewUniqID()})
		if _, err := cl.SendMessage(context.Background(), addr, &client.Send{Group: "PG_ops", Topic: topic,
			BrokerName: "broker-a", QueueID: qid, Properties: props, Body: []byte("m")}); err != nil {
			t.Fatal(err)
		}
	}
}

// committed is group's committed offset of queue qid of topic.
func committed(t *testing.T, cl *client.Client, addr, group, topic string, qid int32) int64 {
	t.Helper()
	q := client.Queue{Addr: addr}
	q.Topic, q.BrokerName, q.QueueID = topic, "broker-a", qid
	off, _, err := cl.QueryConsumerOffset(context.Background(), group, q)
	if err != nil {
		t.Fatal(err)
	}
	return off
}

// TestOffsetAndStatsCommands: cloneGroupOffset copies a group's offsets to another group; skipAccumulatedMessage
// moves a group to the end of each queue; brokerConsumeStats, statsAll and getConsumerConfig show what the
// broker holds; sendMsgStatus and clusterRT store their messages in the broker's own topic.
func TestOffsetAndStatsCommands(t *testing.T) {
	c := cluster.Start(t, cluster.Options{})
	ns, addr := c.NamesrvAddr(), c.Broker(0).Addr()
	const topic, src, dest = "TopicOps", "GroupSrc", "GroupDest"
	ok(t, "updateTopic", "-n", ns, "-b", addr, "-t", topic, "-r", "2", "-w", "2")
	c.WaitTopicRoute(topic)
	ok(t, "updateSubGroup", "-n", ns, "-b", addr, "-g", src, "-r", "5")
	ok(t, "updateSubGroup", "-n", ns, "-b", addr, "-g", dest)
	cl := client.New(client.Config{Namesrvs: c.NamesrvAddrs(), Timeout: 5 * time.Second})
	defer cl.Close()
	sendTo(t, cl, addr, topic, 0, 6)
	sendTo(t, cl, addr, topic, 1, 4)
	for q, n := range map[int32]int64{0: 6, 1: 4} { // dispatched to the consume queues
		qq := client.Queue{Addr: addr}
		qq.Topic, qq.BrokerName, qq.QueueID = topic, "broker-a", q
		testWaitMax(t, cl, qq, n)
	}
	for q, off := range map[int32]int64{0: 3, 1: 4} {
		qq := client.Queue{Addr: addr}
		qq.Topic, qq.BrokerName, qq.QueueID = topic, "broker-a", q
		if err := cl.UpdateConsumerOffset(context.Background(), src, qq, off); err != nil {
			t.Fatal(err)
		}
	}

	contains(t, ok(t, "cloneGroupOffset", "-n", ns, "-s", src, "-d", dest, "-t", topic),
		"clone group offset success. srcGroup[GroupSrc], destGroup=[GroupDest], topic[TopicOps]")
	if a, b := committed(t, cl, addr, dest, topic, 0), committed(t, cl, addr, dest, topic, 1); a != 3 || b != 4 {
		t.Fatalf("offsets of %s after cloneGroupOffset: %d, %d; want 3, 4", dest, a, b)
	}
	failing(t, ExitFailed, []string{"has no offset on topic"}, "cloneGroupOffset", "-n", ns, "-s", "NoSuchGroup", "-d", dest, "-t", topic)

	out := ok(t, "brokerConsumeStats", "-n", ns, "-b", addr)
	contains(t, out, "#Topic", "#Group", "#Broker Name", "#QID", "#Broker Offset", "#Consumer Offset", "#Diff", "#LastTime",
		"Diff Total: 6")
	var bcs brokerConsumeStatsResult
	okJSON(t, &bcs, "brokerConsumeStats", "-n", ns, "-b", addr, "-l", "1")
	if len(bcs.Rows) != 2 || bcs.Rows[0].Diff != 3 || bcs.Rows[0].QueueID != 0 || bcs.TotalDiff != 6 {
		t.Fatalf("brokerConsumeStats -l 1: %+v", bcs)
	}

	var stats statsAllResult
	okJSON(t, &stats, "statsAll", "-n", ns, "-t", topic)
	if len(stats.Rows) != 2 || stats.Rows[0].Group != dest || stats.Rows[1].Group != src ||
		stats.Rows[1].Accumulation != 3 || stats.Rows[0].InMsg24Hour != 10 {
		t.Fatalf("statsAll -t: %+v", stats)
	}
	contains(t, ok(t, "statsAll", "-n", ns, "-t", topic), "#Accumulation", "#InMsg24Hour", "GroupSrc")

	out = ok(t, "skipAccumulatedMessage", "-n", ns, "-g", dest, "-t", topic)
	contains(t, out, "#brokerName", "#queueId", "#offset", "broker-a")
	if a, b := committed(t, cl, addr, dest, topic, 0), committed(t, cl, addr, dest, topic, 1); a != 6 || b != 4 {
		t.Fatalf("offsets of %s after skipAccumulatedMessage: %d, %d; want 6, 4", dest, a, b)
	}
	if a := committed(t, cl, addr, src, topic, 0); a != 3 {
		t.Fatalf("the source group moved too: %d", a)
	}

	out = ok(t, "getConsumerConfig", "-n", ns, "-g", src)
	contains(t, out, "=============================DefaultCluster:broker-a=============================",
		"groupName                               =  GroupSrc", "retryMaxTimes                           =  5")
	failing(t, ExitFailed, []string{"no broker has subscription group NoSuchGroup"}, "getConsumerConfig", "-n", ns, "-g", "NoSuchGroup")

	own := client.Queue{Addr: addr}
	own.Topic, own.BrokerName = "broker-a", "broker-a"
	before, err := cl.QueueOffset(context.Background(), remoting.GetMaxOffset, own, 0)
	if err != nil {
		t.Fatal(err)
	}
	var sms sendMsgStatusResult
	okJSON(t, &sms, "sendMsgStatus", "-n", ns, "-b", "broker-a", "-c", "3", "-s", "20")
	if len(sms.Sends) != 3 || sms.Sends[2].Result.SendStatus != "SEND_OK" {
		t.Fatalf("sendMsgStatus: %+v", sms)
	}
	contains(t, ok(t, "sendMsgStatus", "-n", ns, "-b", "broker-a", "-c", "1"), "rt=", "ms, SendResult=SendResult [sendStatus=SEND_OK",
		"messageQueue=MessageQueue [topic=broker-a, brokerName=broker-a, queueId=0]")
	var rt clusterRTResult
	okJSON(t, &rt, "clusterRT", "-n", ns, "-a", "5", "-s", "10", "-c", "DefaultCluster")
	if len(rt.Rows) != 1 || rt.Rows[0].Success != 5 || rt.Rows[0].Fail != 0 || rt.Rows[0].Broker != "broker-a" {
		t.Fatalf("clusterRT: %+v", rt)
	}
	contains(t, ok(t, "clusterRT", "-n", ns, "-a", "2"), "#Cluster Name", "#RT", "#successCount", "#failCount", "DefaultCluster")
	contains(t, ok(t, "clusterRT", "-n", ns, "-a", "2", "-p", "true", "-m", "roomA"), "|roomA|DefaultCluster|broker-a|")
	testWaitMax(t, cl, own, before+(1+3)+(1+1)+5+2+2)
	failing(t, ExitFailed, []string{"cluster [Nope] not exist"}, "clusterRT", "-n", ns, "-c", "Nope")
}

// testWaitMax waits until q's max offset is want: the messages the commands reported were stored.
func testWaitMax(t *testing.T, cl *client.Client, q client.Queue, want int64) {
	t.Helper()
	eventually(t, 5*time.Second, func() string {
		n, err := cl.QueueOffset(context.Background(), remoting.GetMaxOffset, q, 0)
		if err != nil || n != want {
			return fmt.Sprintf("max offset of %s is %d (%v), want %d", q.Topic, n, err, want)
		}
		return ""
	})
}

// TestConsumerStatus: consumerStatus lists the group's clients with what each reports holding, and -i prints
// one client's report. Clients made of our remoting client stand in for the official Go client, which cannot
// encode its report while a rate is NaN (see TestShowClientIP).
func TestConsumerStatus(t *testing.T) {
	c := cluster.Start(t, cluster.Options{})
	ns, addr := c.NamesrvAddr(), c.Broker(0).Addr()
	const topic, group = "TopicStatus", "GroupStatus"
	ok(t, "updateTopic", "-n", ns, "-b", addr, "-t", topic, "-r", "2", "-w", "2")
	c.WaitTopicRoute(topic)
	fake := func(clientID string, qid int) {
		rc := remoting.NewClient(remoting.ClientConfig{}, cluster.TestLogger(t, 0))
		t.Cleanup(func() { _ = rc.Close() })
		rc.RegisterHandler(remoting.GetConsumerRunningInfo, func(req *remoting.Command) *remoting.Command {
			resp := remoting.NewResponse(remoting.Success, "")
			resp.Body = []byte(fmt.Sprintf(`{"properties":{"consumeType":"CONSUME_PASSIVELY"},"statusTable":{},`+
				`"subscriptionSet":[{"topic":%q,"subString":"*"}],"mqTable":{`+
				`{"topic":%q,"brokerName":"broker-a","queueId":%d}:{"commitOffset":7}},"jstack":""}`, topic, topic, qid))
			return resp
		})
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		resp, err := rc.Invoke(ctx, addr, remoting.NewRequest(remoting.HeartBeat, nil, []byte(fmt.Sprintf(
			`{"clientID":%q,"producerDataSet":[],"consumerDataSet":[{"groupName":%q,"consumeType":"CONSUME_PASSIVELY",`+
				`"messageModel":"CLUSTERING","consumeFromWhere":"CONSUME_FROM_FIRST_OFFSET","subscriptionDataSet":`+
				`[{"topic":%q,"subString":"*","subVersion":1}],"unitMode":false}]}`, clientID, group, topic))))
		if err != nil || resp.Code != int32(remoting.Success) {
			t.Fatalf("heartbeat: %v %v", resp, err)
		}
	}
	fake("10.0.0.1@one", 0)
	fake("10.0.0.2@two", 1)
	// consumerStatus without -b finds the group's brokers by its retry topic's route, which the broker
	// creates at the heartbeat and registers in its next round.
	c.WaitTopicRoute("%RETRY%" + group)

	var res consumerStatusResult
	okJSON(t, &res, "consumerStatus", "-n", ns, "-g", group, "-b", addr)
	if len(res.Clients) != 2 || res.Clients[0].ClientID != "10.0.0.1@one" || len(res.Clients[1].Queues) != 1 ||
		res.Clients[1].Queues[0].QueueID != 1 || !res.SameSub || !res.RebalanceOK {
		t.Fatalf("consumerStatus: %+v", res)
	}
	contains(t, ok(t, "consumerStatus", "-n", ns, "-g", group), "#Index", "#ClientId", "10.0.0.2@two",
		"Same subscription in the same group of consumer", "Rebalance OK")
	out := ok(t, "consumerStatus", "-n", ns, "-g", group, "-i", "10.0.0.2@two", "-b", addr)
	contains(t, out, "#Consumer Subscription#", "Topic: TopicStatus", "SubExpression: *", "consumeType", "TopicStatus  broker-a      1     7")

	fake("10.0.0.3@three", 1) // holds queue 1 too
	okJSON(t, &res, "consumerStatus", "-n", ns, "-g", group, "-b", addr)
	if len(res.Clients) != 3 || res.RebalanceOK {
		t.Fatalf("two clients holding one queue: %+v", res)
	}
	failing(t, ExitFailed, []string{"is not online"}, "consumerStatus", "-n", ns, "-g", "NoSuchGroup", "-b", addr)
}
