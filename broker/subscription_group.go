package broker

import (
	"encoding/json"
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/rocketraft/rocketraft/protocol"
	"github.com/rocketraft/rocketraft/store"
)

func defaultSubscriptionGroup(name string, retryMax int32) *protocol.SubscriptionGroupConfig {
	return &protocol.SubscriptionGroupConfig{GroupName: name, ConsumeEnable: true, ConsumeFromMinEnable: true,
		ConsumeBroadcastEnable: true, RetryQueueNums: 1, RetryMaxTimes: retryMax, BrokerID: 0,
		WhichBrokerWhenConsumeSlowly: 1, NotifyConsumerIdsChangedEnable: true}
}

// SubscriptionGroupWrapper is subscriptionGroup.json and the GET_ALL_SUBSCRIPTIONGROUP_CONFIG body.
type SubscriptionGroupWrapper = protocol.SubscriptionGroupWrapper

// subscriptionGroupManager owns the consumer-group table and subscriptionGroup.json.
type subscriptionGroupManager struct {
	versionedTable[protocol.SubscriptionGroupConfig]
	path       string
	log        *slog.Logger
	autoCreate atomic.Bool // autoCreateSubscriptionGroup; UPDATE_BROKER_CONFIG may change it
	retryMax   int32
	persistMu  sync.Mutex
	changes    groupChanges // how changes are made: here (localGroups), or proposed (the Raft role)
}

// groupChanges is how the subscription group table changes: as topicChanges, made by the manager itself
// (localGroups) unless the Raft role had it propose them (proposeThrough). Safe from any goroutine.
type groupChanges interface {
	// createGroup creates g (the callee's) unless it exists and returns the group now there; on a Raft
	// follower, or when the proposal fails (logged), g unstored.
	createGroup(g *protocol.SubscriptionGroupConfig) *protocol.SubscriptionGroupConfig
	// putGroup creates or replaces g.
	putGroup(g *protocol.SubscriptionGroupConfig) error
	// deleteGroup removes group and reports whether it existed.
	deleteGroup(group string) (bool, error)
}

// localGroups makes the changes in the manager's own table and persists it.
type localGroups struct{ m *subscriptionGroupManager }

func (l localGroups) createGroup(g *protocol.SubscriptionGroupConfig) *protocol.SubscriptionGroupConfig {
	got, created := l.m.putIfAbsent(g.GroupName, func() *protocol.SubscriptionGroupConfig { return g })
	if created {
		l.m.log.Info("subscription group created", "group", g.GroupName)
		if err := l.m.persist(); err != nil {
			l.m.log.Error("persist subscription groups", "err", err)
		}
	}
	return got
}

func (l localGroups) putGroup(g *protocol.SubscriptionGroupConfig) error {
	l.m.put(g.GroupName, g)
	return l.m.persist()
}

func (l localGroups) deleteGroup(group string) (bool, error) {
	if !l.m.remove(group) {
		return false, nil
	}
	return true, l.m.persist()
}

// proposeThrough makes every later change go through c (the Raft role's or the classic master's open,
// before any request: loggedGroups, ha_meta.go).
func (m *subscriptionGroupManager) proposeThrough(c groupChanges) { m.changes = c }

func newSubscriptionGroupManager(cfg *Config, log *slog.Logger) *subscriptionGroupManager {
	m := &subscriptionGroupManager{
		versionedTable: newVersionedTable[protocol.SubscriptionGroupConfig](),
		path:           filepath.Join(cfg.StorePathRootDir, "config", "subscriptionGroup.json"),
		log:            log,
		retryMax:       int32(cfg.MaxReconsumeTimes),
	}
	m.autoCreate.Store(cfg.AutoCreateSubscriptionGroup)
	m.changes = localGroups{m}
	// RocketMQ's built-in groups.
	for _, g := range []string{"TOOLS_CONSUMER", "FILTERSRV_CONSUMER", "SELF_TEST_C_GROUP", "CID_ONS-HTTP-PROXY",
		"CID_ONSAPI_PERMISSION", "CID_ONSAPI_OWNER", "CID_ONSAPI_PULL", "CID_RMQ_SYS_TRANS"} {
		m.table[g] = defaultSubscriptionGroup(g, m.retryMax)
	}
	return m
}

func (m *subscriptionGroupManager) load() error {
	var w SubscriptionGroupWrapper
	found, err := store.ReadConfigJSON(m.path, &w)
	if err != nil || !found {
		return err
	}
	m.versionedTable.load(w.SubscriptionGroupTable, w.DataVersion)
	return nil
}

// find returns a copy of the group's config; with autoCreateSubscriptionGroup an unknown group is
// created (and persisted) on first use. nil means the group does not exist and may not be created.
func (m *subscriptionGroupManager) find(group string) *protocol.SubscriptionGroupConfig {
	if g := m.get(group); g != nil || !m.autoCreate.Load() {
		return g
	}
	return m.changes.createGroup(defaultSubscriptionGroup(group, m.retryMax))
}

func (m *subscriptionGroupManager) update(g *protocol.SubscriptionGroupConfig) error {
	return m.changes.putGroup(g)
}

func (m *subscriptionGroupManager) delete(group string) (bool, error) {
	return m.changes.deleteGroup(group)
}

// apply stores g as a Raft metadata entry says (with create, only when the group is absent), persists
// when the table changed, and returns a copy of the group now there (FSM goroutine).
func (m *subscriptionGroupManager) apply(g *protocol.SubscriptionGroupConfig, create bool) *protocol.SubscriptionGroupConfig {
	return m.applyPut(g.GroupName, g, create, m.persist, m.log)
}

// applyDelete removes group as a Raft metadata entry says, persists when it was there, and reports
// whether it was (FSM goroutine).
func (m *subscriptionGroupManager) applyDelete(group string) bool {
	return m.applyRemove(group, m.persist, m.log)
}

// snapshot returns a deep copy of the table and its version, in the subscriptionGroup.json shape.
func (m *subscriptionGroupManager) snapshot() SubscriptionGroupWrapper {
	table, version := m.versionedTable.snapshot()
	return SubscriptionGroupWrapper{SubscriptionGroupTable: table, DataVersion: version}
}

func (m *subscriptionGroupManager) persist() error {
	m.persistMu.Lock()
	defer m.persistMu.Unlock()
	data, err := json.MarshalIndent(m.snapshot(), "", "\t")
	if err != nil {
		return err
	}
	return writeConfigFile(m.path, data)
}
