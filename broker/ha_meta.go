package broker

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/rocketraft/rocketraft/broker/internal/delay"
	"github.com/rocketraft/rocketraft/message"
	"github.com/rocketraft/rocketraft/protocol"
	"github.com/rocketraft/rocketraft/store"
)

// Metadata in the CommitLog (classic replication). A slave copies its master's CommitLog byte for byte
// but, in RocketMQ, learns topics, subscription groups and offsets only from a periodic copy
// (SlaveSynchronize, ha_sync.go): a topic created shortly before its master died was unknown to the
// slave although the slave held every acknowledged message of it (issue 37). So a classic master also
// writes its metadata changes into its CommitLog, as messages of the system topic rmq_sys_ha_meta, and its
// slaves apply them as they dispatch them (ha_meta_apply.go):
//
//   - a topic or subscription group change is written first, then made in the table, both under one lock
//     (haMetaLog.mu): the record of a topic lies in the log before any message of the topic, so a slave
//     that holds a message holds the topic's record and has applied it before the message's ConsumeQueue
//     unit exists (dispatch is in log order and applies the record on the way). On a SYNC_MASTER the
//     acknowledgement of a message therefore covers its topic and group too, with no wait of its own.
//     A change whose record cannot be written (disk full, store read-only) is not made, and says why.
//   - consumer offsets and delay offsets change with every commit: the master writes the ones that
//     changed about once per haOffsetSyncInterval (1 s) while a slave is connected, the first record after
//     its start carrying the whole tables.
//
// The records are ordinary messages (a RocketMQ slave stores them as any other), written without waiting
// for a flush or a slave (WAIT=false: a later message's acknowledgement covers them); clients may not send
// to the topic (notAllowedSendTopics), it is in no topic table, so no route or pull reaches it, and
// CLEAN_UNUSED_TOPIC leaves its queue alone (isSystemTopic). The periodic copy stays, as the baseline of a
// slave that starts, and for a master that writes no records (RocketMQ, or an older version of this one).
//
// A record is one message on queue 0 of rmq_sys_ha_meta; its body is JSON (haMetaRecord). Wire format of
// the log: add fields, never change the meaning of one.
//
//	op            fields                       a slave
//	topicPut      topic, version               creates or replaces the topic; the table takes version
//	topicDelete   name, version                removes the topic config (its queues and offsets stay, as
//	                                           with the copy); the table takes version
//	groupPut      group, version               creates or replaces the subscription group
//	groupDelete   name, version                removes it
//	offsets       offsets, removedOffsets,     sets the offsets named (topic@group -> queue -> offset) unless
//	              delay                        one committed to the slave is ahead (ha_offsets.go), drops the
//	                                           keys removed, sets the delay offsets named
//
// version is the master's DataVersion of the table after the change: a slave that applied every record
// has the master's version, and the copy of an unchanged table is then a no-op.

// TopicHAMeta is the system topic of a classic master's metadata records.
const TopicHAMeta = "rmq_sys_ha_meta"

// Metadata record operations (haMetaRecord.Op).
const (
	haMetaTopicPut    = "topicPut"
	haMetaTopicDelete = "topicDelete"
	haMetaGroupPut    = "groupPut"
	haMetaGroupDelete = "groupDelete"
	haMetaOffsets     = "offsets"
)

// haMetaRecord is the body of one metadata record.
type haMetaRecord struct {
	Op             string                            `json:"op"`
	Topic          *protocol.TopicConfig             `json:"topic,omitempty"`
	Group          *protocol.SubscriptionGroupConfig `json:"group,omitempty"`
	Name           string                            `json:"name,omitempty"`
	Version        *protocol.DataVersion             `json:"version,omitempty"`
	Offsets        map[string]map[int32]int64        `json:"offsets,omitempty"`
	RemovedOffsets []string                          `json:"removedOffsets,omitempty"`
	Delay          map[int]int64                     `json:"delay,omitempty"`
}

// haMetaPutter stores a record (*store.Store).
type haMetaPutter interface {
	PutMessage(ctx context.Context, m *message.Message) (store.PutResult, error)
}

// haMetaLog is the master's side: it writes the records. Built by the classic master's open, before any
// request; its changes are the tables' topicChanges and groupChanges from then on.
type haMetaLog struct {
	store    haMetaPutter
	host     netip.AddrPort
	maxBody  int                    // maxMessageSize
	offsets  *consumerOffsetManager // read for the offsets records
	schedule *delay.Schedule
	slaves   func() bool // some slave is connected and reporting
	log      *slog.Logger

	// mu is held from a topic or group change's record to the change in the table: records and changes
	// are in one order, and a table's next version is known before its record is written.
	mu sync.Mutex

	off struct {
		sync.Mutex
		// logged and delay are the offsets as the last offsets records wrote them (empty at start: the
		// first record carries the whole tables).
		logged map[string]map[int32]int64
		delay  map[int]int64
	}
}

// haMetaTimeout bounds the local write of one record (WAIT=false: no flush or slave is waited for).
const haMetaTimeout = 5 * time.Second

// write stores rec as a record.
func (l *haMetaLog) write(rec *haMetaRecord) error {
	body, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	if len(body) > l.maxBody {
		return fmt.Errorf("the %s record is %d bytes, more than maxMessageSize (%d)", rec.Op, len(body), l.maxBody)
	}
	now := time.Now()
	m := &message.Message{Topic: TopicHAMeta, Body: body, BornTimestamp: now.UnixMilli(), BornHost: l.host,
		Properties: message.EncodeProperties(map[string]string{message.PropertyWaitStoreMsgOK: "false"})}
	ctx, cancel := context.WithTimeout(context.Background(), haMetaTimeout)
	defer cancel()
	res, err := l.store.PutMessage(ctx, m)
	if err != nil {
		return err
	}
	if res.Status != store.PutOK {
		return fmt.Errorf("put status %s", res.Status)
	}
	return nil
}

// loggedTopics is a classic master's topicChanges: each change is written as a record, then made.
type loggedTopics struct {
	l *haMetaLog
	m *topicConfigManager
}

var (
	_ topicChanges = loggedTopics{}
	_ groupChanges = loggedGroups{}
)

func (t loggedTopics) createTopic(tc *protocol.TopicConfig) (*protocol.TopicConfig, bool, error) {
	t.l.mu.Lock()
	if got := t.m.get(tc.TopicName); got != nil {
		t.l.mu.Unlock()
		return got, false, nil
	}
	err := t.putLocked(tc)
	t.l.mu.Unlock()
	if err != nil {
		return nil, false, err
	}
	c := *tc
	return &c, true, t.m.changed()
}

func (t loggedTopics) putTopic(tc *protocol.TopicConfig) error {
	t.l.mu.Lock()
	err := t.putLocked(tc)
	t.l.mu.Unlock()
	if err != nil {
		return err
	}
	return t.m.changed()
}

// putLocked writes tc's record and stores tc. Lock t.l.mu should be held.
func (t loggedTopics) putLocked(tc *protocol.TopicConfig) error {
	v := t.m.nextVersionAt(time.Now())
	if err := t.l.write(&haMetaRecord{Op: haMetaTopicPut, Topic: tc, Version: &v}); err != nil {
		return fmt.Errorf("topic %s not changed: its record for the slaves could not be written to the CommitLog: %w", tc.TopicName, err)
	}
	t.m.putAt(tc.TopicName, tc, v)
	return nil
}

func (t loggedTopics) deleteTopic(topic string) (bool, error) {
	t.l.mu.Lock()
	if t.m.get(topic) == nil {
		t.l.mu.Unlock()
		return false, nil
	}
	v := t.m.nextVersionAt(time.Now())
	if err := t.l.write(&haMetaRecord{Op: haMetaTopicDelete, Name: topic, Version: &v}); err != nil {
		t.l.mu.Unlock()
		return false, fmt.Errorf("topic %s not deleted: its record for the slaves could not be written to the CommitLog: %w", topic, err)
	}
	t.m.removeAt(topic, v)
	t.l.mu.Unlock()
	return true, t.m.changed()
}

// loggedGroups is a classic master's groupChanges: each change is written as a record, then made.
type loggedGroups struct {
	l *haMetaLog
	m *subscriptionGroupManager
}

func (g loggedGroups) createGroup(sg *protocol.SubscriptionGroupConfig) *protocol.SubscriptionGroupConfig {
	g.l.mu.Lock()
	if got := g.m.get(sg.GroupName); got != nil {
		g.l.mu.Unlock()
		return got
	}
	err := g.putLocked(sg)
	g.l.mu.Unlock()
	if err != nil {
		g.l.log.Error("subscription group not created", "group", sg.GroupName, "err", err)
		return sg
	}
	g.m.log.Info("subscription group created", "group", sg.GroupName)
	if err := g.m.persist(); err != nil {
		g.m.log.Error("persist subscription groups", "err", err)
	}
	c := *sg
	return &c
}

func (g loggedGroups) putGroup(sg *protocol.SubscriptionGroupConfig) error {
	g.l.mu.Lock()
	err := g.putLocked(sg)
	g.l.mu.Unlock()
	if err != nil {
		return err
	}
	return g.m.persist()
}

// putLocked writes sg's record and stores sg. Lock g.l.mu should be held.
func (g loggedGroups) putLocked(sg *protocol.SubscriptionGroupConfig) error {
	v := g.m.nextVersionAt(time.Now())
	if err := g.l.write(&haMetaRecord{Op: haMetaGroupPut, Group: sg, Version: &v}); err != nil {
		return fmt.Errorf("subscription group %s not changed: its record for the slaves could not be written to the CommitLog: %w", sg.GroupName, err)
	}
	g.m.putAt(sg.GroupName, sg, v)
	return nil
}

func (g loggedGroups) deleteGroup(group string) (bool, error) {
	g.l.mu.Lock()
	if g.m.get(group) == nil {
		g.l.mu.Unlock()
		return false, nil
	}
	v := g.m.nextVersionAt(time.Now())
	if err := g.l.write(&haMetaRecord{Op: haMetaGroupDelete, Name: group, Version: &v}); err != nil {
		g.l.mu.Unlock()
		return false, fmt.Errorf("subscription group %s not deleted: its record for the slaves could not be written to the CommitLog: %w", group, err)
	}
	g.m.removeAt(group, v)
	g.l.mu.Unlock()
	return true, g.m.persist()
}

// syncOffsets writes the consumer and delay offsets that changed since the last offsets records, in as
// many records as maxMessageSize needs (every haOffsetSyncInterval, and once more at close). Without a
// slave it writes nothing: the changes wait for the next slave, which then gets them all at once.
func (l *haMetaLog) syncOffsets() {
	if !l.slaves() {
		return
	}
	l.off.Lock()
	defer l.off.Unlock()
	cur := l.offsets.snapshot().OffsetTable
	delay := l.schedule.Offsets().OffsetTable
	set, removed := diffOffsets(l.off.logged, cur)
	var delayChanged map[int]int64
	for level, off := range delay {
		if o, ok := l.off.delay[level]; !ok || o != off {
			if delayChanged == nil {
				delayChanged = map[int]int64{}
			}
			delayChanged[level] = off
		}
	}
	if len(set) == 0 && len(removed) == 0 && len(delayChanged) == 0 {
		return
	}
	for _, rec := range l.offsetsRecords(set, removed, delayChanged) {
		if err := l.write(rec); err != nil {
			l.log.Warn("writing the changed consumer offsets for the slaves failed; retried next interval", "err", err)
			return
		}
	}
	l.off.logged, l.off.delay = cur, delay
}

// Sizes of the JSON of an offsets record's parts, at most: a queue's entry ("id":offset,), a key's own
// part beside its quoted name (:{},), and the record's fixed fields.
const (
	haMetaQueueEntryMax = 36
	haMetaKeyOverhead   = 8
	haMetaRecordFixed   = 512
)

// offsetsRecords packs an offsets change into records whose bodies stay within maxMessageSize (by the
// sizes above): the delay offsets and the removed keys first, then the offsets set, key by key, a key's
// queues split over records when they must be.
func (l *haMetaLog) offsetsRecords(set map[string]map[int32]int64, removed []string, delay map[int]int64) []*haMetaRecord {
	budget := max(l.maxBody-haMetaRecordFixed-len(delay)*haMetaQueueEntryMax, 1)
	out := []*haMetaRecord{{Op: haMetaOffsets, Delay: delay}}
	size := 0
	// next returns the record to add n bytes to: the last one, or a new one when n does not fit in it.
	next := func(n int) (*haMetaRecord, bool) {
		if size > 0 && size+n > budget {
			out = append(out, &haMetaRecord{Op: haMetaOffsets})
			size = 0
			return out[len(out)-1], true
		}
		return out[len(out)-1], false
	}
	for _, k := range removed {
		n := jsonLen(k) + haMetaKeyOverhead
		rec, _ := next(n)
		rec.RemovedOffsets = append(rec.RemovedOffsets, k)
		size += n
	}
	for _, k := range slices.Sorted(maps.Keys(set)) {
		keyPart := jsonLen(k) + haMetaKeyOverhead
		for _, q := range slices.Sorted(maps.Keys(set[k])) {
			n := haMetaQueueEntryMax + keyPart
			if out[len(out)-1].Offsets[k] != nil {
				n = haMetaQueueEntryMax // the key's own part is in the record already
			}
			rec, fresh := next(n)
			if fresh {
				n = haMetaQueueEntryMax + keyPart
			}
			if rec.Offsets == nil {
				rec.Offsets = map[string]map[int32]int64{}
			}
			if rec.Offsets[k] == nil {
				rec.Offsets[k] = map[int32]int64{}
			}
			rec.Offsets[k][q] = set[k][q]
			size += n
		}
	}
	return out
}

// jsonLen is the length of s as a JSON string (quotes and escapes included).
func jsonLen(s string) int {
	b, _ := json.Marshal(s)
	return len(b)
}

// diffOffsets is what changed from prev to cur: the offsets set (new or other values) and the keys gone.
func diffOffsets(prev, cur map[string]map[int32]int64) (set map[string]map[int32]int64, removed []string) {
	for k, q := range cur {
		old := prev[k]
		for id, off := range q {
			if o, ok := old[id]; ok && o == off {
				continue
			}
			if set == nil {
				set = map[string]map[int32]int64{}
			}
			if set[k] == nil {
				set[k] = map[int32]int64{}
			}
			set[k][id] = off
		}
	}
	for k := range prev {
		if _, ok := cur[k]; !ok {
			removed = append(removed, k)
		}
	}
	slices.Sort(removed)
	return set, removed
}
