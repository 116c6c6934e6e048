package namesrv

import (
	"testing"
	"time"

	"github.com/rocketraft/rocketraft/protocol"
)

// raftReq is a Raft node's registration: brokerId 0 as master, else its slave id.
func raftReq(addr string, master bool, slaveID int64, term uint64, connID uint64) RegisterBrokerRequest {
	b := broker{cluster: "c", name: "rg", addr: addr, topics: topicsOf("RaftTopic"), version: 1}
	id := slaveID
	if master {
		id = protocol.MasterID
	}
	b.id = id
	r := regReq(b, connID, 0)
	r.Raft, r.RaftTerm, r.RaftSlaveID = true, term, slaveID
	return r
}

func routeAddrs(t *testing.T, m *RouteInfoManager) map[int64]string {
	t.Helper()
	route, ok := m.PickupTopicRouteData("RaftTopic")
	if !ok || len(route.BrokerDatas) != 1 {
		t.Fatalf("no route for RaftTopic: %+v", route)
	}
	return route.BrokerDatas[0].BrokerAddrs
}

// TestRaftGroupStandInMaster: while a Raft group has no registered master, its routes carry a stand-in
// brokerId 0 (the last master while it is registered, else the live member with the lowest id) for
// raftMasterHoldMillis; a new master replaces it; GET_BROKER_CLUSTER_INFO shows what was registered.
func TestRaftGroupStandInMaster(t *testing.T) {
	m := newManager(time.Minute, false)
	clock := time.Unix(1700000000, 0)
	m.now = func() time.Time { return clock }
	const a, b, c = "10.0.0.1:10911", "10.0.0.2:10911", "10.0.0.3:10911"
	m.RegisterBroker(raftReq(a, true, 1, 2, 1), clock)
	m.RegisterBroker(raftReq(b, false, 2, 2, 2), clock)
	m.RegisterBroker(raftReq(c, false, 3, 2, 3), clock)
	if got := routeAddrs(t, m); got[0] != a || len(got) != 3 {
		t.Fatalf("route %v, want master %s and two slaves", got, a)
	}

	// The master hands over: it registers with its slave id before the new master registers.
	m.RegisterBroker(raftReq(a, false, 1, 3, 1), clock)
	if got := routeAddrs(t, m); got[0] != a || got[1] != a {
		t.Fatalf("route during the election %v: want the last master %s as stand-in brokerId 0 (and as brokerId 1)", got, a)
	}
	if bd := m.ClusterInfo().BrokerAddrTable["rg"]; bd.BrokerAddrs[0] != "" {
		t.Fatalf("cluster info shows a master %q nobody registered", bd.BrokerAddrs[0])
	}
	m.RegisterBroker(raftReq(b, true, 2, 3, 2), clock)
	if got := routeAddrs(t, m); got[0] != b || got[1] != a || got[2] != "" || got[3] != c {
		t.Fatalf("route after the new master registered: %v", got)
	}

	// A paused leader of term 2 wakes and registers as master: recorded with its slave id.
	m.RegisterBroker(raftReq(a, true, 1, 2, 1), clock)
	if got := routeAddrs(t, m); got[0] != b || got[1] != a {
		t.Fatalf("route after a stale master registration: %v, want master %s kept", got, b)
	}

	// The master is killed: its connection closes. The live member with the lowest id stands in, for
	// raftMasterHoldMillis.
	m.OnConnClose(2)
	if got := routeAddrs(t, m); got[0] != a {
		t.Fatalf("route after the master's connection closed: %v, want stand-in %s (lowest live id)", got, a)
	}
	clock = clock.Add(DefaultRaftMasterHold)
	if got := routeAddrs(t, m); got[0] != a {
		t.Fatalf("route at the end of the hold: %v", got)
	}
	clock = clock.Add(time.Millisecond)
	if got := routeAddrs(t, m); got[0] != "" {
		t.Fatalf("route past raftMasterHoldMillis: %v, want no master", got)
	}
	m.RegisterBroker(raftReq(c, true, 3, 4, 3), clock)
	if got := routeAddrs(t, m); got[0] != c {
		t.Fatalf("route after the next master registered: %v", got)
	}
}

// TestClassicGroupHasNoStandIn: a broker name without raftTerm keeps RocketMQ's behaviour: a master that
// re-registers as a slave leaves the route without a master.
func TestClassicGroupHasNoStandIn(t *testing.T) {
	m := newManager(time.Minute, false)
	now := time.Now()
	r := raftReq("10.0.0.1:10911", true, 1, 0, 1)
	r.Raft = false
	m.RegisterBroker(r, now)
	r = raftReq("10.0.0.1:10911", false, 1, 0, 1)
	r.Raft = false
	m.RegisterBroker(r, now)
	if got := routeAddrs(t, m); got[0] != "" || got[1] == "" {
		t.Fatalf("classic route %v: want only brokerId 1", got)
	}
}
