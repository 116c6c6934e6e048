package broker_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rocketraft/rocketraft/app/cluster"
	"github.com/rocketraft/rocketraft/broker"
	"github.com/rocketraft/rocketraft/client"
	"github.com/rocketraft/rocketraft/internal/testutil"
)

// popSurvivor pops m0..m3 (invisible for invisible), acks m0 and m1, runs between (a restart, a failover),
// then pops until m2 and m3 come back and checks that m0 and m1 never do and nothing is popped twice
// before its time.
func popSurvivor(t *testing.T, h *popHarness, invisible time.Duration, between func()) {
	t.Helper()
	for i := range 4 {
		h.send(0, "m"+string(rune('0'+i)))
	}
	got := h.popUntil([]string{"m0", "m1", "m2", "m3"}, invisible)
	for _, b := range []string{"m0", "m1"} {
		if err := h.ack(got[b]); err != nil {
			t.Fatalf("ack %s: %v", b, err)
		}
	}
	between()
	back := map[string]*client.PoppedMessage{}
	testutil.WaitFor(t, 40*time.Second, "m2 and m3 redelivered", func() bool {
		for _, m := range h.pop(32, time.Hour).Msgs {
			if back[string(m.Body)] != nil {
				t.Fatalf("%s popped twice after %s", m.Body, "the restart")
			}
			back[string(m.Body)] = m
		}
		return back["m2"] != nil && back["m3"] != nil
	})
	for _, m := range h.pop(32, time.Hour).Msgs {
		back[string(m.Body)] = m
	}
	for _, b := range []string{"m0", "m1"} {
		if back[b] != nil {
			t.Errorf("acked %s delivered again", b)
		}
	}
	for _, b := range []string{"m2", "m3"} {
		if back[b].Attempt != 2 {
			t.Errorf("%s came back with attempt %d, want 2", b, back[b].Attempt)
		}
		if err := h.ack(back[b]); err != nil {
			t.Errorf("ack of redelivered %s: %v", b, err)
		}
	}
}

// Popped-not-acked messages come back after a broker restart; acked ones do not: check points and acks
// are records of the revive topic, read again from the revive offset at start.
func TestPopSurvivesRestart(t *testing.T) {
	c := popCluster(t)
	h := newPopHarness(t, func() string { return c.Broker(0).Addr() }, "POPS", 1)
	popSurvivor(t, h, 3*time.Second, func() {
		c.StopBroker(0)
		c.StartBroker(0)
	})
}

// In the Raft mode the check points and acks are Raft entries: the master is stopped between pop and
// ack, the new master redelivers what was not acked, and not what was.
func TestPopSurvivesRaftFailover(t *testing.T) {
	c := cluster.Start(t, cluster.Options{RaftNodes: 3, Configure: func(_ int, cfg *broker.Config) {
		cfg.Pop.ReviveInterval = 20
	}})
	master := func() string { return c.Broker(c.RaftMaster("broker-a")).Addr() }
	h := newPopHarness(t, master, "POPF", 1)
	popSurvivor(t, h, 3*time.Second, func() {
		m := c.RaftMaster("broker-a")
		c.StopBroker(m)
		testutil.WaitFor(t, 30*time.Second, "a new master", func() bool {
			n := c.RaftMaster("broker-a")
			return n != m
		})
	})
	// A follower forwards pops and acks to the master.
	h.send(0, "via-follower")
	m := c.RaftMaster("broker-a")
	follower := -1
	for i := range 3 {
		if i != m && c.Broker(i) != nil {
			follower = i
		}
	}
	h.addr = c.Broker(follower).Addr
	got := h.popUntil([]string{"via-follower"}, time.Hour)["via-follower"]
	if err := h.ack(got); err != nil {
		t.Fatalf("ack through follower %d: %v", follower, err)
	}
}

// A pop offset that lags behind the revive log (here: rewound in consumerOffset.json while the broker was
// down, as a crash before the offsets were persisted leaves it) is lifted past the check points read at
// start: messages popped and not acked stay hidden, nothing is handed out twice.
func TestPopOffsetLiftedByCheckPoints(t *testing.T) {
	c := popCluster(t)
	h := newPopHarness(t, func() string { return c.Broker(0).Addr() }, "POPC", 1)
	h.send(0, "c0")
	h.send(0, "c1")
	h.popUntil([]string{"c0", "c1"}, time.Hour)
	path := filepath.Join(c.Broker(0).Config().StorePathRootDir, "config", "consumerOffset.json")
	c.StopBroker(0)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var w struct {
		OffsetTable map[string]map[string]int64 `json:"offsetTable"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		t.Fatal(err)
	}
	key := h.topic + "@" + h.group
	if w.OffsetTable[key]["0"] != 2 {
		t.Fatalf("persisted pop offset %v, want 2", w.OffsetTable[key])
	}
	w.OffsetTable[key]["0"] = 0
	if b, err = json.Marshal(&w); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	c.StartBroker(0)
	if got := h.pop(32, time.Hour).Msgs; len(got) != 0 {
		t.Fatalf("after the rewind a pop got %d messages popped before and not yet visible", len(got))
	}
	h.send(0, "c2")
	got := h.popUntil([]string{"c2"}, time.Hour)
	if len(got) != 1 {
		t.Fatalf("popped %d messages, want only c2", len(got))
	}
}
