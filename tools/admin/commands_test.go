package admin

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rocketraft/rocketraft/app/cluster"
)

// TestCommands runs every mqadmin command against a two-broker cluster with traffic from the official Go
// client, checking the table output and the --json output.
func TestCommands(t *testing.T) {
	c := cluster.Start(t, cluster.Options{Brokers: 2})
	ns := c.NamesrvAddr()
	addrA, addrB := c.Broker(0).Addr(), c.Broker(1).Addr()
	const topic, group, pgroup = "TopicAdmin", "GroupAdmin", "PG_admin"

	t.Run("clusterList", func(t *testing.T) {
		out := ok(t, "clusterList", "-n", ns)
		contains(t, out, "#Cluster Name", "#Broker Name", "#BID", "#Addr", "#Version", "#InTPS(LOAD)", "#OutTPS(LOAD)",
			"#PCWait(ms)", "#Hour", "#SPACE", "DefaultCluster", "broker-a", "broker-b", addrA, addrB, "V4_9_4")
		var res struct {
			Brokers []clusterRow `json:"brokers"`
		}
		okJSON(t, &res, "clusterList", "-n", ns)
		if len(res.Brokers) != 2 || res.Brokers[0].BrokerName != "broker-a" || res.Brokers[0].Addr != addrA ||
			res.Brokers[1].BrokerID != 0 || res.Brokers[0].Version != "V4_9_4" {
			t.Fatalf("clusterList --json: %+v", res.Brokers)
		}
		contains(t, ok(t, "clusterList", "-n", ns, "-m"), "#InTotalYest", "#OutTotalToday", "broker-b")
	})

	t.Run("updateTopic", func(t *testing.T) {
		out := ok(t, "updateTopic", "-n", ns, "-c", "DefaultCluster", "-t", topic, "-r", "4", "-w", "4")
		contains(t, out, "create topic to "+addrA+" success.", "create topic to "+addrB+" success.",
			"TopicConfig [topicName=TopicAdmin, readQueueNums=4, writeQueueNums=4, perm=RW-")
		c.WaitTopicRoute(topic)
		var res updateTopicResult
		okJSON(t, &res, "updateTopic", "--namesrvAddr", ns, "--brokerAddr", addrA, "--topic", "TopicOne", "--perm", "4")
		if len(res.Brokers) != 1 || res.Brokers[0] != addrA || res.TopicConfig.Perm != 4 || res.TopicConfig.ReadQueueNums != 8 {
			t.Fatalf("updateTopic --json: %+v", res)
		}
		out = ok(t, "updateTopic", "-n", ns, "-b", addrB, "-t", "TopicOrdered", "-o", "true", "-w", "2", "-r", "2")
		contains(t, out, "orderConf=[broker-b:2]", "order=true")
	})

	t.Run("topicRoute", func(t *testing.T) {
		out := ok(t, "topicRoute", "-n", ns, "-t", topic)
		contains(t, out, `"brokerName": "broker-a"`, `"readQueueNums": 4`, addrB)
		out = ok(t, "topicRoute", "-n", ns, "-t", topic, "-l")
		contains(t, out, "#ClusterName", "#BrokerName", "#BrokerAddrs", "#ReadQueue", "#WriteQueue", "#Perm",
			"{0="+addrA+"}", "Total:")
		var route struct {
			QueueDatas []struct {
				BrokerName    string `json:"brokerName"`
				ReadQueueNums int    `json:"readQueueNums"`
			} `json:"queueDatas"`
		}
		okJSON(t, &route, "topicRoute", "-n", ns, "-t", topic)
		if len(route.QueueDatas) != 2 || route.QueueDatas[0].ReadQueueNums != 4 {
			t.Fatalf("topicRoute --json: %+v", route)
		}
	})

	t.Run("topicList", func(t *testing.T) {
		out := ok(t, "topicList", "-n", ns)
		contains(t, out, topic+"\n", "TopicOne\n")
		var res topicListResult
		okJSON(t, &res, "topicList", "-n", ns)
		if !hasString(res.Topics, topic) {
			t.Fatalf("topicList --json: %v", res.Topics)
		}
	})

	p := startProducer(t, c, pgroup)
	sendN(t, p, topic, "TagA", 20)

	t.Run("topicStatus", func(t *testing.T) {
		contains(t, ok(t, "topicStatus", "-n", ns, "-t", topic), "#Broker Name", "#QID", "#Min Offset", "#Max Offset",
			"#Last Updated", "broker-a", "broker-b")
		eventually(t, 5*time.Second, func() string {
			var res topicStatusResult
			okJSON(t, &res, "topicStatus", "-n", ns, "-t", topic)
			var sum int64
			for _, q := range res.Queues {
				sum += q.MaxOffset
			}
			if len(res.Queues) != 8 || sum != 20 {
				return fmt.Sprintf("topicStatus: %d queues holding %d messages, want 8 and 20", len(res.Queues), sum)
			}
			return ""
		})
	})

	var sent sendMessageResult
	t.Run("sendMessage", func(t *testing.T) {
		out := ok(t, "sendMessage", "-n", ns, "-t", topic, "-p", "hello admin", "-k", "adminKey", "-c", "TagB")
		contains(t, out, "#Broker Name", "#QID", "#Send Result", "#MsgId", "SEND_OK")
		okJSON(t, &sent, "sendMessage", "-n", ns, "-t", topic, "-p", "hello again", "-k", "adminKey2", "-b", "broker-b", "-i", "3")
		if sent.BrokerName != "broker-b" || sent.QueueID != 3 || sent.SendStatus != "SEND_OK" || len(sent.MsgID) != 32 ||
			sent.OffsetMsgID == "" {
			t.Fatalf("sendMessage --json: %+v", sent)
		}
	})

	t.Run("queryMsgByKey", func(t *testing.T) {
		eventually(t, 5*time.Second, func() string {
			var res queryByKeyResult
			okJSON(t, &res, "queryMsgByKey", "-n", ns, "-t", topic, "-k", "adminKey2")
			if len(res.Messages) != 1 || res.Messages[0].MsgID != sent.MsgID || res.Messages[0].QueueID != 3 {
				return fmt.Sprintf("queryMsgByKey adminKey2: %+v, want the message %s", res.Messages, sent.MsgID)
			}
			return ""
		})
		contains(t, ok(t, "queryMsgByKey", "-n", ns, "-t", topic, "-k", "key-7"), "#Message ID", "#QID", "#Offset")
	})

	t.Run("queryMsgById", func(t *testing.T) {
		out := ok(t, "queryMsgById", "-n", ns, "-t", topic, "-i", sent.MsgID)
		contains(t, out, "OffsetID:", sent.OffsetMsgID, "Topic:               TopicAdmin", "Keys:                [adminKey2]",
			"Queue ID:            3", "Message Body:        hello again", "Store Host:          "+addrB)
		dir := t.TempDir()
		var res messagesResult
		okJSON(t, &res, "queryMsgById", "-n", ns, "-i", sent.OffsetMsgID, "--bodyDir", dir)
		if len(res.Messages) != 1 || res.Messages[0].MsgID != sent.MsgID || res.Messages[0].Body != "hello again" ||
			!strings.HasPrefix(res.Messages[0].BodyPath, dir) {
			t.Fatalf("queryMsgById --json: %+v", res.Messages)
		}
		failing(t, ExitFailed, []string{"not found in topic TopicAdmin"}, "queryMsgById", "-n", ns, "-t", topic,
			"-i", "0123456789ABCDEF0123456789ABCDEF")
	})

	t.Run("queryMsgByOffset", func(t *testing.T) {
		out := ok(t, "queryMsgByOffset", "-n", ns, "-t", topic, "-b", "broker-b", "-i", "3", "-o", fmt.Sprint(0))
		contains(t, out, "Queue ID:            3", "Queue Offset:        0", "Topic:               TopicAdmin")
		failing(t, ExitFailed, []string{"no message at offset 999"}, "queryMsgByOffset", "-n", ns, "-t", topic,
			"-b", "broker-b", "-i", "3", "-o", "999")
	})

	t.Run("consumeMessage", func(t *testing.T) {
		out := ok(t, "consumeMessage", "-n", ns, "-t", topic, "-c", "5")
		if n := strings.Count(out, "MSGID: "); n != 5 {
			t.Fatalf("consumeMessage -c 5 printed %d messages:\n%s", n, out)
		}
		contains(t, out, "Consume ok", "print msg finished", "BODY: ")
		var res consumeMessageResult
		okJSON(t, &res, "consumeMessage", "-n", ns, "-t", topic, "-b", "broker-b", "-i", "3")
		if len(res.Queues) != 1 || len(res.Queues[0].Messages) == 0 || res.Queues[0].Queue.QueueID != 3 {
			t.Fatalf("consumeMessage --json: %+v", res)
		}
	})

	rec := startPushConsumer(t, c, group, topic)
	t.Run("consumerConnection", func(t *testing.T) {
		eventually(t, 10*time.Second, func() string {
			o := mqadmin(t, "consumerConnection", "-n", ns, "-g", group)
			if o.code != 0 {
				return "consumerConnection: " + o.stderr
			}
			return ""
		})
		out := ok(t, "consumerConnection", "-n", ns, "-g", group)
		contains(t, out, "#ClientId", "#ClientAddr", "#Language", "#Version", "GO", "V4_5_2", "Below is subscription:",
			"#Topic", "#SubExpression", topic, "%RETRY%"+group, "ConsumeType: CONSUME_PASSIVELY",
			"MessageModel: CLUSTERING", "ConsumeFromWhere: CONSUME_FROM_FIRST_OFFSET")
		var res consumerConnectionResult
		okJSON(t, &res, "consumerConnection", "-n", ns, "-g", group, "-b", addrA)
		if len(res.Connections) != 1 || res.Connections[0].Language != "GO" {
			t.Fatalf("consumerConnection --json: %+v", res)
		}
	})

	t.Run("consumerProgress", func(t *testing.T) {
		eventually(t, 20*time.Second, func() string {
			if n := rec.atLeast(1); n < 22 {
				return fmt.Sprintf("the push consumer received %d of 22 messages", n)
			}
			var res consumerProgressResult
			o := mqadmin(t, "consumerProgress", "-n", ns, "-g", group, "--json")
			if o.code != 0 {
				return "consumerProgress: " + o.stderr
			}
			if err := jsonDecode(o.stdout, &res); err != nil {
				return err.Error()
			}
			if res.BrokerOffsetTotal < 22 || res.DiffTotal != 0 {
				return fmt.Sprintf("consumerProgress: broker total %d, diff %d; want >= 22 and 0 once committed",
					res.BrokerOffsetTotal, res.DiffTotal)
			}
			return ""
		})
		out := ok(t, "consumerProgress", "-n", ns, "-g", group)
		contains(t, out, "#Topic", "#Broker Name", "#QID", "#Broker Offset", "#Consumer Offset", "#Diff", "#LastTime",
			"Consume TPS:", "Diff Total: 0", topic)
		out = ok(t, "consumerProgress", "-n", ns)
		contains(t, out, "#Group", "#Count", "#Version", "#Type", "#Model", "#TPS", "#Diff Total", group, "PUSH", "CLUSTERING")
		var all groupsProgressResult
		okJSON(t, &all, "consumerProgress", "-n", ns)
		found := false
		for _, g := range all.Groups {
			found = found || (g.Group == group && g.Count == 1 && g.Version == "V4_5_2")
		}
		if !found {
			t.Fatalf("consumerProgress --json without -g: %+v", all.Groups)
		}
	})

	t.Run("consumeDirectly and resend", func(t *testing.T) {
		var cc consumerConnectionResult
		okJSON(t, &cc, "consumerConnection", "-n", ns, "-g", group)
		before := rec.atLeast(2)
		out := ok(t, "queryMsgById", "-n", ns, "-i", sent.OffsetMsgID, "-g", group, "-d", cc.Connections[0].ClientID)
		contains(t, out, "ConsumeMessageDirectlyResult [order=false, autoCommit=true, consumeResult=CR_SUCCESS")
		if rec.atLeast(2) != before+1 {
			t.Fatalf("the consumer did not get the message pushed to it (twice-received %d, was %d)", rec.atLeast(2), before)
		}
		failing(t, ExitFailed, []string{"not online"}, "queryMsgById", "-n", ns, "-i", sent.OffsetMsgID, "-g", group, "-d", "nobody@1")
		failing(t, ExitBadArgs, []string{"option -g (--consumerGroup) needs -d (--clientId)"}, "queryMsgById", "-n", ns,
			"-i", sent.OffsetMsgID, "-g", group)
		var res resendResult
		okJSON(t, &res, "queryMsgById", "-n", ns, "-i", sent.OffsetMsgID, "-s", "true")
		if len(res.Results) != 1 || res.Results[0].SendStatus != "SEND_OK" || res.Results[0].MsgID != sent.MsgID ||
			res.Results[0].OffsetMsgID == sent.OffsetMsgID {
			t.Fatalf("queryMsgById -s true: %+v (sent %+v)", res, sent)
		}
	})

	t.Run("producerConnection", func(t *testing.T) {
		eventually(t, 10*time.Second, func() string {
			if o := mqadmin(t, "producerConnection", "-n", ns, "-g", pgroup, "-t", topic); o.code != 0 {
				return "producerConnection: " + o.stderr
			}
			return ""
		})
		contains(t, ok(t, "producerConnection", "-n", ns, "-g", pgroup, "-t", topic), "0001", "GO", "V4_5_2")
		var res producerConnectionResult
		okJSON(t, &res, "producerConnection", "-n", ns, "-g", pgroup, "-t", topic)
		if len(res.Connections) != 1 {
			t.Fatalf("producerConnection --json: %+v", res)
		}
	})

	t.Run("brokerStatus", func(t *testing.T) {
		out := ok(t, "brokerStatus", "-n", ns, "-b", addrA)
		contains(t, out, "putTps", "getTransferedTps", "msgPutTotalTodayNow", "brokerVersionDesc               : V4_9_4")
		out = ok(t, "brokerStatus", "-n", ns, "-c", "DefaultCluster")
		contains(t, out, addrA, addrB)
		var res brokerStatusResult
		okJSON(t, &res, "brokerStatus", "-n", ns, "-c", "DefaultCluster")
		if len(res.Brokers) != 2 || res.Brokers[0].Table["brokerVersion"] != "401" {
			t.Fatalf("brokerStatus --json: %+v", res)
		}
	})

	t.Run("brokerConfig", func(t *testing.T) {
		out := ok(t, "getBrokerConfig", "-n", ns, "-b", addrA)
		contains(t, out, "============"+addrA+"============", "brokerName", "=  broker-a")
		out = ok(t, "getBrokerConfig", "-n", ns, "-c", "DefaultCluster")
		contains(t, out, "============Master: "+addrB+"============")

		contains(t, ok(t, "updateBrokerConfig", "-n", ns, "-b", addrA, "-k", "brokerPermission", "-v", "4"),
			"update broker config success, "+addrA)
		var cfg brokerConfigResult
		okJSON(t, &cfg, "getBrokerConfig", "-n", ns, "-b", addrA)
		if got := cfg.Brokers[0].Table["brokerPermission"]; got != "4" {
			t.Fatalf("brokerPermission after update: %q", got)
		}
		failing(t, ExitFailed, []string{"NO_PERMISSION"}, "sendMessage", "-n", ns, "-t", topic, "-p", "x", "-b", "broker-a", "-i", "0")
		ok(t, "updateBrokerConfig", "-n", ns, "-c", "DefaultCluster", "-k", "brokerPermission", "-v", "6")
		ok(t, "sendMessage", "-n", ns, "-t", topic, "-p", "x", "-b", "broker-a", "-i", "0")
		failing(t, ExitFailed, []string{"listenPort cannot change while the broker runs"},
			"updateBrokerConfig", "-n", ns, "-b", addrA, "-k", "listenPort", "-v", "1234")
		failing(t, ExitFailed, []string{"brokerPermission"}, "updateBrokerConfig", "-n", ns, "-b", addrA,
			"-k", "brokerPermission", "-v", "99")
	})

	t.Run("subGroup", func(t *testing.T) {
		out := ok(t, "updateSubGroup", "-n", ns, "-c", "DefaultCluster", "-g", "GroupNew", "-r", "3", "-m", "true")
		contains(t, out, "create subscription group to "+addrA+" success.",
			"SubscriptionGroupConfig [groupName=GroupNew, consumeEnable=true, consumeFromMinEnable=true", "retryMaxTimes=3")
		var res updateSubGroupResult
		okJSON(t, &res, "updateSubGroup", "-n", ns, "-b", addrB, "-g", "GroupOther", "-s", "false")
		if len(res.Brokers) != 1 || res.Config.ConsumeEnable {
			t.Fatalf("updateSubGroup --json: %+v", res)
		}
		out = ok(t, "deleteSubGroup", "-n", ns, "-b", addrB, "-g", "GroupOther")
		contains(t, out, "delete subscription group [GroupOther] from broker ["+addrB+"] success.")
		out = ok(t, "deleteSubGroup", "-n", ns, "-c", "DefaultCluster", "-g", "GroupNew", "-r", "true")
		contains(t, out, "in cluster [DefaultCluster] success.", "delete topic [%RETRY%GroupNew] from NameServer success.")
	})

	t.Run("topicList clusterModel", func(t *testing.T) {
		out := ok(t, "topicList", "-n", ns, "-c")
		contains(t, out, "#Cluster Name", "#Topic", "#Consumer Group", group)
	})

	t.Run("deleteTopic", func(t *testing.T) {
		out := ok(t, "deleteTopic", "-n", ns, "-t", "TopicOne", "-c", "DefaultCluster")
		contains(t, out, "delete topic [TopicOne] from cluster [DefaultCluster] success.",
			"delete topic [TopicOne] from NameServer success.")
		failing(t, ExitFailed, []string{"topic TopicOne does not exist", "TOPIC_NOT_EXIST"}, "topicRoute", "-n", ns, "-t", "TopicOne")
	})
}

func hasString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
