package namesrv

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rocketraft/rocketraft/protocol"
)

// churner drives a RouteInfoManager through random changes of every kind that touches a route: masters
// and slaves registering new tables or the same, Raft groups changing masters (stand-ins, demotions, a
// virtual address), unregistrations, closed connections, expiry, deletions, permission changes, filter
// servers, the Raft hold, and the clock.
type churner struct {
	m      *RouteInfoManager
	rng    *rand.Rand
	cmu    sync.Mutex // guards clock: the manager reads it from any goroutine
	clock  time.Time
	topics []string
	ver    map[string]int64 // data version counter by broker address
	term   map[string]uint64
}

func newChurner(seed uint64) *churner {
	c := &churner{m: newManager(30*time.Second, seed%2 == 0), rng: rand.New(rand.NewPCG(seed, 7)),
		clock: time.Unix(1700000000, 0), ver: map[string]int64{}, term: map[string]uint64{}}
	c.m.now = func() time.Time {
		c.cmu.Lock()
		defer c.cmu.Unlock()
		return c.clock
	}
	for i := range 12 {
		c.topics = append(c.topics, fmt.Sprintf("T%d", i))
	}
	return c
}

func (c *churner) addr(name string, id int) string {
	return fmt.Sprintf("10.0.%s.%d:10911", name[len(name)-1:], id)
}

// table is a random subset of the topics with random queue counts and permissions.
func (c *churner) table() map[string]*protocol.TopicConfig {
	t := map[string]*protocol.TopicConfig{}
	for _, name := range c.topics {
		if c.rng.IntN(3) > 0 {
			q := int32(1 + c.rng.IntN(3))
			t[name] = &protocol.TopicConfig{TopicName: name, ReadQueueNums: q, WriteQueueNums: q,
				Perm: []int32{6, 4, 2, 7}[c.rng.IntN(4)], TopicFilterType: "SINGLE_TAG"}
		}
	}
	return t
}

func (c *churner) step() string {
	m := c.m
	classic := []string{"b1", "b2", "b3"}
	name := classic[c.rng.IntN(len(classic))]
	id := c.rng.IntN(3)
	addr := c.addr(name, id)
	switch op := c.rng.IntN(14); op {
	case 0, 1, 2: // a registration, often with the same version
		if c.rng.IntN(2) == 0 {
			c.ver[addr]++
		}
		req := RegisterBrokerRequest{ClusterName: []string{"c1", "c2"}[c.rng.IntN(2)], BrokerAddr: addr, BrokerName: name,
			BrokerID: int64(id), Body: protocol.RegisterBrokerBody{TopicConfigSerializeWrapper: protocol.TopicConfigSerializeWrapper{
				TopicConfigTable: c.table(), DataVersion: protocol.DataVersion{Counter: c.ver[addr]}}},
			ConnID: uint64(100 + id)}
		switch c.rng.IntN(4) {
		case 0:
			req.Body.FilterServerList = []string{"10.9.9.9:1"}
		case 1:
			req.Body.FilterServerList = []string{}
		}
		m.RegisterBroker(req, c.m.now())
		return "register " + addr
	case 3: // a Raft node of group "rg": master (with a term, perhaps an old one) or slave
		node := c.rng.IntN(3)
		a := fmt.Sprintf("10.0.9.%d:10911", node)
		master := c.rng.IntN(2) == 0
		if master && c.rng.IntN(3) > 0 {
			c.term["rg"]++
		}
		req := RegisterBrokerRequest{ClusterName: "c1", BrokerAddr: a, BrokerName: "rg", BrokerID: int64(node + 1),
			Raft: true, RaftTerm: c.term["rg"], RaftSlaveID: int64(node + 1), RaftMasterVIP: c.rng.IntN(4) == 0,
			ConnID: uint64(200 + node)}
		if master {
			req.BrokerID = protocol.MasterID
		}
		if c.rng.IntN(2) == 0 {
			c.ver[a]++
		}
		req.Body.TopicConfigSerializeWrapper = protocol.TopicConfigSerializeWrapper{TopicConfigTable: c.table(),
			DataVersion: protocol.DataVersion{Counter: c.ver[a]}}
		m.RegisterBroker(req, c.m.now())
		return fmt.Sprintf("raft %s master=%v term %d", a, master, c.term["rg"])
	case 4:
		m.UnregisterBroker(addr, name, int64(id))
		return "unregister " + addr
	case 5:
		conn := uint64(100 + c.rng.IntN(3))
		if c.rng.IntN(2) == 0 {
			conn += 100
		}
		m.OnConnClose(conn)
		return fmt.Sprintf("close conn %d", conn)
	case 6, 7: // time passes: Raft stand-ins end, brokers expire
		c.cmu.Lock()
		c.clock = c.clock.Add(time.Duration(c.rng.IntN(8000)) * time.Millisecond)
		now := c.clock
		c.cmu.Unlock()
		if c.rng.IntN(2) == 0 {
			m.ScanNotActiveBroker(now)
		}
		return "clock " + now.Format(time.StampMilli)
	case 8:
		topic := c.topics[c.rng.IntN(len(c.topics))]
		cluster := []string{"", "c1", "c2"}[c.rng.IntN(3)]
		m.DeleteTopic(topic, cluster)
		return "delete " + topic + " " + cluster
	case 9:
		n := []string{"b1", "b2", "b3", "rg"}[c.rng.IntN(4)]
		m.SetWritePerm(n, c.rng.IntN(2) == 0)
		return "perm " + n
	case 10:
		m.SetRaftMasterHold(time.Duration(c.rng.IntN(3)) * 5 * time.Second)
		return "hold"
	case 11:
		m.SetDeleteMissing(c.rng.IntN(2) == 0)
		return "deleteMissing"
	default: // a query between changes: caches what is there now
		m.RouteAnswer(c.topics[c.rng.IntN(len(c.topics))])
		return "query"
	}
}

// check compares every topic's cached answer and every cached list with a fresh encoding of the tables,
// and checks the indexes against the tables.
func (c *churner) check(t *testing.T, after string) {
	t.Helper()
	m := c.m
	m.mu.RLock()
	for topic, e := range m.topicQueue {
		if !slices.IsSortedFunc(e.queues, func(a, b protocol.QueueData) int { return strings.Compare(a.BrokerName, b.BrokerName) }) {
			t.Fatalf("after %s: the queue data of %s are not sorted by broker name", after, topic)
		}
		for _, qd := range e.queues {
			name := qd.BrokerName
			if m.brokerTopics[name][topic] != e {
				t.Fatalf("after %s: the index of %s lacks %s", after, name, topic)
			}
		}
	}
	for name, idx := range m.brokerTopics {
		for topic, e := range idx {
			if _, ok := m.topicQueue[topic].queues.get(name); !ok || m.topicQueue[topic] != e {
				t.Fatalf("after %s: the index of %s lists %s, which has no queue data of it", after, name, topic)
			}
		}
	}
	for addr, li := range m.live {
		if _, ok := m.connAddrs[li.connID][addr]; li.connID != 0 && !ok {
			t.Fatalf("after %s: connection %d's addresses lack %s", after, li.connID, addr)
		}
	}
	for id, set := range m.connAddrs {
		for addr := range set {
			if li := m.live[addr]; li == nil || li.connID != id {
				t.Fatalf("after %s: connection %d lists %s, registered on %v", after, id, addr, li)
			}
		}
	}
	m.mu.RUnlock()
	for _, topic := range append(c.topics, "Unknown") {
		route, ok := m.PickupTopicRouteData(topic)
		body, cok := m.RouteAnswer(topic)
		if ok != cok {
			t.Fatalf("after %s: %s routed %v by the tables, %v by the cache", after, topic, ok, cok)
		}
		if !ok {
			continue
		}
		want, _ := json.Marshal(route)
		if !bytes.Equal(body, want) {
			t.Fatalf("after %s: %s's cached answer\n%s\nfresh\n%s", after, topic, body, want)
		}
	}
	lists := []struct {
		name      string
		got, want any
	}{
		{"cluster info", m.ClusterInfoAnswer(), m.ClusterInfo()},
		{"all topics", m.AllTopicsAnswer(), protocol.TopicList{TopicList: m.AllTopics()}},
		{"system topics", m.SystemTopicsAnswer(), m.SystemTopics()},
		{"topics of c1", m.TopicsByClusterAnswer("c1"), protocol.TopicList{TopicList: m.TopicsByCluster("c1")}},
		{"topics of c2", m.TopicsByClusterAnswer("c2"), protocol.TopicList{TopicList: m.TopicsByCluster("c2")}},
	}
	for _, l := range lists {
		want, _ := json.Marshal(l.want)
		if !bytes.Equal(l.got.([]byte), want) {
			t.Fatalf("after %s: cached %s\n%s\nfresh\n%s", after, l.name, l.got, want)
		}
	}
}

// TestRouteCacheMatchesEncoder: over random churn of every kind, the cached answers are byte for byte
// what encoding the tables afresh gives (the name server's answer before the cache), for every topic and
// every cached list, after every change.
func TestRouteCacheMatchesEncoder(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		c := newChurner(seed)
		var ops []string
		for range 400 {
			op := c.step()
			ops = append(ops, op)
			c.check(t, fmt.Sprintf("seed %d, op %d (%s)", seed, len(ops), op))
		}
	}
}

// TestRouteCacheConcurrent: readers ask for routes while a writer churns (under -race); once the writer
// is done, every answer is the fresh encoding.
func TestRouteCacheConcurrent(t *testing.T) {
	c := newChurner(99)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for r := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				c.m.RouteAnswer(c.topics[(i+r)%len(c.topics)])
				if i%50 == 0 {
					c.m.ClusterInfoAnswer()
					c.m.AllTopicsAnswer()
				}
			}
		}()
	}
	for range 3000 {
		c.step()
	}
	close(stop)
	wg.Wait()
	c.check(t, "concurrent churn")
}

// TestRouteCacheOneRebuildAtATime: many callers asking for a route made stale at once rebuild it once; a
// registration that changes nothing leaves it cached.
func TestRouteCacheOneRebuildAtATime(t *testing.T) {
	m := newManager(time.Minute, false)
	m.RegisterBroker(regReq(brokerA, 1, 0), time.Now())
	if _, ok := m.RouteAnswer("TopicTest"); !ok {
		t.Fatal("no route")
	}
	before := m.RouteRebuilds()
	m.RegisterBroker(regReq(brokerA, 1, 0), time.Now()) // the 30 s re-registration: same version, same address
	if _, ok := m.RouteAnswer("TopicTest"); !ok || m.RouteRebuilds() != before {
		t.Fatalf("a registration that changed nothing made the route rebuild (%d -> %d)", before, m.RouteRebuilds())
	}
	for round := range 20 {
		b := brokerA
		b.version = int64(round + 2)
		b.topics = topicsOf("TopicTest", "TBW102")
		b.topics["TopicTest"].WriteQueueNums = int32(round + 5) // a change: the route is stale
		m.RegisterBroker(regReq(b, 1, 0), time.Now())
		before := m.RouteRebuilds()
		// The tables stay write-locked until one caller is inside the rebuild (it counts before it reads
		// them) and the others had time to find the answer stale: they queue behind it.
		m.mu.Lock()
		var wg sync.WaitGroup
		for range 32 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				body, ok := m.RouteAnswer("TopicTest")
				if want := fmt.Sprintf(`"writeQueueNums":%d`, round+5); !ok || !bytes.Contains(body, []byte(want)) {
					t.Errorf("round %d: answer %s lacks %s", round, body, want)
				}
			}()
		}
		for m.RouteRebuilds() == before {
			runtime.Gosched()
		}
		for range 1000 {
			runtime.Gosched()
		}
		m.mu.Unlock()
		wg.Wait()
		if n := m.RouteRebuilds() - before; n != 1 {
			t.Fatalf("round %d: %d rebuilds of one stale route by 32 callers, want 1", round, n)
		}
	}
}

// TestOrderTopicConfSplice: the order topic conf spliced into a cached body is what encoding/json gives
// for the route with OrderTopicConf set.
func TestOrderTopicConfSplice(t *testing.T) {
	m := newManager(time.Minute, false)
	m.RegisterBroker(regReq(brokerA, 1, 0), time.Now())
	route, _ := m.PickupTopicRouteData("TopicTest")
	body, _ := m.RouteAnswer("TopicTest")
	for _, conf := range []string{"broker-a:4", `quo"te;x:1`, "\u2028<&>"} {
		route.OrderTopicConf = conf
		want, _ := json.Marshal(route)
		if got := WithOrderTopicConf(body, conf); !bytes.Equal(got, want) {
			t.Errorf("conf %q:\n%s\nwant\n%s", conf, got, want)
		}
	}
	if got := WithOrderTopicConf(body, ""); !bytes.Equal(got, body) {
		t.Errorf("empty conf changed the body: %s", got)
	}
}
