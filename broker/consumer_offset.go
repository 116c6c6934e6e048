package broker

import (
	"encoding/json"
	"log/slog"
	"maps"
	"path/filepath"
	"strings"
	"sync"

	"github.com/rocketraft/rocketraft/protocol"
	"github.com/rocketraft/rocketraft/store"
)

// offsetKeySep joins topic and group in consumerOffset.json keys ("topic@group"), as RocketMQ does.
const offsetKeySep = "@"

// consumerOffsetManager keeps the committed offset of every group on every queue and persists them
// periodically. An offset is the next queue offset the group will consume.
type consumerOffsetManager struct {
	path      string
	log       *slog.Logger
	mu        sync.RWMutex
	table     map[string]map[int32]int64 // "topic@group" -> queueId -> offset; guarded by mu
	dirty     bool                       // guarded by mu
	persistMu sync.Mutex
}

func newConsumerOffsetManager(cfg *Config, log *slog.Logger) *consumerOffsetManager {
	return &consumerOffsetManager{
		path:  filepath.Join(cfg.StorePathRootDir, "config", "consumerOffset.json"),
		log:   log,
		table: map[string]map[int32]int64{},
	}
}

func (m *consumerOffsetManager) load() error {
	var w protocol.ConsumerOffsetWrapper
	found, err := store.ReadConfigJSON(m.path, &w)
	if err != nil || !found {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, v := range w.OffsetTable {
		if v != nil {
			m.table[k] = v
		}
	}
	return nil
}

// commit stores offset for group on topic/queue, as RocketMQ does: the last commit wins (consumers may
// legitimately move backwards, e.g. after an offset reset).
func (m *consumerOffsetManager) commit(group, topic string, queueID int32, offset int64) {
	key := topic + offsetKeySep + group
	m.mu.Lock()
	defer m.mu.Unlock()
	q := m.queuesLocked(key)
	if old, ok := q[queueID]; ok && old == offset {
		return
	}
	q[queueID] = offset
	m.dirty = true
}

// queuesLocked is key's queue -> offset table, created empty when absent. m.mu must be held.
func (m *consumerOffsetManager) queuesLocked(key string) map[int32]int64 {
	q := m.table[key]
	if q == nil {
		q = map[int32]int64{}
		m.table[key] = q
	}
	return q
}

// query returns the committed offset, or -1 when the group never committed one for the queue.
func (m *consumerOffsetManager) query(group, topic string, queueID int32) int64 {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if q, ok := m.table[topic+offsetKeySep+group]; ok {
		if off, ok := q[queueID]; ok {
			return off
		}
	}
	return -1
}

// groupsOf returns the groups with offsets on topic.
func (m *consumerOffsetManager) groupsOf(topic string) []string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	var out []string
	for k := range m.table {
		if t, g, ok := strings.Cut(k, offsetKeySep); ok && t == topic {
			out = append(out, g)
		}
	}
	return out
}

// removeTopic forgets every group's offsets on topic (topic deletion).
func (m *consumerOffsetManager) removeTopic(topic string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k := range m.table {
		if t, _, ok := strings.Cut(k, offsetKeySep); ok && t == topic {
			delete(m.table, k)
			m.dirty = true
		}
	}
}

// removeGroup forgets a group's offsets everywhere (subscription group deletion).
func (m *consumerOffsetManager) removeGroup(group string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k := range m.table {
		if _, g, ok := strings.Cut(k, offsetKeySep); ok && g == group {
			delete(m.table, k)
			m.dirty = true
		}
	}
}

// apply sets the offsets in set (topic@group -> queue -> offset; queues not named keep theirs) and drops the
// keys in removed: a Raft offsets entry of the master (raft_offsets.go).
func (m *consumerOffsetManager) apply(set map[string]map[int32]int64, removed []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, q := range set {
		maps.Copy(m.queuesLocked(k), q)
	}
	for _, k := range removed {
		delete(m.table, k)
	}
	m.dirty = true
}

// replace makes table (copied) the offsets: a Raft snapshot (raft_meta.go).
func (m *consumerOffsetManager) replace(table map[string]map[int32]int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.table = make(map[string]map[int32]int64, len(table))
	for k, q := range table {
		m.table[k] = maps.Clone(q)
	}
	m.dirty = true
}

func (m *consumerOffsetManager) snapshot() protocol.ConsumerOffsetWrapper {
	m.mu.RLock()
	defer m.mu.RUnlock()
	w := protocol.ConsumerOffsetWrapper{OffsetTable: make(map[string]map[int32]int64, len(m.table))}
	for k, q := range m.table {
		c := make(map[int32]int64, len(q))
		for id, off := range q {
			c[id] = off
		}
		w.OffsetTable[k] = c
	}
	return w
}

// persist writes consumerOffset.json when something changed since the last write (or always if force).
func (m *consumerOffsetManager) persist(force bool) error {
	m.persistMu.Lock()
	defer m.persistMu.Unlock()
	m.mu.Lock()
	dirty := m.dirty
	m.dirty = false
	m.mu.Unlock()
	if !dirty && !force {
		return nil
	}
	data, err := json.MarshalIndent(m.snapshot(), "", "\t")
	if err != nil {
		return err
	}
	if err := writeConfigFile(m.path, data); err != nil {
		m.mu.Lock()
		m.dirty = true
		m.mu.Unlock()
		return err
	}
	return nil
}
