package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/admin"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/rocketraft/rocketraft/app/cluster"
	"github.com/rocketraft/rocketraft/protocol"
	"github.com/rocketraft/rocketraft/remoting"
)

// TestHASlaveServesNewTopicAfterKill (issue 37, point 3): a topic and two consumer groups are created on a
// SYNC_MASTER (SYNC_FLUSH) whose slave is already streaming; at least 2,000 sends to the topic are
// acknowledged and the master, in a process of its own, is SIGKILLed right after the last one. The slave
// must then serve what it stores: every acknowledged message is consumed from it by the official Go client,
// by two consumers that ran across the kill (one held back before it, one not) and by a broadcasting
// consumer started after it; topicStatus (GET_TOPIC_STATS_INFO) on the slave answers; the slave's
// committed offsets of the held group are those the master had, and of the other group never more than
// it consumed (a restarted consumer re-reads, never skips). Duplicates are counted and logged, and how
// many a restart from the slave's offsets would deliver again.
//
// The slave's periodic metadata copy (slaveSynchronizeInterval) is set to an hour and neither broker
// creates groups on use (autoCreateSubscriptionGroup=false), so the topic, the groups and the offsets can
// reach the slave only with the CommitLog it replicates: the test checks that path, not the copy's timing.
func TestHASlaveServesNewTopicAfterKill(t *testing.T) {
	if testing.Short() {
		t.Skip("starts broker processes")
	}
	const (
		topic     = "HASlaveServes"
		queues    = 8
		runGroup  = "CG_slave_serves_run"
		freeGroup = "CG_slave_serves_free"
		lateGroup = "CG_slave_serves_late"
		wantAcked = 2000
	)
	c := cluster.Start(t, cluster.Options{NoBrokers: true})
	port := cluster.FreePort(t)
	addr := "127.0.0.1:" + strconv.Itoa(port)
	child := startChildBroker(t, "-n", c.NamesrvAddr(), "--brokerName=broker-hs", "--brokerIP1=127.0.0.1",
		"--listenPort="+strconv.Itoa(port), "--storePathRootDir="+filepath.Join(t.TempDir(), "master"),
		"--brokerRole=SYNC_MASTER", "--flushDiskType=SYNC_FLUSH", "--autoCreateSubscriptionGroup=false",
		"--mappedFileSizeCommitLog=1048576", "--maxMessageSize=65536", "--registerNameServerPeriod=1000", "--metricsPort=0")
	w := newWireClient(t)
	// Created before the slave starts: once the slave has it, the copy it makes at start has run (without
	// the master's metadata records that copy is the only way it comes).
	const marker = "HASlaveServesMarker"
	cluster.Eventually(t, 20*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		resp, err := w.Invoke(ctx, addr, remotingTopicCreate(marker))
		return err == nil && resp.Code == 0
	}, "child master at %s serving", addr)

	scfg := cluster.SlaveConfig(t, c.NamesrvAddr(), "broker-hs", 1)
	scfg.MappedFileSizeCommitLog = 1 << 20
	scfg.MaxMessageSize = 65536
	scfg.RegisterNameServerPeriod = 1000
	scfg.AutoCreateSubscriptionGroup = false
	scfg.Replication.SlaveSynchronizeInterval = int64(time.Hour / time.Millisecond)
	slave := c.Broker(c.AddBroker(scfg))
	c.WaitBrokerAddrs("broker-hs", map[int64]string{0: addr, 1: slave.Addr()})
	// Later changes have no copy to ride (the next is an hour away).
	cluster.Eventually(t, 20*time.Second, func() bool { return slaveHasTopic(t, w, slave.Addr(), marker) }, "the slave's first copy")
	cluster.Eventually(t, 20*time.Second, func() bool { return slave.HAClient().Connected() && slave.HAClient().ReportedOffset() >= 0 },
		"the slave streaming")

	adm, err := admin.NewAdmin(admin.WithResolver(primitive.NewPassthroughResolver(c.NamesrvAddrs())))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	if err := adm.CreateTopic(context.Background(), admin.WithTopicCreate(topic), admin.WithBrokerAddrCreate(addr),
		admin.WithReadQueueNums(queues), admin.WithWriteQueueNums(queues)); err != nil {
		t.Fatal(err)
	}
	created := time.Now()
	for _, g := range []string{runGroup, freeGroup, lateGroup} {
		createGroupOn(t, w, addr, g)
	}
	c.WaitTopicRoute(topic)

	// A consumer of the master that keeps running across the kill. Once it has half the messages its
	// handler waits for the kill, and it may pull only a few messages ahead (pullThresholdForQueue): the
	// rest it reads from the slave, from where it was.
	run := newReceived()
	gate := make(chan struct{})
	var opened sync.Once
	openGate := func() { opened.Do(func() { close(gate) }) }
	t.Cleanup(openGate) // before the consumer's Shutdown, should the test stop early
	rc := newPushConsumer(t, c, runGroup, consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
		consumer.WithPullThresholdForQueue(16), consumer.WithPullBatchSize(4))
	if err := rc.Subscribe(topic, consumer.MessageSelector{}, func(ctx context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		if run.distinct() >= wantAcked/2 {
			<-gate
		}
		run.add(msgs...)
		return consumer.ConsumeSuccess, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := rc.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rc.Shutdown() })
	// A consumer of the master that never holds: at the kill the slave's offsets of its group trail what it
	// consumed by what it committed in the last haOffsetSyncInterval (and the pulls in flight).
	free := newReceived()
	startConsumer(t, c, freeGroup, topic, consumer.MessageSelector{}, free, consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset))

	p := newProducer(t, c, producer.WithRetry(0), producer.WithSendMsgTimeout(5*time.Second))
	var (
		mu       sync.Mutex
		acked    []string
		lastAck  time.Time
		notOK    atomic.Int64
		seq      atomic.Int64
		stopping atomic.Bool
		wg       sync.WaitGroup
	)
	ackedCount := func() int { mu.Lock(); defer mu.Unlock(); return len(acked) }
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stopping.Load() {
				body := fmt.Sprintf("hs-%d-%s", seq.Add(1), strings.Repeat("p", 200))
				res, err := p.SendSync(context.Background(), primitive.NewMessage(topic, []byte(body)))
				switch {
				case err == nil && res.Status == primitive.SendOK:
					mu.Lock()
					acked = append(acked, body)
					lastAck = time.Now()
					mu.Unlock()
				case err == nil:
					notOK.Add(1)
				}
			}
		}()
	}
	// Once the running consumer holds, the offsets its group committed to the master; the sends go on
	// until the slave holds them too (they travel in the CommitLog, about once a second) and 2,000 are
	// acknowledged.
	run.waitDistinct(t, wantAcked/2, 90*time.Second)
	var masterCommitted int64
	cluster.Eventually(t, 30*time.Second, func() bool {
		masterCommitted = committedSum(t, w, addr, runGroup, topic, queues)
		return masterCommitted > 0
	}, "the running group's offsets committed to the master")
	offsetsFollowed := false
	followDeadline := time.Now().Add(30 * time.Second)
	for {
		if !offsetsFollowed && committedSum(t, w, slave.Addr(), runGroup, topic, queues) >= masterCommitted {
			offsetsFollowed = true
		}
		if ackedCount() >= wantAcked && (offsetsFollowed || time.Now().After(followDeadline)) {
			break
		}
		time.Sleep(50 * time.Millisecond) // pacing of the check; the condition is what ends the loop
	}
	stopping.Store(true)
	wg.Wait()
	mu.Lock()
	want := append([]string(nil), acked...)
	sinceLast := time.Since(lastAck)
	mu.Unlock()
	freeAtKill := free.distinct()
	if err := child.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	_ = child.Wait()
	t.Logf("%d sends acknowledged (%d answered otherwise); topic created %v before the kill, last acknowledgement %v before it",
		len(want), notOK.Load(), killed.Sub(created).Round(time.Millisecond), sinceLast.Round(100*time.Microsecond))
	if sinceLast > time.Second {
		t.Fatalf("the last acknowledgement was %v before the kill, not within a second", sinceLast)
	}
	if !offsetsFollowed {
		t.Errorf("the slave's committed offsets of %s never reached %d, what the master had (its copy runs once an hour)", runGroup, masterCommitted)
	}
	runBeforeKill := run.distinct()
	openGate()

	c.WaitBrokerAddrs("broker-hs", map[int64]string{1: slave.Addr()})
	// mqadmin topicStatus against the slave.
	var status *remoting.Command
	cluster.Eventually(t, 10*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		status, err = w.Invoke(ctx, slave.Addr(), remoting.NewRequest(remoting.GetTopicStatsInfo, map[string]string{"topic": topic}, nil))
		return err == nil
	}, "a topicStatus answer from the slave")
	if status.Code != int32(remoting.Success) {
		t.Errorf("topicStatus %s on the slave: code %d %q", topic, status.Code, status.Remark)
	}
	var stored int64
	for q := 0; q < queues; q++ {
		stored += max(queueMaxOffsetOf(t, w, slave.Addr(), topic, q), 0)
	}
	slaveCommitted := committedSum(t, w, slave.Addr(), runGroup, topic, queues)
	if slaveCommitted > stored {
		t.Errorf("the slave's committed offsets of %s sum to %d, past the %d messages it stores", runGroup, slaveCommitted, stored)
	}
	// Nothing skipped: the slave's offsets of a group never pass what the group consumed.
	slaveFree := committedSum(t, w, slave.Addr(), freeGroup, topic, queues)
	if consumed := int64(free.distinct()); slaveFree > consumed {
		t.Errorf("the slave's committed offsets of %s sum to %d, past the %d messages the group consumed", freeGroup, slaveFree, consumed)
	}

	late := newReceived()
	startConsumer(t, c, lateGroup, topic, consumer.MessageSelector{}, late, consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
		consumer.WithConsumerModel(consumer.BroadCasting))
	lateStart := time.Now()
	waitAll(t, late, want, 60*time.Second, "the consumer started after the kill")
	lateTook := time.Since(lateStart)
	waitAll(t, run, want, 60*time.Second, "the consumer running across the kill")
	runTook := time.Since(killed)
	waitAll(t, free, want, 60*time.Second, "the consumer that never held")
	t.Logf("RESULT acked=%d stored-on-slave=%d lastAck->kill=%v; consumer started after the kill: all %d in %v, duplicates %d; "+
		"consumer held across the kill: %d before it, all %d after %v, duplicates %d, slave's offsets %d (master had >= %d: a restart re-reads at most %d); "+
		"free consumer: %d by the kill, duplicates %d, slave's offsets %d (a restart re-reads at most %d)",
		len(want), stored, sinceLast.Round(100*time.Microsecond), late.distinct(), lateTook.Round(time.Millisecond), late.duplicates(),
		runBeforeKill, run.distinct(), runTook.Round(time.Millisecond), run.duplicates(), slaveCommitted, masterCommitted,
		max(int64(runBeforeKill)-slaveCommitted, 0), freeAtKill, free.duplicates(), slaveFree, max(int64(freeAtKill)-slaveFree, 0))
}

// createGroupOn creates a consumer group on the broker at addr (mqadmin updateSubGroup).
func createGroupOn(t *testing.T, w *remoting.Client, addr, group string) {
	t.Helper()
	body, err := json.Marshal(protocol.SubscriptionGroupConfig{GroupName: group, ConsumeEnable: true, ConsumeFromMinEnable: true,
		ConsumeBroadcastEnable: true, RetryQueueNums: 1, RetryMaxTimes: 16, WhichBrokerWhenConsumeSlowly: 1,
		NotifyConsumerIdsChangedEnable: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	resp, err := w.Invoke(ctx, addr, remoting.NewRequest(remoting.UpdateAndCreateSubscriptionGroup, nil, body))
	if err != nil || resp.Code != int32(remoting.Success) {
		t.Fatalf("create group %s on %s: %v %v", group, addr, err, resp)
	}
}

// queueMaxOffsetOf is GET_MAX_OFFSET of one queue (-1 when the broker does not answer).
func queueMaxOffsetOf(t *testing.T, w *remoting.Client, addr, topic string, q int) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	resp, err := w.Invoke(ctx, addr, remoting.NewRequest(remoting.GetMaxOffset, map[string]string{"topic": topic, "queueId": strconv.Itoa(q)}, nil))
	if err != nil || resp.Code != int32(remoting.Success) {
		return -1
	}
	n, _ := strconv.ParseInt(resp.ExtFields["offset"], 10, 64)
	return n
}

// duplicates is how many deliveries were of a body delivered before.
func (r *received) duplicates() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, c := range r.bodies {
		n += c - 1
	}
	return n
}
