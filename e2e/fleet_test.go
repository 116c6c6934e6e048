package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"sort"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/rocketraft/rocketraft/app/cluster"
	"github.com/rocketraft/rocketraft/protocol"
	"github.com/rocketraft/rocketraft/remoting"
)

// fleetKillsEnv sets how many group leaders TestFleetRaftGroups kills, one after the other, each in the next
// group (default 1; `make fleet-kill` runs 6).
const fleetKillsEnv = "ROCKETRAFT_FLEET_KILLS"

// TestFleetRaftGroups (issue 39): two name servers, three Raft groups of three broker processes each
// (SYNC_FLUSH), the official Go client producing to a topic on all three groups and a push consumer
// reading it. One name server is stopped (its port closed, its connections cut), then, with only the
// other left, one group's leader is killed with SIGKILL (and brought back as a follower before the next
// kill). Every message the client saw acknowledged is consumed at the offset its send got, no send fails
// once the client's retries are done (it goes on through the other groups), every group serves sends
// again after its kill, and the longest pause of the load (between two consecutive SEND_OKs, and of any one
// sender) is logged.
func TestFleetRaftGroups(t *testing.T) {
	if testing.Short() {
		t.Skip("starts nine broker processes")
	}
	kills := 1
	if v := os.Getenv(fleetKillsEnv); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("%s=%q is not a positive count", fleetKillsEnv, v)
		}
		kills = n
	}
	c := cluster.Start(t, cluster.Options{NameServers: 2, NoBrokers: true})
	groups := []string{"fleet-a", "fleet-b", "fleet-c"}
	nodes := map[string][]*raftChild{}
	for _, g := range groups {
		nodes[g] = startRaftChildren(t, c, g, "")
	}
	w := newWireClient(t)
	const topic = "FleetKill"
	for _, g := range groups {
		raftCreateTopic(t, w, raftChildMaster(t, c, w, g, "", nodes[g], "").addr, topic)
	}
	waitRouteGroups(t, c, topic, groups)

	got := newReceived()
	startConsumer(t, c, "CG_fleet", topic, consumer.MessageSelector{}, got, consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset))
	p := newProducer(t, c, producer.WithRetry(2), producer.WithSendMsgTimeout(3*time.Second))
	load := startRaftLoad(p, topic, 6, 200)
	through := func(what string, n int, since time.Time) {
		t.Helper()
		cluster.Eventually(t, 90*time.Second, func() bool {
			for _, g := range groups {
				if load.countOn(g, since) < n {
					return false
				}
			}
			return true
		}, "%d acknowledged sends through every group %s", n, what)
	}
	through("before the kills", 100, time.Time{})

	stopped := time.Now()
	c.StopNameServer(0)
	t.Logf("name server 0 stopped; name server %s left", c.NamesrvAddr())
	through("after name server 0 stopped", 100, stopped)

	var routed []time.Duration
	for k := 0; k < kills; k++ {
		g := groups[k%len(groups)]
		m := raftChildMaster(t, c, w, g, "", nodes[g], "")
		killed := time.Now()
		if err := m.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = m.cmd.Wait()
		next := raftChildMaster(t, c, w, g, "", nodes[g], m.addr)
		routed = append(routed, time.Since(killed))
		cluster.Eventually(t, 90*time.Second, func() bool { return !load.firstBy(next.addr, killed).IsZero() },
			"a SEND_OK from %s's new master %s", g, next.addr)
		t.Logf("kill %d: %s's leader %s; new master %s routed after %v, its first SEND_OK after %v", k+1, g, m.addr, next.addr,
			routed[k].Round(time.Millisecond), load.firstBy(next.addr, killed).Sub(killed).Round(time.Millisecond))
		through(fmt.Sprintf("after kill %d", k+1), 50, killed)
		m.cmd = startChildBroker(t, m.args...) // back as a follower
		old := m.addr
		cluster.Eventually(t, 60*time.Second, func() bool {
			addrs, err := c.BrokerAddrs(g)
			return err == nil && slices.Contains(mapValues(addrs), old)
		}, "the killed node %s registered again", old)
	}
	acks := load.stop()
	overall, bySender := pauses(acks)
	t.Logf("%d sends acknowledged through %d groups, %d failed after the client's retries; longest pause between two SEND_OKs %v, of one sender %v; name server stopped, then %d leader kills (new master routed after at most %v)",
		len(acks), len(groups), load.failed.Load(), overall.Round(time.Millisecond), bySender.Round(time.Millisecond), kills,
		slices.Max(routed).Round(time.Millisecond))
	if n := load.failed.Load(); n != 0 {
		t.Errorf("%d sends failed after the client's retries: %v", n, load.failures())
	}
	checkRaftHistory(t, acks, got, 120*time.Second)
}

// waitRouteGroups waits until every running name server routes topic to every group.
func waitRouteGroups(t *testing.T, c *cluster.Cluster, topic string, groups []string) {
	t.Helper()
	w := newWireClient(t)
	cluster.Eventually(t, 60*time.Second, func() bool {
		for _, ns := range c.NamesrvAddrs() {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			resp, err := w.Invoke(ctx, ns, remoting.NewRequest(remoting.GetRouteInfoByTopic, map[string]string{"topic": topic}, nil))
			cancel()
			var r protocol.TopicRouteData
			if err != nil || resp.Code != int32(remoting.Success) || json.Unmarshal(resp.Body, &r) != nil {
				return false
			}
			for _, g := range groups {
				if !slices.ContainsFunc(r.QueueDatas, func(q protocol.QueueData) bool { return q.BrokerName == g }) {
					return false
				}
			}
		}
		return true
	}, "every name server routes %s to %v", topic, groups)
}

// countOn is the number of SEND_OK stored by a queue of brokerName since t.
func (l *raftLoad) countOn(brokerName string, since time.Time) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, a := range l.acks {
		if a.broker == brokerName && a.at.After(since) {
			n++
		}
	}
	return n
}

// pauses are the longest time between two consecutive SEND_OKs of the load, and of any one sender.
func pauses(acks []ack) (overall, bySender time.Duration) {
	sorted := slices.Clone(acks)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].at.Before(sorted[j].at) })
	last := map[int]time.Time{}
	for i, a := range sorted {
		if i > 0 {
			overall = max(overall, a.at.Sub(sorted[i-1].at))
		}
		if prev, ok := last[a.sender]; ok {
			bySender = max(bySender, a.at.Sub(prev))
		}
		last[a.sender] = a.at
	}
	return overall, bySender
}
