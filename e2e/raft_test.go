package e2e

import (
	"context"
	"fmt"
	"maps"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/rocketraft/rocketraft/app/cluster"
	"github.com/rocketraft/rocketraft/message"
	"github.com/rocketraft/rocketraft/remoting"
)

// ack is a send the official client saw answered SEND_OK: where the broker said it went.
type ack struct {
	body   string
	sender int    // the sending goroutine: its sends are sequential
	broker string // the broker name of its queue
	queue  int
	offset int64
	host   string // the broker that stored it (from the offset message id)
	at     time.Time
}

// raftLoad sends to topic from several goroutines through the official Go client (retries allowed) and
// records every SEND_OK, until stopped.
type raftLoad struct {
	mu      sync.Mutex
	acks    []ack
	failed  atomic.Int64   // sends answered with an error or a status other than SEND_OK
	errs    map[string]int // guarded by mu: failed sends by the start of their error
	seq     atomic.Int64
	stopped atomic.Bool
	wg      sync.WaitGroup
}

func startRaftLoad(p rocketmq.Producer, topic string, senders int, padding int) *raftLoad {
	return startPacedLoad(p, topic, "raft", 0, senders, padding, 0)
}

// startRaftProbe sends one message at a time every pace (sender ids from firstSender on): unlike the
// load's senders, which are nearly always waiting on a send, it starts fresh sends during a failover, so
// its first SEND_OK from a new master shows when a send begun after the kill gets through.
func startRaftProbe(p rocketmq.Producer, topic string, firstSender int, pace time.Duration) *raftLoad {
	return startPacedLoad(p, topic, "probe", firstSender, 1, 0, pace)
}

// startPacedLoad runs senders goroutines (ids from firstSender) sending prefix-numbered bodies, each
// waiting pace after every send.
func startPacedLoad(p rocketmq.Producer, topic, prefix string, firstSender, senders, padding int, pace time.Duration) *raftLoad {
	l := &raftLoad{}
	pad := strings.Repeat("p", padding)
	for g := firstSender; g < firstSender+senders; g++ {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for !l.stopped.Load() {
				if pace > 0 {
					time.Sleep(pace) // the probe's rate, not a wait for a condition
				}
				body := fmt.Sprintf("%s-%d-%s", prefix, l.seq.Add(1), pad)
				res, err := p.SendSync(context.Background(), primitive.NewMessage(topic, []byte(body)))
				if err != nil || res.Status != primitive.SendOK {
					l.failed.Add(1)
					l.noteFailure(err, res)
					time.Sleep(20 * time.Millisecond) // back off: the client finds the new master at its next route refresh
					continue
				}
				l.mu.Lock()
				host := ""
				if ap, _, err := message.DecodeOffsetMsgID(res.OffsetMsgID); err == nil {
					host = ap.String()
				}
				l.acks = append(l.acks, ack{body: body, sender: g, broker: res.MessageQueue.BrokerName, queue: res.MessageQueue.QueueId,
					offset: res.QueueOffset, host: host, at: time.Now()})
				l.mu.Unlock()
			}
		}()
	}
	return l
}

// noteFailure counts a failed send by the first words of its error (or its status).
func (l *raftLoad) noteFailure(err error, res *primitive.SendResult) {
	kind := ""
	if err != nil {
		kind = err.Error()
	} else if res != nil {
		kind = fmt.Sprintf("status %d", res.Status)
	}
	if len(kind) > 48 {
		kind = kind[:48]
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.errs == nil {
		l.errs = map[string]int{}
	}
	l.errs[kind]++
}

// failures is the failed sends by the start of their error.
func (l *raftLoad) failures() map[string]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return maps.Clone(l.errs)
}

// count is the number of SEND_OK so far.
func (l *raftLoad) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.acks)
}

// firstBy is the time of the first SEND_OK after t stored by the broker at host (zero if none yet).
func (l *raftLoad) firstBy(host string, t time.Time) time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	var first time.Time
	for _, a := range l.acks {
		if a.host == host && a.at.After(t) && (first.IsZero() || a.at.Before(first)) {
			first = a.at
		}
	}
	return first
}

// stop ends the load and returns every SEND_OK.
func (l *raftLoad) stop() []ack {
	l.stopped.Store(true)
	l.wg.Wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]ack(nil), l.acks...)
}

// checkRaftHistory checks what a load's acknowledged sends and a consumer's messages say: every SEND_OK
// message was consumed, at the queue and offset its send was answered with; no queue offset carries two
// messages (acknowledged or consumed); each sender's messages to one queue have increasing offsets.
func checkRaftHistory(t *testing.T, acks []ack, got *received, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		var missing []ack
		for _, a := range acks {
			if !got.has(a.body) {
				missing = append(missing, a)
			}
		}
		if len(missing) == 0 {
			break
		}
		if time.Now().After(deadline) {
			for _, a := range missing[:min(5, len(missing))] {
				t.Errorf("not consumed: %.24q acknowledged by sender %d at %s, queue %d offset %d", a.body, a.sender, a.at.Format("15:04:05.000"), a.queue, a.offset)
			}
			t.Fatalf("%d of %d acknowledged messages not consumed within %v", len(missing), len(acks), timeout)
		}
		select {
		case <-got.ch:
		case <-time.After(time.Second):
		}
	}
	type qo struct {
		broker string
		q      int
		off    int64
	}
	byPos := map[qo]string{}
	for _, m := range got.snapshot() {
		k := qo{m.Queue.BrokerName, m.Queue.QueueId, m.QueueOffset}
		if b, ok := byPos[k]; ok && b != string(m.Body) {
			t.Fatalf("%s queue %d offset %d consumed with two bodies: %.24q and %.24q", k.broker, k.q, k.off, b, m.Body)
		}
		byPos[k] = string(m.Body)
	}
	seen := map[qo]string{}
	type senderQueue struct {
		sender int
		broker string
		q      int
	}
	last := map[senderQueue]int64{}
	sort.SliceStable(acks, func(i, j int) bool { return acks[i].at.Before(acks[j].at) })
	for _, a := range acks {
		k := qo{a.broker, a.queue, a.offset}
		if b, ok := seen[k]; ok {
			t.Fatalf("%s queue %d offset %d acknowledged twice: %.24q and %.24q", a.broker, a.queue, a.offset, b, a.body)
		}
		seen[k] = a.body
		if b := byPos[k]; b != a.body {
			t.Fatalf("%.24q was acknowledged at %s queue %d offset %d, where the consumer got %.24q", a.body, a.broker, a.queue, a.offset, b)
		}
		sq := senderQueue{a.sender, a.broker, a.queue}
		if prev, ok := last[sq]; ok && a.offset <= prev {
			t.Fatalf("sender %d, %s queue %d: offset %d acknowledged after offset %d (per-queue order broken)", a.sender, a.broker, a.queue, a.offset, prev)
		}
		last[sq] = a.offset
	}
	t.Logf("history checked: %d acknowledged messages consumed at their queue offsets, %d positions consumed", len(acks), len(byPos))
}

// raftCreateTopic creates a 4-queue topic on the Raft master (the followers learn it from the log).
func raftCreateTopic(t *testing.T, w *remoting.Client, master, topic string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := w.Invoke(ctx, master, remotingTopicCreate(topic))
	if err != nil || resp.Code != int32(remoting.Success) {
		t.Fatalf("create topic %s on the master %s: %v %v", topic, master, err, resp)
	}
}

// TestRaftSendConsumeAcrossTransfer: a three-node Raft group in this process, the official Go client
// sending and a push consumer reading while leadership moves to another node. The client keeps sending
// to the old master until its next route refresh, which forwards (no send fails), the consumer gets every SEND_OK
// message at the offset its send got, no queue offset is used twice, per-queue order holds; a topic
// created on the old master and the group's committed offsets are on the new master.
func TestRaftSendConsumeAcrossTransfer(t *testing.T) {
	c := cluster.Start(t, cluster.Options{RaftNodes: 3})
	m := c.RaftMaster("broker-a")
	w := newWireClient(t)
	const topic = "RaftE2E"
	raftCreateTopic(t, w, c.Broker(m).Addr(), topic)
	raftCreateTopic(t, w, c.Broker(m).Addr(), "RaftE2EBefore")
	c.WaitTopicRoute(topic)

	got := newReceived()
	startConsumer(t, c, "CG_raft", topic, consumer.MessageSelector{}, got, consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset))
	p := newProducer(t, c, producer.WithRetry(2), producer.WithSendMsgTimeout(3*time.Second))
	load := startRaftLoad(p, topic, 4, 100)
	cluster.Eventually(t, 60*time.Second, func() bool { return load.count() >= 300 }, "300 acknowledged sends before the transfer")

	// Offsets committed on the old master reach every node (within dLegerOffsetSyncIntervalMs).
	var committed int64
	cluster.Eventually(t, 30*time.Second, func() bool {
		committed = committedSum(t, w, c.Broker(m).Addr(), "CG_raft", topic, 4)
		return committed > 0
	}, "the consumer committed offsets on the master")
	for i := 0; i < 3; i++ {
		cluster.Eventually(t, 10*time.Second, func() bool {
			return committedSum(t, w, c.Broker(i).Addr(), "CG_raft", topic, 4) >= committed
		}, "node %d has the committed offsets (%d)", i, committed)
	}

	target := (m + 1) % 3
	start := time.Now()
	if err := c.Broker(m).TransferLeadership(c.Broker(target).Config().Raft.DLegerSelfId); err != nil {
		t.Fatalf("transfer: %v", err)
	}
	c.WaitRaftMaster("broker-a", target) // the roles follow Raft through role events still on their way
	registered := time.Since(start)
	if sum := committedSum(t, w, c.Broker(target).Addr(), "CG_raft", topic, 4); sum < committed {
		t.Errorf("the new master holds committed offsets summing to %d, below the %d committed before the transfer", sum, committed)
	}
	tc := newWireClient(t)
	for _, tp := range []string{topic, "RaftE2EBefore"} {
		if !slaveHasTopic(t, tc, c.Broker(target).Addr(), tp) {
			t.Errorf("topic %s created on the old master is missing on the new one", tp)
		}
	}
	newAddr := c.Broker(target).Addr()
	cluster.Eventually(t, 60*time.Second, func() bool { return !load.firstBy(newAddr, start).IsZero() }, "a SEND_OK from the new master")
	first := load.firstBy(newAddr, start)
	before := load.count()
	cluster.Eventually(t, 60*time.Second, func() bool { return load.count() >= before+100 }, "100 more acknowledged sends")
	acks := load.stop()
	t.Logf("transfer: new master registered as brokerId 0 after %v; the client's first SEND_OK from it %v after the transfer began; %d sends acknowledged, %d failed",
		registered.Round(time.Millisecond), first.Sub(start).Round(time.Millisecond), len(acks), load.failed.Load())
	if n := load.failed.Load(); n != 0 {
		t.Errorf("%d SendSync calls failed across a graceful transfer, want 0 (the old master forwards)", n)
	}
	checkRaftHistory(t, acks, got, 60*time.Second)
}
