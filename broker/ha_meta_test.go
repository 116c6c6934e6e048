package broker_test

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/rocketraft/rocketraft/app/cluster"
	"github.com/rocketraft/rocketraft/broker"
	"github.com/rocketraft/rocketraft/protocol"
	"github.com/rocketraft/rocketraft/remoting"
)

// metaCluster is haCluster with the slave's periodic copy once an hour and no group created on use: what
// the slave learns after its first copy it learns from the master's metadata records only.
func metaCluster(t *testing.T) *cluster.Cluster {
	return haCluster(t, func(c *broker.Config) {
		c.Replication.SlaveSynchronizeInterval = 3_600_000
		c.Replication.HAOffsetSyncInterval = 100
		c.AutoCreateSubscriptionGroup = false
	})
}

// topicTable is GET_ALL_TOPIC_CONFIG's answer.
func topicTable(t *testing.T, w *wire) protocol.TopicConfigSerializeWrapper {
	t.Helper()
	resp := w.call(remoting.GetAllTopicConfig, nil, nil)
	expectCode(t, "all topics", resp, remoting.Success)
	var tw protocol.TopicConfigSerializeWrapper
	if err := json.Unmarshal(resp.Body, &tw); err != nil {
		t.Fatal(err)
	}
	return tw
}

// groupTable is GET_ALL_SUBSCRIPTIONGROUP_CONFIG's answer.
func groupTable(t *testing.T, w *wire) protocol.SubscriptionGroupWrapper {
	t.Helper()
	resp := w.call(remoting.GetAllSubscriptionGroupConfig, nil, nil)
	expectCode(t, "all groups", resp, remoting.Success)
	var gw protocol.SubscriptionGroupWrapper
	if err := json.Unmarshal(resp.Body, &gw); err != nil {
		t.Fatal(err)
	}
	return gw
}

func createGroup(t *testing.T, w *wire, group string) {
	t.Helper()
	body, _ := json.Marshal(protocol.SubscriptionGroupConfig{GroupName: group, ConsumeEnable: true, ConsumeBroadcastEnable: true,
		RetryQueueNums: 1, RetryMaxTimes: 16, WhichBrokerWhenConsumeSlowly: 1})
	expectCode(t, "create group "+group, w.call(remoting.UpdateAndCreateSubscriptionGroup, nil, body), remoting.Success)
}

// TestHASlaveAppliesMetadataRecords (issue 37): topics (created by request and on send), subscription
// groups, consumer offsets, delay offsets and deletions reach the slave through the master's CommitLog,
// with the master's table versions, while the slave's copy runs once an hour; a topic's record lies in the
// log before the topic's first message; clients may not send to the records' topic.
func TestHASlaveAppliesMetadataRecords(t *testing.T) {
	c := metaCluster(t)
	master, slave := c.Broker(0), c.Broker(1)
	waitSlaveStreaming(t, master)
	mw, sw := newWire(t, master.Addr()), newWire(t, slave.Addr())
	cluster.Eventually(t, 10*time.Second, func() bool { return topicTable(t, sw).DataVersion == topicTable(t, mw).DataVersion },
		"the slave's first copy")

	expectCode(t, "create topic", mw.call(remoting.UpdateAndCreateTopic, map[string]string{"topic": "META", "readQueueNums": "3",
		"writeQueueNums": "3", "perm": "6"}, nil), remoting.Success)
	createGroup(t, mw, "CG_META")
	expectCode(t, "send, the topic created on it", mw.send("META_AUTO", 0, []byte("first"), ""), remoting.Success)
	expectCode(t, "send", mw.send("META", 1, []byte("m"), ""), remoting.Success)
	waitCaughtUp(t, master, slave)
	cluster.Eventually(t, 10*time.Second, func() bool { return slave.Store().DispatchBehindBytes() == 0 }, "the slave dispatched")
	mt, st := topicTable(t, mw), topicTable(t, sw)
	if st.DataVersion != mt.DataVersion {
		t.Fatalf("topic table version %+v on the slave, %+v on the master", st.DataVersion, mt.DataVersion)
	}
	for _, name := range []string{"META", "META_AUTO"} {
		if st.TopicConfigTable[name] == nil || !reflect.DeepEqual(st.TopicConfigTable[name], mt.TopicConfigTable[name]) {
			t.Fatalf("topic %s on the slave %+v, on the master %+v", name, st.TopicConfigTable[name], mt.TopicConfigTable[name])
		}
	}
	if g := groupTable(t, sw); g.SubscriptionGroupTable["CG_META"] == nil || g.DataVersion != groupTable(t, mw).DataVersion {
		t.Fatalf("group CG_META not on the slave with the master's version: %+v", g.DataVersion)
	}
	expectCode(t, "topicStatus on the slave", sw.call(remoting.GetTopicStatsInfo, map[string]string{"topic": "META_AUTO"}, nil), remoting.Success)

	// The record of a topic created on send lies before its first message.
	first, err := master.Store().CommitLogOffsetInQueue("META_AUTO", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	recordBefore := false
	for q := master.Store().MinOffsetInQueue(broker.TopicHAMeta, 0); q < master.Store().MaxOffsetInQueue(broker.TopicHAMeta, 0); q++ {
		u, err := master.Store().ConsumeQueueUnit(broker.TopicHAMeta, 0, q)
		if err != nil {
			t.Fatal(err)
		}
		m, err := master.Store().LookMessageByOffset(u.PhysicalOffset)
		if err != nil {
			t.Fatal(err)
		}
		var rec struct {
			Op    string                `json:"op"`
			Topic *protocol.TopicConfig `json:"topic"`
		}
		if err := json.Unmarshal(m.Body, &rec); err != nil {
			t.Fatal(err)
		}
		if rec.Op == "topicPut" && rec.Topic.TopicName == "META_AUTO" {
			recordBefore = u.PhysicalOffset < first
		}
	}
	if !recordBefore {
		t.Fatalf("no record of META_AUTO before its first message (at %d)", first)
	}

	// Consumer offsets, and the delay offset of level 1 once a delayed message was delivered.
	expectCode(t, "commit", mw.call(remoting.UpdateConsumerOffset, map[string]string{"consumerGroup": "CG_META", "topic": "META",
		"queueId": "1", "commitOffset": "1"}, nil), remoting.Success)
	queryOffset := func(w *wire) string {
		return w.call(remoting.QueryConsumerOffset, map[string]string{"consumerGroup": "CG_META", "topic": "META", "queueId": "1"}, nil).ExtFields["offset"]
	}
	cluster.Eventually(t, 10*time.Second, func() bool { return queryOffset(sw) == "1" }, "the committed offset on the slave")
	expectCode(t, "send delayed", mw.send("META", 0, []byte("later"), "DELAY\x011\x02"), remoting.Success)
	delayOffset := func(w *wire) int64 {
		var d protocol.DelayOffsetWrapper
		_ = json.Unmarshal(w.call(remoting.GetAllDelayOffset, nil, nil).Body, &d)
		return d.OffsetTable[1]
	}
	cluster.Eventually(t, 15*time.Second, func() bool { return delayOffset(mw) == 1 && delayOffset(sw) == 1 }, "level 1's delay offset on the slave")

	// Deletions.
	expectCode(t, "delete group", mw.call(remoting.DeleteSubscriptionGroup, map[string]string{"groupName": "CG_META"}, nil), remoting.Success)
	expectCode(t, "delete topic", mw.call(remoting.DeleteTopicInBroker, map[string]string{"topic": "META"}, nil), remoting.Success)
	cluster.Eventually(t, 10*time.Second, func() bool {
		return topicTable(t, sw).TopicConfigTable["META"] == nil && groupTable(t, sw).SubscriptionGroupTable["CG_META"] == nil
	}, "the deletions on the slave")
	if st, mt := topicTable(t, sw), topicTable(t, mw); st.DataVersion != mt.DataVersion {
		t.Fatalf("topic table version %+v on the slave, %+v on the master", st.DataVersion, mt.DataVersion)
	}

	expectCode(t, "send to the records' topic", mw.send(broker.TopicHAMeta, 0, []byte(`{"op":"topicDelete","name":"META_AUTO"}`), ""),
		remoting.NoPermission)
}

// writeRebuildTopic creates topic REBUILD (2 queues) and group CG_REBUILD on the master, sends 10 messages
// and waits until the slave holds them.
func writeRebuildTopic(t *testing.T, c *cluster.Cluster) {
	t.Helper()
	master, slave := c.Broker(0), c.Broker(1)
	mw := newWire(t, master.Addr())
	expectCode(t, "create topic", mw.call(remoting.UpdateAndCreateTopic, map[string]string{"topic": "REBUILD", "readQueueNums": "2",
		"writeQueueNums": "2", "perm": "6"}, nil), remoting.Success)
	createGroup(t, mw, "CG_REBUILD")
	for i := range 10 {
		expectCode(t, "send", mw.send("REBUILD", i%2, []byte("m"+strconv.Itoa(i)), ""), remoting.Success)
	}
	waitCaughtUp(t, master, slave)
}

// checkRebuilt checks that the restarted slave knows topic REBUILD and group CG_REBUILD and serves the
// topic's messages.
func checkRebuilt(t *testing.T, slave *broker.Broker) {
	t.Helper()
	sw := newWire(t, slave.Addr())
	if tc := topicTable(t, sw).TopicConfigTable["REBUILD"]; tc == nil || tc.ReadQueueNums != 2 {
		t.Fatalf("topic REBUILD on the restarted slave: %+v", tc)
	}
	if groupTable(t, sw).SubscriptionGroupTable["CG_REBUILD"] == nil {
		t.Fatal("group CG_REBUILD not on the restarted slave")
	}
	resp := sw.pull("CG_REBUILD", "REBUILD", 1, 0, 0, "*")
	expectCode(t, "pull from the slave", resp, remoting.Success)
}

// TestHASlaveRebuildsMetadataFromItsLog: a slave whose metadata files are gone (and their backups),
// restarted while its master is down (no copy possible), rebuilds the topic and group from the records its
// store holds and serves the topic's messages.
func TestHASlaveRebuildsMetadataFromItsLog(t *testing.T) {
	c := metaCluster(t)
	waitSlaveStreaming(t, c.Broker(0))
	writeRebuildTopic(t, c)
	dir := filepath.Join(c.Broker(1).Config().StorePathRootDir, "config")
	c.StopBroker(0)
	c.StopBroker(1)
	for _, f := range []string{"topics.json", "subscriptionGroup.json", "haMetaApplied.json"} {
		for _, name := range []string{f, f + ".bak"} { // a missing file is read from its backup
			if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				t.Fatal(err)
			}
		}
	}
	checkRebuilt(t, c.StartBroker(1))
}

// TestHASlaveReappliesRecordsOverOlderTables: a slave whose topic and group files are older than the
// position of the metadata records it applied (taken before the records; as topics.json.bak is read when
// topics.json is lost, or an older backup is restored), restarted while its master is down, applies the
// records again and knows the topic and group. Before haMetaApplied.json named the tables' versions, the
// slave started from the position and never knew them (and a periodic checkpoint between the records and a
// stop made TestHASlaveRebuildsMetadataFromItsLog fail when it left the .bak files: the backup of
// haMetaApplied.json was past the records, the backup of topics.json before them).
func TestHASlaveReappliesRecordsOverOlderTables(t *testing.T) {
	c := metaCluster(t)
	master, slave := c.Broker(0), c.Broker(1)
	waitSlaveStreaming(t, master)
	mw, sw := newWire(t, master.Addr()), newWire(t, slave.Addr())
	cluster.Eventually(t, 20*time.Second, func() bool {
		return topicTable(t, sw).DataVersion == topicTable(t, mw).DataVersion &&
			groupTable(t, sw).DataVersion == groupTable(t, mw).DataVersion
	}, "the slave's first copy")
	dir := filepath.Join(slave.Config().StorePathRootDir, "config")
	files := []string{"topics.json", "subscriptionGroup.json"}
	older := map[string][]byte{} // nil: the file did not exist yet
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			t.Fatal(err)
		}
		older[f] = b
	}
	writeRebuildTopic(t, c)
	c.StopBroker(0)
	c.StopBroker(1)
	if _, err := os.Stat(filepath.Join(dir, "haMetaApplied.json")); err != nil {
		t.Fatalf("the slave saved no position of the records it applied: %v", err)
	}
	for _, f := range files {
		for _, name := range []string{f, f + ".bak"} {
			if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				t.Fatal(err)
			}
		}
		if older[f] != nil {
			if err := os.WriteFile(filepath.Join(dir, f), older[f], 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	checkRebuilt(t, c.StartBroker(1))
}
