package admin

import (
	"strings"
	"testing"

	"github.com/rocketraft/rocketraft/app/cluster"
	"github.com/rocketraft/rocketraft/protocol"
	"github.com/rocketraft/rocketraft/remoting"
)

// TestTransferLeadershipAsksAgain: transferLeadership asks the leader again within --wait when Raft gave
// the transfer up (SYSTEM_ERROR, as "failed to make TimeoutNow RPC to n1: EOF" to a node restarted a moment
// before, issue 37) or the node no longer leads, and says which attempts failed; it stops asking once the
// leadership moved as asked (a transfer that went through though its answer was an error), at once on a
// refusal asking again cannot change, and at --wait with the last error.
func TestTransferLeadershipAsksAgain(t *testing.T) {
	moved := protocol.RaftStatus{Role: "Follower", Term: 5}
	t.Run("gave up twice", func(t *testing.T) {
		g := startFakeRaftGroup(t, moved)
		g.refuse.Store(2)
		g.refuseCode.Store(int32(remoting.SystemError))
		out := ok(t, "transferLeadership", "-n", g.ns, "-b", g.n0, "-t", "n1")
		contains(t, out, "moved from", "n1@"+g.n1, "attempt 1 failed and was asked again", "attempt 2 failed", refusal)
		if n := g.transfers.Load(); n != 3 {
			t.Fatalf("%d transfer requests, want 3", n)
		}
	})
	t.Run("not the leader for a moment", func(t *testing.T) {
		g := startFakeRaftGroup(t, moved)
		g.refuse.Store(1)
		g.refuseCode.Store(int32(remoting.ServiceNotAvailable))
		contains(t, ok(t, "transferLeadership", "-n", g.ns, "-b", g.n0, "-t", "n1"), "moved from", "attempt 1 failed")
		if n := g.transfers.Load(); n != 2 {
			t.Fatalf("%d transfer requests, want 2", n)
		}
	})
	t.Run("moved though the answer said no", func(t *testing.T) {
		g := startFakeRaftGroup(t, moved)
		g.refuse.Store(1)
		g.refuseCode.Store(int32(remoting.SystemError))
		g.refuseMoves.Store(true)
		contains(t, ok(t, "transferLeadership", "-n", g.ns, "-b", g.n0, "-t", "n1"), "moved from", "n1@"+g.n1)
		if n := g.transfers.Load(); n != 1 {
			t.Fatalf("%d transfer requests, want 1: the leadership had moved", n)
		}
	})
	t.Run("target leads already", func(t *testing.T) { // a run asked again after its transfer went through
		g := startFakeRaftGroup(t, moved)
		g.moved.Store(true)
		out := ok(t, "transferLeadership", "-n", g.ns, "-b", g.n0, "-t", "n1", "--drain", "1s")
		contains(t, out, "n1@"+g.n1+" already leads, nothing moved", "not to n0@"+g.n0, "n0@"+g.n0+" drained for 1s")
		failing(t, ExitFailed, []string{"node n1 (" + g.n1 + ") already leads Raft group g: nothing to transfer"},
			"transferLeadership", "-n", g.ns, "-b", g.n1, "-t", "n1")
		if n := g.transfers.Load(); n != 0 {
			t.Fatalf("%d transfer requests, want none", n)
		}
	})
	t.Run("refused for good", func(t *testing.T) {
		g := startFakeRaftGroup(t, moved)
		g.refuse.Store(100)
		g.refuseCode.Store(int32(remoting.InvalidParameter))
		failing(t, ExitFailed, []string{refusal}, "transferLeadership", "-n", g.ns, "-b", g.n0, "-t", "n1")
		if n := g.transfers.Load(); n != 1 {
			t.Fatalf("%d transfer requests, want 1", n)
		}
	})
	t.Run("gives up at --wait", func(t *testing.T) {
		g := startFakeRaftGroup(t, moved)
		g.refuse.Store(1000)
		g.refuseCode.Store(int32(remoting.SystemError))
		o := failing(t, ExitFailed, []string{"the last within --wait", refusal}, "transferLeadership", "-n", g.ns, "-b", g.n0, "-t", "n1", "--wait", "2s")
		if n := g.transfers.Load(); n < 3 || !strings.Contains(o.stderr, "attempt ") {
			t.Fatalf("%d transfer requests within 2s; stderr %q", n, o.stderr)
		}
	})
}

// TestTransferToRestartedFollower: a Raft group of three in-process brokers over their real TCP
// transports; five times in a row a follower is restarted (an ordered stop, a start on its data) and
// transferLeadership hands it leadership at once. Each must succeed, and no attempt may fail on an RPC to
// the restarted node: the leader's kept connections to it were closed by the restart (issue 37: "failed to
// make TimeoutNow RPC to n1: EOF" in 3 transfers of 5, and the command did not ask again).
func TestTransferToRestartedFollower(t *testing.T) {
	c := cluster.Start(t, cluster.Options{RaftNodes: 3})
	ns := c.NamesrvAddr()
	for round := range 5 {
		m := c.RaftMaster("broker-a")
		f := (m + 1 + round%2) % 3
		c.StopBroker(f)
		c.StartBroker(f)
		id := c.Broker(f).Config().Raft.DLegerSelfId
		var res transferResult
		okJSON(t, &res, "transferLeadership", "-n", ns, "-b", c.Broker(m).Addr(), "-t", id)
		for _, e := range res.Failed {
			if strings.Contains(e, "failed to make") { // Raft's words for a failed RPC
				t.Fatalf("round %d: a transfer to %s, restarted at once, failed on an RPC: %s", round, id, e)
			}
			t.Logf("round %d: an attempt failed and was asked again: %s", round, e)
		}
		if !strings.HasPrefix(res.NewLeader, id+"@") {
			t.Fatalf("round %d: leadership moved to %s, want %s", round, res.NewLeader, id)
		}
		c.WaitRaftMaster("broker-a", f)
	}
}
