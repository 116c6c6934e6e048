package e2e

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/rocketraft/rocketraft/app/cluster"
	"github.com/rocketraft/rocketraft/broker"
	"github.com/rocketraft/rocketraft/protocol"
	"github.com/rocketraft/rocketraft/remoting"
)

// TestRaftMovesUnderLoadFailNoSend: the official Go client sends (retries allowed, as configured by
// default) and a push consumer reads while leadership moves twice: a graceful transfer away from the
// preferred leader (preferredLeaderId=n2), then the preferred-leader move back to n2. The client keeps
// the routes it read (it re-reads them every 30 s), so its sends reach the old master, which forwards
// them; not one SendSync fails, and every acknowledged message is consumed at its queue offset.
func TestRaftMovesUnderLoadFailNoSend(t *testing.T) {
	c := cluster.Start(t, cluster.Options{RaftNodes: 3, Configure: func(i int, cfg *broker.Config) {
		cfg.Raft.PreferredLeaderId = "n2"
	}})
	cluster.Eventually(t, 90*time.Second, func() bool { return c.Broker(2).IsRaftMaster() }, "the preferred leader n2 is master")
	c.WaitRaftMaster("broker-a", 2)
	w := newWireClient(t)
	const topic = "RaftMoves"
	raftCreateTopic(t, w, c.Broker(2).Addr(), topic)
	c.WaitTopicRoute(topic)

	got := newReceived()
	startConsumer(t, c, "CG_raft_moves", topic, consumer.MessageSelector{}, got, consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset))
	p := newProducer(t, c, producer.WithRetry(2), producer.WithSendMsgTimeout(3*time.Second))
	load := startRaftLoad(p, topic, 4, 100)
	cluster.Eventually(t, 60*time.Second, func() bool { return load.count() >= 300 }, "300 acknowledged sends before the transfer")

	start := time.Now()
	if err := c.Broker(2).TransferLeadership("n0"); err != nil {
		t.Fatalf("transfer to n0: %v", err)
	}
	c.WaitRaftMaster("broker-a", 0)
	transferred := time.Since(start)
	before := load.count()
	cluster.Eventually(t, 60*time.Second, func() bool { return load.count() >= before+200 }, "200 acknowledged sends after the transfer")
	failedAfterTransfer := load.failed.Load()

	// preferredLeaderId: n0 hands leadership back to n2 after five election timeouts.
	cluster.Eventually(t, 90*time.Second, func() bool { return c.Broker(2).IsRaftMaster() }, "the preferred leader n2 is master again")
	c.WaitRaftMaster("broker-a", 2)
	moved := time.Since(start)
	before = load.count()
	cluster.Eventually(t, 60*time.Second, func() bool { return load.count() >= before+200 }, "200 acknowledged sends after the preferred-leader move")
	acks := load.stop()
	var forwarded uint64
	for i := 0; i < 3; i++ {
		st, _ := c.Broker(i).RaftStatus()
		forwarded += st.Forwarded
	}
	t.Logf("transfer to n0 routed after %v, preferred-leader move back to n2 routed %v after the transfer began; %d sends acknowledged, "+
		"%d failed (%d by the end of the transfer); %d requests forwarded by the nodes",
		transferred.Round(time.Millisecond), moved.Round(time.Millisecond), len(acks), load.failed.Load(), failedAfterTransfer, forwarded)
	if n := load.failed.Load(); n != 0 {
		t.Errorf("%d SendSync calls failed across a graceful transfer and a preferred-leader move, want 0", n)
	}
	if forwarded == 0 {
		t.Errorf("no request was forwarded: the moves were not exercised while the client sent to the old master")
	}
	checkRaftHistory(t, acks, got, 60*time.Second)
}

// routeWatch asks a name server for a topic's route in a loop and records, per answer, whether the
// Raft group had a brokerId 0.
type routeWatch struct {
	answers, withoutMaster, standIn atomic.Int64
	stopped                         atomic.Bool
	wg                              sync.WaitGroup
	mu                              sync.Mutex
	standInAddrs                    map[string]bool // guarded by mu: brokerId 0 addresses the tables did not hold
}

func watchRoutes(t *testing.T, c *cluster.Cluster, topic, group string) *routeWatch {
	rw := &routeWatch{standInAddrs: map[string]bool{}}
	cl := newWireClient(t)
	rw.wg.Add(1)
	go func() {
		defer rw.wg.Done()
		for !rw.stopped.Load() {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			resp, err := cl.Invoke(ctx, c.NamesrvAddr(), remoting.NewRequest(remoting.GetRouteInfoByTopic, map[string]string{"topic": topic}, nil))
			cancel()
			if err != nil || resp.Code != int32(remoting.Success) {
				rw.answers.Add(1)
				rw.withoutMaster.Add(1)
				continue
			}
			var r protocol.TopicRouteData
			if err := json.Unmarshal(resp.Body, &r); err != nil {
				t.Errorf("route answer: %v", err)
				return
			}
			rw.answers.Add(1)
			master := ""
			for _, bd := range r.BrokerDatas {
				if bd.BrokerName == group {
					master = bd.BrokerAddrs[protocol.MasterID]
				}
			}
			if master == "" {
				rw.withoutMaster.Add(1)
				continue
			}
			if addrs, err := c.BrokerAddrs(group); err == nil && addrs[0] != master {
				rw.standIn.Add(1)
				rw.mu.Lock()
				rw.standInAddrs[master] = true
				rw.mu.Unlock()
			}
		}
	}()
	return rw
}

func (rw *routeWatch) stop() {
	rw.stopped.Store(true)
	rw.wg.Wait()
}

// TestRaftRouteKeepsMasterDuringElection, over the wire: a client asking the name server for a topic's
// route while its Raft group changes master (a graceful transfer, then an ordered stop of the master,
// which unregisters before it hands leadership over) always gets a brokerId 0 for the group, and a send
// to that address succeeds (a stand-in forwards it to the master).
func TestRaftRouteKeepsMasterDuringElection(t *testing.T) {
	c := cluster.Start(t, cluster.Options{RaftNodes: 3})
	m := c.RaftMaster("broker-a")
	w := newWireClient(t)
	const topic = "RaftRoute"
	raftCreateTopic(t, w, c.Broker(m).Addr(), topic)
	c.WaitTopicRoute(topic)

	rw := watchRoutes(t, c, topic, "broker-a")
	next := (m + 1) % 3
	if err := c.Broker(m).TransferLeadership(c.Broker(next).Config().Raft.DLegerSelfId); err != nil {
		t.Fatalf("transfer: %v", err)
	}
	c.WaitRaftMaster("broker-a", next)
	stopped := c.Broker(next).Addr()
	c.StopBroker(next)
	third := c.RaftMaster("broker-a")
	c.WaitRaftMaster("broker-a", third)
	rw.stop()
	t.Logf("%d route answers during a transfer and an ordered stop of the master: %d without a brokerId 0 for the group, %d with a stand-in %v",
		rw.answers.Load(), rw.withoutMaster.Load(), rw.standIn.Load(), rw.standInAddrs)
	if n := rw.withoutMaster.Load(); n != 0 {
		t.Fatalf("%d of %d route answers had no brokerId 0 for the Raft group", n, rw.answers.Load())
	}
	for addr := range rw.standInAddrs {
		if addr == stopped {
			continue // the stopped node: it stood in until its unregistration
		}
		resp, err := w.Invoke(context.Background(), addr, sendRequest(topic, "via stand-in"))
		if err != nil || resp.Code != int32(remoting.Success) {
			t.Errorf("send to the stand-in %s: %v %v", addr, err, resp)
		}
	}
}

// sendRequest is a SEND_MESSAGE of one message to queue 0.
func sendRequest(topic, body string) *remoting.Command {
	return remoting.NewRequest(remoting.SendMessage, map[string]string{
		"producerGroup": "PG", "topic": topic, "defaultTopic": "TBW102", "defaultTopicQueueNums": "4",
		"queueId": "0", "sysFlag": "0", "bornTimestamp": "0", "flag": "0", "properties": "",
		"reconsumeTimes": "0", "unitMode": "false", "batch": "false"}, []byte(body))
}

// TestRaftTwoGroupsKillLeader: two three-node Raft groups of child processes behind one name server, one
// topic on both, the official Go client sending and a push consumer reading; the leader of one group is
// killed with SIGKILL. The test logs the failed sends (after the client's retries, which pick a queue of
// the other group) and the gaps: the longest pause between two acknowledged sends of any group, and the
// time from the kill to the first send the killed group acknowledged again. Not asserted on time; every
// acknowledged message must be consumed at its queue offset.
func TestRaftTwoGroupsKillLeader(t *testing.T) {
	if testing.Short() {
		t.Skip("starts broker processes")
	}
	c := cluster.Start(t, cluster.Options{NoBrokers: true})
	const topic = "RaftTwoGroups"
	groups := []string{"broker-r1", "broker-r2"}
	nodes := map[string][]*raftChild{}
	for _, g := range groups {
		nodes[g] = startRaftChildren(t, c, g, "")
	}
	w := newWireClient(t)
	for _, g := range groups {
		raftCreateTopic(t, w, raftChildMaster(t, c, w, g, "", nodes[g], "").addr, topic)
	}
	cluster.Eventually(t, 30*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		resp, err := w.Invoke(ctx, c.NamesrvAddr(), remoting.NewRequest(remoting.GetRouteInfoByTopic, map[string]string{"topic": topic}, nil))
		var r protocol.TopicRouteData
		return err == nil && resp.Code == int32(remoting.Success) && json.Unmarshal(resp.Body, &r) == nil && len(r.QueueDatas) == 2
	}, "the route of %s has both groups", topic)

	got := newReceived()
	startConsumer(t, c, "CG_raft_two", topic, consumer.MessageSelector{}, got, consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset))
	p := newProducer(t, c, producer.WithRetry(2), producer.WithSendMsgTimeout(3*time.Second))
	load := startRaftLoad(p, topic, 4, 100)
	cluster.Eventually(t, 90*time.Second, func() bool { return load.count() >= 500 }, "500 acknowledged sends before the kill")

	victim := groups[0]
	m := raftChildMaster(t, c, w, victim, "", nodes[victim], "")
	failedBefore := load.failed.Load()
	killed := time.Now()
	if err := m.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = m.cmd.Wait()
	next := raftChildMaster(t, c, w, victim, "", nodes[victim], m.addr)
	routed := time.Since(killed)
	firstAgain := func() time.Time {
		load.mu.Lock()
		defer load.mu.Unlock()
		for _, a := range load.acks {
			if a.broker == victim && a.at.After(killed) {
				return a.at
			}
		}
		return time.Time{}
	}
	cluster.Eventually(t, 90*time.Second, func() bool { return !firstAgain().IsZero() }, "a send acknowledged by %s again", victim)
	before := load.count()
	cluster.Eventually(t, 60*time.Second, func() bool { return load.count() >= before+300 }, "300 more acknowledged sends")
	acks := load.stop()
	var gap time.Duration
	prev := killed
	for _, a := range acks { // in the order they were acknowledged
		if a.at.After(killed) {
			gap = max(gap, a.at.Sub(prev))
			prev = a.at
		}
	}
	t.Logf("kill of %s's leader %s: new master %s routed as brokerId 0 after %v; %s acknowledged a send again after %v; "+
		"longest pause between acknowledged sends (any group) after the kill %v; %d sends failed after the client's retries (%d before the kill); %d acknowledged",
		victim, m.addr, next.addr, routed.Round(time.Millisecond), victim, firstAgain().Sub(killed).Round(time.Millisecond),
		gap.Round(time.Millisecond), load.failed.Load()-failedBefore, failedBefore, len(acks))
	checkRaftHistory(t, acks, got, 120*time.Second)
}
