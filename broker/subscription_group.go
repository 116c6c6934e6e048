package broker

import (
	"encoding/json"
	"log/slog"
	"path/filepath"
	"sync"
	"time"
)

// SubscriptionGroupConfig is one consumer group's settings, in RocketMQ's JSON shape.
type SubscriptionGroupConfig struct {
	GroupName                      string `json:"groupName"`
	ConsumeEnable                  bool   `json:"consumeEnable"`
	ConsumeFromMinEnable           bool   `json:"consumeFromMinEnable"`
	ConsumeBroadcastEnable         bool   `json:"consumeBroadcastEnable"`
	RetryQueueNums                 int32  `json:"retryQueueNums"`
	RetryMaxTimes                  int32  `json:"retryMaxTimes"`
	BrokerID                       int64  `json:"brokerId"`
	WhichBrokerWhenConsumeSlowly   int64  `json:"whichBrokerWhenConsumeSlowly"`
	NotifyConsumerIdsChangedEnable bool   `json:"notifyConsumerIdsChangedEnable"`
}

func defaultSubscriptionGroup(name string, retryMax int32) *SubscriptionGroupConfig {
	return &SubscriptionGroupConfig{GroupName: name, ConsumeEnable: true, ConsumeFromMinEnable: true,
		ConsumeBroadcastEnable: true, RetryQueueNums: 1, RetryMaxTimes: retryMax, BrokerID: 0,
		WhichBrokerWhenConsumeSlowly: 1, NotifyConsumerIdsChangedEnable: true}
}

// SubscriptionGroupWrapper is subscriptionGroup.json and the GET_ALL_SUBSCRIPTIONGROUP_CONFIG body.
type SubscriptionGroupWrapper struct {
	SubscriptionGroupTable map[string]*SubscriptionGroupConfig `json:"subscriptionGroupTable"`
	DataVersion            DataVersion                         `json:"dataVersion"`
}

// subscriptionGroupManager owns the consumer-group table and subscriptionGroup.json.
type subscriptionGroupManager struct {
	path       string
	log        *slog.Logger
	autoCreate bool
	retryMax   int32
	mu         sync.RWMutex
	table      map[string]*SubscriptionGroupConfig // guarded by mu
	version    DataVersion                         // guarded by mu
	persistMu  sync.Mutex
}

func newSubscriptionGroupManager(cfg *Config, log *slog.Logger) *subscriptionGroupManager {
	m := &subscriptionGroupManager{
		path:       filepath.Join(cfg.StorePathRootDir, "config", "subscriptionGroup.json"),
		log:        log,
		autoCreate: cfg.AutoCreateSubscriptionGroup,
		retryMax:   int32(cfg.MaxReconsumeTimes),
		table:      map[string]*SubscriptionGroupConfig{},
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
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, v := range w.SubscriptionGroupTable {
		if v != nil {
			m.table[k] = v
		}
	}
	m.version = w.DataVersion
	return nil
}

// find returns a copy of the group's config; with autoCreateSubscriptionGroup an unknown group is
// created (and persisted) on first use. nil means the group does not exist and may not be created.
func (m *subscriptionGroupManager) find(group string) *SubscriptionGroupConfig {
	m.mu.RLock()
	g, ok := m.table[group]
	m.mu.RUnlock()
	if ok {
		c := *g
		return &c
	}
	if !m.autoCreate {
		return nil
	}
	m.mu.Lock()
	if g, ok = m.table[group]; !ok {
		g = defaultSubscriptionGroup(group, m.retryMax)
		m.table[group] = g
		m.version.next(time.Now())
	}
	c := *g
	m.mu.Unlock()
	if !ok {
		m.log.Info("subscription group created", "group", group)
		if err := m.persist(); err != nil {
			m.log.Error("persist subscription groups", "err", err)
		}
	}
	return &c
}

func (m *subscriptionGroupManager) update(g *SubscriptionGroupConfig) error {
	c := *g
	m.mu.Lock()
	m.table[c.GroupName] = &c
	m.version.next(time.Now())
	m.mu.Unlock()
	return m.persist()
}

func (m *subscriptionGroupManager) delete(group string) (bool, error) {
	m.mu.Lock()
	_, ok := m.table[group]
	if ok {
		delete(m.table, group)
		m.version.next(time.Now())
	}
	m.mu.Unlock()
	if !ok {
		return false, nil
	}
	return true, m.persist()
}

func (m *subscriptionGroupManager) snapshot() SubscriptionGroupWrapper {
	m.mu.RLock()
	defer m.mu.RUnlock()
	w := SubscriptionGroupWrapper{SubscriptionGroupTable: make(map[string]*SubscriptionGroupConfig, len(m.table)), DataVersion: m.version}
	for k, v := range m.table {
		c := *v
		w.SubscriptionGroupTable[k] = &c
	}
	return w
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
