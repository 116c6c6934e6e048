package broker

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"

	"github.com/rocketraft/rocketraft/broker/internal/delay"
	"github.com/rocketraft/rocketraft/message"
	"github.com/rocketraft/rocketraft/protocol"
	"github.com/rocketraft/rocketraft/store"
)

// The slave's side of the metadata records (ha_meta.go): slaveMeta applies each record of rmq_sys_ha_meta
// as the store dispatches it, on the dispatch goroutine, before the records after it are dispatched: a
// message's ConsumeQueue unit appears on the slave only once its topic's record (earlier in the log) is
// applied, so a pull or topicStatus on the slave never finds a message of a topic it does not know.
// Records dispatched while no listener ran (the store's recovery at open, a close) are applied at the
// next open, from the position saved in config/haMetaApplied.json (the queue offset of the next record
// to apply, saved after the tables it covers: a crash applies some records again, which sets the same
// values). A record seen again at an offset already applied (the tail check truncated the log and the
// master's records took those offsets) is applied again, from there on.
//
// The position holds only beside the topic and group tables it was saved after, and those files are
// written apart from it: topics.json may be lost or older (read from topics.json.bak when topics.json is
// missing or empty, a config backup restored, a crash between a record's apply and its table's write). So
// the position also names the versions of the last topic and group records before it, and open takes it
// only when the tables loaded are at those versions or later (versionCovers); otherwise it applies every
// record the log holds again, from the first (a table older than the position would otherwise miss the
// records before it for good, and a slave restarted while its master is down would not know a topic whose
// messages it holds).
//
// The periodic copy (ha_sync.go) and the records are merged in log order (slaveMeta.mu serialises them):
//   - topics and groups: a record carries the master's table version after its change; a copy whose
//     version is older than the last record applied (counter lower, timestamp not newer) is stale, taken
//     before a change the slave has: it is skipped, not applied over that change.
//   - consumer and delay offsets: a copy during which an offsets record was applied is skipped (the
//     record is as new as the copy or newer); otherwise it is merged as before (ha_offsets.go). Offsets a
//     record sets count as taken from the master (synced), so they are never pushed back to it.

// haMetaStore is what the applier reads of the slave's store (*store.Store); every method may be called
// from any goroutine.
type haMetaStore interface {
	// MinOffsetInQueue and MaxOffsetInQueue bound a queue's readable units (0 for an unknown queue).
	MinOffsetInQueue(topic string, queueID int32) int64
	MaxOffsetInQueue(topic string, queueID int32) int64
	// ConsumeQueueUnit is the unit at a queue offset (store.ErrNotFound, wrapped, when there is none).
	ConsumeQueueUnit(topic string, queueID int32, queueOffset int64) (store.QueueUnit, error)
	// SelectRecord is the record at a physical offset, valid until release.
	SelectRecord(phyOffset int64) (rec []byte, release func(), err error)
}

var _ haMetaStore = (*store.Store)(nil)

// slaveMeta applies the master's metadata records on a classic slave and holds what the copy merges with.
type slaveMeta struct {
	store    haMetaStore
	topics   *topicConfigManager
	groups   *subscriptionGroupManager
	offsets  *consumerOffsetManager
	schedule *delay.Schedule
	path     string // config/haMetaApplied.json
	log      *slog.Logger

	mu struct {
		sync.Mutex
		next int64 // queue offset of the next record to apply; -1 before the first
		// topicVersion and groupVersion are the master's table versions the last topic and group
		// records carried (zero before one).
		topicVersion protocol.DataVersion
		groupVersion protocol.DataVersion
		// offsetsGen counts the offsets records applied (the copy of offsets checks it did not move).
		offsetsGen uint64
		// synced is the consumer offsets as last taken from the master, by a copy or a record
		// (ha_offsets.go).
		synced     map[string]map[int32]int64
		delayDirty bool  // delay offsets set by a record and not persisted yet
		saved      int64 // next as last written to path
	}
	saveMu sync.Mutex // one checkpoint at a time
}

// haMetaApplied is config/haMetaApplied.json.
type haMetaApplied struct {
	Next int64 `json:"next"`
	// TopicVersion and GroupVersion are the versions the last topic and group records before Next carried
	// (absent before such a record, and in the files of older versions: then no table is checked).
	TopicVersion *protocol.DataVersion `json:"topicVersion,omitempty"`
	GroupVersion *protocol.DataVersion `json:"groupVersion,omitempty"`
}

func newSlaveMeta(st haMetaStore, b *Broker) *slaveMeta {
	m := &slaveMeta{store: st, topics: b.topics, groups: b.groups, offsets: b.offsets, schedule: b.schedule,
		path: filepath.Join(b.cfg.StorePathRootDir, "config", "haMetaApplied.json"), log: b.log}
	m.mu.next, m.mu.saved = -1, -1
	return m
}

// open loads the saved position, takes the loaded offsets as synced, and applies the records the store
// holds past the position (dispatched by the store's recovery, with no listener), or every record when
// the tables loaded are older than the position. Before requests are served.
func (m *slaveMeta) open() error {
	var saved haMetaApplied
	found, err := store.ReadConfigJSON(m.path, &saved)
	if err != nil {
		return err
	}
	m.mu.Lock()
	if found {
		if stale := m.staleTable(saved); stale != "" {
			m.log.Warn("the "+stale+" loaded is older than the metadata records applied before the saved position "+
				"(its file lost or read from its backup); applying every metadata record the log holds again",
				"position", saved.Next)
		} else {
			m.mu.next, m.mu.saved = saved.Next, saved.Next
			if saved.TopicVersion != nil {
				m.mu.topicVersion = *saved.TopicVersion
			}
			if saved.GroupVersion != nil {
				m.mu.groupVersion = *saved.GroupVersion
			}
		}
	}
	m.mu.synced = m.offsets.snapshot().OffsetTable
	ch := m.applyUpToLocked(m.store.MaxOffsetInQueue(TopicHAMeta, 0))
	next := m.mu.next
	m.mu.Unlock()
	if ch.records > 0 {
		m.log.Info("metadata records of the master applied at start", "records", ch.records, "next", next)
	}
	m.persistChanged(ch)
	return nil
}

// staleTable names the table ("topic table", "subscription group table") loaded at a version older than
// the one the position saved names, or is "" when both hold the records before the position.
func (m *slaveMeta) staleTable(saved haMetaApplied) string {
	if saved.TopicVersion != nil && !versionCovers(m.topics.currentVersion(), *saved.TopicVersion) {
		return "topic table"
	}
	if saved.GroupVersion != nil && !versionCovers(m.groups.currentVersion(), *saved.GroupVersion) {
		return "subscription group table"
	}
	return ""
}

// versionCovers reports whether a table at version v holds the change of a record that carried version rec:
// v is rec, or later on both the counter and the timestamp (a later record or copy). Anything else (an
// older file, an empty table, a master whose counter started again) does not: applying the records again
// costs only time, missing one loses a topic.
func versionCovers(v, rec protocol.DataVersion) bool {
	return v.Counter >= rec.Counter && v.Timestamp >= rec.Timestamp
}

// arrived takes the unit at queueOffset of rmq_sys_ha_meta just dispatched (the store's arrival listener,
// dispatch goroutine): it applies the record, and any before it not applied yet.
func (m *slaveMeta) arrived(queueOffset int64) {
	m.mu.Lock()
	if queueOffset < m.mu.next {
		m.log.Warn("a metadata record arrived at an offset applied before (the log was truncated); applying again from there",
			"offset", queueOffset, "next", m.mu.next)
		m.mu.next = queueOffset
	}
	ch := m.applyUpToLocked(queueOffset + 1)
	m.mu.Unlock()
	m.persistChanged(ch)
}

// tablesChanged says which tables records changed, for their files (written outside the lock), and how many
// records were applied.
type tablesChanged struct {
	topics, groups bool
	records        int
}

// applyUpToLocked applies the records from next up to end (exclusive). A unit or record that cannot be
// read or parsed is logged and skipped: a broken record must not stop the slave. Lock m.mu should be held.
func (m *slaveMeta) applyUpToLocked(end int64) tablesChanged {
	var ch tablesChanged
	if lo := m.store.MinOffsetInQueue(TopicHAMeta, 0); m.mu.next < lo {
		m.mu.next = lo
	}
	for ; m.mu.next < end; m.mu.next++ {
		rec, err := m.read(m.mu.next)
		if err != nil {
			if !errors.Is(err, store.ErrNotFound) {
				m.log.Error("a metadata record of the master cannot be read; skipped", "offset", m.mu.next, "err", err)
			}
			continue
		}
		m.applyLocked(rec, &ch)
		ch.records++
	}
	return ch
}

// read decodes the record at queueOffset.
func (m *slaveMeta) read(queueOffset int64) (*haMetaRecord, error) {
	u, err := m.store.ConsumeQueueUnit(TopicHAMeta, 0, queueOffset)
	if err != nil {
		return nil, err
	}
	raw, release, err := m.store.SelectRecord(u.PhysicalOffset)
	if err != nil {
		return nil, err
	}
	defer release()
	v, err := message.ParseRecord(raw)
	if err != nil {
		return nil, err
	}
	var rec haMetaRecord
	if err := json.Unmarshal(v.Body, &rec); err != nil {
		return nil, fmt.Errorf("record body: %w", err)
	}
	return &rec, nil
}

// applyLocked applies one record. Lock m.mu should be held.
func (m *slaveMeta) applyLocked(rec *haMetaRecord, ch *tablesChanged) {
	switch rec.Op {
	case haMetaTopicPut:
		if rec.Topic == nil || rec.Topic.TopicName == "" || rec.Version == nil {
			break
		}
		tc := *rec.Topic
		if tc.Attributes == nil {
			tc.Attributes = map[string]string{}
		}
		m.topics.putAt(tc.TopicName, &tc, *rec.Version)
		m.mu.topicVersion, ch.topics = *rec.Version, true
		return
	case haMetaTopicDelete:
		if rec.Name == "" || rec.Version == nil {
			break
		}
		m.topics.removeAt(rec.Name, *rec.Version)
		m.mu.topicVersion, ch.topics = *rec.Version, true
		return
	case haMetaGroupPut:
		if rec.Group == nil || rec.Group.GroupName == "" || rec.Version == nil {
			break
		}
		m.groups.putAt(rec.Group.GroupName, rec.Group, *rec.Version)
		m.mu.groupVersion, ch.groups = *rec.Version, true
		return
	case haMetaGroupDelete:
		if rec.Name == "" || rec.Version == nil {
			break
		}
		m.groups.removeAt(rec.Name, *rec.Version)
		m.mu.groupVersion, ch.groups = *rec.Version, true
		return
	case haMetaOffsets:
		if len(rec.Offsets) > 0 {
			m.mu.synced = m.offsets.mergeFromMaster(rec.Offsets, m.mu.synced)
		}
		if len(rec.RemovedOffsets) > 0 {
			m.offsets.apply(nil, rec.RemovedOffsets)
			for _, k := range rec.RemovedOffsets {
				delete(m.mu.synced, k)
			}
		}
		if len(rec.Delay) > 0 {
			m.schedule.SetOffsets(rec.Delay)
			m.mu.delayDirty = true
		}
		m.mu.offsetsGen++
		return
	default:
		m.log.Warn("a metadata record of an unknown kind skipped (a newer master?)", "op", rec.Op)
		return
	}
	m.log.Error("a metadata record of the master is incomplete; skipped", "op", rec.Op)
}

// persistChanged writes the files of the tables records changed and asks for a registration when topics
// changed (the slave registers what it serves).
func (m *slaveMeta) persistChanged(ch tablesChanged) {
	if ch.topics {
		if err := m.topics.changed(); err != nil {
			m.log.Error("persist the topics of a metadata record", "err", err)
		}
	}
	if ch.groups {
		if err := m.groups.persist(); err != nil {
			m.log.Error("persist the subscription groups of a metadata record", "err", err)
		}
	}
}

// checkpoint writes the offset tables the records changed, then the position of the next record to apply
// (so every record before it is in the files). The slave's checkpoint loop and its close call it.
func (m *slaveMeta) checkpoint() error {
	m.saveMu.Lock()
	defer m.saveMu.Unlock()
	m.mu.Lock()
	next, saved, delay := m.mu.next, m.mu.saved, m.mu.delayDirty
	pos := haMetaApplied{Next: next}
	if v := m.mu.topicVersion; v != (protocol.DataVersion{}) {
		pos.TopicVersion = &v
	}
	if v := m.mu.groupVersion; v != (protocol.DataVersion{}) {
		pos.GroupVersion = &v
	}
	m.mu.delayDirty = false
	m.mu.Unlock()
	if next == saved && !delay {
		return nil
	}
	var errs []error
	if err := m.offsets.persist(false); err != nil {
		errs = append(errs, fmt.Errorf("persist consumer offsets: %w", err))
	}
	if delay {
		if err := m.schedule.Persist(); err != nil {
			m.mu.Lock()
			m.mu.delayDirty = true
			m.mu.Unlock()
			errs = append(errs, fmt.Errorf("persist delay offsets: %w", err))
		}
	}
	if len(errs) == 0 && next != saved {
		data, err := json.Marshal(pos)
		if err == nil {
			err = writeConfigFile(m.path, data)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("save the metadata record position: %w", err))
		} else {
			m.mu.Lock()
			m.mu.saved = next
			m.mu.Unlock()
		}
	}
	return errors.Join(errs...)
}

// takeTopicCopy replaces the topic table with a copy of the master's (ha_sync.go) unless it has the
// table's version already or predates the last topic record applied. It reports whether it replaced it.
func (m *slaveMeta) takeTopicCopy(w protocol.TopicConfigSerializeWrapper) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if olderVersion(w.DataVersion, m.mu.topicVersion) {
		m.log.Debug("a copy of the master's topics older than a topic record applied is skipped", "copy", w.DataVersion,
			"record", m.mu.topicVersion)
		return false
	}
	return m.topics.replaceFrom(w.TopicConfigTable, w.DataVersion)
}

// takeGroupCopy is takeTopicCopy for the subscription groups.
func (m *slaveMeta) takeGroupCopy(w SubscriptionGroupWrapper) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if olderVersion(w.DataVersion, m.mu.groupVersion) {
		m.log.Debug("a copy of the master's subscription groups older than a group record applied is skipped", "copy", w.DataVersion,
			"record", m.mu.groupVersion)
		return false
	}
	return m.groups.replaceFrom(w.SubscriptionGroupTable, w.DataVersion)
}

// takeDelayCopy sets the delay offsets of a copy fetched when offsetsGeneration was gen, unless an offsets
// record was applied since (it is as new as the copy or newer). It reports whether it set them.
func (m *slaveMeta) takeDelayCopy(gen uint64, table map[int]int64) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.mu.offsetsGen != gen {
		return false
	}
	m.schedule.SetOffsets(table)
	return true
}

// takeOffsetsCopy merges a copy of the master's consumer offsets fetched when offsetsGeneration was gen
// (ha_offsets.go), unless an offsets record was applied since. It reports whether it merged them.
func (m *slaveMeta) takeOffsetsCopy(gen uint64, master map[string]map[int32]int64) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.mu.offsetsGen != gen {
		return false
	}
	m.mu.synced = m.offsets.mergeFromMaster(master, m.mu.synced)
	return true
}

// olderVersion reports whether a copy's version v is older than the version rec a record carried: a lower
// counter and a timestamp not after rec's (a master that lost its topics.json starts its counter again,
// with newer timestamps: its copies are taken).
func olderVersion(v, rec protocol.DataVersion) bool {
	return v.Counter < rec.Counter && v.Timestamp <= rec.Timestamp
}

// offsetsGeneration counts the offsets records applied so far.
func (m *slaveMeta) offsetsGeneration() uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.mu.offsetsGen
}
