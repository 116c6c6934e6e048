package raftlog

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"log/slog"
	"maps"
	"math"
	"net/netip"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rocketraft/rocketraft/internal/freeport"

	"github.com/hashicorp/raft"
	"github.com/rocketraft/rocketraft/internal/faultnet"
	"github.com/rocketraft/rocketraft/internal/peertls"
	"github.com/rocketraft/rocketraft/internal/testutil"
	"github.com/rocketraft/rocketraft/message"
	"github.com/rocketraft/rocketraft/store"
)

// A Raft group of in-process nodes, each on its own framed store under t.TempDir(), talking
// over raft.InmemTransport (or TCP on 127.0.0.1 with clusterOptions.tcp).

type clusterOptions struct {
	size int
	sync bool
	tcp  bool
	// proxied (TCP only) routes every link from one node to another through its own
	// faultnet proxy (NodeOptions.AddressOf), so tests can partition nodes.
	proxied bool
	tune    func(*Config)
	// meta gives each node its MetaApplier.
	meta func(id string) MetaApplier
	// storeTune adjusts each node's store config (testStoreConfig).
	storeTune func(*store.Config)
	// onRole receives every node's role events.
	onRole func(id string, ev RoleEvent)
	// peerTLS (TCP only) gives each node its NodeOptions.PeerTLS; logger, when set, its logger.
	peerTLS func(id string) *peertls.Material
	logger  func(id string) *slog.Logger
	// sent, when set (in-memory transport only), sees every AppendEntries a node sends, below
	// the node's own wrapping (leader_sync_test.go).
	sent func(from string, args *raft.AppendEntriesRequest)
	// transport, when set (in-memory transport only), gives node id the transport it is
	// started with, over its in-memory one (index_fault_test.go).
	transport func(id string, t *raft.InmemTransport) raft.Transport
}

type tnode struct {
	id, addr string
	root     string
	host     netip.AddrPort
	cl       *store.Store
	crash    *crashingLog // cl as the node sees it (crash_test.go)
	n        *Node
	trans    *raft.InmemTransport
	running  bool
	join     bool // added to a running group: Config.Join
}

type cluster struct {
	t     testing.TB
	o     clusterOptions
	peers []Peer
	nodes []*tnode
	mu    sync.Mutex // guards nodes' running and n against the load goroutines
	// proxies[from id][to id] carries from's connections to to (proxied only).
	proxies map[string]map[string]*faultnet.Proxy
}

// testRaftConfig is the config of the test groups: LAN timers, doubled, so that a loaded
// machine running the tests under -race (fsyncs and pauses of hundreds of ms) does not keep
// the group electing; small entries, so puts spread over many. The assertions never depend
// on how fast anything happens.
func testRaftConfig(sync bool) Config {
	cfg := DefaultConfig()
	cfg.HeartbeatTimeout = time.Second
	cfg.ElectionTimeout = time.Second
	cfg.LeaderLeaseTimeout = 500 * time.Millisecond
	cfg.CommitTimeout = 5 * time.Millisecond
	cfg.MaxAppendEntries = 64
	cfg.MaxEntryBytes = 8 << 10
	cfg.MaxEntryMessages = 16
	cfg.Sync = sync
	return cfg
}

func freePort(t testing.TB) string {
	t.Helper()
	port, err := freeport.One()
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("127.0.0.1:%d", port)
}

func newCluster(t testing.TB, o clusterOptions) *cluster {
	t.Helper()
	if o.size == 0 {
		o.size = 3
	}
	c := &cluster{t: t, o: o}
	for i := range o.size {
		id := fmt.Sprintf("n%d", i)
		addr := id + "-inmem"
		if o.tcp {
			addr = freePort(t)
		}
		c.peers = append(c.peers, Peer{ID: id, Addr: addr})
		c.nodes = append(c.nodes, &tnode{id: id, addr: addr, root: t.TempDir(),
			host: netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 0, 1, byte(i + 1)}), 10911)})
	}
	if o.proxied {
		c.proxies = map[string]map[string]*faultnet.Proxy{}
		for _, from := range c.nodes {
			c.proxies[from.id] = map[string]*faultnet.Proxy{}
			for _, to := range c.nodes {
				if from == to {
					continue
				}
				p, err := faultnet.Listen(from.id+"->"+to.id, to.addr, testLogger(t, slog.LevelWarn))
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = p.Close() })
				c.proxies[from.id][to.id] = p
			}
		}
	}
	for i := range c.nodes {
		c.start(i)
	}
	t.Cleanup(func() {
		for i := range c.nodes {
			c.stop(i)
		}
	})
	return c
}

// add starts one more node, id, on its own folders with Join (no bootstrap); the caller
// adds it to the group (Node.AddVoter). In-memory transports only.
func (c *cluster) add(id string) {
	c.t.Helper()
	tn := &tnode{id: id, addr: id + "-inmem", root: c.t.TempDir(), join: true,
		host: netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 0, 1, byte(len(c.nodes) + 1)}), 10911)}
	c.nodes = append(c.nodes, tn)
	c.start(len(c.nodes) - 1)
}

// isolate blackholes every link between node i and the others, both ways.
func (c *cluster) isolate(i int) {
	id := c.nodes[i].id
	for from, m := range c.proxies {
		for to, p := range m {
			if from == id || to == id {
				p.Blackhole()
			}
		}
	}
}

// heal lets every link pass again.
func (c *cluster) heal() {
	for _, m := range c.proxies {
		for _, p := range m {
			p.Heal()
		}
	}
}

func (c *cluster) config(id string) Config {
	cfg := testRaftConfig(c.o.sync)
	cfg.SelfID = id
	cfg.Peers = c.peers
	if c.o.tune != nil {
		c.o.tune(&cfg)
	}
	return cfg
}

// start opens node i on its folders (a new group's first start bootstraps it; later starts
// rejoin) and connects its in-memory transport to the running nodes.
func (c *cluster) start(i int) {
	t := c.t
	t.Helper()
	tn := c.nodes[i]
	scfg := testStoreConfig(tn.root, c.o.sync)
	if c.o.storeTune != nil {
		c.o.storeTune(&scfg)
	}
	cl, err := store.Open(scfg, store.Options{Logger: testLogger(t, slog.LevelWarn),
		StoreHost: tn.host, Framed: true})
	if err != nil {
		t.Fatalf("%s: store.Open: %v", tn.id, err)
	}
	opts := NodeOptions{Logger: testLogger(t, raftTestLogLevel).With("node", tn.id), Dir: filepath.Join(tn.root, "raft")}
	if c.o.meta != nil {
		opts.Meta = c.o.meta(tn.id)
	}
	if c.o.peerTLS != nil {
		opts.PeerTLS = c.o.peerTLS(tn.id)
	}
	if c.o.logger != nil {
		opts.Logger = c.o.logger(tn.id)
	}
	if c.o.onRole != nil {
		id := tn.id
		opts.OnRoleChange = func(ev RoleEvent) { c.o.onRole(id, ev) }
	}
	if c.proxies != nil {
		from := tn.id
		opts.AddressOf = func(to string) string {
			if p := c.proxies[from][to]; p != nil {
				return p.Addr()
			}
			return tn.addr // itself
		}
	}
	if !c.o.tcp {
		_, tn.trans = raft.NewInmemTransportWithTimeout(raft.ServerAddress(tn.addr), time.Second)
		opts.Transport = tn.trans
		if c.o.sent != nil {
			id := tn.id
			opts.Transport = &watchedTransport{InmemTransport: tn.trans, sent: func(a *raft.AppendEntriesRequest) { c.o.sent(id, a) }}
		}
		if c.o.transport != nil {
			opts.Transport = c.o.transport(tn.id, tn.trans)
		}
	}
	cfg := c.config(tn.id)
	if tn.join {
		cfg.Join = true
		cfg.Peers = append(append([]Peer(nil), c.peers...), Peer{ID: tn.id, Addr: tn.addr})
	}
	crash := &crashingLog{CommitLog: cl}
	n, err := OpenNode(crash, cfg, opts)
	if err != nil {
		_ = cl.Close()
		t.Fatalf("%s: OpenNode: %v", tn.id, err)
	}
	crash.leading = n.log.isLeading
	if err := cl.Start(); err != nil {
		t.Fatalf("%s: store.Start: %v", tn.id, err)
	}
	if err := n.Start(); err != nil {
		t.Fatalf("%s: Start: %v", tn.id, err)
	}
	// Connected once Raft runs: an RPC to a node not started would wait for its timeout.
	if !c.o.tcp {
		for _, o := range c.nodes {
			if o != tn && o.running {
				tn.trans.Connect(raft.ServerAddress(o.addr), o.trans)
				o.trans.Connect(raft.ServerAddress(tn.addr), tn.trans)
			}
		}
	}
	c.mu.Lock()
	tn.cl, tn.crash, tn.n, tn.running = cl, crash, n, true
	c.mu.Unlock()
}

// stop closes node i (a leader hands over first) and its store.
func (c *cluster) stop(i int) {
	tn := c.nodes[i]
	c.mu.Lock()
	running := tn.running
	tn.running = false
	c.mu.Unlock()
	if !running {
		return
	}
	if !c.o.tcp {
		// As a closed listener: RPCs to the node fail at once instead of timing out.
		for _, o := range c.nodes {
			if o != tn {
				o.trans.Disconnect(raft.ServerAddress(tn.addr))
			}
		}
	}
	if err := tn.n.Close(); err != nil {
		c.t.Errorf("%s: Close: %v", tn.id, err)
	}
	if err := tn.cl.Close(); err != nil {
		c.t.Errorf("%s: store Close: %v", tn.id, err)
	}
}

// waitFor is testutil.WaitFor with this package's deadline.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	testutil.WaitFor(t, 60*time.Second, what, cond)
}

// leader waits for a running node that is the ready leader and returns its index.
func (c *cluster) leader() int {
	c.t.Helper()
	at := -1
	waitFor(c.t, "a leader", func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		for i, tn := range c.nodes {
			if tn.running && tn.n.IsReadyLeader() {
				at = i
				return true
			}
		}
		return false
	})
	return at
}

// transfer hands leadership to node id ("" for the best one) and waits until it (or any
// other node) leads. A transfer that timed out (the target did not catch up within an
// election timeout on a busy machine) is tried again on the current leader.
func (c *cluster) transfer(id string) {
	c.t.Helper()
	for attempt := 0; ; attempt++ {
		li := c.leader()
		if id != "" && c.nodes[li].id == id {
			return
		}
		err := c.nodes[li].n.TransferLeadership(id)
		if err == nil {
			from := c.nodes[li].id
			waitFor(c.t, "a leader after the transfer", func() bool {
				at := c.leader()
				return c.nodes[at].id != from && (id == "" || c.nodes[at].id == id)
			})
			return
		}
		if attempt == 5 {
			c.t.Fatalf("TransferLeadership(%q) from %s: %v", id, c.nodes[li].id, err)
		}
		c.t.Logf("TransferLeadership(%q) from %s: %v; trying again", id, c.nodes[li].id, err)
	}
}

// running returns the nodes running now.
func (c *cluster) running() []*tnode {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*tnode
	for _, tn := range c.nodes {
		if tn.running {
			out = append(out, tn)
		}
	}
	return out
}

// put proposes msgs on whichever node leads, retrying where the outcome says nothing was
// stored (not the leader, shut down); an unknown outcome (leadership lost) is returned.
func (c *cluster) put(ctx context.Context, msgs []*message.Message) (store.PutResult, error) {
	for {
		if err := ctx.Err(); err != nil {
			return store.PutResult{}, err
		}
		var target *Node
		for _, tn := range c.running() {
			if tn.n.Status().Role == "Leader" {
				target = tn.n
			}
		}
		if target == nil {
			time.Sleep(2 * time.Millisecond) // no leader yet: poll
			continue
		}
		res, err := target.PutMessages(ctx, msgs)
		if errors.Is(err, ErrNotLeader) || (errors.Is(err, ErrShutdown) && !errors.Is(err, raft.ErrRaftShutdown)) {
			continue
		}
		return res, err
	}
}

// converge appends an empty metadata command on the leader and waits until every running
// node applied it: everything before it (puts still in flight when the producers stopped
// included) is then dispatched everywhere, and every node dispatched to the same end.
func (c *cluster) converge() {
	c.t.Helper()
	var want uint64
	waitFor(c.t, "an empty command applied on the leader", func() bool {
		ld := c.nodes[c.leader()].n
		if _, err := ld.ProposeMeta(context.Background(), nil); err != nil {
			c.t.Logf("converge: %v", err)
			return false
		}
		want = ld.FSM().AppliedIndex()
		return true
	})
	waitFor(c.t, fmt.Sprintf("every node applying entry %d", want), func() bool {
		for _, tn := range c.running() {
			if tn.n.FSM().AppliedIndex() < want {
				return false
			}
		}
		return true
	})
}

// commitLogSum is the CRC32C and length of node tn's CommitLog [from, to).
func commitLogSum(t testing.TB, cl *store.Store, from, to int64) uint32 {
	t.Helper()
	var sum uint32
	for off := from; off < to; {
		b, release, err := cl.ReadCommitLog(off, int(min(to-off, 1<<20)))
		if err != nil {
			t.Fatalf("read commitlog at %d: %v", off, err)
		}
		sum = crc32.Update(sum, castagnoli, b)
		off += int64(len(b))
		release()
		if len(b) == 0 {
			t.Fatalf("read commitlog at %d: nothing", off)
		}
	}
	return sum
}

// firstDifference describes where the CommitLogs of a and b first differ in [from, to): the
// offset, the entries holding it on each node, and the bytes there.
func firstDifference(t testing.TB, a, b *tnode, from, to int64) string {
	for off := from; off < to; {
		x, rx, err := a.cl.ReadCommitLog(off, int(min(to-off, 4096)))
		if err != nil {
			return err.Error()
		}
		y, ry, err := b.cl.ReadCommitLog(off, len(x))
		if err != nil {
			rx()
			return err.Error()
		}
		n := min(len(x), len(y))
		for i := range n {
			if x[i] != y[i] {
				at := off + int64(i)
				s := fmt.Sprintf("first difference at %d: %s %s %x, %s %s %x", at,
					a.id, entryAt(a, at), x[i:min(n, i+32)], b.id, entryAt(b, at), y[i:min(n, i+32)])
				rx()
				ry()
				return s
			}
		}
		rx()
		ry()
		if n == 0 {
			return fmt.Sprintf("nothing readable at %d", off)
		}
		off += int64(n)
	}
	return "no byte differs"
}

// entryAt names the entry of n's log holding CommitLog offset at.
func entryAt(n *tnode, at int64) string {
	lg := n.n.Log()
	first, _ := lg.FirstIndex()
	last, _ := lg.LastIndex()
	for i := first; i <= last && i > 0; i++ {
		if p, ok := lg.Position(i); ok && p.Pos <= at && at < p.End {
			return fmt.Sprintf("(entry %d [%d, %d), log [%d, %d])", i, p.Pos, p.End, first, last)
		}
	}
	return fmt.Sprintf("(no entry, log [%d, %d])", first, last)
}

// checkIdentical checks that the running nodes dispatched the same CommitLog bytes (from the
// highest minimum, to the common dispatched end) and hold the same ConsumeQueue units for
// the topics and queues given, dense from each queue's minimum.
func (c *cluster) checkIdentical(queues map[string]int32) {
	t := c.t
	t.Helper()
	nodes := c.running()
	// A follower may not have dispatched the no-op and barrier frames that end a new leader's
	// log (nothing to dispatch in them; the leader skips them after its barrier): compare up
	// to the lowest dispatched end.
	from, to := int64(0), int64(math.MaxInt64)
	for _, tn := range nodes {
		from = max(from, tn.cl.MinPhyOffset())
		to = min(to, tn.cl.DispatchedOffset())
	}
	var want uint32
	for i, tn := range nodes {
		sum := commitLogSum(t, tn.cl, from, to)
		if i == 0 {
			want = sum
		} else if sum != want {
			t.Fatalf("commitlog [%d, %d): %s has CRC %08x, %s %08x; %s", from, to, tn.id, sum, nodes[0].id, want,
				firstDifference(t, nodes[0], tn, from, to))
		}
	}
	t.Logf("commitlogs identical on %d nodes over [%d, %d), CRC32C %08x", len(nodes), from, to, want)
	// Every record carried, when applied, the queue offset its node's log store had predicted
	// (queue_predict.go): no node's state machine had to write one.
	for _, tn := range nodes {
		if n := tn.cl.Stats().QueueOffsetsWritten; n != 0 {
			t.Errorf("%s: the state machine wrote the queue offsets of %d records: the log store's predictions were missing or wrong", tn.id, n)
		}
	}
	for topic, n := range queues {
		for q := range n {
			ref := nodes[0].cl
			lo, hi := ref.MinOffsetInQueue(topic, q), ref.MaxOffsetInQueue(topic, q)
			for _, tn := range nodes[1:] {
				l, h := tn.cl.MinOffsetInQueue(topic, q), tn.cl.MaxOffsetInQueue(topic, q)
				if h != hi {
					t.Fatalf("%s/%d: %s holds queue offsets [%d, %d), %s [%d, %d)", topic, q, tn.id, l, h, nodes[0].id, lo, hi)
				}
				lo = max(lo, l) // retention may have left some nodes more units below the minimum
			}
			for qo := lo; qo < hi; qo++ {
				u, err := ref.ConsumeQueueUnit(topic, q, qo)
				if err != nil {
					t.Fatalf("%s/%d@%d on %s: %v", topic, q, qo, nodes[0].id, err)
				}
				m, err := ref.LookMessageByOffset(u.PhysicalOffset)
				if err != nil || m.QueueOffset != qo || m.Topic != topic || m.QueueID != q {
					t.Fatalf("%s/%d@%d on %s: unit points to %+v (%v)", topic, q, qo, nodes[0].id, m, err)
				}
				for _, tn := range nodes[1:] {
					if v, err := tn.cl.ConsumeQueueUnit(topic, q, qo); err != nil || v != u {
						t.Fatalf("%s/%d@%d: %s has unit %+v (%v), %s %+v", topic, q, qo, tn.id, v, err, nodes[0].id, u)
					}
				}
			}
		}
	}
}

// acked is what a put was answered with, to find its messages afterwards.
type acked struct {
	res  store.PutResult
	msgs []*message.Message
}

// checkAcked checks every acknowledged message is readable on every running node at the
// queue offset and physical offset it was answered with, with its body, and that no queue
// offset was given twice.
func (c *cluster) checkAcked(acks []acked) {
	t := c.t
	t.Helper()
	seen := map[string]bool{}
	for _, a := range acks {
		for _, tn := range c.running() {
			phy := a.res.PhysicalOffset
			if phy < tn.cl.MinPhyOffset() {
				continue // deleted by retention
			}
			for k, m := range a.msgs {
				got, err := tn.cl.LookMessageByOffset(phy)
				if err != nil {
					t.Fatalf("%s: acknowledged message at %d: %v", tn.id, phy, err)
				}
				if got.QueueOffset != a.res.QueueOffset+int64(k) || got.Topic != m.Topic || got.QueueID != m.QueueID || !bytes.Equal(got.Body, m.Body) {
					t.Fatalf("%s: acknowledged %s/%d@%d at %d, found %s/%d@%d %q", tn.id, m.Topic, m.QueueID,
						a.res.QueueOffset+int64(k), phy, got.Topic, got.QueueID, got.QueueOffset, got.Body)
				}
				if got.StoreTimestamp != a.res.StoreTimestamp {
					t.Fatalf("%s: store timestamp %d, answered %d", tn.id, got.StoreTimestamp, a.res.StoreTimestamp)
				}
				phy += int64(got.StoreSize)
			}
		}
		for k, m := range a.msgs {
			key := fmt.Sprintf("%s/%d@%d", m.Topic, m.QueueID, a.res.QueueOffset+int64(k))
			if seen[key] {
				t.Fatalf("queue offset %s acknowledged twice", key)
			}
			seen[key] = true
		}
	}
}

func testMsg(topic string, q int32, body string) *message.Message {
	return &message.Message{Topic: topic, QueueID: q, Body: []byte(body), BornTimestamp: 1700000000000,
		BornHost:   netip.MustParseAddrPort("192.168.3.4:5000"),
		Properties: message.EncodeProperties(map[string]string{message.PropertyKeys: body})}
}

// raftTestLogLevel is the level of the nodes' logs in tests.
var raftTestLogLevel = slog.LevelWarn

// mapMeta is a MetaApplier over a map: commands are "key=value" (set), answered with the
// entry index.
type mapMeta struct {
	mu sync.Mutex
	m  map[string]string
}

func newMapMeta() *mapMeta { return &mapMeta{m: map[string]string{}} }

func (a *mapMeta) ApplyMeta(index uint64, data []byte, dispatched bool) any {
	if len(data) == 0 {
		return index // converge's marker
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	k, v, _ := strings.Cut(string(data), "=")
	a.m[k] = v
	return index
}

func (a *mapMeta) SnapshotMeta() ([]byte, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return json.Marshal(a.m)
}

func (a *mapMeta) RestoreMeta(data []byte) error {
	m := map[string]string{}
	if err := json.Unmarshal(data, &m); err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.m = m
	return nil
}

func (a *mapMeta) PersistMeta() error { return nil }

func (a *mapMeta) snapshot() map[string]string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return maps.Clone(a.m)
}
