package admin

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/rocketraft/rocketraft/app/cluster"
	"github.com/rocketraft/rocketraft/protocol"
	"github.com/rocketraft/rocketraft/remoting"
)

// fakeRaftGroup is a name server and two Raft nodes of group g (n0 leads, term 4) answering what
// transferLeadership asks. After TRANSFER_RAFT_LEADERSHIP n1 is routed as brokerId 0 and master in term 5,
// and n0's status is oldAfter.
type fakeRaftGroup struct {
	ns, n0, n1 string // set once each server listens; the handlers read them under mu
	mu         sync.Mutex
	moved      atomic.Bool
	// transfers counts TRANSFER_RAFT_LEADERSHIP requests; the first refuse of them are answered
	// refuseCode (remark refusal), the leadership moved first when refuseMoves.
	transfers, refuse, refuseCode atomic.Int32
	refuseMoves                   atomic.Bool
}

const refusal = "failed to make TimeoutNow RPC to n1: EOF"

// addrs returns n0's and n1's addresses (the handlers' view: the race detector cannot see that a request
// comes after the test goroutine set them).
func (g *fakeRaftGroup) addrs() (n0, n1 string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.n0, g.n1
}

// startFakeServer starts a remoting server on 127.0.0.1 with the handlers register adds, stopped by the
// test's cleanup, and returns its address.
func startFakeServer(t *testing.T, register func(*remoting.Server, *remoting.Pool)) string {
	pool := remoting.NewPool("fake", 1, 16)
	s := remoting.NewServer(remoting.ServerConfig{ListenAddr: "127.0.0.1:0"}, cluster.TestLogger(t, 0))
	register(s, pool)
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s.Addr().String()
}

func startFakeRaftGroup(t *testing.T, oldAfter protocol.RaftStatus) *fakeRaftGroup {
	g := &fakeRaftGroup{}
	serve := func(register func(*remoting.Server, *remoting.Pool)) string { return startFakeServer(t, register) }
	status := func(now func() protocol.RaftStatus) func(*remoting.Server, *remoting.Pool) {
		return func(s *remoting.Server, pool *remoting.Pool) {
			s.Register(remoting.GetRaftStatus, pool, func(context.Context, *remoting.Conn, *remoting.Command) *remoting.Command {
				return remoting.NewJSONResponse(now())
			})
			s.Register(remoting.TransferRaftLeadership, pool, func(context.Context, *remoting.Conn, *remoting.Command) *remoting.Command {
				if g.transfers.Add(1) <= g.refuse.Load() {
					if g.refuseMoves.Load() {
						g.moved.Store(true)
					}
					return remoting.NewResponse(remoting.ResponseCode(g.refuseCode.Load()), refusal)
				}
				g.moved.Store(true)
				return remoting.NewResponse(remoting.Success, "")
			})
		}
	}
	n0 := serve(status(func() protocol.RaftStatus {
		n0, _ := g.addrs()
		if g.moved.Load() {
			st := oldAfter
			st.Group, st.SelfID, st.BrokerAddr = "g", "n0", n0
			return st
		}
		return protocol.RaftStatus{Group: "g", SelfID: "n0", BrokerAddr: n0, Role: "Leader", Master: true, Term: 4}
	}))
	n1 := serve(status(func() protocol.RaftStatus {
		_, n1 := g.addrs()
		if g.moved.Load() {
			return protocol.RaftStatus{Group: "g", SelfID: "n1", BrokerAddr: n1, Role: "Leader", Master: true, Term: 5}
		}
		return protocol.RaftStatus{Group: "g", SelfID: "n1", BrokerAddr: n1, BrokerID: 1, Role: "Follower", Term: 4}
	}))
	g.mu.Lock()
	g.n0, g.n1 = n0, n1
	g.mu.Unlock()
	g.ns = serve(func(s *remoting.Server, pool *remoting.Pool) {
		s.Register(remoting.GetBrokerClusterInfo, pool, func(context.Context, *remoting.Conn, *remoting.Command) *remoting.Command {
			n0, n1 := g.addrs()
			addrs := map[int64]string{0: n0, 1: n1}
			if g.moved.Load() {
				addrs = map[int64]string{0: n1, 1: n0}
			}
			return remoting.NewJSONResponse(protocol.ClusterInfo{
				BrokerAddrTable:  map[string]protocol.BrokerData{"g": {Cluster: "c", BrokerName: "g", BrokerAddrs: addrs}},
				ClusterAddrTable: map[string][]string{"c": {"g"}},
			})
		})
	})
	return g
}

// The drain of transferLeadership fails only when the old leader leads again, in a term after its
// successor's: a status of the old leader that still says master in the successor's term (it steps down,
// and its broker role follows, a moment after the successor takes over) is not that. make test once failed
// TestTransferLeadershipDrain on such a status, taken right after the successor was found master.
func TestTransferLeadershipDrainOldLeaderStatus(t *testing.T) {
	stale := startFakeRaftGroup(t, protocol.RaftStatus{Role: "Follower", Master: true, Term: 5})
	out := ok(t, "transferLeadership", "-n", stale.ns, "-b", stale.n0, "-t", "n1", "--drain", "1s")
	contains(t, out, "moved from", "n1@"+stale.n1, "drained for 1s")

	again := startFakeRaftGroup(t, protocol.RaftStatus{Role: "Leader", Master: true, Term: 6})
	failing(t, ExitFailed, []string{"n0@" + again.n0 + " leads Raft group g again"},
		"transferLeadership", "-n", again.ns, "-b", again.n0, "-t", "n1", "--drain", "1s")
}
