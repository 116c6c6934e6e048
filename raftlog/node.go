package raftlog

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"github.com/rocketraft/rocketraft/internal/peertls"
)

// Peer is one member of a group: its dLegerSelfId and its Raft address.
type Peer struct {
	ID   string
	Addr string
}

// ParsePeers reads dLegerPeers, "n0-127.0.0.1:40911;n1-127.0.0.1:40912;...": ids unique,
// addresses host:port.
func ParsePeers(s string) ([]Peer, error) {
	var out []Peer
	seen := map[string]bool{}
	for _, part := range strings.Split(s, ";") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		id, addr, ok := strings.Cut(part, "-")
		if !ok || id == "" {
			return nil, fmt.Errorf("%q is not id-host:port", part)
		}
		if _, _, err := net.SplitHostPort(addr); err != nil {
			return nil, fmt.Errorf("%q: %q is not host:port", part, addr)
		}
		if seen[id] {
			return nil, fmt.Errorf("id %q appears twice", id)
		}
		seen[id] = true
		out = append(out, Peer{ID: id, Addr: addr})
	}
	if len(out) == 0 {
		return nil, errors.New("no peer")
	}
	return out, nil
}

// Config are a node's Raft settings.
type Config struct {
	// SelfID is this node's id among Peers (dLegerSelfId).
	SelfID string
	// Peers is the group (dLegerPeers): the configuration a new group bootstraps with.
	Peers []Peer
	// Join: this node is being added to a running group (Node.AddVoter on its leader), so a
	// first start does not bootstrap; it waits for the leader to contact it. Every node of a
	// new group must bootstrap with the same Peers, and a node joining must not bootstrap
	// at all (its first entry would differ from the group's).
	Join bool
	// Election timing (see hashicorp/raft's Config): a follower without contact for
	// [HeartbeatTimeout, 2x) starts an election; a leader that cannot reach a quorum for
	// LeaderLeaseTimeout steps down and refuses writes.
	HeartbeatTimeout   time.Duration
	ElectionTimeout    time.Duration
	LeaderLeaseTimeout time.Duration
	CommitTimeout      time.Duration
	// MaxAppendEntries caps the entries per replication RPC and per StoreLogs batch.
	MaxAppendEntries int
	// TrailingLogs, SnapshotThreshold, SnapshotInterval: Raft's compaction. Compaction is
	// advisory here (the CommitLog's retention deletes files).
	TrailingLogs      uint64
	SnapshotThreshold uint64
	SnapshotInterval  time.Duration
	// Sync: SYNC_FLUSH, every node syncs an entry before acknowledging it.
	Sync bool
	// OverlapLeaderSync (with Sync): the leader syncs its entries while Raft replicates them
	// instead of before (leader_sync.go, doc.go "The leader's sync overlaps replication"); an
	// entry is still applied and answered only once the leader and a majority hold it durably.
	// Needs a transport with pre-vote (the node's own, or a given one such as hashicorp/raft's
	// in-memory transport), which the node wraps to clamp the commit index it sends.
	OverlapLeaderSync bool
	// CheckCRCOnRecover checks message body CRCs when the log is recovered.
	CheckCRCOnRecover bool
	// PreferredLeaderID (preferredLeaderId): a leader that is not this node hands leadership
	// over to it once it has led for five election timeouts and the preferred node's
	// heartbeats succeed; attempts are spaced ten election timeouts apart. Empty: no
	// balancing.
	PreferredLeaderID string
	// Group commit of puts (propose.go): an entry carries at most MaxEntryBytes of records
	// (and never more than fits a CommitLog file) and MaxEntryMessages messages (a single
	// put larger than the bounds goes alone); at most MaxInFlight entries are in flight, and
	// the proposer waits for a free one before it takes the queue, so puts queue up while
	// they are in flight. With a slot in hand it lingers at most MaxLinger (and a quarter of
	// the recent round) for as many puts as the last entry carried; 0 turns that off.
	MaxEntryBytes    int
	MaxEntryMessages int
	MaxInFlight      int
	MaxLinger        time.Duration
	// LogCacheEntries keeps the last entries stored in memory (raft.LogCache), so replication,
	// the previous-entry checks and the followers' apply do not copy them out of the
	// CommitLog again; 0 turns it off. Each entry holds at most MaxEntryBytes.
	LogCacheEntries int
	// FramedAppends: the node's own TCP transport carries AppendEntries (heartbeats included)
	// as the binary frames of append_wire.go on connections of their own (append_transport.go)
	// instead of hashicorp/raft's msgpack; votes, snapshots and TimeoutNow stay msgpack, on the
	// same port, over plain TCP or PeerTLS. A peer without the frames (an older version) is
	// sent msgpack. Not used with a given transport.
	FramedAppends bool
}

// DefaultConfig is tuned for a LAN: elections after about 500 ms without a leader.
func DefaultConfig() Config {
	return Config{
		HeartbeatTimeout:   500 * time.Millisecond,
		ElectionTimeout:    500 * time.Millisecond,
		LeaderLeaseTimeout: 250 * time.Millisecond,
		CommitTimeout:      5 * time.Millisecond,
		MaxAppendEntries:   256,
		TrailingLogs:       100_000,
		SnapshotThreshold:  32_768,
		SnapshotInterval:   60 * time.Second,
		MaxEntryBytes:      1 << 20,
		MaxEntryMessages:   1024,
		MaxInFlight:        2,
		MaxLinger:          time.Millisecond,
		LogCacheEntries:    128,
		OverlapLeaderSync:  true,
		FramedAppends:      true,
	}
}

// Validate checks the config before a node opens; the error names the key: dLegerSelfId,
// dLegerPeers and preferredLeaderId as RocketMQ spells them, the others by field name. The
// timing rules are hashicorp/raft's (raft.ValidateConfig).
func (c *Config) Validate() error {
	bad := func(key, format string, args ...any) error {
		return fmt.Errorf("raftlog: config %s: %s", key, fmt.Sprintf(format, args...))
	}
	switch {
	case len(c.Peers) == 0:
		return bad("dLegerPeers", "no peer")
	case !hasPeer(c.Peers, c.SelfID):
		return bad("dLegerSelfId", "%q is not among dLegerPeers", c.SelfID)
	case c.PreferredLeaderID != "" && !hasPeer(c.Peers, c.PreferredLeaderID):
		return bad("preferredLeaderId", "%q is not among dLegerPeers", c.PreferredLeaderID)
	case c.HeartbeatTimeout < 5*time.Millisecond:
		return bad("HeartbeatTimeout", "%v is below 5ms", c.HeartbeatTimeout)
	case c.ElectionTimeout < c.HeartbeatTimeout:
		return bad("ElectionTimeout", "%v is below HeartbeatTimeout %v", c.ElectionTimeout, c.HeartbeatTimeout)
	case c.LeaderLeaseTimeout < 5*time.Millisecond || c.LeaderLeaseTimeout > c.HeartbeatTimeout:
		return bad("LeaderLeaseTimeout", "%v is not within [5ms, HeartbeatTimeout %v]", c.LeaderLeaseTimeout, c.HeartbeatTimeout)
	case c.CommitTimeout < time.Millisecond:
		return bad("CommitTimeout", "%v is below 1ms", c.CommitTimeout)
	case c.MaxAppendEntries < 1 || c.MaxAppendEntries > 1024:
		return bad("MaxAppendEntries", "%d is not within [1, 1024]", c.MaxAppendEntries)
	case c.SnapshotInterval < 5*time.Millisecond:
		return bad("SnapshotInterval", "%v is below 5ms", c.SnapshotInterval)
	case c.MaxEntryBytes < 1:
		return bad("MaxEntryBytes", "%d must be positive", c.MaxEntryBytes)
	case c.MaxEntryMessages < 1:
		return bad("MaxEntryMessages", "%d must be positive", c.MaxEntryMessages)
	case c.MaxInFlight < 1:
		return bad("MaxInFlight", "%d must be positive", c.MaxInFlight)
	case c.MaxLinger < 0:
		return bad("MaxLinger", "%v is negative", c.MaxLinger)
	case c.LogCacheEntries < 0:
		return bad("LogCacheEntries", "%d is negative", c.LogCacheEntries)
	}
	return nil
}

// NodeOptions are a node's collaborators.
type NodeOptions struct {
	// Logger receives the node's and hashicorp/raft's logs; nil discards them.
	Logger *slog.Logger
	// Dir holds the dense index (Dir/index), the term and vote (Dir/stable.db, raft-boltdb)
	// and the snapshots (Dir/snapshots).
	Dir string
	// Meta applies the metadata commands; nil ignores them.
	Meta MetaApplier
	// Transport carries the RPCs; nil makes a TCP transport on SelfID's peer address at
	// Start. Transport.LocalAddr must be SelfID's address in Peers.
	Transport raft.Transport
	// AddressOf, when set, overrides the address this node dials for a peer (tests route
	// through fault-injecting proxies).
	AddressOf func(id string) string
	// PeerTLS, when set (peerTlsMode=enforcing), makes the transport made at Start mutual TLS
	// with every incoming RPC bound to its connection's certified id (tls.go); nil: plain TCP.
	PeerTLS *peertls.Material
	// OnRoleChange, when set, is called with every change of this node's role, in order, one
	// call at a time on a goroutine of the node (it may take its time: later events wait).
	// The first event comes soon after Start: RoleFollower (with or without a leader) or
	// RoleLeader. A RoleLeader event means every entry of earlier terms is applied here.
	OnRoleChange func(RoleEvent)
}

// Node is one member of a Raft broker group: the log store over the framed CommitLog, the
// state machine, the stable and snapshot stores and, once started, hashicorp/raft itself.
type Node struct {
	cfg  Config
	opts NodeOptions
	lg   *slog.Logger
	cl   CommitLog

	log    *Store
	fsm    *FSM
	stable *raftboltdb.BoltStore
	snaps  raft.SnapshotStore
	trans  raft.Transport
	guard  *pipelineGuard // wraps trans when the node made it, or to clamp the commit index (leader_sync.go)
	// raftp is the Raft instance once Start made it: set once, read by request handlers that
	// may run while Start is still going (rf).
	raftp atomic.Pointer[raft.Raft]

	prop   *proposer
	roles  *roles
	ready  atomic.Bool // leader with its barrier applied (roles.go)
	closed atomic.Bool // Close began: proposals fail with ErrShutdown

	// balanceHold: no preferred-leader transfer before this time (UnixNano; HoldPreferredLeader).
	balanceHold atomic.Int64

	failovers atomic.Uint64
	stop      chan struct{}
	// raftDown is closed once this node's Raft was told to shut down (shutdownRaft: Close, or the
	// stop after a failed log sync), so that waits on Raft futures give up (awaitUntil).
	raftDown     chan struct{}
	raftDownOnce sync.Once
	wg           sync.WaitGroup
	closeOnce    sync.Once
	closeErr     error
}

// OpenNode opens the log over cl (a framed store, not started: Open recovers it) and the
// stable and snapshot stores. Start cl, then start the node.
func OpenNode(cl CommitLog, cfg Config, opts NodeOptions) (*Node, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	n := &Node{cfg: cfg, opts: opts, lg: opts.Logger.With("component", "raft", "self", cfg.SelfID), cl: cl,
		stop: make(chan struct{}), raftDown: make(chan struct{})}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("raftlog: create %s: %w", opts.Dir, err)
	}
	var err error
	if n.log, err = Open(cl, opts.Dir, Options{Logger: opts.Logger, Sync: cfg.Sync, CheckCRCOnRecover: cfg.CheckCRCOnRecover}); err != nil {
		return nil, err
	}
	if n.stable, err = raftboltdb.NewBoltStore(filepath.Join(opts.Dir, "stable.db")); err != nil {
		_ = n.log.Close()
		return nil, fmt.Errorf("raftlog: open stable store: %w", err)
	}
	inner, err := raft.NewFileSnapshotStoreWithLogger(filepath.Join(opts.Dir, "snapshots"), 2, NewHCLogger(n.lg))
	if err != nil {
		_ = n.stable.Close()
		_ = n.log.Close()
		return nil, fmt.Errorf("raftlog: open snapshot store: %w", err)
	}
	n.snaps = NewSnapshotStore(inner, n.log)
	n.fsm = NewFSM(n.log, opts.Meta, opts.Logger)
	return n, nil
}

func hasPeer(peers []Peer, id string) bool {
	for _, p := range peers {
		if p.ID == id {
			return true
		}
	}
	return false
}

func (n *Node) selfAddr() string {
	for _, p := range n.cfg.Peers {
		if p.ID == n.cfg.SelfID {
			return p.Addr
		}
	}
	return ""
}

// addressProvider routes dials through NodeOptions.AddressOf, falling back to the peer's
// address in dLegerPeers when it has none.
type addressProvider struct {
	of    func(id string) string
	peers []Peer
}

func (p addressProvider) ServerAddr(id raft.ServerID) (raft.ServerAddress, error) {
	if a := p.of(string(id)); a != "" {
		return raft.ServerAddress(a), nil
	}
	for _, peer := range p.peers {
		if peer.ID == string(id) {
			return raft.ServerAddress(peer.Addr), nil
		}
	}
	return "", fmt.Errorf("raftlog: no address for %s", id)
}

// Start makes the transport (unless given), bootstraps a new group from the peers (a node
// with a log, a term or a snapshot rejoins instead, and so does one with Config.Join) and
// starts Raft. The store must be started.
func (n *Node) Start() error {
	trans := n.opts.Transport
	if trans == nil {
		addr := n.selfAddr()
		_, err := net.ResolveTCPAddr("tcp", addr)
		if err != nil {
			return fmt.Errorf("raftlog: peer address %s: %w", addr, err)
		}
		// Two AppendEntries in flight per follower (pipelining) match the proposer's two entries in
		// flight (doc.go has the measurements).
		tc := &raft.NetworkTransportConfig{Logger: NewHCLogger(n.lg), MaxPool: 3, MaxRPCsInFlight: 2, Timeout: 10 * time.Second}
		if n.opts.AddressOf != nil {
			tc.ServerAddressProvider = addressProvider{of: n.opts.AddressOf, peers: n.cfg.Peers}
		}
		var t raft.Transport
		if n.opts.PeerTLS != nil {
			t, err = newTLSTransport(addr, n.cfg.Peers, n.opts.PeerTLS, *tc, n.dialedID, n.cfg.FramedAppends, n.log.stats, n.lg)
		} else if n.cfg.FramedAppends {
			t, err = newAppendTransport(addr, *tc, n.log.stats, n.lg)
		} else {
			var ln net.Listener
			if ln, err = listenTCP(addr); err == nil {
				ptc := *tc
				ptc.Stream = tcpStream{ln: ln, accepted: newAcceptedConns()}
				t = newRedialTransport(ptc)
			}
		}
		if err != nil {
			return fmt.Errorf("raftlog: listen on the raft address %s (dLegerPeers): %w", addr, err)
		}
		appends := "msgpack"
		if n.cfg.FramedAppends {
			appends = "frames" // doc.go "Log entries as binary frames"
		}
		n.lg.Info("raft transport listening", "addr", addr, "tls", n.opts.PeerTLS != nil, "appendEntries", appends)
		trans = t
		if _, ok := t.(raft.WithPreVote); ok {
			n.guard = newPipelineGuard(t, 2*tc.Timeout, n.lg) // pipeline.go: hashicorp/raft's pipeline hang
			trans = n.guard
		}
	} else if _, ok := trans.(raft.WithPreVote); ok && n.cfg.Sync && n.cfg.OverlapLeaderSync {
		// A transport given (tests): wrapped only to clamp the commit index.
		n.guard = newPipelineGuard(trans, time.Minute, n.lg)
		trans = n.guard
	}
	if n.guard != nil && n.cfg.Sync && n.cfg.OverlapLeaderSync {
		n.guard.clamp = n.log.clampCommit
		n.log.enableOverlap()
	}
	n.trans = trans
	rc := n.raftConfig()
	has, err := raft.HasExistingState(n.log, n.stable, n.snaps)
	if err != nil {
		return fmt.Errorf("raftlog: %w", err)
	}
	if !has && !n.cfg.Join {
		var servers []raft.Server
		for _, p := range n.cfg.Peers {
			servers = append(servers, raft.Server{Suffrage: raft.Voter, ID: raft.ServerID(p.ID), Address: raft.ServerAddress(p.Addr)})
		}
		if err := raft.BootstrapCluster(rc, n.log, n.stable, n.snaps, trans, raft.Configuration{Servers: servers}); err != nil {
			return fmt.Errorf("raftlog: bootstrap: %w", err)
		}
		n.lg.Info("bootstrapped a new raft group", "peers", len(servers))
	}
	n.roles = newRoles()
	rc.NotifyCh = n.roles.notify
	// The cache holds the entries as Raft handed them over: a message entry's records without
	// the physical and queue offsets the CommitLog copy has. Nothing reads those through Raft:
	// a follower's StoreLogs writes them again, the state machine reads the CommitLog.
	var logs raft.LogStore = n.log
	if n.cfg.LogCacheEntries > 0 {
		if logs, err = raft.NewLogCache(n.cfg.LogCacheEntries, n.log); err != nil {
			return fmt.Errorf("raftlog: %w", err)
		}
	}
	if n.log.overlapping() {
		logs = gatedLog{LogStore: logs, s: n.log} // leader_sync.go rule 3
	}
	r, err := raft.NewRaft(rc, n.fsm, logs, n.stable, n.snaps, trans)
	if err != nil {
		return fmt.Errorf("raftlog: start raft: %w", err)
	}
	n.raftp.Store(r)
	r.RegisterObserver(n.roles.obs)
	leading := func() bool { return n.raftState() == raft.Leader }
	n.log.leading.Store(&leading)
	n.wg.Add(2)
	go n.roleLoop()
	go n.eventLoop()
	n.prop = newProposer(n)
	n.prop.start()
	n.log.onStoreFailure(func(err error) {
		n.lg.Error("stopping this node's raft: its store failed (a sync, or a write the store refused once read-only); "+
			"restart the broker once the disk is fixed", "err", err)
		// As Close: the puts in flight are answered while Raft still runs (its state machine
		// fails the entries it has not applied: the store is read-only now), since Raft leaves
		// a future it took and never answered waiting for ever once it is shut down, and Close
		// would then wait for it (TestSyncFailureAnswersEveryPutInFlight).
		n.prop.close()
		_ = n.shutdownRaft().Error()
	})
	return nil
}

func (n *Node) raftConfig() *raft.Config {
	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(n.cfg.SelfID)
	rc.Logger = NewHCLogger(n.lg)
	rc.HeartbeatTimeout = n.cfg.HeartbeatTimeout
	rc.ElectionTimeout = n.cfg.ElectionTimeout
	rc.LeaderLeaseTimeout = n.cfg.LeaderLeaseTimeout
	rc.CommitTimeout = n.cfg.CommitTimeout
	rc.MaxAppendEntries = n.cfg.MaxAppendEntries
	rc.TrailingLogs = n.cfg.TrailingLogs
	rc.SnapshotThreshold = n.cfg.SnapshotThreshold
	rc.SnapshotInterval = n.cfg.SnapshotInterval
	rc.BatchApplyCh = true
	// The ConsumeQueues, index and metadata files are the durable state: a restart replays
	// only what the checkpoint does not cover.
	rc.NoSnapshotRestoreOnStart = true
	return rc
}

// Raft is the running raft.Raft (nil before Start).
func (n *Node) Raft() *raft.Raft { return n.rf() }

// rf is the node's Raft instance, nil before Start made it.
func (n *Node) rf() *raft.Raft { return n.raftp.Load() }

// Log is the log store.
func (n *Node) Log() *Store { return n.log }

// FSM is the state machine.
func (n *Node) FSM() *FSM { return n.fsm }

// Status is a node's view of its group, from state it holds (no wait on the Raft loop).
type Status struct {
	Role                 string // Leader, Follower, Candidate, Shutdown
	Term                 uint64
	CommitIndex          uint64
	AppliedIndex         uint64
	LastIndex            uint64
	LeaderID, LeaderAddr string
	Failovers            uint64
}

// Status returns the node's Raft status.
func (n *Node) Status() Status {
	r := n.rf()
	if r == nil {
		return Status{Role: "Shutdown"}
	}
	addr, id := r.LeaderWithID()
	return Status{Role: n.raftState().String(), Term: r.CurrentTerm(), CommitIndex: r.CommitIndex(),
		AppliedIndex: r.AppliedIndex(), LastIndex: r.LastIndex(), LeaderID: string(id), LeaderAddr: string(addr),
		Failovers: n.failovers.Load()}
}

// Close stops taking proposals (queued ones fail with ErrShutdown) and waits for the entries
// in flight, hands leadership to another voter when this node leads (so the group does not
// wait for an election timeout), shuts Raft down and closes the transport, the log and the
// stable store. The CommitLog store stays open: its owner closes it after. Every goroutine
// that waits on a Raft future ends before Raft shuts down (a future Raft never took would
// otherwise wait forever). Safe to call more than once; never from OnRoleChange.
func (n *Node) Close() error {
	n.closeOnce.Do(func() {
		n.closed.Store(true)
		var errs []error
		if r := n.rf(); r != nil {
			n.prop.close()
			close(n.stop)
			if n.raftState() == raft.Leader && len(n.cfg.Peers) > 1 {
				// Not r.LeadershipTransfer().Error(): when the stop after a failed sync shuts
				// Raft down meanwhile, the request can stay in Raft's queue unanswered for ever.
				if err := n.awaitUntil(context.Background(), r.LeadershipTransfer(), nil); err != nil {
					n.lg.Warn("leadership transfer before shutdown failed", "err", err)
				}
			}
			n.wg.Wait()
			done := reportSlow(n.lg, "raft shutdown", 30*time.Second)
			f := n.shutdownRaft()
			if n.guard != nil {
				n.guard.closePipelines() // frees a replication goroutine stuck in a pipeline (pipeline.go)
			}
			errs = append(errs, f.Error())
			if n.guard != nil {
				n.guard.closeHeartbeats() // no heartbeat reaches Raft once the stores close (pipeline.go)
			}
			done()
			r.DeregisterObserver(n.roles.obs)
		} else {
			close(n.stop)
		}
		if c, ok := n.trans.(raft.WithClose); ok && n.opts.Transport == nil {
			errs = append(errs, c.Close())
		}
		errs = append(errs, n.log.Close(), n.stable.Close())
		n.closeErr = errors.Join(errs...)
	})
	return n.closeErr
}

// raftState is Raft's state as this node sees it: raft.Shutdown once the node told its Raft to
// shut down (shutdownRaft), whatever Raft's State says. hashicorp/raft (v1.8.0) can report a
// shut-down Raft as a follower for good: Shutdown sets the state to Shutdown, but the run
// goroutine, when it takes an AppendEntries (or a RequestVote of a newer term) from its queue
// before it sees the shutdown (its select picks at random among the ready cases), sets it
// back to Follower (appendEntries: state != Follower), then returns: nothing sets Shutdown
// again (doc.go "A disk that fails or fills up"; TestStoppedFollowerSaysShutdown). A follower, which handles its
// leader's appends all the time, meets it; a leader seldom gets an AppendEntries. Every role
// check of the node goes through here. Raft must be started (rf() not nil).
func (n *Node) raftState() raft.RaftState {
	select {
	case <-n.raftDown:
		return raft.Shutdown
	default:
		return n.rf().State()
	}
}

// shutdownRaft tells Raft to shut down and marks it so (raftDown). The returned future resolves
// once Raft's goroutines ended; a second call's resolves at once.
func (n *Node) shutdownRaft() raft.Future {
	f := n.rf().Shutdown()
	n.raftDownOnce.Do(func() { close(n.raftDown) })
	return f
}

// reportSlow logs, once, every goroutine's stack when the call it brackets has not returned within
// after: a shutdown that hangs then says where (call the returned func when the call returns).
func reportSlow(lg *slog.Logger, what string, after time.Duration) func() {
	done := make(chan struct{})
	go func() {
		select {
		case <-done:
		case <-time.After(after):
			buf := make([]byte, 4<<20)
			buf = buf[:runtime.Stack(buf, true)]
			lg.Error(what+" has not returned; every goroutine's stack follows", "after", after, "stacks", string(buf))
		}
	}()
	return func() { close(done) }
}
