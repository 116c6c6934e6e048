package broker

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/rocketraft/rocketraft/raftlog"
)

// RaftConfig holds the Raft mode's keys (RocketMQ's DLedger keys, with their dLeger spelling). It is
// squashed into Config, so the keys sit next to the others in a .properties file. A broker runs either
// the classic roles (brokerRole, ha_*.go) or, with enableDLegerCommitLog=true, the Raft mode: its
// CommitLog is the Raft log of package raftlog, the group elects its master, brokerId follows
// leadership (raft_role.go).
//
// The election timing keys are not RocketMQ's (DLedger's heartBeatTimeIntervalMs × maxHeartBeatLeak
// waits about 6 s); they are hashicorp/raft's timers with a dLeger prefix, tuned for a LAN.
type RaftConfig struct {
	// EnableDLegerCommitLog turns the Raft mode on (false: classic roles).
	EnableDLegerCommitLog bool `mapstructure:"enableDLegerCommitLog"`
	// DLegerGroup names the Raft group; empty = brokerName. Informational (status, metrics): the
	// group's members are dLegerPeers.
	DLegerGroup string `mapstructure:"dLegerGroup"`
	// DLegerPeers is the group, identical on every node: "n0-127.0.0.1:40911;n1-127.0.0.1:40912;...",
	// id-host:port of each node's Raft port. A new group bootstraps from it on first start; restarts
	// rejoin with the membership in the log.
	DLegerPeers string `mapstructure:"dLegerPeers"`
	// DLegerPeersDial, when set, is where this node dials some of its peers, in dLegerPeers' format:
	// "n1-127.0.0.1:50912;n2-127.0.0.1:50913". Only the ids listed are overridden (the others are
	// dialed at their dLegerPeers address), and every node still binds its own dLegerPeers address.
	// Per node, unlike dLegerPeers: for a NAT or a proxy between the nodes (the chaos suite routes
	// every peer link through a fault-injecting proxy with it; raftlog.NodeOptions.AddressOf).
	DLegerPeersDial string `mapstructure:"dLegerPeersDial"`
	// DLegerSelfId is this node's id in dLegerPeers. A follower registers with brokerId = its position
	// in dLegerPeers + 1 (n0 first: 1), the leader with 0.
	DLegerSelfId string `mapstructure:"dLegerSelfId"`
	// DLegerJoin: this node is being added to a running group (mqadmin addRaftPeer on the leader), so
	// it must not bootstrap on its first start; it waits for the leader to contact it. Its dLegerPeers
	// lists the group including itself (the others keep their own list: the membership is in the log).
	DLegerJoin bool `mapstructure:"dLegerJoin"`
	// PreferredLeaderId, when set, is the node another leader hands leadership to once it has led for
	// five election timeouts and the preferred node answers heartbeats, retried every ten
	// (raftlog.Config.PreferredLeaderID).
	PreferredLeaderId string `mapstructure:"preferredLeaderId"`
	// DLegerHeartbeatTimeoutMs: a follower that heard nothing from the leader for [t, 2t) starts an
	// election (500).
	DLegerHeartbeatTimeoutMs int64 `mapstructure:"dLegerHeartbeatTimeoutMs"`
	// DLegerElectionTimeoutMs: a candidate without a result for [t, 2t) starts a new election (500).
	DLegerElectionTimeoutMs int64 `mapstructure:"dLegerElectionTimeoutMs"`
	// DLegerLeaderLeaseTimeoutMs: a leader that reached no quorum for this long steps down and stops
	// accepting writes (250; at most dLegerHeartbeatTimeoutMs).
	DLegerLeaderLeaseTimeoutMs int64 `mapstructure:"dLegerLeaderLeaseTimeoutMs"`
	// DLegerMaxWaitAckTimeMs bounds how long a send waits for its entry to commit and apply before it
	// is answered with a retriable error (2500, DLedger's maxWaitAckTimeMs).
	DLegerMaxWaitAckTimeMs int64 `mapstructure:"dLegerMaxWaitAckTimeMs"`
	// MasterVipAddress, when set, is an IPv4 address that follows leadership (raft_vip.go): the master
	// listens on it at listenPort too and registers it with the name servers as brokerId 0's address, so
	// clients that cached the route reach each new master without a route refresh. A loopback address
	// (127.x, tests and one-host groups) is only bound; any other needs masterVipInterface. brokerIP1 must
	// be set (each node's own address, which it binds and registers as a slave).
	MasterVipAddress string `mapstructure:"masterVipAddress"`
	// MasterVipInterface is the network interface the master adds masterVipAddress to (as a /32, with a
	// gratuitous ARP) and the node removes it from when it steps down, shuts down or starts. Needs
	// CAP_NET_ADMIN and CAP_NET_RAW. Empty for a loopback masterVipAddress.
	MasterVipInterface string `mapstructure:"masterVipInterface"`
	// DLegerOffsetSyncIntervalMs is how often the leader proposes the consumer and delay offsets that
	// changed (1000): a failover rewinds a group by at most about this much.
	DLegerOffsetSyncIntervalMs int64 `mapstructure:"dLegerOffsetSyncIntervalMs"`
	// DLegerForwardTimeoutMs bounds what a node that is not the master spends on a send or an offset
	// commit it forwards to the group's master (raft_forward.go): waiting for a master to be known plus
	// the master's answer (3000). Past it the client is answered SERVICE_NOT_AVAILABLE naming this key.
	DLegerForwardTimeoutMs int64 `mapstructure:"dLegerForwardTimeoutMs"`
	// DLegerForwardMaxInflightBytes bounds the request bytes a node forwards at once (67108864, 64 MiB):
	// a request that would pass it is answered SYSTEM_BUSY naming this key. 0 turns forwarding off: a
	// node that is not the master refuses writes with SERVICE_NOT_AVAILABLE, as before forwarding.
	DLegerForwardMaxInflightBytes int64 `mapstructure:"dLegerForwardMaxInflightBytes"`
	// RaftOverlapLeaderSync (SYNC_FLUSH): the leader syncs an entry while it replicates it instead
	// of before (true; raftlog.Config.OverlapLeaderSync). A send is still answered, and a message
	// readable on any node, only once the leader and a majority hold it on disk; false restores the
	// leader's sync before replication.
	RaftOverlapLeaderSync bool `mapstructure:"raftOverlapLeaderSync"`
	// RaftProposeMaxInFlight is how many entries the leader's proposer keeps in flight at once
	// (raftlog.Config.MaxInFlight): puts arriving meanwhile queue and go together in the next entry, so
	// fewer in flight means bigger entries (fewer syncs per message) and more in flight shorter waits.
	// 0 (the default) picks by flush mode: 1 with SYNC_FLUSH, where every entry costs a sync on every
	// node, 2 with ASYNC_FLUSH (make bench-compare, 16 producers: SYNC_FLUSH 1.35-1.45x the msgs/s of 2
	// and 10 % less CPU per message; ASYNC_FLUSH 0.93x).
	RaftProposeMaxInFlight int `mapstructure:"raftProposeMaxInFlight"`
	// RaftFramedAppends: the nodes send each other AppendEntries as binary frames instead of
	// hashicorp/raft's msgpack (true; raftlog.Config.FramedAppends); a node of an older version is
	// sent msgpack. Under peer TLS too, with the same identity checks.
	RaftFramedAppends bool `mapstructure:"raftFramedAppends"`
	// RaftProposeMaxLingerMicros is the longest the proposer waits, with a slot free, for as many puts
	// as the last entry carried (1000 µs; raftlog.Config.MaxLinger); 0 sends what is queued at once.
	RaftProposeMaxLingerMicros int64 `mapstructure:"raftProposeMaxLingerMicros"`
	// RaftSnapshotThreshold is how many entries a node applies after its last snapshot before Raft
	// takes the next one (32768; raftlog.Config.SnapshotThreshold). A snapshot is what a follower
	// behind the retained CommitLog files installs; it carries the files, the metadata and every
	// queue's next offset (raftlog/doc.go).
	RaftSnapshotThreshold int64 `mapstructure:"raftSnapshotThreshold"`
	// RaftSnapshotIntervalMs is how often Raft checks whether a snapshot is due (60000).
	RaftSnapshotIntervalMs int64 `mapstructure:"raftSnapshotIntervalMs"`
	// RaftTrailingLogs is how many entries Raft keeps in its log index after a snapshot, so a follower
	// that far behind catches up by replication rather than by a snapshot (100000). The CommitLog's
	// files are deleted by their retention (fileReservedTime), never before the newest snapshot's last
	// entry.
	RaftTrailingLogs int64 `mapstructure:"raftTrailingLogs"`
}

// DefaultRaftConfig returns the Raft mode's defaults (off).
func DefaultRaftConfig() RaftConfig {
	d := raftlog.DefaultConfig()
	return RaftConfig{
		DLegerHeartbeatTimeoutMs:      500,
		DLegerElectionTimeoutMs:       500,
		DLegerLeaderLeaseTimeoutMs:    250,
		DLegerMaxWaitAckTimeMs:        2500,
		DLegerOffsetSyncIntervalMs:    1000,
		DLegerForwardTimeoutMs:        3000,
		DLegerForwardMaxInflightBytes: 64 << 20,
		RaftOverlapLeaderSync:         true,
		RaftFramedAppends:             true,
		RaftProposeMaxLingerMicros:    1000,
		RaftSnapshotThreshold:         int64(d.SnapshotThreshold),
		RaftSnapshotIntervalMs:        d.SnapshotInterval.Milliseconds(),
		RaftTrailingLogs:              int64(d.TrailingLogs),
	}
}

// raftMode reports whether the broker runs the Raft mode.
func (c Config) raftMode() bool { return c.Raft.EnableDLegerCommitLog }

// raftGroup is dLegerGroup, or brokerName when it is empty.
func (c Config) raftGroup() string {
	if c.Raft.DLegerGroup != "" {
		return c.Raft.DLegerGroup
	}
	return c.BrokerName
}

// raftNodeConfig is the raftlog config of this node (the config validated).
func (c Config) raftNodeConfig() raftlog.Config {
	rc := raftlog.DefaultConfig()
	rc.SelfID = c.Raft.DLegerSelfId
	rc.Peers, _ = raftlog.ParsePeers(c.Raft.DLegerPeers)
	rc.Join = c.Raft.DLegerJoin
	rc.HeartbeatTimeout = ms(c.Raft.DLegerHeartbeatTimeoutMs)
	rc.ElectionTimeout = ms(c.Raft.DLegerElectionTimeoutMs)
	rc.LeaderLeaseTimeout = ms(c.Raft.DLegerLeaderLeaseTimeoutMs)
	rc.Sync = c.FlushDiskType == "SYNC_FLUSH"
	rc.CheckCRCOnRecover = c.CheckCRCOnRecover
	rc.PreferredLeaderID = c.Raft.PreferredLeaderId
	rc.OverlapLeaderSync = c.Raft.RaftOverlapLeaderSync
	rc.MaxInFlight = c.Raft.RaftProposeMaxInFlight
	rc.FramedAppends = c.Raft.RaftFramedAppends
	if rc.MaxInFlight == 0 {
		rc.MaxInFlight = 2
		if rc.Sync {
			rc.MaxInFlight = 1
		}
	}
	rc.MaxLinger = time.Duration(c.Raft.RaftProposeMaxLingerMicros) * time.Microsecond
	rc.SnapshotThreshold = uint64(c.Raft.RaftSnapshotThreshold)
	rc.SnapshotInterval = ms(c.Raft.RaftSnapshotIntervalMs)
	rc.TrailingLogs = uint64(c.Raft.RaftTrailingLogs)
	return rc
}

// raftDialOf is raftlog.NodeOptions.AddressOf from dLegerPeersDial (the config validated): nil when
// the key is empty, else the override of a listed id and "" (its dLegerPeers address) for the others.
func (c Config) raftDialOf() func(id string) string {
	if c.Raft.DLegerPeersDial == "" {
		return nil
	}
	dial, _ := raftlog.ParsePeers(c.Raft.DLegerPeersDial)
	addrs := make(map[string]string, len(dial))
	for _, p := range dial {
		addrs[p.ID] = p.Addr
	}
	return func(id string) string { return addrs[id] }
}

// raftSlaveID is the brokerId this node registers with as a follower: its position in dLegerPeers
// plus one.
func (c Config) raftSlaveID() int64 {
	peers, _ := raftlog.ParsePeers(c.Raft.DLegerPeers)
	for i, p := range peers {
		if p.ID == c.Raft.DLegerSelfId {
			return int64(i + 1)
		}
	}
	return 1
}

// validateRaft checks the Raft keys when the mode is on, naming the bad key.
func (c Config) validateRaft() error {
	r := c.Raft
	vipErr := c.validateVIP() // raft_vip.go; also when the mode is off: the keys need it
	if !r.EnableDLegerCommitLog {
		return vipErr
	}
	errs := []error{vipErr}
	bad := func(key string, format string, args ...any) {
		errs = append(errs, fmt.Errorf("config key %s: %s", key, fmt.Sprintf(format, args...)))
	}
	if r.RaftProposeMaxInFlight < 0 || r.RaftProposeMaxInFlight > 64 {
		bad("raftProposeMaxInFlight", "%d must be 0 (by flush mode) to 64", r.RaftProposeMaxInFlight)
	}
	if r.RaftProposeMaxLingerMicros < 0 || r.RaftProposeMaxLingerMicros > 100_000 {
		bad("raftProposeMaxLingerMicros", "%d must be 0 to 100000 (100 ms)", r.RaftProposeMaxLingerMicros)
	}
	if r.RaftSnapshotThreshold < 1 {
		bad("raftSnapshotThreshold", "%d must be at least 1 (entries applied between snapshots)", r.RaftSnapshotThreshold)
	}
	if r.RaftSnapshotIntervalMs < 5 {
		bad("raftSnapshotIntervalMs", "%d ms is below the minimum of 5 ms", r.RaftSnapshotIntervalMs)
	}
	if r.RaftTrailingLogs < 0 {
		bad("raftTrailingLogs", "%d is negative", r.RaftTrailingLogs)
	}
	if c.BrokerRole == RoleSlave {
		bad("brokerRole", "SLAVE cannot be combined with enableDLegerCommitLog=true: in the Raft mode the role follows leadership (leave brokerRole unset)")
	}
	if c.BrokerID != 0 {
		bad("brokerId", "%d is set, but with enableDLegerCommitLog=true the broker id follows leadership (0 on the leader, the position in dLegerPeers + 1 on a follower): leave it unset", c.BrokerID)
	}
	if c.Replication.HAMasterAddress != "" {
		bad("haMasterAddress", "classic replication cannot be combined with enableDLegerCommitLog=true")
	}
	peers, err := raftlog.ParsePeers(r.DLegerPeers)
	if err != nil {
		bad("dLegerPeers", "%q: %v (want id-host:port;id-host:port, e.g. n0-127.0.0.1:40911;n1-127.0.0.1:40912;n2-127.0.0.1:40913)", r.DLegerPeers, err)
	}
	has := func(id string) bool {
		for _, p := range peers {
			if p.ID == id {
				return true
			}
		}
		return false
	}
	if err == nil {
		if r.DLegerSelfId == "" {
			bad("dLegerSelfId", "must name this node's id in dLegerPeers")
		} else if !has(r.DLegerSelfId) {
			bad("dLegerSelfId", "%q is not among the ids of dLegerPeers (%s)", r.DLegerSelfId, r.DLegerPeers)
		}
		if r.PreferredLeaderId != "" && !has(r.PreferredLeaderId) {
			bad("preferredLeaderId", "%q is not among the ids of dLegerPeers (%s)", r.PreferredLeaderId, r.DLegerPeers)
		}
		if r.DLegerPeersDial != "" {
			dial, err := raftlog.ParsePeers(r.DLegerPeersDial)
			if err != nil {
				bad("dLegerPeersDial", "%q: %v (want id-host:port;... of the peers this node dials elsewhere than their dLegerPeers address)", r.DLegerPeersDial, err)
			}
			for _, p := range dial {
				switch {
				case !has(p.ID):
					bad("dLegerPeersDial", "%q is not among the ids of dLegerPeers (%s)", p.ID, r.DLegerPeers)
				case p.ID == r.DLegerSelfId:
					bad("dLegerPeersDial", "%q is this node (dLegerSelfId): a node does not dial itself, it binds its dLegerPeers address", p.ID)
				}
			}
		}
		for _, p := range peers {
			if p.ID != r.DLegerSelfId {
				continue
			}
			_, port, _ := net.SplitHostPort(p.Addr)
			if n, _ := strconv.Atoi(port); n == c.ListenPort || (c.ExporterConfig.On() && n == c.ExporterConfig.Port()) {
				bad("dLegerPeers", "this node's Raft port %d is also listenPort or the metrics port (%s)", n, c.ExporterConfig.PortKey())
			}
		}
	}
	positive := []struct {
		key string
		v   int64
	}{
		{"dLegerHeartbeatTimeoutMs", r.DLegerHeartbeatTimeoutMs},
		{"dLegerElectionTimeoutMs", r.DLegerElectionTimeoutMs},
		{"dLegerLeaderLeaseTimeoutMs", r.DLegerLeaderLeaseTimeoutMs},
		{"dLegerMaxWaitAckTimeMs", r.DLegerMaxWaitAckTimeMs},
		{"dLegerOffsetSyncIntervalMs", r.DLegerOffsetSyncIntervalMs},
		{"dLegerForwardTimeoutMs", r.DLegerForwardTimeoutMs},
	}
	for _, p := range positive {
		if p.v < 5 {
			bad(p.key, "%d ms is below the minimum of 5 ms", p.v)
		}
	}
	if r.DLegerForwardMaxInflightBytes < 0 {
		bad("dLegerForwardMaxInflightBytes", "%d is negative (0 turns forwarding to the master off)", r.DLegerForwardMaxInflightBytes)
	}
	if r.DLegerLeaderLeaseTimeoutMs > r.DLegerHeartbeatTimeoutMs {
		bad("dLegerLeaderLeaseTimeoutMs", "%d ms exceeds dLegerHeartbeatTimeoutMs (%d ms)", r.DLegerLeaderLeaseTimeoutMs, r.DLegerHeartbeatTimeoutMs)
	}
	if r.DLegerElectionTimeoutMs < r.DLegerHeartbeatTimeoutMs {
		bad("dLegerElectionTimeoutMs", "%d ms is below dLegerHeartbeatTimeoutMs (%d ms)", r.DLegerElectionTimeoutMs, r.DLegerHeartbeatTimeoutMs)
	}
	return errors.Join(errs...)
}

// raftWaitAck is dLegerMaxWaitAckTimeMs as a duration.
func (c Config) raftWaitAck() time.Duration { return ms(c.Raft.DLegerMaxWaitAckTimeMs) }
