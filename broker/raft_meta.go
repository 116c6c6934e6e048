package broker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"time"

	"github.com/rocketraft/rocketraft/protocol"
	"github.com/rocketraft/rocketraft/raftlog"
)

// Metadata as Raft entries (kind 2, raftlog.KindMeta). In the Raft mode the topic table, the subscription
// groups, the consumer offsets and the delay offsets are state machine state: a change is proposed by the
// leader, committed, and applied on every node in log order (the leader's table changes when the entry is
// applied there too), so a failover loses no topic and no group, and the files (topics.json, ...) are
// caches of the applied state. Consumer and delay offsets move too often for an entry per commit: the
// leader keeps committing them locally and proposes the ones that changed about once a second
// (dLegerOffsetSyncIntervalMs, raftOffsetSync), so a failover rewinds a group by at most about that.
//
// A command is JSON (metaCmd), applied with set semantics: applying the same commands again in order
// (Raft replays entries after a restart) gives the same state. Wire format of the log: add fields, never
// change the meaning of one.

// Metadata operations (metaCmd.Op).
const (
	metaTopicPut    = "topicPut"      // create or replace Topic
	metaTopicCreate = "topicCreate"   // create Topic unless a topic of that name exists
	metaTopicDelete = "topicDelete"   // delete topic Name, its consume queues and its offsets
	metaGroupPut    = "groupPut"      // create or replace Group
	metaGroupCreate = "groupCreate"   // create Group unless it exists
	metaGroupDelete = "groupDelete"   // delete group Name
	metaOffsets     = "offsets"       // set Offsets and Delay, drop RemovedOffsets
	metaLeader      = "leader"        // node Name is master of Term, clients reach it at BrokerAddr (raft_forward.go)
	metaHold        = "holdPreferred" // no preferred-leader move until HoldUntil (raft_admin.go: node Name drains)
)

// metaCmd is one metadata command.
type metaCmd struct {
	Op    string                            `json:"op"`
	Topic *protocol.TopicConfig             `json:"topic,omitempty"`
	Group *protocol.SubscriptionGroupConfig `json:"group,omitempty"`
	Name  string                            `json:"name,omitempty"`
	// Origin is the proposing node's incarnation (offsets only): the node skips its own offset
	// entries, its local table being at least as new.
	Origin         string                     `json:"origin,omitempty"`
	Offsets        map[string]map[int32]int64 `json:"offsets,omitempty"`
	RemovedOffsets []string                   `json:"removedOffsets,omitempty"`
	Delay          map[int]int64              `json:"delay,omitempty"`
	Timer          *TimerCheckpoint           `json:"timer,omitempty"`
	// BrokerAddr and Term: a leader's announcement (metaLeader).
	BrokerAddr string `json:"brokerAddr,omitempty"`
	Term       uint64 `json:"term,omitempty"`
	// HoldUntil: metaHold's end, Unix milliseconds of the proposer's clock.
	HoldUntil int64 `json:"holdUntil,omitempty"`
}

// metaSnapshot is the metadata in a Raft snapshot.
type metaSnapshot struct {
	Topics  map[string]*protocol.TopicConfig             `json:"topics"`
	Groups  map[string]*protocol.SubscriptionGroupConfig `json:"groups"`
	Offsets map[string]map[int32]int64                   `json:"offsets"`
	Delay   map[int]int64                                `json:"delay"`
	Timer   *TimerCheckpoint                             `json:"timer,omitempty"`
	Leader  *leaderAnnouncement                          `json:"leader,omitempty"`
}

// topicRaft and groupRaft are the Raft mode's side of the topic and subscription group managers: in the
// Raft mode their changes are proposals (the managers' raft field), implemented by the Broker below.
type topicRaft interface {
	raftTopicCreate(tc *protocol.TopicConfig) (*protocol.TopicConfig, error)
	raftTopicPut(tc *protocol.TopicConfig) error
	raftTopicDelete(topic string) (bool, error)
}

type groupRaft interface {
	raftGroupCreate(g *protocol.SubscriptionGroupConfig) *protocol.SubscriptionGroupConfig
	raftGroupPut(g *protocol.SubscriptionGroupConfig) error
	raftGroupDelete(group string) (bool, error)
}

// raftMeta is the broker's raftlog.MetaApplier.
type raftMeta struct{ b *Broker }

var _ raftlog.MetaApplier = (*raftMeta)(nil)

// proposeMeta proposes cmd on the leader and returns what applying it here answered. A follower gets
// raftlog.ErrNotLeader.
func (b *Broker) proposeMeta(cmd *metaCmd) (any, error) {
	data, err := json.Marshal(cmd)
	if err != nil {
		return nil, err
	}
	if !b.raft.master.Load() {
		return nil, fmt.Errorf("%w: metadata changes are made on the master of Raft group %s", raftlog.ErrNotLeader, b.cfg.raftGroup())
	}
	ctx, cancel := context.WithTimeout(context.Background(), b.cfg.raftWaitAck())
	defer cancel()
	resp, err := b.raft.node.ProposeMeta(ctx, data)
	if err != nil {
		return nil, err
	}
	if e, ok := resp.(error); ok {
		return nil, e
	}
	return resp, nil
}

// ApplyMeta applies one command on the FSM goroutine (raftlog.MetaApplier).
func (a *raftMeta) ApplyMeta(index uint64, data []byte, dispatched bool) any {
	b := a.b
	var cmd metaCmd
	if err := json.Unmarshal(data, &cmd); err != nil {
		b.log.Error("raft: a metadata entry does not parse; skipped", "index", index, "err", err)
		return fmt.Errorf("raft: metadata entry %d: %w", index, err)
	}
	switch cmd.Op {
	case metaTopicPut, metaTopicCreate:
		if cmd.Topic == nil || cmd.Topic.TopicName == "" {
			return fmt.Errorf("raft: metadata entry %d: %s without a topic", index, cmd.Op)
		}
		return applyPut(&b.topics.versionedTable, cmd.Topic.TopicName, cmd.Topic, cmd.Op == metaTopicCreate, b.topics.changed, b.log)
	case metaTopicDelete:
		existed := applyRemove(&b.topics.versionedTable, cmd.Name, b.topics.changed, b.log)
		b.offsets.removeTopic(cmd.Name)
		if !dispatched {
			if err := b.store.DeleteTopics([]string{cmd.Name}); err != nil {
				b.log.Error("raft: delete the consume queues of a deleted topic", "topic", cmd.Name, "err", err)
			}
		}
		return existed
	case metaGroupPut, metaGroupCreate:
		if cmd.Group == nil || cmd.Group.GroupName == "" {
			return fmt.Errorf("raft: metadata entry %d: %s without a group", index, cmd.Op)
		}
		return applyPut(&b.groups.versionedTable, cmd.Group.GroupName, cmd.Group, cmd.Op == metaGroupCreate, b.groups.persist, b.log)
	case metaGroupDelete:
		return applyRemove(&b.groups.versionedTable, cmd.Name, b.groups.persist, b.log)
	case metaOffsets:
		if cmd.Origin == b.raft.offsets.origin {
			return nil // proposed here: the local tables are at least this new
		}
		b.raft.offsets.apply(&cmd)
		return nil
	case metaLeader:
		b.raft.forward.announced(leaderAnnouncement{ID: cmd.Name, BrokerAddr: cmd.BrokerAddr, Term: cmd.Term})
		return nil
	case metaHold:
		b.raft.node.HoldPreferredLeader(time.UnixMilli(cmd.HoldUntil)) // replayed after it ended: no effect
		return nil
	}
	b.log.Warn("raft: unknown metadata operation skipped", "index", index, "op", cmd.Op)
	return nil
}

// applyPut stores a copy of v under name (with create only when name is absent), persists the table when
// it changed, and returns a copy of the value now there.
func applyPut[T any](t *versionedTable[T], name string, v *T, create bool, persist func() error, lg *slog.Logger) *T {
	got, changed := v, true
	if create {
		got, changed = t.putIfAbsent(name, func() *T { c := *v; return &c })
	} else {
		t.put(name, v)
	}
	if changed {
		if err := persist(); err != nil {
			lg.Error("raft: persist applied metadata", "name", name, "err", err)
		}
	}
	return got
}

// applyRemove deletes name, persists the table when it held it, and reports whether it did.
func applyRemove[T any](t *versionedTable[T], name string, persist func() error, lg *slog.Logger) bool {
	if !t.remove(name) {
		return false
	}
	if err := persist(); err != nil {
		lg.Error("raft: persist applied metadata", "name", name, "err", err)
	}
	return true
}

// SnapshotMeta is the metadata as of the last entry applied (raftlog.MetaApplier).
func (a *raftMeta) SnapshotMeta() ([]byte, error) {
	b := a.b
	topics, _ := b.topics.versionedTable.snapshot()
	groups, _ := b.groups.versionedTable.snapshot()
	timer := b.timer.checkpoint()
	return json.Marshal(metaSnapshot{Topics: topics, Groups: groups, Offsets: b.offsets.snapshot().OffsetTable,
		Delay: b.schedule.snapshot().OffsetTable, Timer: &timer, Leader: b.raft.forward.lastAnnouncement()})
}

// RestoreMeta replaces the metadata with a snapshot's (raftlog.MetaApplier).
func (a *raftMeta) RestoreMeta(data []byte) error {
	b := a.b
	var s metaSnapshot
	if len(data) == 0 {
		return nil // a snapshot taken without metadata
	}
	if err := json.Unmarshal(data, &s); err != nil {
		return fmt.Errorf("raft: snapshot metadata: %w", err)
	}
	replaceTable(&b.topics.versionedTable, s.Topics)
	replaceTable(&b.groups.versionedTable, s.Groups)
	b.offsets.mu.Lock()
	b.offsets.table = map[string]map[int32]int64{}
	for k, q := range s.Offsets {
		b.offsets.table[k] = maps.Clone(q)
	}
	b.offsets.dirty = true
	b.offsets.mu.Unlock()
	b.schedule.mu.Lock()
	b.schedule.offsets = maps.Clone(s.Delay)
	if b.schedule.offsets == nil {
		b.schedule.offsets = map[int]int64{}
	}
	b.schedule.mu.Unlock()
	if s.Timer != nil {
		b.timer.restoreCheckpoint(*s.Timer)
	}
	if s.Leader != nil {
		b.raft.forward.announced(*s.Leader)
	}
	b.raft.offsets.reset()
	b.triggerRegister()
	return a.PersistMeta()
}

// replaceTable swaps a versioned table's contents for values (the version moves).
func replaceTable[T any](t *versionedTable[T], values map[string]*T) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.table = map[string]*T{}
	for k, v := range values {
		if v != nil {
			c := *v
			t.table[k] = &c
		}
	}
	t.version.Counter++
}

// PersistMeta writes the metadata files (raftlog.MetaApplier; the snapshot goroutine).
func (a *raftMeta) PersistMeta() error {
	b := a.b
	return errors.Join(b.topics.persist(), b.groups.persist(), b.offsets.persist(true), b.schedule.persist(), b.timer.persist())
}

// raftTopicCreate proposes a topic unless it exists and returns the topic as it is now (the existing
// one when another proposal created it first). On a follower the topic is not created: the config
// is returned unstored, so a caller there (a heartbeat creating a retry topic) goes on; the master
// creates it when the client reaches it.
func (b *Broker) raftTopicCreate(tc *protocol.TopicConfig) (*protocol.TopicConfig, error) {
	resp, err := b.proposeMeta(&metaCmd{Op: metaTopicCreate, Topic: tc})
	if errors.Is(err, raftlog.ErrNotLeader) {
		return tc, nil
	}
	if err != nil {
		return nil, fmt.Errorf("raft: create topic %s: %w", tc.TopicName, err)
	}
	if got, ok := resp.(*protocol.TopicConfig); ok {
		c := *got
		return &c, nil
	}
	return tc, nil
}

// raftTopicPut proposes a topic's config (create or replace).
func (b *Broker) raftTopicPut(tc *protocol.TopicConfig) error {
	_, err := b.proposeMeta(&metaCmd{Op: metaTopicPut, Topic: tc})
	return err
}

// raftTopicDelete proposes a topic's deletion and reports whether it existed.
func (b *Broker) raftTopicDelete(topic string) (bool, error) {
	resp, err := b.proposeMeta(&metaCmd{Op: metaTopicDelete, Name: topic})
	existed, _ := resp.(bool)
	return existed, err
}

// raftGroupCreate proposes a subscription group unless it exists (a follower returns it unstored,
// as raftTopicCreate).
func (b *Broker) raftGroupCreate(g *protocol.SubscriptionGroupConfig) *protocol.SubscriptionGroupConfig {
	resp, err := b.proposeMeta(&metaCmd{Op: metaGroupCreate, Group: g})
	if err != nil {
		if !errors.Is(err, raftlog.ErrNotLeader) {
			b.log.Warn("raft: create subscription group", "group", g.GroupName, "err", err)
		}
		return g
	}
	if got, ok := resp.(*protocol.SubscriptionGroupConfig); ok {
		c := *got
		return &c
	}
	return g
}

// raftGroupPut proposes a subscription group's config.
func (b *Broker) raftGroupPut(g *protocol.SubscriptionGroupConfig) error {
	_, err := b.proposeMeta(&metaCmd{Op: metaGroupPut, Group: g})
	return err
}

// raftGroupDelete proposes a subscription group's deletion and reports whether it existed.
func (b *Broker) raftGroupDelete(group string) (bool, error) {
	resp, err := b.proposeMeta(&metaCmd{Op: metaGroupDelete, Name: group})
	existed, _ := resp.(bool)
	return existed, err
}
