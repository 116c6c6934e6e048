package broker

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/rocketraft/rocketraft/protocol"
	"github.com/rocketraft/rocketraft/store"
)

// System topic names: the broker's short names for protocol's (declared there once).
const (
	TopicAutoCreate  = protocol.TopicAutoCreate
	TopicSelfTest    = protocol.TopicSelfTest
	TopicOffsetMoved = protocol.TopicOffsetMoved
	TopicSchedule    = protocol.TopicSchedule
	TopicTrace       = protocol.TopicTrace
	TopicTimer       = protocol.TopicTimer
	TopicTransHalf   = protocol.TopicTransHalf
	TopicTransOpHalf = protocol.TopicTransOpHalf
	TopicReplySuffix = protocol.TopicReplySuffix
	RetryGroupPrefix = protocol.RetryGroupTopicPrefix
	DLQGroupPrefix   = protocol.DLQGroupTopicPrefix
)

// notAllowedSendTopics may not be produced to directly by clients (TopicValidator.NOT_ALLOWED_SEND_TOPIC_SET).
var notAllowedSendTopics = map[string]bool{
	TopicSchedule: true, TopicTransHalf: true, TopicTransOpHalf: true, TopicAutoCreate: true, TopicTimer: true,
	TopicHAMeta: true, // a slave applies what it holds (ha_meta.go)
}

// topicConfigManager owns the topic table and topics.json.
type topicConfigManager struct {
	versionedTable[protocol.TopicConfig]
	path      string
	log       *slog.Logger
	onChange  func()       // called (outside the lock) after every change: the broker registers the changes (takeChanges)
	changes   topicChanges // how changes are made: here (localTopics), or proposed (the Raft role)
	persistMu sync.Mutex   // serialises writes of topics.json

	persistAsked  atomic.Uint64            // persist calls so far
	persistedUpTo uint64                   // persistAsked's value the last write covered; guarded by persistMu
	persistErr    error                    // that write's result; guarded by persistMu
	fragments     map[string]topicFragment // topic_config_file.go; guarded by persistMu
}

// topicChanges is how the topic table changes. The manager makes the changes itself (localTopics) unless
// the Raft role had it propose them (proposeThrough): then each is a Raft entry, applied on every node
// through apply and applyDelete (raft_meta.go). A classic master has each written into its CommitLog for
// its slaves first (loggedTopics, ha_meta.go). Safe from any goroutine.
type topicChanges interface {
	// createTopic creates tc (the callee's) unless a topic of its name exists, and returns the topic now
	// there and whether this call created it here (the Raft role says false: every node applies it). On a
	// Raft follower tc comes back unstored: the master creates it when the client reaches it.
	createTopic(tc *protocol.TopicConfig) (*protocol.TopicConfig, bool, error)
	// putTopic creates or replaces tc (the callee's).
	putTopic(tc *protocol.TopicConfig) error
	// deleteTopic removes topic and reports whether it existed.
	deleteTopic(topic string) (bool, error)
}

// localTopics makes the changes in the manager's own table, persists it and notifies.
type localTopics struct{ m *topicConfigManager }

func (l localTopics) createTopic(tc *protocol.TopicConfig) (*protocol.TopicConfig, bool, error) {
	got, created := l.m.putIfAbsent(tc.TopicName, func() *protocol.TopicConfig { return tc })
	if !created {
		return got, false, nil
	}
	return got, true, l.m.changed()
}

func (l localTopics) putTopic(tc *protocol.TopicConfig) error {
	l.m.put(tc.TopicName, tc)
	return l.m.changed()
}

func (l localTopics) deleteTopic(topic string) (bool, error) {
	if !l.m.remove(topic) {
		return false, nil
	}
	return true, l.m.changed()
}

// proposeThrough makes every later change go through c (the Raft role's or the classic master's open,
// before any request).
func (m *topicConfigManager) proposeThrough(c topicChanges) { m.changes = c }

func newTopicConfigManager(cfg *Config, log *slog.Logger) *topicConfigManager {
	m := &topicConfigManager{
		versionedTable: newVersionedTable[protocol.TopicConfig](),
		path:           filepath.Join(cfg.StorePathRootDir, "config", "topics.json"),
		log:            log,
	}
	m.changes = localTopics{m}
	m.trackChanges()
	sys := func(name string, queues int32, perm int32) {
		m.table[name] = &protocol.TopicConfig{TopicName: name, ReadQueueNums: queues, WriteQueueNums: queues, Perm: perm,
			TopicFilterType: "SINGLE_TAG", Attributes: map[string]string{}}
	}
	sys(TopicSelfTest, 1, protocol.PermRead|protocol.PermWrite)
	if cfg.AutoCreateTopicEnable {
		sys(TopicAutoCreate, int32(cfg.DefaultTopicQueueNums), protocol.PermInherit|protocol.PermRead|protocol.PermWrite)
	}
	if cfg.ClusterTopicEnable {
		sys(cfg.BrokerClusterName, 16, protocol.PermInherit|protocol.PermRead|protocol.PermWrite)
	}
	if cfg.BrokerTopicEnable {
		sys(cfg.BrokerName, 1, protocol.PermInherit|protocol.PermRead|protocol.PermWrite)
	}
	sys(TopicOffsetMoved, 1, protocol.PermRead|protocol.PermWrite)
	levels, _ := parseDelayLevels(cfg.MessageDelayLevel) // validated with the config
	sys(TopicSchedule, int32(max(len(levels), 1)), protocol.PermRead|protocol.PermWrite)
	sys(TopicTimer, 1, protocol.PermRead|protocol.PermWrite)
	if cfg.TraceTopicEnable {
		sys(cfg.MsgTraceTopicName, 1, protocol.PermRead|protocol.PermWrite)
	}
	sys(cfg.BrokerClusterName+TopicReplySuffix, 1, protocol.PermRead|protocol.PermWrite)
	return m
}

// load reads topics.json over the built-in system topics.
func (m *topicConfigManager) load() error {
	var w protocol.TopicConfigSerializeWrapper
	found, err := store.ReadConfigJSON(m.path, &w)
	if err != nil || !found {
		return err
	}
	for name, tc := range w.TopicConfigTable {
		if tc == nil {
			continue
		}
		if tc.TopicName == "" {
			tc.TopicName = name
		}
		if tc.Attributes == nil {
			tc.Attributes = map[string]string{}
		}
	}
	m.versionedTable.load(w.TopicConfigTable, w.DataVersion)
	return nil
}

// persist writes topics.json with every change made before the call. Concurrent callers share writes
// (group commit): one that finds its change written by a later-started write returns that write's result,
// so topics created at once by many producers (auto-create) cost one file write per batch, not per topic.
func (m *topicConfigManager) persist() error {
	want := m.persistAsked.Add(1)
	m.persistMu.Lock()
	defer m.persistMu.Unlock()
	if m.persistedUpTo >= want {
		return m.persistErr
	}
	upTo := m.persistAsked.Load() // every change asked for so far is in the table already
	data, err := m.encodeTopicsFile()
	if err == nil {
		err = writeConfigFile(m.path, data)
	}
	m.persistedUpTo, m.persistErr = upTo, err
	return err
}

// snapshot returns a deep copy of the table and its version, in the topics.json shape.
func (m *topicConfigManager) snapshot() protocol.TopicConfigSerializeWrapper {
	table, version := m.versionedTable.snapshot()
	return protocol.TopicConfigSerializeWrapper{TopicConfigTable: table, DataVersion: version}
}

// update creates or replaces a topic, persists and notifies.
func (m *topicConfigManager) update(tc *protocol.TopicConfig) error {
	c := *tc
	if c.Attributes == nil {
		c.Attributes = map[string]string{}
	}
	if c.TopicFilterType == "" {
		c.TopicFilterType = "SINGLE_TAG"
	}
	return m.changes.putTopic(&c)
}

// delete removes a topic; it reports whether it existed.
func (m *topicConfigManager) delete(topic string) (bool, error) {
	return m.changes.deleteTopic(topic)
}

// apply stores tc as a Raft metadata entry says (with create, only when the topic is absent), persists
// and notifies when the table changed, and returns a copy of the topic now there (FSM goroutine).
func (m *topicConfigManager) apply(tc *protocol.TopicConfig, create bool) *protocol.TopicConfig {
	return m.applyPut(tc.TopicName, tc, create, m.changed, m.log)
}

// applyDelete removes topic as a Raft metadata entry says, persists and notifies when it was there, and
// reports whether it was (FSM goroutine).
func (m *topicConfigManager) applyDelete(topic string) bool {
	return m.applyRemove(topic, m.changed, m.log)
}

func (m *topicConfigManager) changed() error {
	err := m.persist()
	if m.onChange != nil {
		m.onChange()
	}
	return err
}

// createInSendMessage creates topic from the template topic (TBW102) the producer named, as RocketMQ's
// createTopicInSendMessageMethod does. It returns the existing config when another request created it first.
func (m *topicConfigManager) createInSendMessage(topic, template string, clientQueueNums int32, topicSysFlag int32) (*protocol.TopicConfig, error) {
	if tc := m.get(topic); tc != nil {
		return tc, nil
	}
	tmpl := m.get(template)
	if tmpl == nil {
		return nil, fmt.Errorf("the template topic %s does not exist on this broker", template)
	}
	if tmpl.Perm&protocol.PermInherit == 0 {
		return nil, fmt.Errorf("the template topic %s has no INHERIT permission (perm %d)", template, tmpl.Perm)
	}
	queues := max(min(clientQueueNums, tmpl.WriteQueueNums), 1)
	mk := func() *protocol.TopicConfig {
		return &protocol.TopicConfig{TopicName: topic, ReadQueueNums: queues, WriteQueueNums: queues, Perm: tmpl.Perm &^ protocol.PermInherit,
			TopicFilterType: "SINGLE_TAG", TopicSysFlag: topicSysFlag, Attributes: map[string]string{}}
	}
	tc, created, err := m.changes.createTopic(mk())
	if created {
		m.log.Info("topic created on send", "topic", topic, "template", template, "queues", queues)
	}
	return tc, err
}

// createIfAbsent creates a system-managed topic (retry, DLQ, transaction) with the given queues and perm.
func (m *topicConfigManager) createIfAbsent(topic string, queues int32, perm int32, topicSysFlag int32) (*protocol.TopicConfig, error) {
	mk := func() *protocol.TopicConfig {
		return &protocol.TopicConfig{TopicName: topic, ReadQueueNums: queues, WriteQueueNums: queues, Perm: perm,
			TopicFilterType: "SINGLE_TAG", TopicSysFlag: topicSysFlag, Attributes: map[string]string{}}
	}
	if tc := m.get(topic); tc != nil {
		return tc, nil
	}
	tc, _, err := m.changes.createTopic(mk())
	return tc, err
}
