package admin

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/rocketraft/rocketraft/app/cluster"
)

// resetOffsetByTime moves a group's offsets back to a time: a running official push consumer is told
// (RESET_CONSUMER_CLIENT_OFFSET) and consumes the messages again; a group with no consumer online gets the
// offsets committed at the broker.
func TestResetOffsetByTimeRereads(t *testing.T) {
	c := cluster.Start(t, cluster.Options{})
	ns := c.NamesrvAddr()
	const topic, group = "TopicReset", "GroupReset"
	ok(t, "updateTopic", "-n", ns, "-c", "DefaultCluster", "-t", topic, "-r", "2", "-w", "2")
	c.WaitTopicRoute(topic)
	p := startProducer(t, c, "PG_reset")
	before := time.Now().UnixMilli()
	sendN(t, p, topic, "TagA", 10)

	rec := startPushConsumer(t, c, group, topic)
	eventually(t, 20*time.Second, func() string {
		if n := rec.atLeast(1); n < 10 {
			return fmt.Sprintf("the push consumer received %d of 10 messages", n)
		}
		var res consumerProgressResult
		if o := mqadmin(t, "consumerProgress", "-n", ns, "-g", group, "--json"); o.code != 0 || jsonDecode(o.stdout, &res) != nil {
			return "consumerProgress: " + o.stderr
		}
		if res.ConsumerOffsetTotal != 10 {
			return fmt.Sprintf("the group committed %d of 10", res.ConsumerOffsetTotal)
		}
		return ""
	})
	if n := rec.atLeast(2); n != 0 {
		t.Fatalf("%d messages arrived twice before any reset", n)
	}

	var res resetOffsetResult
	okJSON(t, &res, "resetOffsetByTime", "-n", ns, "-g", group, "-t", topic, "-s", strconv.FormatInt(before, 10))
	if len(res.Queues) != 2 || res.Queues[0].Offset != 0 || res.Queues[1].Offset != 0 || res.Timestamp != before {
		t.Fatalf("resetOffsetByTime --json: %+v", res)
	}
	// The official client waits 10 s after the request before it applies the new offsets.
	eventually(t, 40*time.Second, func() string {
		if n := rec.atLeast(2); n < 10 {
			return fmt.Sprintf("after the reset the push consumer received %d of the 10 messages again", n)
		}
		return ""
	})

	// A group with no consumer online: the broker commits the offsets itself ("now" = the end of each queue).
	out := ok(t, "resetOffsetByTime", "-n", ns, "-g", "GroupOffline", "-t", topic, "-s", "now")
	contains(t, out, "rollback consumer offset by specified group[GroupOffline], topic[TopicReset], force[true], timestamp(string)[now], timestamp(long)[-1]",
		"#brokerName", "#queueId", "#offset", "broker-a")
	var prog consumerProgressResult
	okJSON(t, &prog, "consumerProgress", "-n", ns, "-g", "GroupOffline")
	if prog.ConsumerOffsetTotal != 10 || prog.DiffTotal != 0 {
		t.Fatalf("offline group after reset to now: %+v", prog)
	}
	// -f false never moves a group forward.
	okJSON(t, &res, "resetOffsetByTime", "-n", ns, "-g", "GroupOffline", "-t", topic, "-s", strconv.FormatInt(before, 10), "-f", "false")
	okJSON(t, &res, "resetOffsetByTime", "-n", ns, "-g", "GroupOffline", "-t", topic, "-s", "now", "-f", "false")
	if res.Queues[0].Offset != 0 || res.Queues[1].Offset != 0 {
		t.Fatalf("reset to now without force moved the group forward: %+v", res)
	}
}
