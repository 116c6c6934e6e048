package broker_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/rocketraft/rocketraft/app/cluster"
	"github.com/rocketraft/rocketraft/broker"
	"github.com/rocketraft/rocketraft/remoting"
)

var statsLine = regexp.MustCompile(`(?m)^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} INFO - \[([A-Z_]+)\] \[([^\]]+)\] Stats In One Minute, SUM: (\d+) TPS: (\d+\.\d\d) AVGPT: (\d+\.\d\d)$`)

// stats.log gets RocketMQ's per-minute lines (here every 100 ms) with what was sent and pulled over the wire:
// the SUMs of each item add up to the messages, AVGPT is messages per request.
func TestStatsLog(t *testing.T) {
	logs, dir := openTestLogs(t)
	b := startBrokerWith(t, cluster.TestBrokerConfig(t, "", "stats"), broker.Options{Logger: logs.Logger, StatsLogInterval: 100 * time.Millisecond})
	w := newWire(t, b.Addr())
	expectCode(t, "create", w.call(remoting.UpdateAndCreateTopic, map[string]string{"topic": "ST", "readQueueNums": "1", "writeQueueNums": "1", "perm": "6"}, nil), remoting.Success)
	for i := 0; i < 3; i++ {
		expectCode(t, "send", w.send("ST", 0, []byte("m"+strconv.Itoa(i)), ""), remoting.Success)
	}
	offset := int64(0) // pull from where the last answer ended: each message is handed out once
	cluster.Eventually(t, 10*time.Second, func() bool {
		resp := w.pull("SG", "ST", 0, offset, 0, "*")
		if resp.Code == int32(remoting.Success) {
			offset, _ = strconv.ParseInt(resp.ExtFields["nextBeginOffset"], 10, 64)
		}
		return offset == 3
	}, "pulls of the 3 messages")

	type total struct {
		sum   int64
		lines int
	}
	var got map[string]total
	cluster.Eventually(t, 10*time.Second, func() bool {
		text, err := os.ReadFile(filepath.Join(dir, "stats.log"))
		if err != nil {
			t.Fatal(err)
		}
		got = map[string]total{}
		for _, m := range statsLine.FindAllStringSubmatch(string(text), -1) {
			item, key := m[1], m[2]
			sum, _ := strconv.ParseInt(m[3], 10, 64)
			tps, _ := strconv.ParseFloat(m[4], 64)
			avg, _ := strconv.ParseFloat(m[5], 64)
			if sum > 0 && tps <= 0 {
				t.Fatalf("%s: SUM %d with TPS %v", m[0], sum, tps)
			}
			if item == "TOPIC_PUT_NUMS" && sum > 0 && avg != 1 {
				t.Fatalf("%s: one message per send, AVGPT must be 1.00", m[0])
			}
			k := item + " " + key
			got[k] = total{got[k].sum + sum, got[k].lines + 1}
		}
		return got["TOPIC_PUT_NUMS ST"].sum == 3 && got["GROUP_GET_NUMS ST@SG"].sum == 3 &&
			got["BROKER_PUT_NUMS DefaultCluster"].sum == 3 && got["BROKER_GET_NUMS DefaultCluster"].sum == 3 &&
			got["TOPIC_PUT_SIZE ST"].sum > 3 && got["GROUP_GET_SIZE ST@SG"].sum > 3 && got["TOPIC_PUT_NUMS ST"].lines >= 2
	}, "stats.log lines adding up to 3 messages in and out (and an idle minute printed with SUM 0)")
	t.Logf("stats.log totals: %v", got)
	if b, _ := os.ReadFile(filepath.Join(dir, "broker.log")); statsLine.Match(b) {
		t.Error("stats lines in broker.log")
	}
}
