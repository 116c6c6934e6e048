package e2e

import (
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/rocketraft/rocketraft/app/cluster"
)

// TestRaftTransferVIP: a three-node Raft group in this process with the master's virtual address
// (127.0.0.100; nodes at 127.0.0.11-13 on one listenPort), the official Go client sending and a push consumer
// reading while leadership moves twice (a transfer, then an ordered stop of the master). The client's route
// names the address throughout; it reaches each new master there. Every SEND_OK message is consumed at the
// offset its send got. Logged per move: the time until the new master listens on the address and until the
// client's first SEND_OK from it, and the failed sends (after the client's own retries).
func TestRaftTransferVIP(t *testing.T) {
	c := cluster.Start(t, cluster.Options{RaftNodes: 3, MasterVIP: "127.0.0.100"})
	m := c.RaftMaster("broker-a")
	w := newWireClient(t)
	const topic = "RaftVipMove"
	raftCreateTopic(t, w, c.Broker(m).RouteAddr(), topic)
	c.WaitTopicRoute(topic)

	got := newReceived()
	startConsumer(t, c, "CG_raft_vip", topic, consumer.MessageSelector{}, got, consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset))
	p := newProducer(t, c, producer.WithRetry(2), producer.WithSendMsgTimeout(3*time.Second))
	load := startRaftLoad(p, topic, 4, 100)
	move := func(what string, do func() int) {
		t.Helper()
		before := load.count()
		cluster.Eventually(t, 60*time.Second, func() bool { return load.count() >= before+300 }, "300 acknowledged sends before the %s", what)
		failed := load.failed.Load()
		start := time.Now()
		next := do()
		cluster.Eventually(t, 30*time.Second, func() bool { return c.Broker(next).MasterVipHeld() }, "node %d holds the virtual address", next)
		held := time.Since(start)
		addr := c.Broker(next).Addr()
		cluster.Eventually(t, 60*time.Second, func() bool { return !load.firstBy(addr, start).IsZero() }, "a SEND_OK from the new master %s", addr)
		t.Logf("%s: new master %s listening on the virtual address after %v, the client's first SEND_OK from it after %v; %d failed sends",
			what, addr, held.Round(time.Millisecond), load.firstBy(addr, start).Sub(start).Round(time.Millisecond), load.failed.Load()-failed)
	}
	move("transfer", func() int {
		target := (m + 1) % 3
		if err := c.Broker(m).TransferLeadership(c.Broker(target).Config().Raft.DLegerSelfId); err != nil {
			t.Fatalf("transfer: %v", err)
		}
		c.WaitRaftMaster("broker-a", target)
		m = target
		return target
	})
	move("ordered stop of the master", func() int {
		c.StopBroker(m)
		m = c.RaftMaster("broker-a")
		return m
	})
	before := load.count()
	cluster.Eventually(t, 60*time.Second, func() bool { return load.count() >= before+100 }, "100 more acknowledged sends")
	acks := load.stop()
	t.Logf("%d sends acknowledged, %d failed; failed sends by error: %v", len(acks), load.failed.Load(), load.failures())
	checkRaftHistory(t, acks, got, 60*time.Second)
}
