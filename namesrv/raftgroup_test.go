package namesrv

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/rocketraft/rocketraft/protocol"
	"github.com/rocketraft/rocketraft/remoting"
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

// TestRaftGroupVirtualStandIn: a group whose master registered at its virtual address (raftMasterVip)
// gets that address as its stand-in while it elects, registered or not, never a member's own address that
// a client would keep for its route poll interval; a master registration without the flag (the key unset
// in a rolling restart) brings back the member stand-in.
func TestRaftGroupVirtualStandIn(t *testing.T) {
	m := newManager(time.Minute, false)
	clock := time.Unix(1700000000, 0)
	m.now = func() time.Time { return clock }
	const vip, a, b, c = "10.0.0.100:10911", "10.0.0.1:10911", "10.0.0.2:10911", "10.0.0.3:10911"
	vipReq := func(slaveID int64, term, connID uint64) RegisterBrokerRequest {
		r := raftReq(vip, true, slaveID, term, connID)
		r.RaftMasterVIP = true
		return r
	}
	// Node a leads and registers the address (its own address's slave entry is gone, as the broker
	// unregisters it); b and c are slaves.
	m.RegisterBroker(vipReq(1, 2, 1), clock)
	m.RegisterBroker(raftReq(b, false, 2, 2, 2), clock)
	m.RegisterBroker(raftReq(c, false, 3, 2, 3), clock)
	if got := routeAddrs(t, m); got[0] != vip || got[2] != b || got[3] != c {
		t.Fatalf("route %v, want master %s and slaves %s, %s", got, vip, b, c)
	}
	m.OnConnClose(1) // a is killed
	if got := routeAddrs(t, m); got[0] != vip {
		t.Fatalf("route while the group elects: %v, want the virtual address %s as stand-in, not a member's own", got, vip)
	}
	clock = clock.Add(DefaultRaftMasterHold + time.Millisecond)
	if got := routeAddrs(t, m); got[0] != "" {
		t.Fatalf("route past raftMasterHoldMillis: %v, want no master", got)
	}
	// b takes the address, then steps down (registers with its slave id): the address stays registered
	// (an old master never unregisters it).
	m.RegisterBroker(vipReq(2, 3, 2), clock)
	m.RegisterBroker(raftReq(b, false, 2, 4, 2), clock)
	if got := routeAddrs(t, m); got[0] != vip || got[2] != b {
		t.Fatalf("route after the master stepped down: %v, want stand-in %s", got, vip)
	}
	// c becomes master without the address (masterVipAddress unset): its own address is the master, and
	// once it is gone the member stand-in is back.
	m.RegisterBroker(raftReq(c, true, 3, 5, 3), clock)
	m.OnConnClose(3)
	if got := routeAddrs(t, m); got[0] != b {
		t.Fatalf("route after a master without the address was killed: %v, want stand-in %s (lowest live id)", got, b)
	}
}

// TestRaftMasterVipOverTheWire: REGISTER_BROKER's raftMasterVip header, as the brokers send it. The
// master's registration at the virtual address goes on a connection of its own; once the name server has
// seen that connection close (GET_BROKER_CLUSTER_INFO shows no master), the topic route still names the
// address as brokerId 0. A value that is not a boolean is refused by the header's name.
func TestRaftMasterVipOverTheWire(t *testing.T) {
	f := newFixture(t, nil)
	const vip = "127.0.0.100:10911"
	raftExt := func(slaveID string) map[string]string {
		return map[string]string{"raftTerm": "2", "raftSlaveId": slaveID}
	}
	master := remoting.NewClient(remoting.ClientConfig{}, testLogger(t))
	ext := raftExt("1")
	ext["raftMasterVip"] = "true"
	if resp := f.registerWith(master, broker{cluster: "c", name: "rg", addr: vip, topics: topicsOf("RaftTopic")}, ext); resp.Code != int32(remoting.Success) {
		t.Fatalf("master registration: %v", resp)
	}
	if resp := f.registerWith(f.cl, broker{cluster: "c", name: "rg", addr: "127.0.0.12:10911", id: 2, topics: topicsOf("RaftTopic")}, raftExt("2")); resp.Code != int32(remoting.Success) {
		t.Fatalf("slave registration: %v", resp)
	}
	_ = master.Close()
	waitFor(t, "the master's registration gone with its connection", func() bool {
		var ci protocol.ClusterInfo
		return json.Unmarshal(f.call(remoting.GetBrokerClusterInfo, nil, nil).Body, &ci) == nil &&
			ci.BrokerAddrTable["rg"].BrokerAddrs[protocol.MasterID] == ""
	})
	r, _, ok := f.route("RaftTopic")
	if !ok || len(r.BrokerDatas) != 1 || r.BrokerDatas[0].BrokerAddrs[protocol.MasterID] != vip {
		t.Fatalf("route while the group elects: %+v, want brokerId 0 at the virtual address %s", r.BrokerDatas, vip)
	}

	ext = raftExt("1")
	ext["raftMasterVip"] = "maybe"
	resp := f.registerWith(f.cl, broker{cluster: "c", name: "rg", addr: vip, topics: topicsOf("RaftTopic")}, ext)
	if resp.Code != int32(remoting.InvalidParameter) || !strings.Contains(resp.Remark, "raftMasterVip") {
		t.Fatalf("raftMasterVip=maybe: %v", resp)
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
