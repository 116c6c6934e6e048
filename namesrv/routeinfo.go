package namesrv

import (
	"log/slog"
	"maps"
	"slices"
	"sync"
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
}

// RegisterBrokerResult is what a registration answers: for a slave, its master's HA and client addresses.
type RegisterBrokerResult struct {
	HAServerAddr string
	MasterAddr   string
}

// RouteInfoManager holds the name server's routing tables (RouteInfoManager.java): topics to queue data by broker
// name, broker names to addresses by id, clusters to broker names, and the live table of registered addresses.
// All methods are safe for concurrent use; reads share the lock.
type RouteInfoManager struct {
	logger *slog.Logger
	expiry time.Duration // brokerChannelExpiredTime

	mu            sync.RWMutex
	deleteMissing bool                                     // deleteTopicWithBrokerRegistration (SetDeleteMissing)
	topicQueue    map[string]map[string]protocol.QueueData // topic -> broker name -> queues
	brokerAddr    map[string]*protocol.BrokerData          // broker name -> cluster, addresses by id
	clusterMap    map[string]map[string]struct{}           // cluster -> broker names
	live          map[string]*brokerLiveInfo               // broker address -> liveness
	filters       map[string][]string                      // broker address -> filter servers
	raft          map[string]*raftGroup                    // broker name -> Raft group state (raftgroup.go)
	raftHold      time.Duration                            // raftMasterHoldMillis
	now           func() time.Time                         // time.Now; tests move it
}

// NewRouteInfoManager returns empty tables. expiry is how long a broker may stay silent; deleteMissing removes,
// on a master's registration with a new data version, the topics its table no longer has.
func NewRouteInfoManager(expiry time.Duration, deleteMissing bool, logger *slog.Logger) *RouteInfoManager {
	return &RouteInfoManager{
		logger:        logger,
		expiry:        expiry,
		deleteMissing: deleteMissing,
		topicQueue:    make(map[string]map[string]protocol.QueueData),
		brokerAddr:    make(map[string]*protocol.BrokerData),
		clusterMap:    make(map[string]map[string]struct{}),
		live:          make(map[string]*brokerLiveInfo),
		filters:       make(map[string][]string),
		raft:          make(map[string]*raftGroup),
		raftHold:      DefaultRaftMasterHold,
		now:           time.Now,
	}
}

// SetDeleteMissing changes deleteTopicWithBrokerRegistration from the next registration on.
func (m *RouteInfoManager) SetDeleteMissing(on bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.deleteMissing = on
}

// DefaultRaftMasterHold is raftMasterHoldMillis' default.
const DefaultRaftMasterHold = 10 * time.Second

// RegisterBroker records a broker address and, for a master whose data version changed (or on its first
// registration), its topic table; it refreshes the address's liveness.
func (m *RouteInfoManager) RegisterBroker(req RegisterBrokerRequest, now time.Time) RegisterBrokerResult {
	m.mu.Lock()
	defer m.mu.Unlock()
	names := m.clusterMap[req.ClusterName]
	if names == nil {
		names = make(map[string]struct{})
		m.clusterMap[req.ClusterName] = names
	}
	names[req.BrokerName] = struct{}{}

	bd := m.brokerAddr[req.BrokerName]
	first := bd == nil
	if first {
		bd = &protocol.BrokerData{Cluster: req.ClusterName, BrokerName: req.BrokerName, BrokerAddrs: make(map[int64]string)}
		m.brokerAddr[req.BrokerName] = bd
	}
	if req.Raft {
		req.BrokerID = m.raftRegistrationLocked(&req, bd)
	}
	// One address has one id: a slave turned master registers again under id 0.
	for id, addr := range bd.BrokerAddrs {
		if addr == req.BrokerAddr && id != req.BrokerID {
			delete(bd.BrokerAddrs, id)
		}
	}
	old, had := bd.BrokerAddrs[req.BrokerID]
	bd.BrokerAddrs[req.BrokerID] = req.BrokerAddr
	first = first || !had
	if had && old != req.BrokerAddr {
		m.logger.Info("namesrv: broker address changed", "brokerName", req.BrokerName, "brokerId", req.BrokerID,
			"from", old, "to", req.BrokerAddr)
	}

	wrapper := req.Body.TopicConfigSerializeWrapper
	if req.BrokerID == protocol.MasterID {
		prev := m.live[req.BrokerAddr]
		if first || prev == nil || prev.dataVersion != wrapper.DataVersion {
			m.applyTopicTableLocked(req.BrokerName, wrapper.TopicConfigTable)
		}
	}

	li, known := m.live[req.BrokerAddr]
	if !known {
		li = &brokerLiveInfo{}
		m.live[req.BrokerAddr] = li
		m.logger.Info("namesrv: new broker registered", "brokerAddr", req.BrokerAddr, "brokerName", req.BrokerName,
			"brokerId", req.BrokerID, "cluster", req.ClusterName, "haServerAddr", req.HAServerAddr)
	}
	*li = brokerLiveInfo{lastUpdate: now, timeout: req.Timeout, dataVersion: wrapper.DataVersion, connID: req.ConnID,
		haServerAddr: req.HAServerAddr, clusterName: req.ClusterName, brokerName: req.BrokerName, brokerID: req.BrokerID}

	if req.Body.FilterServerList != nil {
		if len(req.Body.FilterServerList) == 0 {
			delete(m.filters, req.BrokerAddr)
		} else {
			m.filters[req.BrokerAddr] = slices.Clone(req.Body.FilterServerList)
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

// applyTopicTableLocked turns a master's topic table into queue data of its broker name.
// Lock should be held for writing.
func (m *RouteInfoManager) applyTopicTableLocked(brokerName string, table map[string]*protocol.TopicConfig) {
	for name, p := range table {
		var tc protocol.TopicConfig // a null entry counts as an empty topic config
		if p != nil {
			tc = *p
		}
		if tc.TopicName == "" {
			tc.TopicName = name
		}
		qd := protocol.QueueData{BrokerName: brokerName, ReadQueueNums: tc.ReadQueueNums, WriteQueueNums: tc.WriteQueueNums,
			Perm: tc.Perm, TopicSysFlag: tc.TopicSysFlag}
		byBroker := m.topicQueue[tc.TopicName]
		if byBroker == nil {
			byBroker = make(map[string]protocol.QueueData)
			m.topicQueue[tc.TopicName] = byBroker
			m.logger.Info("namesrv: new topic registered", "topic", tc.TopicName, "brokerName", brokerName)
		} else if old, ok := byBroker[brokerName]; ok && old != qd {
			m.logger.Info("namesrv: topic changed", "topic", tc.TopicName, "brokerName", brokerName, "old", old,
				"new", qd)
		}
		byBroker[brokerName] = qd
	}
	if !m.deleteMissing {
		return
	}
	for topic, byBroker := range m.topicQueue {
		if _, ok := byBroker[brokerName]; !ok {
			continue
		}
		if _, kept := table[topic]; !kept {
			m.removeQueueDataLocked(topic, brokerName)
		}
	}
}

// removeQueueDataLocked drops one broker name's queues of a topic, and the topic when none are left.
// Lock should be held for writing.
func (m *RouteInfoManager) removeQueueDataLocked(topic, brokerName string) {
	byBroker := m.topicQueue[topic]
	delete(byBroker, brokerName)
	if len(byBroker) == 0 {
		delete(m.topicQueue, topic)
		m.logger.Info("namesrv: topic removed: no broker has it any more", "topic", topic)
	}
}

// UnregisterBroker removes a broker address (UNREGISTER_BROKER). When its broker name has no address left, the
// name leaves its cluster and its queue data leaves every topic. An address registered under another name or id
// than the request says is removed all the same. It reports whether the address was known.
func (m *RouteInfoManager) UnregisterBroker(brokerAddr, brokerName string, brokerID int64) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if bd := m.brokerAddr[brokerName]; bd != nil && bd.BrokerAddrs[brokerID] == brokerAddr {
		m.removeAddrLocked(bd, brokerID, brokerAddr, "unregistered")
		return true
	}
	return m.removeLiveLocked(brokerAddr, "unregistered")
}

// removeLiveLocked removes a live address and its registration, wherever it is. Lock should be held for writing.
func (m *RouteInfoManager) removeLiveLocked(brokerAddr, why string) bool {
	li := m.live[brokerAddr]
	if li == nil {
		return false
	}
	if bd := m.brokerAddr[li.brokerName]; bd != nil && bd.BrokerAddrs[li.brokerID] == brokerAddr {
		m.removeAddrLocked(bd, li.brokerID, brokerAddr, why)
		return true
	}
	delete(m.live, brokerAddr)
	delete(m.filters, brokerAddr)
	return true
}

// removeAddrLocked removes one address of a broker name and, when it was the last, the broker name from its
// cluster and its queue data from every topic. Lock should be held for writing.
func (m *RouteInfoManager) removeAddrLocked(bd *protocol.BrokerData, brokerID int64, brokerAddr, why string) {
	delete(m.live, brokerAddr)
	delete(m.filters, brokerAddr)
	delete(bd.BrokerAddrs, brokerID)
	if brokerID == protocol.MasterID {
		m.raftMasterGoneLocked(bd.BrokerName)
	}
	m.logger.Info("namesrv: broker removed", "reason", why, "brokerAddr", brokerAddr, "brokerName", bd.BrokerName,
		"brokerId", brokerID)
	if len(bd.BrokerAddrs) > 0 {
		return
	}
	delete(m.brokerAddr, bd.BrokerName)
	for cluster, names := range m.clusterMap {
		if _, ok := names[bd.BrokerName]; ok {
			delete(names, bd.BrokerName)
			if len(names) == 0 {
				delete(m.clusterMap, cluster)
			}
		}
	}
	for topic, byBroker := range m.topicQueue {
		if _, ok := byBroker[bd.BrokerName]; ok {
			m.removeQueueDataLocked(topic, bd.BrokerName)
		}
	}
}

// OnConnClose removes every broker registered on the closed connection at once (BrokerHousekeepingService).
func (m *RouteInfoManager) OnConnClose(connID uint64) {
	if connID == 0 {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for addr, li := range m.live {
		if li.connID == connID {
			m.removeLiveLocked(addr, "its connection closed")
		}
	}
}

// ScanNotActiveBroker removes the brokers silent for longer than their expiry at now and returns the connection
// ids they registered on (the caller closes them) and how many it removed.
func (m *RouteInfoManager) ScanNotActiveBroker(now time.Time) (connIDs []uint64, removed int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for addr, li := range m.live {
		expiry := m.expiry
		if li.timeout > 0 {
			expiry = li.timeout
		}
		if now.Sub(li.lastUpdate) <= expiry {
			continue
		}
		m.logger.Warn("namesrv: broker expired", "brokerAddr", addr, "silentFor", now.Sub(li.lastUpdate),
			"expiry", expiry)
		if li.connID != 0 {
			connIDs = append(connIDs, li.connID)
		}
		m.removeLiveLocked(addr, "expired")
		removed++
	}
	return connIDs, removed
}

// QueryDataVersion reports whether the broker's data version differs from the one registered; when it does
// not, the broker's liveness is refreshed (QUERY_DATA_VERSION). known is false for an unregistered address.
func (m *RouteInfoManager) QueryDataVersion(brokerAddr string, dv protocol.DataVersion, now time.Time) (changed bool,
	registered protocol.DataVersion, known bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
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

// PickupTopicRouteData assembles a topic's route: its queue data and the brokers that hold it. ok is false when
// the topic has no queue data or none of its brokers is registered.
func (m *RouteInfoManager) PickupTopicRouteData(topic string) (route protocol.TopicRouteData, ok bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	now := m.now()
	byBroker := m.topicQueue[topic]
	if len(byBroker) == 0 {
		return protocol.TopicRouteData{}, false
	}
	route = protocol.TopicRouteData{QueueDatas: make([]protocol.QueueData, 0, len(byBroker)),
		BrokerDatas: make([]protocol.BrokerData, 0, len(byBroker)), FilterServerTable: map[string][]string{}}
	for _, name := range slices.Sorted(maps.Keys(byBroker)) {
		route.QueueDatas = append(route.QueueDatas, byBroker[name])
		bd := m.brokerAddr[name]
		if bd == nil {
			continue
		}
		clone := cloneBrokerData(bd)
		m.raftStandInLocked(&clone, now)
		route.BrokerDatas = append(route.BrokerDatas, clone)
		for _, addr := range bd.BrokerAddrs {
			if f := m.filters[addr]; f != nil {
				route.FilterServerTable[addr] = slices.Clone(f)
			}
		}
	}
	return route, len(route.BrokerDatas) > 0
}

func cloneBrokerData(bd *protocol.BrokerData) protocol.BrokerData {
	return protocol.BrokerData{Cluster: bd.Cluster, BrokerName: bd.BrokerName, BrokerAddrs: maps.Clone(bd.BrokerAddrs)}
}

// ClusterInfo returns a copy of the broker address and cluster tables.
func (m *RouteInfoManager) ClusterInfo() protocol.ClusterInfo {
	m.mu.RLock()
	defer m.mu.RUnlock()
	ci := protocol.ClusterInfo{BrokerAddrTable: make(map[string]protocol.BrokerData, len(m.brokerAddr)),
		ClusterAddrTable: make(map[string][]string, len(m.clusterMap))}
	for name, bd := range m.brokerAddr {
		ci.BrokerAddrTable[name] = cloneBrokerData(bd)
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
	return slices.Sorted(maps.Keys(m.topicQueue))
}

// TopicsByCluster lists the topics that some broker name of the cluster holds, sorted.
func (m *RouteInfoManager) TopicsByCluster(cluster string) []string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	names := m.clusterMap[cluster]
	out := []string{}
	for topic, byBroker := range m.topicQueue {
		for name := range byBroker {
			if _, ok := names[name]; ok {
				out = append(out, topic)
				break
			}
		}
	}
	slices.Sort(out)
	return out
}

// SystemTopics lists what RocketMQ calls the system topic list: every cluster name and broker name, with the
// address of some broker.
func (m *RouteInfoManager) SystemTopics() protocol.TopicList {
	m.mu.RLock()
	defer m.mu.RUnlock()
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
	m.mu.Lock()
	defer m.mu.Unlock()
	if cluster == "" {
		delete(m.topicQueue, topic)
		return
	}
	for name := range m.clusterMap[cluster] {
		if _, ok := m.topicQueue[topic][name]; ok {
			m.removeQueueDataLocked(topic, name)
		}
	}
}

// SetWritePerm wipes (allow false) or restores (allow true) the write permission of every queue data of a broker
// name and returns how many topics it touched (WIPE_WRITE_PERM_OF_BROKER, ADD_WRITE_PERM_OF_BROKER).
func (m *RouteInfoManager) SetWritePerm(brokerName string, allow bool) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, byBroker := range m.topicQueue {
		qd, ok := byBroker[brokerName]
		if !ok {
			continue
		}
		if allow {
			qd.Perm = protocol.PermRead | protocol.PermWrite
		} else {
			qd.Perm &^= protocol.PermWrite
		}
		byBroker[brokerName] = qd
		n++
	}
	return n
}

// BrokerCount returns how many broker addresses are registered.
func (m *RouteInfoManager) BrokerCount() int {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return len(m.live)
}
