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

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/rocketraft/rocketraft/app/cluster"
	"github.com/rocketraft/rocketraft/protocol"
	"github.com/rocketraft/rocketraft/remoting"
)

// slaveHasTopic reports whether the broker at addr knows topic (a slave learns topics from its master).
func slaveHasTopic(t *testing.T, w *remoting.Client, addr, topic string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	resp, err := w.Invoke(ctx, addr, remoting.NewRequest(remoting.GetAllTopicConfig, nil, nil))
	if err != nil || resp.Code != 0 {
		return false
	}
	var tw protocol.TopicConfigSerializeWrapper
	return json.Unmarshal(resp.Body, &tw) == nil && tw.TopicConfigTable[topic] != nil
}

// TestHAKill9SyncMasterLosesNothing: a SYNC_MASTER with SYNC_FLUSH, in a process of its own, is killed
// with SIGKILL during a load through the official Go client. Every message the client saw acknowledged
// (SEND_OK) is then consumed from the slave, the master being gone from the route: a consumer started
// after the kill reads it all from the slave, and a consumer that was running keeps reading, now from
// the slave.
func TestHAKill9SyncMasterLosesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("starts broker processes")
	}
	c := cluster.Start(t, cluster.Options{NoBrokers: true})
	port := cluster.FreePort(t)
	addr := "127.0.0.1:" + strconv.Itoa(port)
	const topic = "HAKill9"
	args := []string{"-n", c.NamesrvAddr(), "--brokerName=broker-ha", "--brokerIP1=127.0.0.1", "--listenPort=" + strconv.Itoa(port),
		"--storePathRootDir=" + filepath.Join(t.TempDir(), "master"), "--brokerRole=SYNC_MASTER", "--flushDiskType=SYNC_FLUSH",
		"--mappedFileSizeCommitLog=1048576", "--maxMessageSize=65536", "--registerNameServerPeriod=1000", "--metricsPort=0"}
	child := startChildBroker(t, args...)
	w := newWireClient(t)
	cluster.Eventually(t, 20*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		resp, err := w.Invoke(ctx, addr, remotingTopicCreate(topic))
		return err == nil && resp.Code == 0
	}, "child master at %s serving", addr)

	scfg := cluster.SlaveConfig(t, c.NamesrvAddr(), "broker-ha", 1)
	scfg.MappedFileSizeCommitLog = 1 << 20
	scfg.MaxMessageSize = 65536
	scfg.RegisterNameServerPeriod = 1000
	scfg.Replication.SlaveSynchronizeInterval = 200
	slave := c.Broker(c.AddBroker(scfg))
	c.WaitBrokerAddrs("broker-ha", map[int64]string{0: addr, 1: slave.Addr()})
	cluster.Eventually(t, 20*time.Second, func() bool { return slaveHasTopic(t, w, slave.Addr(), topic) }, "topic synced to the slave")
	c.WaitTopicRoute(topic)

	// A consumer running before the kill, held back: its handlers wait for the kill and it may pull only
	// a few messages ahead (pullThresholdForQueue), so most of what it consumes it pulls after the kill,
	// from the slave.
	early := newReceived()
	gate := make(chan struct{})
	ec := newPushConsumer(t, c, "CG_ha_early", consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
		consumer.WithPullThresholdForQueue(16), consumer.WithPullBatchSize(4))
	err := ec.Subscribe(topic, consumer.MessageSelector{}, func(ctx context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		<-gate
		early.add(msgs...)
		return consumer.ConsumeSuccess, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := ec.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ec.Shutdown() })
	var opened sync.Once
	openGate := func() { opened.Do(func() { close(gate) }) }
	t.Cleanup(openGate) // runs before the Shutdown above, should the test stop early

	p := newProducer(t, c, producer.WithRetry(0), producer.WithSendMsgTimeout(3*time.Second))
	padding := strings.Repeat("p", 400)
	var (
		mu       sync.Mutex
		acked    []string
		notOK    atomic.Int64
		seq      atomic.Int64
		stopping atomic.Bool
		wg       sync.WaitGroup
	)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stopping.Load() {
				body := fmt.Sprintf("ha-%d-%s", seq.Add(1), padding)
				res, err := p.SendSync(context.Background(), primitive.NewMessage(topic, []byte(body)))
				switch {
				case err == nil && res.Status == primitive.SendOK:
					mu.Lock()
					acked = append(acked, body)
					mu.Unlock()
				case err == nil:
					notOK.Add(1)
				}
			}
		}()
	}
	cluster.Eventually(t, 90*time.Second, func() bool { mu.Lock(); defer mu.Unlock(); return len(acked) >= 1500 }, "1500 acknowledged sends")
	if err := child.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = child.Wait()
	openGate()
	stopping.Store(true)
	wg.Wait()
	mu.Lock()
	want := append([]string(nil), acked...)
	mu.Unlock()
	t.Logf("%d sends acknowledged before SIGKILL, %d answered otherwise (of %d attempted)", len(want), notOK.Load(), seq.Load())

	// The name server drops the master when its connection dies; the slave alone serves the group.
	c.WaitBrokerAddrs("broker-ha", map[int64]string{1: slave.Addr()})
	late := newReceived()
	startConsumer(t, c, "CG_ha_late", topic, consumer.MessageSelector{}, late, consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
		consumer.WithConsumerModel(consumer.BroadCasting))
	waitAll(t, late, want, 60*time.Second, "the consumer started after the kill")
	waitAll(t, early, want, 60*time.Second, "the consumer running across the kill")
}

// waitAll waits until r holds every body of want.
func waitAll(t *testing.T, r *received, want []string, timeout time.Duration, who string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		var missing []string
		for _, b := range want {
			if !r.has(b) {
				missing = append(missing, b)
			}
		}
		if len(missing) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d of %d acknowledged messages not consumed, e.g. %.20q", who, len(missing), len(want), missing[:min(3, len(missing))])
		}
		select {
		case <-r.ch:
		case <-time.After(time.Second):
		}
	}
}
