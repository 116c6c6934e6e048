package namesrv

import (
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rocketraft/rocketraft/protocol"
)

// brokerLiveInfo is what the name server knows of one registered broker address.
type brokerLiveInfo struct {
	lastUpdate   time.Time
	timeout      time.Duration // 0: the manager's expiry
	dataVersion  protocol.DataVersion
	connID       uint64 // the connection it registered on; 0 when unknown
	haServerAddr string
	clusterName  string
	brokerName   string
	brokerID     int64
	tables       []*regTable // what its bodies of dataVersion said (regtable.go)
	round        roundState  // a master's registration round (rounds.go)
}

// RegisterBrokerRequest is one REGISTER_BROKER.
type RegisterBrokerRequest struct {
	ClusterName  string
	BrokerAddr   string
	BrokerName   string
	BrokerID     int64
	HAServerAddr string
	Timeout      time.Duration // heartbeatTimeoutMillis; 0 = the manager's expiry
	Body         protocol.RegisterBrokerBody
	ConnID       uint64 // the connection it came on; a close of it removes the broker
	// Raft: the broker runs RocketRaft's Raft mode (header raftTerm present); RaftTerm is its Raft term
	// and RaftSlaveID the brokerId it has when not master (raftgroup.go).
	Raft        bool
	RaftTerm    uint64
	RaftSlaveID int64
	// RaftMasterVIP: a master registration (brokerId 0) at the group's virtual address, which the
	// next master takes over (header raftMasterVip; raftgroup.go).
	RaftMasterVIP bool

	table *regTable // Body as the processor found or decoded it (regtable.go); nil: Body
}

// RegisterBrokerResult is what a registration answers: for a slave, its master's HA and client addresses.
type RegisterBrokerResult struct {
	HAServerAddr string
	MasterAddr   string
}

// topicEntry is one topic's queue data by broker name, and its cached route answer (routecache.go).
type topicEntry struct {
	name   string   // the topic
	queues queueSet // guarded by RouteInfoManager.mu (queueset.go)
	// ver is bumped, with mu held for writing, whenever queues change and when the topic leaves the tables:
	// a cached answer built at another ver is stale.
	ver   atomic.Uint64
	cache routeSlot
}

// brokerEntry is one broker name's addresses (protocol.BrokerData, guarded by RouteInfoManager.mu).
type brokerEntry struct {
	protocol.BrokerData
	// ver is bumped, with mu held for writing, whenever what a route shows of the broker name changes (its
	// addresses, their filter servers, its Raft stand-in) and when it leaves the tables.
	ver atomic.Uint64
}

// RouteInfoManager holds the name server's routing tables (RouteInfoManager.java): topics to queue data by broker
// name, broker names to addresses by id, clusters to broker names, and the live table of registered addresses.
// All methods are safe for concurrent use; reads share the lock, and route answers come from a cache that
// needs no lock while it is current (routecache.go).
type RouteInfoManager struct {
	logger *slog.Logger
	expiry time.Duration // brokerChannelExpiredTime

	mu            sync.RWMutex
	deleteMissing bool                              // deleteTopicWithBrokerRegistration (SetDeleteMissing)
	topicQueue    map[string]*topicEntry            // topic -> queue data by broker name
	brokerAddr    map[string]*brokerEntry           // broker name -> cluster, addresses by id
	brokerTopics  map[string]map[string]*topicEntry // broker name -> the topics with its queue data (index)
	removals      map[string]uint64                 // broker name -> queue data of it removed so far (rounds.go)
	queueGen      map[string]uint64                 // broker name -> changes of its queue data so far (tablediff.go)
	clusterMap    map[string]map[string]struct{}    // cluster -> broker names
	live          map[string]*brokerLiveInfo        // broker address -> liveness
	connAddrs     map[uint64]map[string]struct{}    // connection id -> the live addresses registered on it
	filters       map[string][]string               // broker address -> filter servers
	raft          map[string]*raftGroup             // broker name -> Raft group state (raftgroup.go)
	raftHold      time.Duration                     // raftMasterHoldMillis
	now           func() time.Time                  // time.Now; tests move it

	// Cache state (routecache.go). routes mirrors topicQueue for lock-free lookups (stored and deleted with
	// mu held for writing). gen is bumped when every cached route may have changed; clusterVer when what
	// GET_BROKER_CLUSTER_INFO and the system topic list show changed; listVer when the topic lists may have.
	routes     sync.Map // topic -> *topicEntry
	gen        atomic.Uint64
	clusterVer atomic.Uint64
	listVer    atomic.Uint64
	rebuilds   atomic.Uint64 // route answers built
	bodies     regDecoder    // registration bodies (regtable.go)
	tableHits  atomic.Uint64 // registrations whose body was not decoded again
	lists      listCache
	lockHold   lockHoldObserver // how long the write lock is held (lockhold.go)

	// routedChanged (guarded by mu) is set when a broker name gains or loses the queue data of a topic;
	// unlock then calls onRouted (set before use; readiness.go keeps the names and counts in a file).
	routedChanged bool
	onRouted      func()
}

// NewRouteInfoManager returns empty tables. expiry is how long a broker may stay silent; deleteMissing removes,
// on a master's registration with a new data version, the topics its table no longer has.
func NewRouteInfoManager(expiry time.Duration, deleteMissing bool, logger *slog.Logger) *RouteInfoManager {
	return &RouteInfoManager{
		logger:        logger,
		expiry:        expiry,
		deleteMissing: deleteMissing,
		topicQueue:    make(map[string]*topicEntry),
		brokerAddr:    make(map[string]*brokerEntry),
		brokerTopics:  make(map[string]map[string]*topicEntry),
		removals:      make(map[string]uint64),
		queueGen:      make(map[string]uint64),
		clusterMap:    make(map[string]map[string]struct{}),
		live:          make(map[string]*brokerLiveInfo),
		connAddrs:     make(map[uint64]map[string]struct{}),
		filters:       make(map[string][]string),
		raft:          make(map[string]*raftGroup),
		raftHold:      DefaultRaftMasterHold,
		now:           time.Now,
		bodies:        newRegDecoder(),
	}
}

// lock takes the write lock; unlock releases it and records how long it was held.
func (m *RouteInfoManager) lock() time.Time {
	m.mu.Lock()
	return time.Now()
}

func (m *RouteInfoManager) unlock(since time.Time) {
	held := time.Since(since)
	changed := m.routedChanged
	m.routedChanged = false
	m.mu.Unlock()
	m.lockHold.observe(held)
	if changed && m.onRouted != nil {
		m.onRouted()
	}
}

// SetDeleteMissing changes deleteTopicWithBrokerRegistration from the next registration on.
func (m *RouteInfoManager) SetDeleteMissing(on bool) {
	defer m.unlock(m.lock())
	m.deleteMissing = on
}

// DefaultRaftMasterHold is raftMasterHoldMillis' default.
const DefaultRaftMasterHold = 10 * time.Second

// regLog is what a registration logs once the lock is released.
type regLog struct {
	newBroker, addrChanged   bool
	oldAddr                  string
	newTopics, changedTopics []string
	removedTopics            []string
	raftDemoted              *raftDemotion
}

// RegisterBroker records a broker address and, for a master whose data version changed (or on its first
// registration), its topic table; it refreshes the address's liveness.
func (m *RouteInfoManager) RegisterBroker(req RegisterBrokerRequest, now time.Time) RegisterBrokerResult {
	var lg regLog
	res := m.registerBroker(&req, now, &lg)
	m.logRegistration(&req, &lg)
	return res
}

func (m *RouteInfoManager) registerBroker(req *RegisterBrokerRequest, now time.Time, lg *regLog) RegisterBrokerResult {
	return m.registerBrokerWith(req, m.prepareTable(req), now, lg)
}

// registerBrokerWith is registerBroker with the table's difference from the tables prepared beforehand
// (nil: none; tablediff.go).
func (m *RouteInfoManager) registerBrokerWith(req *RegisterBrokerRequest, diff *tableDiff, now time.Time, lg *regLog) RegisterBrokerResult {
	defer m.unlock(m.lock())
	names := m.clusterMap[req.ClusterName]
	if names == nil {
		names = make(map[string]struct{})
		m.clusterMap[req.ClusterName] = names
	}
	if _, ok := names[req.BrokerName]; !ok {
		names[req.BrokerName] = struct{}{}
		m.clusterChangedLocked()
	}

	bd := m.brokerAddr[req.BrokerName]
	first := bd == nil
	if first {
		bd = &brokerEntry{BrokerData: protocol.BrokerData{Cluster: req.ClusterName, BrokerName: req.BrokerName,
			BrokerAddrs: make(map[int64]string)}}
		m.brokerAddr[req.BrokerName] = bd
		m.clusterChangedLocked()
		for _, e := range m.brokerTopics[req.BrokerName] { // queue data that waited for its broker name
			e.ver.Add(1)
		}
	}
	if req.Raft {
		req.BrokerID, lg.raftDemoted = m.raftRegistrationLocked(req, bd)
	}
	// One address has one id: a slave turned master registers again under id 0.
	for id, addr := range bd.BrokerAddrs {
		if addr == req.BrokerAddr && id != req.BrokerID {
			delete(bd.BrokerAddrs, id)
			m.brokerChangedLocked(bd)
		}
	}
	old, had := bd.BrokerAddrs[req.BrokerID]
	if !had || old != req.BrokerAddr {
		bd.BrokerAddrs[req.BrokerID] = req.BrokerAddr
		m.brokerChangedLocked(bd)
	}
	first = first || !had
	if had && old != req.BrokerAddr {
		lg.addrChanged, lg.oldAddr = true, old
	}

	table := req.table // (prepareTable filled it in)
	li, known := m.live[req.BrokerAddr]
	if !known {
		li = &brokerLiveInfo{}
		m.live[req.BrokerAddr] = li
		lg.newBroker = true
	}
	if req.BrokerID == protocol.MasterID && table.kept {
		m.applyRoundLocked(&li.round, req.BrokerName, table, first, diff, lg)
	} else {
		li.round = roundState{} // a slave, or a demoted master: its next master registration starts afresh
	}
	if !known || li.connID != req.ConnID {
		m.unlinkConnLocked(li.connID, req.BrokerAddr)
		m.linkConnLocked(req.ConnID, req.BrokerAddr)
	}
	*li = brokerLiveInfo{lastUpdate: now, timeout: req.Timeout, dataVersion: table.dv, connID: req.ConnID,
		haServerAddr: req.HAServerAddr, clusterName: req.ClusterName, brokerName: req.BrokerName, brokerID: req.BrokerID,
		tables: li.tables, round: li.round}
	rememberTableLocked(li, table)

	if table.filters != nil {
		prev, had := m.filters[req.BrokerAddr]
		switch {
		case len(table.filters) == 0:
			if had {
				delete(m.filters, req.BrokerAddr)
				m.brokerChangedLocked(bd)
			}
		case !slices.Equal(prev, table.filters):
			m.filters[req.BrokerAddr] = slices.Clone(table.filters)
			m.brokerChangedLocked(bd)
		}
	}

	var res RegisterBrokerResult
	if req.BrokerID != protocol.MasterID {
		if masterAddr, ok := bd.BrokerAddrs[protocol.MasterID]; ok {
			if ml := m.live[masterAddr]; ml != nil {
				res = RegisterBrokerResult{HAServerAddr: ml.haServerAddr, MasterAddr: masterAddr}
			}
		}
	}
	return res
}

// logRegistration logs what a registration changed, after the lock is released. A new topic is logged at
// Info as RocketMQ does, up to a few names per registration: a broker's first registration carries its whole
// table, thousands of topics in a fleet.
func (m *RouteInfoManager) logRegistration(req *RegisterBrokerRequest, lg *regLog) {
	if d := lg.raftDemoted; d != nil {
		m.logger.Warn("namesrv: master registration of an older Raft term recorded as a slave: a newer master was registered",
			"brokerName", req.BrokerName, "brokerAddr", req.BrokerAddr, "term", req.RaftTerm, "masterTerm", d.masterTerm,
			"master", d.master, "brokerId", req.RaftSlaveID)
	}
	if lg.addrChanged {
		m.logger.Info("namesrv: broker address changed", "brokerName", req.BrokerName, "brokerId", req.BrokerID,
			"from", lg.oldAddr, "to", req.BrokerAddr)
	}
	if lg.newBroker {
		m.logger.Info("namesrv: new broker registered", "brokerAddr", req.BrokerAddr, "brokerName", req.BrokerName,
			"brokerId", req.BrokerID, "cluster", req.ClusterName, "haServerAddr", req.HAServerAddr)
	}
	const named = 5
	for _, c := range []struct {
		msg    string
		topics []string
	}{
		{"namesrv: new topic registered", lg.newTopics},
		{"namesrv: topic changed", lg.changedTopics},
		{"namesrv: topic of the broker removed: not in its table any more", lg.removedTopics},
	} {
		if len(c.topics) == 0 {
			continue
		}
		attrs := []any{"brokerName", req.BrokerName, "count", len(c.topics), "topics", c.topics[:min(named, len(c.topics))]}
		m.logger.Info(c.msg, attrs...)
		if len(c.topics) > named {
			m.logger.Debug(c.msg+" (all)", "brokerName", req.BrokerName, "topics", c.topics)
		}
	}
}

// applyTopicTableLocked turns a master's topic table into queue data of its broker name: every topic of it
// when whole, else only those the broker name does not hold yet (rounds.go). Lock should be held for
// writing.
//
// diff, when it was prepared for this table and the broker name's queue data has not changed since, names
// the topics that differ: the others are skipped, as the loop below would skip them (tablediff.go).
func (m *RouteInfoManager) applyTopicTableLocked(brokerName string, table *regTable, whole bool, diff *tableDiff, lg *regLog) {
	index := m.brokerTopics[brokerName]
	topics := table.topics
	if whole && diff.current(m, brokerName, table) {
		topics = diff.changed
	}
	for _, r := range topics {
		if !whole {
			if _, ok := index[r.name]; ok {
				continue
			}
		}
		qd := r.queueData(brokerName)
		e := m.topicQueue[r.name]
		if e == nil {
			e = m.newTopicLocked(r.name)
			lg.newTopics = append(lg.newTopics, r.name)
		} else if old, ok := e.queues.get(brokerName); ok {
			if old == qd {
				continue
			}
			lg.changedTopics = append(lg.changedTopics, r.name)
		}
		m.setQueueDataLocked(e, r.name, qd)
		index = m.brokerTopics[brokerName]
	}
}

// newTopicLocked adds an empty topic entry. Lock should be held for writing.
func (m *RouteInfoManager) newTopicLocked(topic string) *topicEntry {
	e := &topicEntry{name: topic}
	m.topicQueue[topic] = e
	m.routes.Store(topic, e)
	m.listVer.Add(1)
	return e
}

// setQueueDataLocked sets one broker name's queues of a topic. Lock should be held for writing.
func (m *RouteInfoManager) setQueueDataLocked(e *topicEntry, topic string, qd protocol.QueueData) {
	if e.queues.set(qd) {
		idx := m.brokerTopics[qd.BrokerName]
		if idx == nil {
			idx = make(map[string]*topicEntry)
			m.brokerTopics[qd.BrokerName] = idx
		}
		idx[topic] = e
		m.routedChanged = true
		m.listVer.Add(1)
	}
	e.ver.Add(1)
	m.queueGen[qd.BrokerName]++
}

// removeQueueDataLocked drops one broker name's queues of a topic, and the topic when none are left.
// Lock should be held for writing.
func (m *RouteInfoManager) removeQueueDataLocked(topic, brokerName string) {
	e := m.topicQueue[topic]
	if e == nil {
		return
	}
	if !e.queues.remove(brokerName) {
		return
	}
	e.ver.Add(1)
	m.listVer.Add(1)
	m.removals[brokerName]++
	m.queueGen[brokerName]++
	if idx := m.brokerTopics[brokerName]; idx != nil {
		delete(idx, topic)
		m.routedChanged = true
		if len(idx) == 0 {
			delete(m.brokerTopics, brokerName)
		}
	}
	if len(e.queues) == 0 {
		m.removeTopicLocked(topic, e)
		m.logger.Debug("namesrv: topic removed: no broker has it any more", "topic", topic)
	}
}

// removeTopicLocked drops a topic entry (its queue data gone from the index already). Lock should be held
// for writing.
func (m *RouteInfoManager) removeTopicLocked(topic string, e *topicEntry) {
	delete(m.topicQueue, topic)
	m.routes.Delete(topic)
	e.ver.Add(1)
	m.listVer.Add(1)
}

// brokerChangedLocked marks every cached route that lists the broker name stale. Lock should be held for
// writing.
func (m *RouteInfoManager) brokerChangedLocked(bd *brokerEntry) {
	bd.ver.Add(1)
	m.clusterChangedLocked()
}

// clusterChangedLocked marks the cached cluster info and lists stale. Lock should be held for writing.
func (m *RouteInfoManager) clusterChangedLocked() {
	m.clusterVer.Add(1)
	m.listVer.Add(1)
}

// UnregisterBroker removes a broker address (UNREGISTER_BROKER). When its broker name has no address left, the
// name leaves its cluster and its queue data leaves every topic. An address registered under another name or id
// than the request says is removed all the same. It reports whether the address was known.
func (m *RouteInfoManager) UnregisterBroker(brokerAddr, brokerName string, brokerID int64) bool {
	var removed []removal
	defer func() { m.logRemovals(removed) }()
	defer m.unlock(m.lock())
	if bd := m.brokerAddr[brokerName]; bd != nil && bd.BrokerAddrs[brokerID] == brokerAddr {
		removed = m.removeAddrLocked(bd, brokerID, brokerAddr, "unregistered", removed)
		return true
	}
	var ok bool
	ok, removed = m.removeLiveLocked(brokerAddr, "unregistered", removed)
	return ok
}

// removal is a broker address taken out of the tables, logged once the lock is released.
type removal struct {
	why, brokerAddr, brokerName string
	brokerID                    int64
	lastOfName                  bool
	topics                      int // topics that lost its broker name's queue data (its last address)
}

func (m *RouteInfoManager) logRemovals(rs []removal) {
	for _, r := range rs {
		m.logger.Info("namesrv: broker removed", "reason", r.why, "brokerAddr", r.brokerAddr, "brokerName", r.brokerName,
			"brokerId", r.brokerID)
		if r.lastOfName {
			m.logger.Info("namesrv: broker name left its cluster: no address left", "brokerName", r.brokerName,
				"topicsLeft", r.topics)
		}
	}
}

// removeLiveLocked removes a live address and its registration, wherever it is. Lock should be held for writing.
func (m *RouteInfoManager) removeLiveLocked(brokerAddr, why string, removed []removal) (bool, []removal) {
	li := m.live[brokerAddr]
	if li == nil {
		return false, removed
	}
	if bd := m.brokerAddr[li.brokerName]; bd != nil && bd.BrokerAddrs[li.brokerID] == brokerAddr {
		return true, m.removeAddrLocked(bd, li.brokerID, brokerAddr, why, removed)
	}
	m.dropLiveLocked(brokerAddr, li)
	if _, had := m.filters[brokerAddr]; had {
		delete(m.filters, brokerAddr)
		m.gen.Add(1) // the address may be listed under another name: rare enough to drop every cached route
	}
	return true, removed
}

// dropLiveLocked removes an address's liveness (li, nil when it has none). Lock should be held for writing.
func (m *RouteInfoManager) dropLiveLocked(addr string, li *brokerLiveInfo) {
	if li == nil {
		return
	}
	delete(m.live, addr)
	m.unlinkConnLocked(li.connID, addr)
}

// linkConnLocked notes that addr registered on connection id. Lock should be held for writing.
func (m *RouteInfoManager) linkConnLocked(id uint64, addr string) {
	if id == 0 {
		return
	}
	set := m.connAddrs[id]
	if set == nil {
		set = make(map[string]struct{}, 1)
		m.connAddrs[id] = set
	}
	set[addr] = struct{}{}
}

// unlinkConnLocked forgets that addr registered on connection id. Lock should be held for writing.
func (m *RouteInfoManager) unlinkConnLocked(id uint64, addr string) {
	if set := m.connAddrs[id]; set != nil {
		delete(set, addr)
		if len(set) == 0 {
			delete(m.connAddrs, id)
		}
	}
}

// removeAddrLocked removes one address of a broker name and, when it was the last, the broker name from its
// cluster and its queue data from every topic. Lock should be held for writing.
func (m *RouteInfoManager) removeAddrLocked(bd *brokerEntry, brokerID int64, brokerAddr, why string,
	removed []removal) []removal {
	m.dropLiveLocked(brokerAddr, m.live[brokerAddr])
	delete(m.filters, brokerAddr)
	delete(bd.BrokerAddrs, brokerID)
	m.brokerChangedLocked(bd)
	if brokerID == protocol.MasterID {
		m.raftMasterGoneLocked(bd)
	}
	r := removal{why: why, brokerAddr: brokerAddr, brokerName: bd.BrokerName, brokerID: brokerID}
	if len(bd.BrokerAddrs) > 0 {
		return append(removed, r)
	}
	r.lastOfName = true
	delete(m.brokerAddr, bd.BrokerName)
	for cluster, names := range m.clusterMap {
		if _, ok := names[bd.BrokerName]; ok {
			delete(names, bd.BrokerName)
			if len(names) == 0 {
				delete(m.clusterMap, cluster)
			}
		}
	}
	for topic := range m.brokerTopics[bd.BrokerName] {
		m.removeQueueDataLocked(topic, bd.BrokerName)
		r.topics++
	}
	return append(removed, r)
}

// OnConnClose removes every broker registered on the closed connection at once (BrokerHousekeepingService).
// A connection no broker registered on (a client's) costs one read-locked map look-up; the write lock is
// taken only when one did.
func (m *RouteInfoManager) OnConnClose(connID uint64) {
	if connID == 0 {
		return
	}
	m.mu.RLock()
	addrs := slices.Collect(maps.Keys(m.connAddrs[connID]))
	m.mu.RUnlock()
	if len(addrs) == 0 {
		return
	}
	var removed []removal
	defer func() { m.logRemovals(removed) }()
	defer m.unlock(m.lock())
	for _, addr := range addrs {
		if li := m.live[addr]; li != nil && li.connID == connID { // still registered on it
			_, removed = m.removeLiveLocked(addr, "its connection closed", removed)
		}
	}
}

// ScanNotActiveBroker removes the brokers silent for longer than their expiry at now and returns the connection
// ids they registered on (the caller closes them) and how many it removed.
func (m *RouteInfoManager) ScanNotActiveBroker(now time.Time) (connIDs []uint64, removed int) {
	var expired []removal
	defer func() { m.logRemovals(expired) }()
	m.mu.RLock()
	var silent []string
	for addr, li := range m.live {
		if now.Sub(li.lastUpdate) > m.expiryOf(li) {
			silent = append(silent, addr)
		}
	}
	m.mu.RUnlock()
	if len(silent) == 0 {
		return nil, 0
	}
	type silence struct {
		addr          string
		silent, limit time.Duration
	}
	var warn []silence
	defer func() {
		for _, w := range warn {
			m.logger.Warn("namesrv: broker expired", "brokerAddr", w.addr, "silentFor", w.silent, "expiry", w.limit)
		}
	}()
	defer m.unlock(m.lock())
	for _, addr := range silent {
		li := m.live[addr]
		if li == nil || now.Sub(li.lastUpdate) <= m.expiryOf(li) { // refreshed meanwhile
			continue
		}
		warn = append(warn, silence{addr, now.Sub(li.lastUpdate), m.expiryOf(li)})
		if li.connID != 0 {
			connIDs = append(connIDs, li.connID)
		}
		_, expired = m.removeLiveLocked(addr, "expired", expired)
		removed++
	}
	return connIDs, removed
}

// expiryOf is how long the broker may stay silent.
func (m *RouteInfoManager) expiryOf(li *brokerLiveInfo) time.Duration {
	if li.timeout > 0 {
		return li.timeout
	}
	return m.expiry
}

// QueryDataVersion reports whether the broker's data version differs from the one registered; when it does
// not, the broker's liveness is refreshed (QUERY_DATA_VERSION). known is false for an unregistered address.
func (m *RouteInfoManager) QueryDataVersion(brokerAddr string, dv protocol.DataVersion, now time.Time) (changed bool,
	registered protocol.DataVersion, known bool) {
	defer m.unlock(m.lock())
	li := m.live[brokerAddr]
	if li == nil {
		return true, protocol.DataVersion{}, false
	}
	if li.dataVersion == dv {
		li.lastUpdate = now
		return false, li.dataVersion, true
	}
	return true, li.dataVersion, true
}

// BrokerHeartbeat refreshes the liveness of a registered broker address (RocketMQ 5's BROKER_HEARTBEAT,
// which its brokers send between registrations when they registered with a short heartbeatTimeoutMillis).
// A cluster name other than the one the address registered with (when given) matches nothing, as in
// RocketMQ, whose live table is keyed by both. It reports whether the address was registered.
func (m *RouteInfoManager) BrokerHeartbeat(cluster, brokerAddr string, now time.Time) bool {
	defer m.unlock(m.lock())
	li := m.live[brokerAddr]
	if li == nil || (cluster != "" && li.clusterName != cluster) {
		return false
	}
	li.lastUpdate = now
	return true
}

// PickupTopicRouteData assembles a topic's route: its queue data and the brokers that hold it. ok is false when
// the topic has no queue data or none of its brokers is registered. RouteAnswer gives the same route encoded,
// from the cache.
func (m *RouteInfoManager) PickupTopicRouteData(topic string) (route protocol.TopicRouteData, ok bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	e := m.topicQueue[topic]
	if e == nil {
		return protocol.TopicRouteData{}, false
	}
	route, ok, _ = m.pickupLocked(e, nil)
	return route, ok
}

// pickupLocked assembles the route of entry e; when a is not nil it records there what the route depends
// on (versions, the end of a Raft stand-in's hold). Lock should be held for reading.
func (m *RouteInfoManager) pickupLocked(e *topicEntry, a *routeAnswer) (route protocol.TopicRouteData, ok bool,
	until time.Time) {
	if a != nil {
		a.topicVer = e.ver.Load()
		a.gen = m.gen.Load()
	}
	if len(e.queues) == 0 {
		return protocol.TopicRouteData{}, false, until
	}
	now := m.now()
	route = protocol.TopicRouteData{QueueDatas: make([]protocol.QueueData, 0, len(e.queues)),
		BrokerDatas: make([]protocol.BrokerData, 0, len(e.queues)), FilterServerTable: map[string][]string{}}
	for _, qd := range e.queues { // sorted by broker name, as the answer lists them
		route.QueueDatas = append(route.QueueDatas, qd)
		bd := m.brokerAddr[qd.BrokerName]
		if bd == nil {
			continue
		}
		if a != nil {
			a.brokers = append(a.brokers, bd)
			a.vers = append(a.vers, bd.ver.Load())
		}
		clone := cloneBrokerData(&bd.BrokerData)
		if end := m.raftStandInLocked(&clone, now); !end.IsZero() && (until.IsZero() || end.Before(until)) {
			until = end
		}
		route.BrokerDatas = append(route.BrokerDatas, clone)
		for _, addr := range bd.BrokerAddrs {
			if f := m.filters[addr]; f != nil {
				route.FilterServerTable[addr] = slices.Clone(f)
			}
		}
	}
	return route, len(route.BrokerDatas) > 0, until
}

func cloneBrokerData(bd *protocol.BrokerData) protocol.BrokerData {
	return protocol.BrokerData{Cluster: bd.Cluster, BrokerName: bd.BrokerName, BrokerAddrs: maps.Clone(bd.BrokerAddrs)}
}

// ClusterInfo returns a copy of the broker address and cluster tables.
func (m *RouteInfoManager) ClusterInfo() protocol.ClusterInfo {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.clusterInfoLocked()
}

func (m *RouteInfoManager) clusterInfoLocked() protocol.ClusterInfo {
	ci := protocol.ClusterInfo{BrokerAddrTable: make(map[string]protocol.BrokerData, len(m.brokerAddr)),
		ClusterAddrTable: make(map[string][]string, len(m.clusterMap))}
	for name, bd := range m.brokerAddr {
		ci.BrokerAddrTable[name] = cloneBrokerData(&bd.BrokerData)
	}
	for cluster, names := range m.clusterMap {
		ci.ClusterAddrTable[cluster] = slices.Sorted(maps.Keys(names))
	}
	return ci
}

// AllTopics lists every topic with queue data, sorted.
func (m *RouteInfoManager) AllTopics() []string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.sortedTopicsLocked()
}

// TopicCount is how many topics have queue data.
func (m *RouteInfoManager) TopicCount() int {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return len(m.topicQueue)
}

// TopicsByCluster lists the topics that some broker name of the cluster holds, sorted.
func (m *RouteInfoManager) TopicsByCluster(cluster string) []string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.topicsByClusterLocked(cluster)
}

func (m *RouteInfoManager) topicsByClusterLocked(cluster string) []string {
	seen := map[string]struct{}{}
	for name := range m.clusterMap[cluster] {
		for topic := range m.brokerTopics[name] {
			seen[topic] = struct{}{}
		}
	}
	out := slices.Sorted(maps.Keys(seen))
	if out == nil {
		out = []string{}
	}
	return out
}

// SystemTopics lists what RocketMQ calls the system topic list: every cluster name and broker name, with the
// address of some broker.
func (m *RouteInfoManager) SystemTopics() protocol.TopicList {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.systemTopicsLocked()
}

func (m *RouteInfoManager) systemTopicsLocked() protocol.TopicList {
	tl := protocol.TopicList{TopicList: []string{}}
	for cluster, names := range m.clusterMap {
		tl.TopicList = append(tl.TopicList, cluster)
		tl.TopicList = append(tl.TopicList, slices.Collect(maps.Keys(names))...)
	}
	slices.Sort(tl.TopicList)
	tl.TopicList = slices.Compact(tl.TopicList)
	for _, name := range slices.Sorted(maps.Keys(m.brokerAddr)) {
		bd := m.brokerAddr[name]
		if len(bd.BrokerAddrs) > 0 {
			tl.BrokerAddr = bd.BrokerAddrs[slices.Min(slices.Collect(maps.Keys(bd.BrokerAddrs)))]
			break
		}
	}
	return tl
}

// DeleteTopic removes a topic's queue data: of every broker, or with a cluster only of that cluster's brokers.
func (m *RouteInfoManager) DeleteTopic(topic, cluster string) {
	defer m.unlock(m.lock())
	e := m.topicQueue[topic]
	if e == nil {
		return
	}
	for _, qd := range slices.Clone(e.queues) { // (removing changes e.queues)
		if _, ok := m.clusterMap[cluster][qd.BrokerName]; ok || cluster == "" {
			m.removeQueueDataLocked(topic, qd.BrokerName)
		}
	}
}

// SetWritePerm wipes (allow false) or restores (allow true) the write permission of every queue data of a broker
// name and returns how many topics it touched (WIPE_WRITE_PERM_OF_BROKER, ADD_WRITE_PERM_OF_BROKER).
func (m *RouteInfoManager) SetWritePerm(brokerName string, allow bool) int {
	defer m.unlock(m.lock())
	n := 0
	for _, e := range m.brokerTopics[brokerName] {
		qd, _ := e.queues.get(brokerName)
		if allow {
			qd.Perm = protocol.PermRead | protocol.PermWrite
		} else {
			qd.Perm &^= protocol.PermWrite
		}
		e.queues.set(qd)
		e.ver.Add(1)
		n++
	}
	m.queueGen[brokerName]++
	return n
}

// RoutedBrokerTopics returns, for each broker name that holds queue data of some topic, how many topics.
func (m *RouteInfoManager) RoutedBrokerTopics() map[string]int {
	m.mu.RLock()
	defer m.mu.RUnlock()
	n := make(map[string]int, len(m.brokerTopics))
	for name, idx := range m.brokerTopics {
		n[name] = len(idx)
	}
	return n
}

// RoutesAgain reports whether the broker name holds queue data of at least topics topics (one at least), or
// its master has begun a periodic round (rounds.go: it sent a table of its round again, so the round
// before, every chunk of its table, was applied).
func (m *RouteInfoManager) RoutesAgain(brokerName string, topics int) bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	n := len(m.brokerTopics[brokerName])
	if n > 0 && n >= topics {
		return true
	}
	if bd := m.brokerAddr[brokerName]; bd != nil {
		if li := m.live[bd.BrokerAddrs[protocol.MasterID]]; li != nil && li.round.on && !li.round.fresh {
			return n > 0
		}
	}
	return false
}

// BrokerCount returns how many broker addresses are registered.
func (m *RouteInfoManager) BrokerCount() int {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return len(m.live)
}
