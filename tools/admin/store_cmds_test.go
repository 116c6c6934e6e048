package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rocketraft/rocketraft/app/cluster"
	"github.com/rocketraft/rocketraft/broker"
	"github.com/rocketraft/rocketraft/client"
	"github.com/rocketraft/rocketraft/message"
)

// sendTagged stores one message with tag, body and a new unique id in queue qid of topic; it returns the id.
func sendTagged(t *testing.T, cl *client.Client, addr, topic string, qid int32, tag, body string) (string, *client.SendResult) {
	t.Helper()
	uniq := client.NewUniqID()
	props := message.EncodeProperties(map[string]string{message.PropertyUniqKey: uniq, message.PropertyTags: tag})
	res, err := cl.SendMessage(context.Background(), addr, &client.Send{Group: "PG_print", Topic: topic, BrokerName: "broker-a",
		QueueID: qid, Properties: props, Body: []byte(body)})
	if err != nil {
		t.Fatal(err)
	}
	return uniq, res
}

// TestPrintAndQueryCommands: printMsg and printMsgByQueue read every stored message (the tag subscription
// applied by the broker), queryMsgByUniqueKey finds one by its unique id, queryCq shows the ConsumeQueue units
// that point at them.
func TestPrintAndQueryCommands(t *testing.T) {
	c := cluster.Start(t, cluster.Options{})
	ns, addr := c.NamesrvAddr(), c.Broker(0).Addr()
	const topic = "TopicPrint"
	ok(t, "updateTopic", "-n", ns, "-b", addr, "-t", topic, "-r", "2", "-w", "2")
	c.WaitTopicRoute(topic)
	cl := client.New(client.Config{Namesrvs: c.NamesrvAddrs(), Timeout: 5 * time.Second})
	defer cl.Close()
	var ids []string
	var first *client.SendResult
	for i := range 3 {
		id, res := sendTagged(t, cl, addr, topic, 0, "TagA", fmt.Sprintf("body-a%d", i))
		ids = append(ids, id)
		if i == 0 {
			first = res
		}
	}
	for i := range 2 {
		sendTagged(t, cl, addr, topic, 1, "TagB", fmt.Sprintf("body-b%d", i))
	}
	q0 := client.Queue{Addr: addr}
	q0.Topic, q0.BrokerName = topic, "broker-a"
	testWaitMax(t, cl, q0, 3)
	q1 := q0
	q1.QueueID = 1
	testWaitMax(t, cl, q1, 2)

	out := ok(t, "printMsg", "-n", ns, "-t", topic)
	contains(t, out, "minOffset=0, maxOffset=3, MessageQueue [topic=TopicPrint, brokerName=broker-a, queueId=0]",
		"minOffset=0, maxOffset=2, MessageQueue [topic=TopicPrint, brokerName=broker-a, queueId=1]",
		"MSGID: "+ids[1]+" MessageExt [queueId=0", "BODY: body-a1", "BODY: body-b1", "-------")
	var pr printResult
	okJSON(t, &pr, "printMsg", "-n", ns, "-t", topic, "-s", "TagB", "-d", "false")
	if len(pr.Queues) != 2 || len(pr.Queues[0].Messages) != 0 || len(pr.Queues[1].Messages) != 2 ||
		pr.Queues[1].Messages[1].Body != "body-b1" {
		t.Fatalf("printMsg -s TagB: %+v", pr)
	}
	contains(t, ok(t, "printMsg", "-n", ns, "-t", topic, "-d", "false"), "BODY: NOT PRINT BODY")
	failing(t, ExitBadArgs, []string{"only UTF-8"}, "printMsg", "-n", ns, "-t", topic, "-c", "GBK")

	out = ok(t, "printMsgByQueue", "-n", ns, "-t", topic, "-a", "broker-a", "-i", "0", "-p", "true", "-d", "true", "-f", "true")
	contains(t, out, "MSGID: "+ids[0], "BODY: body-a0", "Tag: TagA                           Count: 3")
	if strings.Contains(out, "body-b0") || strings.Contains(out, "minOffset=") {
		t.Fatalf("printMsgByQueue -i 0 printed more than queue 0:\n%s", out)
	}
	if out := ok(t, "printMsgByQueue", "-n", ns, "-t", topic, "-a", "broker-a", "-i", "1"); strings.Contains(out, "MSGID") {
		t.Fatalf("printMsgByQueue without -p printed messages:\n%s", out)
	}

	eventually(t, 5*time.Second, func() string {
		if o := mqadmin(t, "queryMsgByUniqueKey", "-n", ns, "-t", topic, "-i", ids[2]); o.code != ExitOK {
			return o.stderr
		}
		return ""
	})
	out = ok(t, "queryMsgByUniqueKey", "-n", ns, "-t", topic, "-i", ids[2])
	contains(t, out, "MsgId:               "+ids[2], "Message Body:        body-a2", "Tags:                [TagA]")
	failing(t, ExitFailed, []string{"not found in topic"}, "queryMsgByUniqueKey", "-n", ns, "-t", topic, "-i", client.NewUniqID())

	var cq queryCqResult
	okJSON(t, &cq, "queryCq", "-n", ns, "-t", topic, "-q", "0", "-i", "0", "-c", "2")
	if cq.Body.MaxQueueIndex != 3 || cq.Body.MinQueueIndex != 0 || len(cq.Body.QueueData) != 2 {
		t.Fatalf("queryCq: %+v", cq.Body)
	}
	if first.QueueOffset != 0 {
		t.Fatalf("first send at queue offset %d", first.QueueOffset)
	}
	view := ok(t, "queryMsgByUniqueKey", "-n", ns, "-t", topic, "-i", ids[0])
	if !strings.Contains(view, fmt.Sprintf("CommitLog Offset:    %d", cq.Body.QueueData[0].PhysicOffset)) {
		t.Fatalf("queryCq's first unit points at %d; the message says:\n%s", cq.Body.QueueData[0].PhysicOffset, view)
	}
	out = ok(t, "queryCq", "-n", ns, "-t", topic, "-q", "1", "-i", "1", "-b", addr, "-g", "GroupOffline")
	contains(t, out, "Filter data: \nGroupOffline@TopicPrint is not online!", "max: 2, min: 0", "idx: 1\nConsumeQueueData{physicOffset=")
	failing(t, ExitFailed, []string{"is not exist"}, "queryCq", "-n", ns, "-t", "NoSuchTopicCq", "-q", "0", "-i", "0", "-b", addr)
}

// commitLogMin is the broker's commitLogMinOffset (runtime info).
func commitLogMin(t *testing.T, cl *client.Client, addr string) int64 {
	t.Helper()
	kv, err := cl.RuntimeInfo(context.Background(), addr)
	if err != nil {
		t.Fatal(err)
	}
	n, _ := strconv.ParseInt(kv["commitLogMinOffset"], 10, 64)
	return n
}

// smallLogCluster starts one broker with 64 KiB CommitLog files that flushes often, and a clean service that
// stays out of the way (it runs once an hour, and not at this hour); more adjusts the config further.
func smallLogCluster(t *testing.T, more func(*broker.Config)) *cluster.Cluster {
	return cluster.Start(t, cluster.Options{Configure: func(_ int, cfg *broker.Config) {
		cfg.MappedFileSizeCommitLog = 64 << 10
		cfg.MaxMessageSize = 16 << 10
		cfg.CleanResourceInterval = 3_600_000
		cfg.DeleteWhen = fmt.Sprintf("%02d", (time.Now().Hour()+12)%24)
		cfg.FlushIntervalCommitLog = 10
		more(cfg)
	}})
}

// TestStoreMaintenanceCommands: deleteExpiredCommitLog deletes CommitLog files past fileReservedTime at once
// (the deleteWhen hour not reached); cleanExpiredCQ then removes the ConsumeQueue whose messages all went, and
// a later message of that queue continues its numbering; cleanUnusedTopic removes the ConsumeQueue of a topic
// the broker's table no longer has.
func TestStoreMaintenanceCommands(t *testing.T) {
	c := smallLogCluster(t, func(cfg *broker.Config) { cfg.FileReservedTime = 1 })
	ns, addr := c.NamesrvAddr(), c.Broker(0).Addr()
	root := c.Broker(0).Config().StorePathRootDir
	const old, busy, gone = "TopicOld", "TopicBusy", "TopicGone"
	for _, tp := range []string{old, busy, gone} {
		ok(t, "updateTopic", "-n", ns, "-b", addr, "-t", tp, "-r", "1", "-w", "1")
	}
	cl := client.New(client.Config{Namesrvs: c.NamesrvAddrs(), Timeout: 5 * time.Second})
	defer cl.Close()
	big := strings.Repeat("x", 2000)
	for range 10 {
		sendTagged(t, cl, addr, old, 0, "T", big)
	}
	for range 160 { // about five 64 KiB CommitLog files
		sendTagged(t, cl, addr, busy, 0, "T", big)
	}
	sendTagged(t, cl, addr, gone, 0, "T", "g") // in the last file, which stays
	qBusy := client.Queue{Addr: addr}
	qBusy.Topic, qBusy.BrokerName = busy, "broker-a"
	testWaitMax(t, cl, qBusy, 160)

	files, _ := filepath.Glob(filepath.Join(root, "commitlog", "*"))
	if len(files) < 3 {
		t.Fatalf("%d commitlog files, want at least 3", len(files))
	}
	aged := time.Now().Add(-48 * time.Hour)
	for _, f := range files {
		if err := os.Chtimes(f, aged, aged); err != nil {
			t.Fatal(err)
		}
	}
	minOffset := func() int64 { return commitLogMin(t, cl, addr) }
	if minOffset() != 0 {
		t.Fatal("files deleted before the command")
	}
	eventually(t, 10*time.Second, func() string { // files still being flushed are kept until they are
		var res maintenanceResult
		okJSON(t, &res, "deleteExpiredCommitLog", "-n", ns, "-b", addr)
		if m := minOffset(); m < 2*64<<10 {
			return fmt.Sprintf("commitLogMinOffset %d after deleteExpiredCommitLog (%v)", m, res.Brokers)
		}
		return ""
	})
	contains(t, ok(t, "deleteExpiredCommitLog", "-n", ns, "-c", "DefaultCluster"), "success")

	oldDir := filepath.Join(root, "consumequeue", old)
	if _, err := os.Stat(oldDir); err != nil {
		t.Fatalf("the expired topic's consume queue is already gone: %v", err)
	}
	var res maintenanceResult
	okJSON(t, &res, "cleanExpiredCQ", "-n", ns, "-b", addr)
	if !strings.Contains(res.Brokers[addr], old+"/0") || strings.Contains(res.Brokers[addr], busy) {
		t.Fatalf("cleanExpiredCQ: %+v", res)
	}
	if _, err := os.Stat(oldDir); !os.IsNotExist(err) {
		t.Fatalf("%s after cleanExpiredCQ: %v", oldDir, err)
	}
	if _, r := sendTagged(t, cl, addr, old, 0, "T", "again"); r.QueueOffset != 10 {
		t.Fatalf("a message after cleanExpiredCQ got queue offset %d, want 10", r.QueueOffset)
	}

	// TopicGone leaves the broker's table while its consume queue stays on disk.
	c.StopBroker(0)
	path := filepath.Join(root, "config", "topics.json")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var tf map[string]any
	if err := json.Unmarshal(data, &tf); err != nil {
		t.Fatal(err)
	}
	delete(tf["topicConfigTable"].(map[string]any), gone)
	if data, err = json.Marshal(tf); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	c.StartBroker(0)
	goneDir := filepath.Join(root, "consumequeue", gone)
	if _, err := os.Stat(goneDir); err != nil {
		t.Fatalf("%s before cleanUnusedTopic: %v", goneDir, err)
	}
	contains(t, ok(t, "cleanUnusedTopic", "-n", ns), "success")
	if _, err := os.Stat(goneDir); !os.IsNotExist(err) {
		t.Fatalf("%s after cleanUnusedTopic: %v", goneDir, err)
	}
	for _, kept := range []string{busy, old} {
		if _, err := os.Stat(filepath.Join(root, "consumequeue", kept)); err != nil {
			t.Fatalf("cleanUnusedTopic removed %s: %v", kept, err)
		}
	}
	failing(t, ExitBadArgs, []string{"give only one of -b"}, "cleanUnusedTopic", "-n", ns, "-b", addr, "-c", "DefaultCluster")
}

// TestUpdateBrokerConfigKeys: updateBrokerConfig changes the keys RocketMQ lets change at run time, each
// taking effect at once: autoCreateTopicEnable lets a send create its topic, fileReservedTime decides which
// CommitLog files deleteExpiredCommitLog removes. Unknown and read-only keys are refused naming the key.
func TestUpdateBrokerConfigKeys(t *testing.T) {
	// autoCreateTopicEnable at start, so the template topic TBW102 exists.
	c := smallLogCluster(t, func(cfg *broker.Config) { cfg.AutoCreateTopicEnable = true })
	ns, addr := c.NamesrvAddr(), c.Broker(0).Addr()
	root := c.Broker(0).Config().StorePathRootDir
	cl := client.New(client.Config{Namesrvs: c.NamesrvAddrs(), Timeout: 5 * time.Second})
	defer cl.Close()
	send := func(topic string) error {
		props := message.EncodeProperties(map[string]string{message.PropertyUniqKey: client.NewUniqID()})
		_, err := cl.SendMessage(context.Background(), addr, &client.Send{Group: "PG_cfg", Topic: topic,
			BrokerName: "broker-a", Properties: props, Body: []byte(strings.Repeat("y", 2000))})
		return err
	}
	ok(t, "updateBrokerConfig", "-n", ns, "-b", addr, "-k", "autoCreateTopicEnable", "-v", "false")
	if err := send("TopicAuto"); err == nil || !strings.Contains(err.Error(), "autoCreateTopicEnable=false") {
		t.Fatalf("send to an unknown topic: %v", err)
	}
	ok(t, "updateBrokerConfig", "-n", ns, "-b", addr, "-k", "autoCreateTopicEnable", "-v", "true")
	if err := send("TopicAuto"); err != nil {
		t.Fatalf("send after autoCreateTopicEnable=true: %v", err)
	}
	for _, kv := range [][2]string{{"slaveReadEnable", "true"}, {"longPollingEnable", "false"},
		{"shortPollingTimeMills", "500"}, {"rejectTransactionMessage", "true"}, {"autoCreateSubscriptionGroup", "false"},
		{"deleteWhen", "01;02"}, {"diskMaxUsedSpaceRatio", "80"}} {
		ok(t, "updateBrokerConfig", "-n", ns, "-c", "DefaultCluster", "-k", kv[0], "-v", kv[1])
		var cfg brokerConfigResult
		okJSON(t, &cfg, "getBrokerConfig", "-n", ns, "-b", addr)
		if got := cfg.Brokers[0].Table[kv[0]]; got != kv[1] {
			t.Fatalf("%s after updateBrokerConfig: %q, want %q", kv[0], got, kv[1])
		}
	}

	for range 100 {
		if err := send("TopicAuto"); err != nil {
			t.Fatal(err)
		}
	}
	files, _ := filepath.Glob(filepath.Join(root, "commitlog", "*"))
	aged := time.Now().Add(-2 * time.Hour)
	for _, f := range files {
		if err := os.Chtimes(f, aged, aged); err != nil {
			t.Fatal(err)
		}
	}
	minOffset := func() int64 { return commitLogMin(t, cl, addr) }
	ok(t, "deleteExpiredCommitLog", "-n", ns, "-b", addr)
	if m := minOffset(); m != 0 {
		t.Fatalf("files two hours old deleted with fileReservedTime 72: min offset %d", m)
	}
	ok(t, "updateBrokerConfig", "-n", ns, "-b", addr, "-k", "fileReservedTime", "-v", "1")
	eventually(t, 10*time.Second, func() string {
		ok(t, "deleteExpiredCommitLog", "-n", ns, "-b", addr)
		if m := minOffset(); m == 0 {
			return "no file deleted with fileReservedTime 1"
		}
		return ""
	})

	failing(t, ExitFailed, []string{"unknown config key noSuchKey"}, "updateBrokerConfig", "-n", ns, "-b", addr, "-k", "noSuchKey", "-v", "1")
	failing(t, ExitFailed, []string{"storePathRootDir cannot change while the broker runs"}, "updateBrokerConfig", "-n", ns, "-b", addr,
		"-k", "storePathRootDir", "-v", "/tmp/x")
	failing(t, ExitFailed, []string{"deleteWhen"}, "updateBrokerConfig", "-n", ns, "-b", addr, "-k", "deleteWhen", "-v", "25")
}
