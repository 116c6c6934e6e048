package broker

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"

	"github.com/rocketraft/rocketraft/protocol"
)

// System topic names, as RocketMQ spells them.
const (
	TopicAutoCreate  = "TBW102"
	TopicSelfTest    = "SELF_TEST_TOPIC"
	TopicOffsetMoved = "OFFSET_MOVED_EVENT"
	TopicSchedule    = "SCHEDULE_TOPIC_XXXX"
	TopicTrace       = "RMQ_SYS_TRACE_TOPIC"
	TopicTimer       = "rmq_sys_wheel_timer"
	TopicTransHalf   = "RMQ_SYS_TRANS_HALF_TOPIC"
	TopicTransOpHalf = "RMQ_SYS_TRANS_OP_HALF_TOPIC"
	TopicReplySuffix = "_REPLY_TOPIC"
	RetryGroupPrefix = "%RETRY%"
	DLQGroupPrefix   = "%DLQ%"
)

// notAllowedSendTopics may not be produced to directly by clients (TopicValidator.NOT_ALLOWED_SEND_TOPIC_SET).
var notAllowedSendTopics = map[string]bool{
	TopicSchedule: true, TopicTransHalf: true, TopicTransOpHalf: true, TopicAutoCreate: true, TopicTimer: true,
}

// topicConfigManager owns the topic table and topics.json.
type topicConfigManager struct {
	versionedTable[protocol.TopicConfig]
	path      string
	log       *slog.Logger
	onChange  func()     // called (outside the lock) after every change: the broker re-registers
	raft      topicRaft  // Raft mode: changes are proposals, applied by raft_meta.go; nil in classic mode
	persistMu sync.Mutex // serialises writes of topics.json
}

func newTopicConfigManager(cfg *Config, log *slog.Logger) *topicConfigManager {
	m := &topicConfigManager{
		versionedTable: newVersionedTable[protocol.TopicConfig](),
		path:           filepath.Join(cfg.StorePathRootDir, "config", "topics.json"),
		log:            log,
	}
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
		sys(TopicTrace, 1, protocol.PermRead|protocol.PermWrite)
	}
	sys(cfg.BrokerClusterName+TopicReplySuffix, 1, protocol.PermRead|protocol.PermWrite)
	return m
}

// load reads topics.json over the built-in system topics.
func (m *topicConfigManager) load() error {
	var w protocol.TopicConfigSerializeWrapper
	found, err := loadJSON(m.path, &w)
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

func (m *topicConfigManager) persist() error {
	m.persistMu.Lock()
	defer m.persistMu.Unlock()
	data, err := json.MarshalIndent(m.snapshot(), "", "\t")
	if err != nil {
		return err
	}
	return writeConfigFile(m.path, data)
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
	if m.raft != nil {
		return m.raft.raftTopicPut(&c)
	}
	m.put(c.TopicName, &c)
	return m.changed()
}

// delete removes a topic; it reports whether it existed.
func (m *topicConfigManager) delete(topic string) (bool, error) {
	if m.raft != nil {
		return m.raft.raftTopicDelete(topic)
	}
	if !m.remove(topic) {
		return false, nil
	}
	return true, m.changed()
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
	if m.raft != nil {
		return m.raft.raftTopicCreate(mk())
	}
	tc, created := m.putIfAbsent(topic, mk)
	if !created {
		return tc, nil
	}
	m.log.Info("topic created on send", "topic", topic, "template", template, "queues", queues)
	return tc, m.changed()
}

// createIfAbsent creates a system-managed topic (retry, DLQ, transaction) with the given queues and perm.
func (m *topicConfigManager) createIfAbsent(topic string, queues int32, perm int32, topicSysFlag int32) (*protocol.TopicConfig, error) {
	mk := func() *protocol.TopicConfig {
		return &protocol.TopicConfig{TopicName: topic, ReadQueueNums: queues, WriteQueueNums: queues, Perm: perm,
			TopicFilterType: "SINGLE_TAG", TopicSysFlag: topicSysFlag, Attributes: map[string]string{}}
	}
	if m.raft != nil {
		if tc := m.get(topic); tc != nil {
			return tc, nil
		}
		return m.raft.raftTopicCreate(mk())
	}
	tc, created := m.putIfAbsent(topic, mk)
	if !created {
		return tc, nil
	}
	return tc, m.changed()
}
