package admin

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rocketraft/rocketraft/app/cluster"
	"github.com/rocketraft/rocketraft/client"
)

// TestExportImportMetadata migrates a cluster's topics and groups: exportMetadata -c writes the user topics
// (queues summed over the masters, attributes kept) and groups, not the system ones; importMetadata -c creates
// them on another cluster, dividing the queues among its masters. exportConfigs writes the brokers' chosen keys
// and the cluster's scale.
func TestExportImportMetadata(t *testing.T) {
	src := cluster.Start(t, cluster.Options{Brokers: 2})
	ns := src.NamesrvAddr()
	ok(t, "updateTopic", "-n", ns, "-c", "DefaultCluster", "-t", "TopicMig", "-r", "4", "-w", "4", "-a", "+message.type=FIFO")
	ok(t, "updateSubGroup", "-n", ns, "-c", "DefaultCluster", "-g", "GroupMig", "-r", "5")
	dir := t.TempDir()

	var ex exportResult
	okJSON(t, &ex, "exportMetadata", "-n", ns, "-c", "DefaultCluster", "-f", dir)
	data, err := os.ReadFile(filepath.Join(dir, "metadata.json"))
	if err != nil || ex.Path != filepath.Join(dir, "metadata.json") {
		t.Fatalf("export %+v: %v", ex, err)
	}
	var md metadataFile
	if err := json.Unmarshal(data, &md); err != nil {
		t.Fatal(err)
	}
	tc := md.TopicConfigTable["TopicMig"]
	if tc == nil || tc.ReadQueueNums != 8 || tc.Attributes["message.type"] != "FIFO" || md.SubscriptionGroupTable["GroupMig"] == nil ||
		md.SubscriptionGroupTable["GroupMig"].RetryMaxTimes != 5 || md.ExportTime == 0 {
		t.Fatalf("metadata.json:\n%s", data)
	}
	for _, sys := range []string{"TBW102", "SCHEDULE_TOPIC_XXXX", "DefaultCluster", "broker-a", "RMQ_SYS_TRANS_HALF_TOPIC"} {
		if md.TopicConfigTable[sys] != nil {
			t.Fatalf("system topic %s exported", sys)
		}
	}
	if md.SubscriptionGroupTable["TOOLS_CONSUMER"] != nil {
		t.Fatal("system group exported")
	}
	contains(t, ok(t, "exportMetadata", "-n", ns, "-b", src.Broker(0).Addr(), "-t", "-f", dir), "export "+filepath.Join(dir, "topic.json")+" success")

	contains(t, ok(t, "exportConfigs", "-n", ns, "-c", "DefaultCluster", "-f", dir), "configs.json success")
	var cf configsFile
	if data, err = os.ReadFile(filepath.Join(dir, "configs.json")); err != nil || json.Unmarshal(data, &cf) != nil {
		t.Fatalf("configs.json: %v\n%s", err, data)
	}
	if cf.ClusterScale["masterBrokerSize"] != 2 || cf.ClusterScale["namesrvSize"] != 1 ||
		cf.BrokerConfigs["broker-b"]["flushDiskType"] == "" || cf.BrokerConfigs["broker-a"]["brokerName"] != "broker-a" {
		t.Fatalf("configs.json: %+v", cf)
	}

	dst := cluster.Start(t, cluster.Options{})
	dns := dst.NamesrvAddr()
	out := ok(t, "importMetadata", "-n", dns, "-c", "DefaultCluster", "-f", filepath.Join(dir, "metadata.json"))
	contains(t, out, "subscription groups to "+dst.Broker(0).Addr()+" success.")
	dst.WaitTopicRoute("TopicMig")
	cl := client.New(client.Config{Namesrvs: dst.NamesrvAddrs(), Timeout: 5 * time.Second})
	defer cl.Close()
	w, err := cl.TopicConfigs(t.Context(), dst.Broker(0).Addr())
	if err != nil {
		t.Fatal(err)
	}
	if got := w.TopicConfigTable["TopicMig"]; got == nil || got.WriteQueueNums != 8 || got.Attributes["message.type"] != "FIFO" {
		t.Fatalf("TopicMig after import: %+v", got)
	}
	groups, err := cl.SubscriptionGroups(t.Context(), dst.Broker(0).Addr())
	if err != nil || groups["GroupMig"] == nil || groups["GroupMig"].RetryMaxTimes != 5 {
		t.Fatalf("GroupMig after import: %+v, %v", groups["GroupMig"], err)
	}
	failing(t, ExitBadArgs, []string{"holds no topicConfigTable and no subscriptionGroupTable"}, "importMetadata", "-n", dns, "-c", "DefaultCluster",
		"-f", filepath.Join(dir, "configs.json"))
}
