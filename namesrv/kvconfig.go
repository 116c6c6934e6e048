package namesrv

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"sync"

	"github.com/rocketraft/rocketraft/internal/atomicfile"
)

// NamespaceOrderTopicConfig is the KV namespace of order-topic settings ("brokerName:queues;..." by topic),
// which REGISTER_BROKER returns to brokers and routes carry as orderTopicConf (NamesrvUtil.java).
const NamespaceOrderTopicConfig = "ORDER_TOPIC_CONFIG"

// kvFile is kvConfig.json (KVConfigSerializeWrapper): {"configTable":{"namespace":{"key":"value"}}}.
type kvFile struct {
	ConfigTable map[string]map[string]string `json:"configTable"`
}

// KVConfigManager keeps namespaced key/value settings in memory and in a JSON file, rewritten atomically (temp
// file, fsync, rename, directory fsync) after every change. Safe for concurrent use.
type KVConfigManager struct {
	path   string
	logger *slog.Logger

	mu    sync.RWMutex
	table map[string]map[string]string
	// persistMu serializes writes of the file, so that a slower older snapshot never replaces a newer one.
	// Lock order: persistMu before mu.
	persistMu sync.Mutex
}

// NewKVConfigManager loads path if it exists; a missing file is an empty table, an unreadable or corrupt one an
// error that names the path.
func NewKVConfigManager(path string, logger *slog.Logger) (*KVConfigManager, error) {
	m := &KVConfigManager{path: path, logger: logger, table: make(map[string]map[string]string)}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return m, nil
	}
	if err != nil {
		return nil, fmt.Errorf("namesrv: read kvConfigPath %s: %w", path, err)
	}
	if len(data) == 0 {
		return m, nil
	}
	var f kvFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("namesrv: kvConfigPath %s is not a KV config file: %w", path, err)
	}
	for ns, kv := range f.ConfigTable {
		if kv != nil {
			m.table[ns] = kv
		}
	}
	logger.Info("namesrv: KV config loaded", "path", path, "namespaces", len(m.table))
	return m, nil
}

// Put sets namespace/key to value and persists the table.
func (m *KVConfigManager) Put(namespace, key, value string) error {
	m.mu.Lock()
	kv := m.table[namespace]
	if kv == nil {
		kv = make(map[string]string)
		m.table[namespace] = kv
	}
	kv[key] = value
	m.mu.Unlock()
	m.logger.Info("namesrv: KV config put", "namespace", namespace, "key", key, "value", value)
	return m.persist()
}

// Delete removes namespace/key (absent is fine) and persists the table.
func (m *KVConfigManager) Delete(namespace, key string) error {
	m.mu.Lock()
	if kv := m.table[namespace]; kv != nil {
		delete(kv, key)
		if len(kv) == 0 {
			delete(m.table, namespace)
		}
	}
	m.mu.Unlock()
	m.logger.Info("namesrv: KV config deleted", "namespace", namespace, "key", key)
	return m.persist()
}

// Get returns namespace/key's value.
func (m *KVConfigManager) Get(namespace, key string) (string, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	v, ok := m.table[namespace][key]
	return v, ok
}

// List returns a copy of a namespace's table; ok is false when the namespace has none.
func (m *KVConfigManager) List(namespace string) (map[string]string, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	kv, ok := m.table[namespace]
	return maps.Clone(kv), ok
}

// persist writes the whole table to the file atomically.
func (m *KVConfigManager) persist() error {
	m.persistMu.Lock()
	defer m.persistMu.Unlock()
	m.mu.RLock()
	data, err := json.MarshalIndent(kvFile{ConfigTable: m.table}, "", "\t")
	m.mu.RUnlock()
	if err != nil {
		return fmt.Errorf("namesrv: encode KV config: %w", err)
	}
	if err := atomicfile.Write(m.path, data, 0o644); err != nil {
		return fmt.Errorf("namesrv: persist KV config to kvConfigPath %s: %w", m.path, err)
	}
	return nil
}
