package broker

import (
	"encoding/json"
	"log/slog"
	"path/filepath"
	"sync"

	"github.com/rocketraft/rocketraft/protocol"
)

func defaultSubscriptionGroup(name string, retryMax int32) *protocol.SubscriptionGroupConfig {
	return &protocol.SubscriptionGroupConfig{GroupName: name, ConsumeEnable: true, ConsumeFromMinEnable: true,
		ConsumeBroadcastEnable: true, RetryQueueNums: 1, RetryMaxTimes: retryMax, BrokerID: 0,
		WhichBrokerWhenConsumeSlowly: 1, NotifyConsumerIdsChangedEnable: true}
}

// SubscriptionGroupWrapper is subscriptionGroup.json and the GET_ALL_SUBSCRIPTIONGROUP_CONFIG body.
type SubscriptionGroupWrapper struct {
	SubscriptionGroupTable map[string]*protocol.SubscriptionGroupConfig `json:"subscriptionGroupTable"`
	DataVersion            protocol.DataVersion                         `json:"dataVersion"`
}

// subscriptionGroupManager owns the consumer-group table and subscriptionGroup.json.
type subscriptionGroupManager struct {
	versionedTable[protocol.SubscriptionGroupConfig]
	path       string
	log        *slog.Logger
	autoCreate bool
	retryMax   int32
	persistMu  sync.Mutex
	raft       groupRaft // Raft mode: changes are proposals, applied by raft_meta.go; nil in classic mode
}

func newSubscriptionGroupManager(cfg *Config, log *slog.Logger) *subscriptionGroupManager {
	m := &subscriptionGroupManager{
		versionedTable: newVersionedTable[protocol.SubscriptionGroupConfig](),
		path:           filepath.Join(cfg.StorePathRootDir, "config", "subscriptionGroup.json"),
		log:            log,
		autoCreate:     cfg.AutoCreateSubscriptionGroup,
		retryMax:       int32(cfg.MaxReconsumeTimes),
	}
	// RocketMQ's built-in groups.
	for _, g := range []string{"TOOLS_CONSUMER", "FILTERSRV_CONSUMER", "SELF_TEST_C_GROUP", "CID_ONS-HTTP-PROXY",
		"CID_ONSAPI_PERMISSION", "CID_ONSAPI_OWNER", "CID_ONSAPI_PULL", "CID_RMQ_SYS_TRANS"} {
		m.table[g] = defaultSubscriptionGroup(g, m.retryMax)
	}
	return m
}

func (m *subscriptionGroupManager) load() error {
	var w SubscriptionGroupWrapper
	found, err := loadJSON(m.path, &w)
	if err != nil || !found {
		return err
	}
	m.versionedTable.load(w.SubscriptionGroupTable, w.DataVersion)
	return nil
}

// find returns a copy of the group's config; with autoCreateSubscriptionGroup an unknown group is
// created (and persisted) on first use. nil means the group does not exist and may not be created.
func (m *subscriptionGroupManager) find(group string) *protocol.SubscriptionGroupConfig {
	if g := m.get(group); g != nil || !m.autoCreate {
		return g
	}
	if m.raft != nil {
		return m.raft.raftGroupCreate(defaultSubscriptionGroup(group, m.retryMax))
	}
	g, created := m.putIfAbsent(group, func() *protocol.SubscriptionGroupConfig { return defaultSubscriptionGroup(group, m.retryMax) })
	if created {
		m.log.Info("subscription group created", "group", group)
		if err := m.persist(); err != nil {
			m.log.Error("persist subscription groups", "err", err)
		}
	}
	return g
}

func (m *subscriptionGroupManager) update(g *protocol.SubscriptionGroupConfig) error {
	if m.raft != nil {
		return m.raft.raftGroupPut(g)
	}
	m.put(g.GroupName, g)
	return m.persist()
}

func (m *subscriptionGroupManager) delete(group string) (bool, error) {
	if m.raft != nil {
		return m.raft.raftGroupDelete(group)
	}
	if !m.remove(group) {
		return false, nil
	}
	return true, m.persist()
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
