package broker_test

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/rocketraft/rocketraft/app/cluster"
	"github.com/rocketraft/rocketraft/internal/faultnet"
	"github.com/rocketraft/rocketraft/raftlog"
	"github.com/rocketraft/rocketraft/remoting"
)

// TestRaftPeersDial: with dLegerPeersDial every node dials each other node through a faultnet proxy of its
// own (the nodes still bind dLegerPeers); the group elects a master and stores sends. Blackholing the
// master's proxies, both ways, makes the two others elect a new master (so the links do go through the
// proxies); once healed the old master follows and holds what the new one stored.
func TestRaftPeersDial(t *testing.T) {
	var proxies []*faultnet.Proxy
	t.Cleanup(func() { // registered before the cluster's: runs after the brokers stopped
		for _, p := range proxies {
			_ = p.Close()
		}
	})
	c := cluster.Start(t, cluster.Options{NoBrokers: true})
	cfgs := cluster.RaftGroupConfigs(t, c.NamesrvAddr(), "broker-a", 3)
	peers, err := raftlog.ParsePeers(cfgs[0].Raft.DLegerPeers)
	if err != nil {
		t.Fatal(err)
	}
	// touching[i]: the proxies node i dials through and those the others dial i through.
	touching := make([][]*faultnet.Proxy, len(cfgs))
	for i := range cfgs {
		var dial []string
		for j, p := range peers {
			if j == i {
				continue
			}
			px, err := faultnet.Listen(fmt.Sprintf("%s->%s", peers[i].ID, p.ID), p.Addr, cluster.TestLogger(t, slog.LevelWarn))
			if err != nil {
				t.Fatal(err)
			}
			proxies = append(proxies, px)
			touching[i] = append(touching[i], px)
			touching[j] = append(touching[j], px)
			dial = append(dial, p.ID+"-"+px.Addr())
		}
		cfgs[i].Raft.DLegerPeersDial = strings.Join(dial, ";")
	}
	c.AddRaftGroup(cfgs)
	m := c.RaftMaster("broker-a")
	for i := 0; i < 5; i++ {
		expectCode(t, "send", newWire(t, c.Broker(m).Addr()).send("RaftDial", 0, []byte("a"), ""), remoting.Success)
	}

	for _, px := range touching[m] {
		px.Blackhole()
	}
	var next int
	cluster.Eventually(t, time.Minute, func() bool {
		for i := range cfgs {
			if i != m && c.Broker(i).IsRaftMaster() && !c.Broker(m).IsRaftMaster() {
				next = i
				return true
			}
		}
		return false
	}, "a new master once node %d's peer links are blackholed", m)
	if got := c.RaftMaster("broker-a"); got != next {
		t.Fatalf("master %d registered, want the new master %d", got, next)
	}
	resp := newWire(t, c.Broker(next).Addr()).send("RaftDial", 0, []byte("b"), "")
	expectCode(t, "send to the new master", resp, remoting.Success)
	if off, _ := resp.OptInt64("queueOffset", -1); off != 5 {
		t.Fatalf("queue offset %d on the new master, want 5", off)
	}

	for _, px := range touching[m] {
		px.Heal()
	}
	cluster.Eventually(t, time.Minute, func() bool {
		return c.Broker(m).Store().MaxOffsetInQueue("RaftDial", 0) == 6
	}, "the old master %d holds the 6 messages after the heal", m)
}
