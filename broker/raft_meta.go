package broker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/rocketraft/rocketraft/broker/internal/delay"
	"github.com/rocketraft/rocketraft/protocol"
	"github.com/rocketraft/rocketraft/raftlog"
	"github.com/rocketraft/rocketraft/store"
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
	Timer          *protocol.TimerCheckpoint  `json:"timer,omitempty"`
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
	Timer   *protocol.TimerCheckpoint                    `json:"timer,omitempty"`
	Leader  *leaderAnnouncement                          `json:"leader,omitempty"`
}

// raftMeta is the Raft role's raftlog.MetaApplier: it applies metadata entries and snapshots to the tables
// through their managers' methods.
type raftMeta struct {
	topics   *topicConfigManager
	groups   *subscriptionGroupManager
	offsets  *consumerOffsetManager
	schedule *delay.Schedule
	timer    *delay.Timer
	queues   topicQueues // the store: a deleted topic's consume queues go
	role     *raftRole   // its offsets entries, leader announcements and the node's preferred-leader hold
	changed  func()      // the tables changed wholesale (a snapshot restored): the broker re-registers
	log      *slog.Logger
}

// topicQueues deletes topics' consume queues (*store.Store).
type topicQueues interface {
	// DeleteTopics drops the consume queues of topics and their next queue offsets; their records stay
	// in the CommitLog until it expires.
	DeleteTopics(topics []string) error
}

var (
	_ raftlog.MetaApplier = (*raftMeta)(nil)
	_ topicQueues         = (*store.Store)(nil)
)

// proposeMeta proposes cmd on the leader and returns what applying it here answered. A follower gets
// raftlog.ErrNotLeader.
func (r *raftRole) proposeMeta(cmd *metaCmd) (any, error) {
	data, err := json.Marshal(cmd)
	if err != nil {
		return nil, err
	}
	if !r.master.Load() {
		return nil, fmt.Errorf("%w: metadata changes are made on the master of Raft group %s", raftlog.ErrNotLeader, r.b.cfg.raftGroup())
	}
	ctx, cancel := context.WithTimeout(context.Background(), r.b.cfg.raftWaitAck())
	defer cancel()
	resp, err := r.node.ProposeMeta(ctx, data)
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
	var cmd metaCmd
	if err := json.Unmarshal(data, &cmd); err != nil {
		a.log.Error("raft: a metadata entry does not parse; skipped", "index", index, "err", err)
		return fmt.Errorf("raft: metadata entry %d: %w", index, err)
	}
	switch cmd.Op {
	case metaTopicPut, metaTopicCreate:
		if cmd.Topic == nil || cmd.Topic.TopicName == "" {
			return fmt.Errorf("raft: metadata entry %d: %s without a topic", index, cmd.Op)
		}
		return a.topics.apply(cmd.Topic, cmd.Op == metaTopicCreate)
	case metaTopicDelete:
		existed := a.topics.applyDelete(cmd.Name)
		a.offsets.removeTopic(cmd.Name)
		if !dispatched {
			if err := a.queues.DeleteTopics([]string{cmd.Name}); err != nil {
				a.log.Error("raft: delete the consume queues of a deleted topic", "topic", cmd.Name, "err", err)
			}
		}
		return existed
	case metaGroupPut, metaGroupCreate:
		if cmd.Group == nil || cmd.Group.GroupName == "" {
			return fmt.Errorf("raft: metadata entry %d: %s without a group", index, cmd.Op)
		}
		return a.groups.apply(cmd.Group, cmd.Op == metaGroupCreate)
	case metaGroupDelete:
		return a.groups.applyDelete(cmd.Name)
	case metaOffsets:
		if cmd.Origin == a.role.offsets.origin {
			return nil // proposed here: the local tables are at least this new
		}
		a.role.offsets.apply(&cmd)
		return nil
	case metaLeader:
		a.role.forward.announced(leaderAnnouncement{ID: cmd.Name, BrokerAddr: cmd.BrokerAddr, Term: cmd.Term})
		return nil
	case metaHold:
		a.role.node.HoldPreferredLeader(time.UnixMilli(cmd.HoldUntil)) // replayed after it ended: no effect
		return nil
	}
	a.log.Warn("raft: unknown metadata operation skipped", "index", index, "op", cmd.Op)
	return nil
}

// SnapshotMeta is the metadata as of the last entry applied (raftlog.MetaApplier).
func (a *raftMeta) SnapshotMeta() ([]byte, error) {
	timer := a.timer.Checkpoint()
	return json.Marshal(metaSnapshot{Topics: a.topics.snapshot().TopicConfigTable, Groups: a.groups.snapshot().SubscriptionGroupTable,
		Offsets: a.offsets.snapshot().OffsetTable, Delay: a.schedule.Offsets().OffsetTable, Timer: &timer,
		Leader: a.role.forward.lastAnnouncement()})
}

// RestoreMeta replaces the metadata with a snapshot's (raftlog.MetaApplier).
func (a *raftMeta) RestoreMeta(data []byte) error {
	var s metaSnapshot
	if len(data) == 0 {
		return nil // a snapshot taken without metadata
	}
	if err := json.Unmarshal(data, &s); err != nil {
		return fmt.Errorf("raft: snapshot metadata: %w", err)
	}
	a.topics.replace(s.Topics)
	a.groups.replace(s.Groups)
	a.offsets.replace(s.Offsets)
	a.schedule.ReplaceOffsets(s.Delay)
	if s.Timer != nil {
		a.timer.RestoreCheckpoint(*s.Timer)
	}
	if s.Leader != nil {
		a.role.forward.announced(*s.Leader)
	}
	a.role.offsets.reset()
	a.changed()
	return a.PersistMeta()
}

// PersistMeta writes the metadata files (raftlog.MetaApplier; the snapshot goroutine).
func (a *raftMeta) PersistMeta() error {
	return errors.Join(a.topics.persist(), a.groups.persist(), a.offsets.persist(true), a.schedule.Persist(), a.timer.Persist())
}

// The Raft role is the topic and subscription group managers' topicChanges and groupChanges: their
// changes are proposals, applied on every node by ApplyMeta.
var (
	_ topicChanges = (*raftRole)(nil)
	_ groupChanges = (*raftRole)(nil)
)

// createTopic proposes a topic unless it exists and returns the topic as it is now (the existing one when
// another proposal created it first). On a follower the topic is not created: the config is returned
// unstored, so a caller there (a heartbeat creating a retry topic) goes on; the master creates it when
// the client reaches it.
func (r *raftRole) createTopic(tc *protocol.TopicConfig) (*protocol.TopicConfig, bool, error) {
	resp, err := r.proposeMeta(&metaCmd{Op: metaTopicCreate, Topic: tc})
	if errors.Is(err, raftlog.ErrNotLeader) {
		return tc, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("raft: create topic %s: %w", tc.TopicName, err)
	}
	if got, ok := resp.(*protocol.TopicConfig); ok {
		c := *got
		return &c, false, nil
	}
	return tc, false, nil
}

// putTopic proposes a topic's config (create or replace).
func (r *raftRole) putTopic(tc *protocol.TopicConfig) error {
	_, err := r.proposeMeta(&metaCmd{Op: metaTopicPut, Topic: tc})
	return err
}

// deleteTopic proposes a topic's deletion and reports whether it existed.
func (r *raftRole) deleteTopic(topic string) (bool, error) {
	resp, err := r.proposeMeta(&metaCmd{Op: metaTopicDelete, Name: topic})
	existed, _ := resp.(bool)
	return existed, err
}

// createGroup proposes a subscription group unless it exists (a follower returns it unstored, as
// createTopic).
func (r *raftRole) createGroup(g *protocol.SubscriptionGroupConfig) *protocol.SubscriptionGroupConfig {
	resp, err := r.proposeMeta(&metaCmd{Op: metaGroupCreate, Group: g})
	if err != nil {
		if !errors.Is(err, raftlog.ErrNotLeader) {
			r.b.log.Warn("raft: create subscription group", "group", g.GroupName, "err", err)
		}
		return g
	}
	if got, ok := resp.(*protocol.SubscriptionGroupConfig); ok {
		c := *got
		return &c
	}
	return g
}

// putGroup proposes a subscription group's config.
func (r *raftRole) putGroup(g *protocol.SubscriptionGroupConfig) error {
	_, err := r.proposeMeta(&metaCmd{Op: metaGroupPut, Group: g})
	return err
}

// deleteGroup proposes a subscription group's deletion and reports whether it existed.
func (r *raftRole) deleteGroup(group string) (bool, error) {
	resp, err := r.proposeMeta(&metaCmd{Op: metaGroupDelete, Name: group})
	existed, _ := resp.(bool)
	return existed, err
}
