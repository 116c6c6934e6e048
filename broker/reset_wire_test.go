package broker_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/rocketraft/rocketraft/app/cluster"
	"github.com/rocketraft/rocketraft/remoting"
)

// TestResetHoldsOffClientCommits, over the wire: after mqadmin's reset of a group with a consumer online,
// the consumer's commits of its old offset (UPDATE_CONSUMER_OFFSET, or a pull's commit flag) are answered
// SUCCESS and ignored, until it pulls the queue at the reset offset; then commits apply again. A group
// with no consumer online is not held, nor a commit by a connection that is not the group's consumer.
func TestResetHoldsOffClientCommits(t *testing.T) {
	c := cluster.Start(t, cluster.Options{})
	w := newWire(t, c.Broker(0).Addr())
	expectCode(t, "create", w.call(remoting.UpdateAndCreateTopic, map[string]string{"topic": "T", "readQueueNums": "1", "writeQueueNums": "1", "perm": "6"}, nil), remoting.Success)
	before := time.Now().Add(-time.Second).UnixMilli()
	for i := 0; i < 5; i++ {
		expectCode(t, "send", w.send("T", 0, []byte(fmt.Sprint(i)), ""), remoting.Success)
	}
	cluster.Eventually(t, 5*time.Second, func() bool {
		return w.call(remoting.GetMaxOffset, map[string]string{"topic": "T", "queueId": "0"}, nil).ExtFields["offset"] == "5"
	}, "five messages dispatched")
	heartbeat(t, w, "c1", "G")
	commit := func(group string, off int) *remoting.Command {
		return w.call(remoting.UpdateConsumerOffset, map[string]string{"consumerGroup": group, "topic": "T", "queueId": "0", "commitOffset": fmt.Sprint(off)}, nil)
	}
	offset := func(group string) string {
		return w.call(remoting.QueryConsumerOffset, map[string]string{"consumerGroup": group, "topic": "T", "queueId": "0"}, nil).ExtFields["offset"]
	}
	pullCommitting := func(at, commitOff int) {
		t.Helper()
		resp := w.call(remoting.PullMessage, map[string]string{
			"consumerGroup": "G", "topic": "T", "queueId": "0", "queueOffset": fmt.Sprint(at), "maxMsgNums": "32",
			"sysFlag": fmt.Sprint(remoting.PullFlagCommitOffset | 4), "commitOffset": fmt.Sprint(commitOff),
			"suspendTimeoutMillis": "0", "subscription": "*", "subVersion": "0", "expressionType": "TAG"}, nil)
		expectCode(t, "pull", resp, remoting.Success)
	}
	for _, g := range []string{"G", "GroupOffline"} {
		expectCode(t, "commit", commit(g, 5), remoting.Success)
		expectCode(t, "reset", w.call(remoting.InvokeBrokerToResetOffset, map[string]string{"topic": "T", "group": g,
			"timestamp": fmt.Sprint(before), "isForce": "true"}, nil), remoting.Success)
		if got := offset(g); got != "0" {
			t.Fatalf("%s: offset %s after the reset, want 0", g, got)
		}
	}
	expectCode(t, "offline group's commit", commit("GroupOffline", 4), remoting.Success)
	if got := offset("GroupOffline"); got != "4" {
		t.Fatalf("a group with no consumer online is held: offset %s after committing 4", got)
	}

	expectCode(t, "stale commit", commit("G", 5), remoting.Success, "previously reset")
	pullCommitting(3, 5) // a pull elsewhere, committing the old offset
	if got := offset("G"); got != "0" {
		t.Fatalf("offset %s after the consumer's stale commits, want the reset's 0", got)
	}
	// An operator's commit on a connection that is not the group's consumer applies during the hold;
	// the consumer's stale commits stay held off.
	admin := newWire(t, c.Broker(0).Addr())
	expectCode(t, "operator's commit", admin.call(remoting.UpdateConsumerOffset, map[string]string{"consumerGroup": "G", "topic": "T",
		"queueId": "0", "commitOffset": "1"}, nil), remoting.Success)
	expectCode(t, "stale commit again", commit("G", 5), remoting.Success, "previously reset")
	if got := offset("G"); got != "1" {
		t.Fatalf("offset %s after an operator committed 1 during the hold (and the consumer 5, held off)", got)
	}
	pullCommitting(0, 0) // the consumer took the reset up
	expectCode(t, "commit after", commit("G", 2), remoting.Success)
	if got := offset("G"); got != "2" {
		t.Fatalf("offset %s after the consumer pulled at the reset offset and committed 2", got)
	}
}
