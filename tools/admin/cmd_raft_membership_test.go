package admin

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rocketraft/rocketraft/app/cluster"
	"github.com/rocketraft/rocketraft/broker"
)

// TestRaftMembershipCommands: a three-node Raft group with traffic; a fourth broker started with
// dLegerJoin=true is added with addRaftPeer through a follower's address, catches up (CommitLog bytes and
// ConsumeQueues equal to the others' up to what every node applied; getRaftStatus lists four nodes);
// removeRaftPeer of an original follower leaves three members, and sends still succeed with the new node
// counted in the quorum; removeRaftPeer of the leader hands leadership over first.
func TestRaftMembershipCommands(t *testing.T) {
	c := cluster.Start(t, cluster.Options{RaftNodes: 3})
	m := c.RaftMaster("broker-a")
	ns := c.NamesrvAddr()
	follower := (m + 1) % 3
	ok(t, "updateTopic", "-n", ns, "-b", c.Broker(m).Addr(), "-t", "RaftJoin", "-r", "2", "-w", "2")
	c.WaitTopicRoute("RaftJoin")
	p := startProducer(t, c, "raft-join-producer")
	sendN(t, p, "RaftJoin", "before", 40)

	cfg := c.RaftJoinConfig(0, "n3")
	peer := cfg.Raft.DLegerPeers[strings.LastIndex(cfg.Raft.DLegerPeers, "n3-")+len("n3-"):]
	n3 := c.AddRaftJoiner(cfg)
	failing(t, ExitFailed, []string{"peerAddr", "host:port"}, "addRaftPeer", "-n", ns, "-b", c.Broker(m).Addr(), "--id", "n3", "--peer", "nowhere", "--timeout", "20s")

	var added raftMembershipResult
	okJSON(t, &added, "addRaftPeer", "-n", ns, "-b", c.Broker(follower).Addr(), "--id", "n3", "--peer", peer, "--timeout", "20s", "--json")
	if len(added.Members) != 4 || added.Members[3].ID != "n3" || added.Members[3].Addr != peer || added.Members[3].Suffrage != "Voter" {
		t.Fatalf("addRaftPeer answered members %+v", added.Members)
	}
	sendN(t, p, "RaftJoin", "after-add", 40)
	waitSameReplicas(t, c, []int{0, 1, 2, n3}, "RaftJoin", 2)
	c.WaitRegistered(n3)
	var st raftStatusResult
	eventually(t, 30*time.Second, func() string {
		st = raftStatusResult{}
		out := mqadmin(t, "getRaftStatus", "-n", ns, "-c", "DefaultCluster", "--json")
		if out.code != ExitOK {
			return "getRaftStatus: " + out.stderr
		}
		if err := jsonDecode(out.stdout, &st); err != nil || len(st.Nodes) != 4 {
			return fmt.Sprintf("getRaftStatus lists %d nodes, want 4: %s %v", len(st.Nodes), out.stdout, err)
		}
		return ""
	})
	contains(t, ok(t, "getRaftStatus", "-n", ns, "-b", c.Broker(n3).Addr()), "n3", "Follower")

	failing(t, ExitFailed, []string{"not a member"}, "removeRaftPeer", "-n", ns, "-b", c.Broker(m).Addr(), "--id", "n9")
	gone := (m + 2) % 3
	goneID := c.Broker(gone).Config().Raft.DLegerSelfId
	out := ok(t, "removeRaftPeer", "-n", ns, "-b", c.Broker(n3).Addr(), "--id", goneID, "--timeout", "20s")
	contains(t, out, "node "+goneID+" removed", "#Suffrage", "n3")
	if strings.Count(out, "Voter") != 3 {
		t.Fatalf("removeRaftPeer left:\n%s", out)
	}
	c.StopBroker(gone)
	eventually(t, 30*time.Second, func() string {
		st = raftStatusResult{}
		out := mqadmin(t, "getRaftStatus", "-n", ns, "-c", "DefaultCluster", "--json")
		if err := jsonDecode(out.stdout, &st); err != nil || out.code != ExitOK || len(st.Nodes) != 3 {
			return fmt.Sprintf("getRaftStatus lists %d nodes, want 3: %s %s", len(st.Nodes), out.stdout, out.stderr)
		}
		return ""
	})
	sendN(t, p, "RaftJoin", "after-remove", 20)
	waitSameReplicas(t, c, []int{m, follower, n3}, "RaftJoin", 2)

	// Removing the leader hands its leadership over first, then asks the new leader.
	leaderID := c.Broker(m).Config().Raft.DLegerSelfId
	var removed raftMembershipResult
	okJSON(t, &removed, "removeRaftPeer", "-n", ns, "-b", c.Broker(m).Addr(), "--id", leaderID, "--timeout", "20s", "--json")
	if removed.Transferred == "" || len(removed.Members) != 2 || strings.HasPrefix(removed.Leader, leaderID+"@") {
		t.Fatalf("removeRaftPeer of the leader: %+v", removed)
	}
	for _, mb := range removed.Members {
		if mb.ID == leaderID {
			t.Fatalf("the old leader %s is still a member: %+v", leaderID, removed.Members)
		}
	}
	if got := c.RaftMaster("broker-a"); got == m {
		t.Fatalf("node %d still master after its removal", got)
	}
}

// waitSameReplicas waits until the nodes applied their leader's commit index as it was on entry and
// dispatched as many ConsumeQueue units of topic, then checks that their CommitLog files are byte-identical up to the lowest dispatched position and that
// their ConsumeQueues of topic answer the same.
func waitSameReplicas(t *testing.T, c *cluster.Cluster, nodes []int, topic string, queues int) {
	t.Helper()
	var commit uint64
	for _, i := range nodes {
		if st, ok := c.Broker(i).RaftStatus(); ok && st.Role == "Leader" {
			commit = st.CommitIndex
		}
	}
	eventually(t, 30*time.Second, func() string {
		for _, i := range nodes {
			if st, _ := c.Broker(i).RaftStatus(); st.AppliedIndex < commit {
				return fmt.Sprintf("node %s applied %d of the commit index %d", st.SelfID, st.AppliedIndex, commit)
			}
			for q := int32(0); q < int32(queues); q++ { // the ConsumeQueues are dispatched after the apply
				if a, o := c.Broker(nodes[0]).Store().MaxOffsetInQueue(topic, q), c.Broker(i).Store().MaxOffsetInQueue(topic, q); a != o {
					return fmt.Sprintf("queue %d: %d units on node %d, %d on node %d", q, a, nodes[0], o, i)
				}
			}
		}
		return ""
	})
	first := c.Broker(nodes[0])
	for _, i := range nodes[1:] {
		b := c.Broker(i)
		to := min(first.Store().MaxPhyOffset(), b.Store().MaxPhyOffset())
		if !bytes.Equal(commitLogOf(t, first.Config(), to), commitLogOf(t, b.Config(), to)) {
			t.Fatalf("CommitLog files of nodes %s and %s differ over [0, %d)", first.Config().Raft.DLegerSelfId, b.Config().Raft.DLegerSelfId, to)
		}
		for q := int32(0); q < int32(queues); q++ {
			if a, o := first.Store().MaxOffsetInQueue(topic, q), b.Store().MaxOffsetInQueue(topic, q); a != o {
				t.Fatalf("queue %d: %d units on %s, %d on %s", q, a, first.Config().Raft.DLegerSelfId, o, b.Config().Raft.DLegerSelfId)
			}
			for off := int64(0); off < first.Store().MaxOffsetInQueue(topic, q); off++ {
				u0, err0 := first.Store().ConsumeQueueUnit(topic, q, off)
				ui, erri := b.Store().ConsumeQueueUnit(topic, q, off)
				if err0 != nil || erri != nil || u0 != ui {
					t.Fatalf("queue %d offset %d: unit %+v (%v) and %+v (%v)", q, off, u0, err0, ui, erri)
				}
			}
		}
	}
}

// commitLogOf reads a broker's CommitLog files over [0, to).
func commitLogOf(t *testing.T, c broker.Config, to int64) []byte {
	t.Helper()
	var out []byte
	size := c.MappedFileSizeCommitLog
	for off := int64(0); off < to; {
		start := off - off%size
		f, err := os.Open(filepath.Join(c.StorePathRootDir, "commitlog", fmt.Sprintf("%020d", start)))
		if err != nil {
			t.Fatal(err)
		}
		n := min(to, start+size) - off
		buf := make([]byte, n)
		_, err = f.ReadAt(buf, off-start)
		_ = f.Close()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, buf...)
		off += n
	}
	return out
}

func TestRaftMembershipBadCommandLines(t *testing.T) {
	failing(t, ExitBadArgs, []string{"option --id", "required"}, "addRaftPeer", "-n", "127.0.0.1:9876", "-b", "127.0.0.1:1", "--peer", "h:1")
	failing(t, ExitBadArgs, []string{"option --peer", "required"}, "addRaftPeer", "-n", "127.0.0.1:9876", "-b", "127.0.0.1:1", "--id", "n3")
	failing(t, ExitBadArgs, []string{"option -b (--brokerAddr) is required"}, "removeRaftPeer", "-n", "127.0.0.1:9876", "--id", "n3")
	contains(t, ok(t, "help", "addRaftPeer"), "--id <arg>", "--peer <arg>", "dLegerJoin=true")
}
