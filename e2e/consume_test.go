package e2e

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/rocketraft/rocketraft/app/cluster"
	"github.com/rocketraft/rocketraft/broker"
)

func sendN(t *testing.T, p rocketmq.Producer, topic, prefix string, n int) []string {
	t.Helper()
	bodies := make([]string, n)
	for i := range bodies {
		bodies[i] = fmt.Sprintf("%s-%d", prefix, i)
		if _, err := p.SendSync(context.Background(), primitive.NewMessage(topic, []byte(bodies[i]))); err != nil {
			t.Fatalf("send %s: %v", bodies[i], err)
		}
	}
	return bodies
}

func queuesOf(msgs []*primitive.MessageExt) []int {
	set := map[int]bool{}
	for _, m := range msgs {
		set[m.Queue.QueueId] = true
	}
	var out []int
	for q := range set {
		out = append(out, q)
	}
	sort.Ints(out)
	return out
}

// TestClusteringGroups: two members of one group split four queues between them; a second group reads
// everything independently.
func TestClusteringGroups(t *testing.T) {
	c := cluster.Start(t, cluster.Options{})
	const topic = "Clustering"
	createTopic(t, c, topic, 4)
	m1, m2, other := newReceived(), newReceived(), newReceived()
	from := consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset)
	startConsumer(t, c, "CG_split", topic, consumer.MessageSelector{}, m1, from)
	startConsumer(t, c, "CG_split", topic, consumer.MessageSelector{}, m2, from)
	startConsumer(t, c, "CG_all", topic, consumer.MessageSelector{}, other, from)

	// Wait until both members own queues: the group's members see each other after their heartbeats,
	// and rebalance on NOTIFY_CONSUMER_IDS_CHANGED.
	p := newProducer(t, c)
	total := 0
	cluster.Eventually(t, 60*time.Second, func() bool {
		sendN(t, p, topic, "warm"+strconv.Itoa(total), 8)
		total += 8
		cluster.Eventually(t, 30*time.Second, func() bool { return other.distinct() >= total }, "second group caught up")
		return len(queuesOf(m1.snapshot())) > 0 && len(queuesOf(m2.snapshot())) > 0 && m1.distinct()+m2.distinct() >= total
	}, "both members of CG_split consuming")

	// From now on the assignment is stable: new messages are split, no queue is shared.
	before1, before2 := len(m1.snapshot()), len(m2.snapshot())
	sendN(t, p, topic, "split", 40)
	total += 40
	cluster.Eventually(t, 30*time.Second, func() bool { return other.distinct() == total }, "CG_all read all %d", total)
	cluster.Eventually(t, 30*time.Second, func() bool {
		n1, n2 := m1.distinct(), m2.distinct()
		return n1+n2 >= total
	}, "CG_split members together read all %d", total)
	q1, q2 := queuesOf(m1.snapshot()[before1:]), queuesOf(m2.snapshot()[before2:])
	t.Logf("member 1 queues %v, member 2 queues %v", q1, q2)
	if len(q1) == 0 || len(q2) == 0 || len(q1)+len(q2) != 4 {
		t.Fatalf("queues split %v / %v, want all four split between both members", q1, q2)
	}
	for _, a := range q1 {
		for _, b := range q2 {
			if a == b {
				t.Fatalf("queue %d consumed by both members", a)
			}
		}
	}
}

func TestBroadcasting(t *testing.T) {
	c := cluster.Start(t, cluster.Options{})
	const topic = "Broadcast"
	createTopic(t, c, topic, 4)
	a, b := newReceived(), newReceived()
	opts := []consumer.Option{consumer.WithConsumerModel(consumer.BroadCasting), consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset)}
	startConsumer(t, c, "CG_bcast", topic, consumer.MessageSelector{}, a, opts...)
	startConsumer(t, c, "CG_bcast", topic, consumer.MessageSelector{}, b, opts...)
	p := newProducer(t, c)
	sendN(t, p, topic, "b", 20)
	a.waitDistinct(t, 20, 30*time.Second)
	b.waitDistinct(t, 20, 30*time.Second)
}

// TestConsumeFromWhere: a new group starts at the first message, at the last offset, or at a timestamp.
// RocketMQ answers a new group's offset query with 0 while the queue's first message is in memory (so a
// group started after the first send still sees it); accessMessageInMemoryMaxRatio=0 makes every
// message but the newest count as "on disk", so the client's consumeFromWhere decides, as it does on a
// broker with a real backlog.
func TestConsumeFromWhere(t *testing.T) {
	c := cluster.Start(t, cluster.Options{Configure: func(_ int, cfg *broker.Config) { cfg.AccessMessageInMemoryMaxRatio = 0 }})
	const topic = "FromWhere"
	createTopic(t, c, topic, 1)
	p := newProducer(t, c)
	sendN(t, p, topic, "old", 10)
	// Store timestamps have millisecond resolution: step past the old messages' millisecond.
	mark := time.Now().Add(time.Second).Truncate(time.Second)
	for time.Now().Before(mark) {
		time.Sleep(10 * time.Millisecond)
	}
	sendN(t, p, topic, "mid", 10)

	first, ts, last := newReceived(), newReceived(), newReceived()
	startConsumer(t, c, "CG_first", topic, consumer.MessageSelector{}, first, consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset))
	startConsumer(t, c, "CG_ts", topic, consumer.MessageSelector{}, ts,
		consumer.WithConsumeFromWhere(consumer.ConsumeFromTimestamp),
		consumer.WithConsumeTimestamp(mark.Local().Format("20060102150405")))
	startConsumer(t, c, "CG_last", topic, consumer.MessageSelector{}, last, consumer.WithConsumeFromWhere(consumer.ConsumeFromLastOffset))

	// Until CG_last has taken its start offset it may miss new messages: keep sending until it sees one.
	n := 0
	cluster.Eventually(t, 30*time.Second, func() bool {
		sendN(t, p, topic, "new"+strconv.Itoa(n), 1)
		n++
		return last.distinct() > 0
	}, "CG_last receives a message sent after it started")

	first.waitDistinct(t, 20+n, 30*time.Second)
	ts.waitDistinct(t, 10+n, 30*time.Second)
	for _, m := range ts.snapshot() {
		if strings.HasPrefix(string(m.Body), "old") {
			t.Errorf("CG_ts (from %v) received %s, stored before that time", mark, m.Body)
		}
	}
	for _, m := range last.snapshot() {
		if b := string(m.Body); strings.HasPrefix(b, "old") || strings.HasPrefix(b, "mid") {
			t.Errorf("CG_last received %s, stored before it started", b)
		}
	}
}
