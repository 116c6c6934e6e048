package broker_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rocketraft/rocketraft/app/cluster"
	"github.com/rocketraft/rocketraft/broker"
	"github.com/rocketraft/rocketraft/internal/metrics"
	"github.com/rocketraft/rocketraft/internal/testutil"
	"github.com/rocketraft/rocketraft/message"
	"github.com/rocketraft/rocketraft/remoting"
	"github.com/rocketraft/rocketraft/store"
)

// raftCluster starts a name server and a three-node Raft group (broker indexes 0..2) and returns it with
// the master's index.
func raftCluster(t *testing.T) (*cluster.Cluster, int) {
	t.Helper()
	c := cluster.Start(t, cluster.Options{RaftNodes: 3})
	return c, c.RaftMaster("broker-a")
}

func TestRaftConfigErrorsNameTheKey(t *testing.T) {
	base := func() broker.Config {
		c := broker.DefaultConfig()
		c.StorePathRootDir = t.TempDir()
		c.Raft.EnableDLegerCommitLog = true
		c.Raft.DLegerPeers = "n0-127.0.0.1:40911;n1-127.0.0.1:40912;n2-127.0.0.1:40913"
		c.Raft.DLegerSelfId = "n0"
		return c
	}
	if err := base().Validate(); err != nil {
		t.Fatalf("a valid Raft config: %v", err)
	}
	withDial := base()
	withDial.Raft.DLegerPeersDial = "n2-127.0.0.1:50913"
	if err := withDial.Validate(); err != nil {
		t.Fatalf("a valid dLegerPeersDial: %v", err)
	}
	for _, tc := range []struct {
		name string
		edit func(c *broker.Config)
		key  string
	}{
		{"self not a peer", func(c *broker.Config) { c.Raft.DLegerSelfId = "n7" }, "dLegerSelfId"},
		{"no self id", func(c *broker.Config) { c.Raft.DLegerSelfId = "" }, "dLegerSelfId"},
		{"bad peers", func(c *broker.Config) { c.Raft.DLegerPeers = "n0:127.0.0.1" }, "dLegerPeers"},
		{"duplicate peer", func(c *broker.Config) { c.Raft.DLegerPeers = "n0-127.0.0.1:1;n0-127.0.0.1:2" }, "dLegerPeers"},
		{"slave role", func(c *broker.Config) { c.BrokerRole = broker.RoleSlave; c.BrokerID = 1 }, "brokerRole"},
		{"broker id", func(c *broker.Config) { c.BrokerID = 2 }, "brokerId"},
		{"preferred leader", func(c *broker.Config) { c.Raft.PreferredLeaderId = "x" }, "preferredLeaderId"},
		{"lease above heartbeat", func(c *broker.Config) { c.Raft.DLegerLeaderLeaseTimeoutMs = 900 }, "dLegerLeaderLeaseTimeoutMs"},
		{"election below heartbeat", func(c *broker.Config) { c.Raft.DLegerElectionTimeoutMs = 100 }, "dLegerElectionTimeoutMs"},
		{"raft port is listenPort", func(c *broker.Config) { c.ListenPort = 40911 }, "dLegerPeers"},
		{"dial not id-host:port", func(c *broker.Config) { c.Raft.DLegerPeersDial = "n1:127.0.0.1" }, "dLegerPeersDial"},
		{"dial unknown id", func(c *broker.Config) { c.Raft.DLegerPeersDial = "n1-127.0.0.1:1;n9-127.0.0.1:2" }, "dLegerPeersDial"},
		{"dial self", func(c *broker.Config) { c.Raft.DLegerPeersDial = "n0-127.0.0.1:1" }, "dLegerPeersDial"},
		{"forward timeout", func(c *broker.Config) { c.Raft.DLegerForwardTimeoutMs = 0 }, "dLegerForwardTimeoutMs"},
		{"forward bytes", func(c *broker.Config) { c.Raft.DLegerForwardMaxInflightBytes = -1 }, "dLegerForwardMaxInflightBytes"},
		{"negative in flight", func(c *broker.Config) { c.Raft.RaftProposeMaxInFlight = -1 }, "raftProposeMaxInFlight"},
		{"negative linger", func(c *broker.Config) { c.Raft.RaftProposeMaxLingerMicros = -1 }, "raftProposeMaxLingerMicros"},
		{"no snapshot threshold", func(c *broker.Config) { c.Raft.RaftSnapshotThreshold = 0 }, "raftSnapshotThreshold"},
		{"snapshot interval", func(c *broker.Config) { c.Raft.RaftSnapshotIntervalMs = 1 }, "raftSnapshotIntervalMs"},
		{"negative trailing logs", func(c *broker.Config) { c.Raft.RaftTrailingLogs = -1 }, "raftTrailingLogs"},
	} {
		c := base()
		tc.edit(&c)
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), "config key "+tc.key+":") {
			t.Errorf("%s: error %v does not name %s", tc.name, err, tc.key)
		}
	}
}

// TestRaftGroupSendsAndRoles: the master (brokerId 0) stores sends through Raft; followers are registered
// with their peer position as brokerId; every node dispatches the same queue offsets; a topic and an
// offset live on every node.
func TestRaftGroupSendsAndRoles(t *testing.T) {
	c, m := raftCluster(t)
	master := c.Broker(m)
	want := map[int64]string{0: master.Addr()}
	for i := 0; i < 3; i++ {
		if i != m {
			want[int64(i+1)] = c.Broker(i).Addr()
		}
	}
	c.WaitBrokerAddrs("broker-a", want)

	w := newWire(t, master.Addr())
	const n = 200
	// Each queue's messages are sent in order by one goroutine. A SERVICE_NOT_AVAILABLE (at load 30 a
	// leadership change: "leadership lost while committing", stored or not) is sent again, as a client
	// does; the node asked forwards to the master of the moment. So a queue holds each message once, and a
	// message answered SERVICE_NOT_AVAILABLE at most twice, next to each other (checked below).
	var wg sync.WaitGroup
	acked := make([]map[string]int64, 4) // per queue: body -> queue offset of its SEND_OK
	retried := make([]map[string]bool, 4)
	for g := 0; g < 4; g++ {
		acked[g], retried[g] = map[string]int64{}, map[string]bool{}
		wg.Add(1)
		go func(q int) {
			defer wg.Done()
			for i := 0; i < n/4; i++ {
				body := fmt.Sprintf("q%d-%03d", q, i)
				for deadline := time.Now().Add(60 * time.Second); ; {
					resp := w.send("RaftTopic", q, []byte(body), "")
					if resp.Code == int32(remoting.Success) {
						off, _ := resp.OptInt64("queueOffset", -1)
						acked[q][body] = off
						break
					}
					if resp.Code != int32(remoting.ServiceNotAvailable) || time.Now().After(deadline) {
						t.Errorf("send %s: %s %s", body, remoting.ResponseCode(resp.Code), resp.Remark)
						return
					}
					retried[q][body] = true
					time.Sleep(100 * time.Millisecond) // the pace of the retries, not a wait for a condition
				}
			}
		}(g)
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	retries := 0
	for q := range 4 {
		retries += len(retried[q])
	}
	t.Logf("%d sends answered SERVICE_NOT_AVAILABLE and sent again", retries)
	commit := func() *remoting.Command {
		return w.call(remoting.UpdateConsumerOffset, map[string]string{
			"consumerGroup": "RaftGroup", "topic": "RaftTopic", "queueId": "1", "commitOffset": "17"}, nil)
	}
	resp := commit()
	for deadline := time.Now().Add(60 * time.Second); resp.Code == int32(remoting.ServiceNotAvailable) && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond) // the pace of the retries, not a wait for a condition
		resp = commit()
	}
	expectCode(t, "commit an offset", resp, remoting.Success)
	// Every node holds each queue's messages in send order, each SEND_OK's at the offset it named, a
	// message twice only if its first send was answered SERVICE_NOT_AVAILABLE.
	queueLen := make([]int64, 4)
	for q := range 4 {
		b := c.Broker(0)
		var bodies []string
		cluster.Eventually(t, 30*time.Second, func() bool { // the master has all: it answered after applying
			l := c.Broker(0).Store().MaxOffsetInQueue("RaftTopic", int32(q))
			return l >= n/4 && l == c.Broker(1).Store().MaxOffsetInQueue("RaftTopic", int32(q)) &&
				l == c.Broker(2).Store().MaxOffsetInQueue("RaftTopic", int32(q))
		}, "the nodes dispatched queue %d alike", q)
		for off := int64(0); off < b.Store().MaxOffsetInQueue("RaftTopic", int32(q)); {
			r, err := b.Store().GetMessage("g", "RaftTopic", int32(q), off, 32, 1<<20, nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, raw := range r.Records {
				v, err := message.ParseRecord(raw)
				if err != nil {
					t.Fatal(err)
				}
				bodies = append(bodies, string(v.Body))
			}
			off = r.NextBeginOffset
			r.Release()
		}
		queueLen[q] = int64(len(bodies))
		var distinct []string
		for i, body := range bodies {
			if i > 0 && bodies[i-1] == body && retried[q][body] {
				continue
			}
			distinct = append(distinct, body)
			if want, ok := acked[q][body]; ok && (want < 0 || want >= int64(len(bodies)) || bodies[want] != body) {
				t.Fatalf("queue %d: %s acknowledged at offset %d, which does not hold it (%d units)", q, body, want, len(bodies))
			}
		}
		if len(distinct) != n/4 {
			t.Fatalf("queue %d holds %d distinct messages in %d units, want %d", q, len(distinct), len(bodies), n/4)
		}
		for i, body := range distinct {
			if want := fmt.Sprintf("q%d-%03d", q, i); body != want {
				t.Fatalf("queue %d: message %d is %s, want %s", q, i, body, want)
			}
		}
	}
	for i := 0; i < 3; i++ {
		b := c.Broker(i)
		cluster.Eventually(t, 10*time.Second, func() bool {
			for q := int32(0); q < 4; q++ {
				if b.Store().MaxOffsetInQueue("RaftTopic", q) != queueLen[q] {
					return false
				}
			}
			return true
		}, "node %d dispatched every message", i)
		resp := newWire(t, b.Addr()).call(remoting.GetAllTopicConfig, nil, nil)
		if !strings.Contains(string(resp.Body), `"RaftTopic"`) {
			t.Errorf("node %d has no topic RaftTopic: %s", i, resp.Body)
		}
		cluster.Eventually(t, 10*time.Second, func() bool {
			resp := newWire(t, b.Addr()).call(remoting.QueryConsumerOffset, map[string]string{
				"consumerGroup": "RaftGroup", "topic": "RaftTopic", "queueId": "1"}, nil)
			off, _ := resp.OptInt64("offset", -1)
			return resp.Code == int32(remoting.Success) && off == 17
		}, "node %d has the group's offset", i)
	}
	assertRaftReplicasIdentical(t, c, "RaftTopic", 4)
}

// assertRaftReplicasIdentical checks that the nodes' CommitLog files are byte-identical up to the lowest
// dispatched (committed and applied) position, and that their ConsumeQueues answer the same.
func assertRaftReplicasIdentical(t *testing.T, c *cluster.Cluster, topic string, queues int) {
	t.Helper()
	first := c.Broker(0)
	for i := 1; i < 3; i++ {
		b := c.Broker(i)
		to := min(first.Store().MaxPhyOffset(), b.Store().MaxPhyOffset())
		a := sha256.Sum256(commitLogBytes(t, first.Config(), 0, to))
		o := sha256.Sum256(commitLogBytes(t, b.Config(), 0, to))
		if a != o {
			t.Fatalf("CommitLog files of nodes 0 and %d differ over [0, %d): sha256 %x and %x", i, to, a, o)
		}
		t.Logf("CommitLog of nodes 0 and %d identical over [0, %d) (sha256 %x)", i, to, a)
		for q := int32(0); q < int32(queues); q++ {
			for off := int64(0); off < first.Store().MaxOffsetInQueue(topic, q); off++ {
				u0, err0 := first.Store().ConsumeQueueUnit(topic, q, off)
				ui, erri := b.Store().ConsumeQueueUnit(topic, q, off)
				if err0 != nil || erri != nil || u0 != ui {
					t.Fatalf("queue %d offset %d: unit %+v (%v) on node 0, %+v (%v) on node %d", q, off, u0, err0, ui, erri, i)
				}
			}
		}
	}
}

// TestRaftDelayAndStop: a delayed message is delivered by the master's delay service through Raft (so
// every node has it in its real topic); an ordered stop of the master hands leadership over at once and
// another node becomes master.
func TestRaftDelayAndStop(t *testing.T) {
	c, m := raftCluster(t)
	w := newWire(t, c.Broker(m).Addr())
	expectCode(t, "send a delayed message", w.send("RaftDelay", 0, []byte("later"), "DELAY\x011\x02"), remoting.Success)
	expectCode(t, "send a timer message", w.send("RaftTimer", 0, []byte("t1"), "TIMER_DELAY_MS\x011500\x02"), remoting.Success)
	for i := 0; i < 3; i++ {
		b := c.Broker(i)
		cluster.Eventually(t, 20*time.Second, func() bool {
			return b.Store().MaxOffsetInQueue("RaftDelay", 0) == 1 && b.Store().MaxOffsetInQueue("RaftTimer", 0) == 1
		}, "node %d has the delayed and the timer message in their real topics", i)
	}
	c.StopBroker(m)
	next := c.RaftMaster("broker-a")
	if next == m {
		t.Fatalf("node %d still master after its ordered stop", m)
	}
	nw := newWire(t, c.Broker(next).Addr())
	expectCode(t, "send to the new master", nw.send("RaftDelay", 0, []byte("now"), ""), remoting.Success)
	// The new master's timer resumes from the old one's progress: the second timer message is delivered,
	// the first (due earlier, delivered before the stop) not again.
	expectCode(t, "send a timer message to the new master", nw.send("RaftTimer", 0, []byte("t2"), "TIMER_DELAY_MS\x011500\x02"), remoting.Success)
	st := c.Broker(next).Store()
	var bodies []string
	cluster.Eventually(t, 20*time.Second, func() bool {
		var err error
		if bodies, err = queueBodies(st, "RaftTimer", 0); err != nil {
			t.Logf("read the timer topic: %v", err) // a unit dispatched ahead of the read limit: read again
			return false
		}
		return slices.Contains(bodies, "t2")
	}, "the second timer message delivered")
	if !slices.Equal(bodies, []string{"t1", "t2"}) {
		t.Fatalf("the timer messages' real topic holds %q after the failover, want [t1 t2] (t1 delivered again?)", bodies)
	}
}

// queueBodies reads the bodies of a queue from its start. In the Raft mode a ConsumeQueue unit can be
// seen before the state machine raised the read limit over its record (the "not visible yet" case,
// which pulls stop at): that is an error here, for the caller to read again.
func queueBodies(st *store.Store, topic string, q int32) ([]string, error) {
	var out []string
	for off := int64(0); off < st.MaxOffsetInQueue(topic, q); off++ {
		u, err := st.ConsumeQueueUnit(topic, q, off)
		if err != nil {
			return nil, err
		}
		m, err := st.LookMessageByOffset(u.PhysicalOffset)
		if err != nil {
			return nil, err
		}
		out = append(out, string(m.Body))
	}
	return out, nil
}

// TestRaftLeadershipTransfer: after a transfer the new leader becomes master and registers as brokerId 0,
// the old one as a slave; sends to the new master succeed and continue the queue offsets; the
// rocketmq_raft_* series and rocketmq_broker_info follow the roles.
func TestRaftLeadershipTransfer(t *testing.T) {
	c := cluster.Start(t, cluster.Options{RaftNodes: 3, Configure: func(i int, cfg *broker.Config) { cfg.MetricsPort = cluster.FreePort(t) }})
	m := c.RaftMaster("broker-a")
	w := newWire(t, c.Broker(m).Addr())
	for i := 0; i < 10; i++ {
		expectCode(t, "send", w.send("RaftMove", 0, []byte("a"), ""), remoting.Success)
	}
	target := (m + 1) % 3
	if err := c.Broker(m).TransferLeadership(c.Broker(target).Config().Raft.DLegerSelfId); err != nil {
		t.Fatalf("transfer: %v", err)
	}
	c.WaitRaftMaster("broker-a", target) // the roles follow Raft through role events still on their way
	// The old master forwards to the new one (raft_forward.go) and relays its answer.
	resp := newWire(t, c.Broker(m).Addr()).send("RaftMove", 0, []byte("b"), "")
	expectCode(t, "send to the old master", resp, remoting.Success)
	if off, _ := resp.OptInt64("queueOffset", -1); off != 10 {
		t.Fatalf("queue offset %d of the send forwarded after the transfer, want 10", off)
	}
	resp = newWire(t, c.Broker(target).Addr()).send("RaftMove", 0, []byte("c"), "")
	expectCode(t, "send to the new master", resp, remoting.Success)
	if off, _ := resp.OptInt64("queueOffset", -1); off != 11 {
		t.Fatalf("queue offset %d after the transfer, want 11", off)
	}
	for i, role := range map[int]string{target: "leader", m: "follower"} {
		cfg := c.Broker(i).Config()
		f, err := metrics.Scrape(context.Background(), net.JoinHostPort("127.0.0.1", strconv.Itoa(cfg.MetricsPort)))
		if err != nil {
			t.Fatal(err)
		}
		if v, ok := f.Value("rocketmq_raft_role", "role", role); !ok || v != 1 {
			t.Errorf("node %d: rocketmq_raft_role{role=%q} = %v (%v)", i, role, v, ok)
		}
		if v, _ := f.Value("rocketmq_raft_failovers_total"); v < 1 {
			t.Errorf("node %d: rocketmq_raft_failovers_total = %v after a transfer", i, v)
		}
		// The performance series (metrics_raft.go): the old master answered the first ten sends, the new one
		// the last; the new one stored the old one's entries as a follower first.
		answered := map[string]float64{"leader": 1, "follower": 10}[role]
		if v, _ := f.Value("rocketmq_raft_send_stage_seconds", "stage", "answer"); v < answered {
			t.Errorf("node %d (%s): rocketmq_raft_send_stage_seconds{stage=\"answer\"} counts %v sends, want %v or more", i, role, v, answered)
		}
		if v, _ := f.Value("rocketmq_raft_replicate_stage_seconds", "stage", "quorum"); v < answered {
			t.Errorf("node %d (%s): rocketmq_raft_replicate_stage_seconds{stage=\"quorum\"} counts %v sends, want %v or more", i, role, v, answered)
		}
		if v, _ := f.Value("rocketmq_raft_append_seconds", "side", "follower"); role == "leader" && v < 1 {
			t.Errorf("node %d (%s): rocketmq_raft_append_seconds{side=\"follower\"} counts %v appends", i, role, v)
		}
		if v, _ := f.Value("rocketmq_raft_entry_messages"); v < 1 {
			t.Errorf("node %d (%s): rocketmq_raft_entry_messages counts %v entries", i, role, v)
		}
		if v, _ := f.Value("rocketmq_raft_store_entries", "role", "follower"); role == "leader" && v < 1 {
			t.Errorf("node %d (%s): rocketmq_raft_store_entries{role=\"follower\"} counts %v appends", i, role, v)
		}
		wantID := map[string]string{"leader": "0", "follower": strconv.Itoa(i + 1)}[role]
		if _, ok := f.Value("rocketmq_broker_info", "broker_id", wantID); !ok {
			t.Errorf("node %d (%s): rocketmq_broker_info has no brokerId %s", i, role, wantID)
		}
	}
}

// TestRaftSnapshotKeys: raftSnapshotThreshold and raftSnapshotIntervalMs reach Raft: with a threshold of 50
// entries every node takes a snapshot of a group that applied a few hundred, and keeps serving sends.
func TestRaftSnapshotKeys(t *testing.T) {
	c := cluster.Start(t, cluster.Options{RaftNodes: 3, Configure: func(_ int, cfg *broker.Config) {
		cfg.Raft.RaftSnapshotThreshold = 50
		cfg.Raft.RaftSnapshotIntervalMs = 20
		cfg.Raft.RaftTrailingLogs = 10
	}})
	m := c.RaftMaster("broker-a")
	w := newWire(t, c.Broker(m).Addr())
	for i := 0; i < 300; i++ {
		if resp := w.send("SnapTopic", i%4, []byte("body"), ""); resp.Code != int32(remoting.Success) {
			t.Fatalf("send %d: %s %s", i, remoting.ResponseCode(resp.Code), resp.Remark)
		}
	}
	for i := 0; i < 3; i++ {
		// hashicorp/raft's file snapshot store keeps one folder per snapshot in <dir>/snapshots.
		dir := filepath.Join(c.Broker(i).Config().StorePathRootDir, "raft", "snapshots", "snapshots")
		testutil.WaitFor(t, 30*time.Second, fmt.Sprintf("a snapshot on node %d (%s)", i, dir), func() bool {
			ents, _ := os.ReadDir(dir)
			for _, e := range ents {
				if e.IsDir() && !strings.HasSuffix(e.Name(), ".tmp") {
					return true
				}
			}
			return false
		})
	}
	if resp := w.send("SnapTopic", 0, []byte("after the snapshots"), ""); resp.Code != int32(remoting.Success) {
		t.Fatalf("send after the snapshots: %s %s", remoting.ResponseCode(resp.Code), resp.Remark)
	}
}
