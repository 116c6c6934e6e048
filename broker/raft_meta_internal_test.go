package broker

import (
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rocketraft/rocketraft/protocol"
	"github.com/rocketraft/rocketraft/raftlog"
	"github.com/rocketraft/rocketraft/remoting"
)

// raftTestBroker is a Raft-mode broker that is opened, not started: its state machine side is driven
// by calling the MetaApplier directly.
func raftTestBroker(t *testing.T) (*Broker, *raftMeta) {
	t.Helper()
	cfg := DefaultConfig()
	cfg.StorePathRootDir = t.TempDir()
	cfg.BrokerIP1 = "127.0.0.1"
	cfg.MetricsPort = 0
	cfg.MappedFileSizeCommitLog = 1 << 20
	cfg.MaxMessageSize = 64 << 10
	cfg.Raft.EnableDLegerCommitLog = true
	cfg.Raft.DLegerPeers = "n0-127.0.0.1:1;n1-127.0.0.1:2;n2-127.0.0.1:3"
	cfg.Raft.DLegerSelfId = "n1"
	b, err := New(cfg, Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b, b.raft.meta
}

func applyMeta(t *testing.T, m *raftMeta, index uint64, cmd metaCmd) any {
	t.Helper()
	data, err := json.Marshal(cmd)
	if err != nil {
		t.Fatal(err)
	}
	return m.ApplyMeta(index, data, false)
}

// TestRaftMetaApplyAndSnapshot: metadata commands applied twice in order give the same state (Raft
// replays after a restart); a snapshot restored on another node replaces its metadata, files included;
// a node skips its own offset entries; the timer checkpoint travels with the offsets.
func TestRaftMetaApplyAndSnapshot(t *testing.T) {
	b1, m1 := raftTestBroker(t)
	if got := b1.role.brokerID(); got != 2 {
		t.Fatalf("follower n1 registers as brokerId %d, want 2 (position + 1)", got)
	}
	cmds := []metaCmd{
		{Op: metaTopicPut, Topic: &protocol.TopicConfig{TopicName: "T1", ReadQueueNums: 4, WriteQueueNums: 4, Perm: protocol.PermRead | protocol.PermWrite}},
		{Op: metaTopicCreate, Topic: &protocol.TopicConfig{TopicName: "T1", ReadQueueNums: 1, WriteQueueNums: 1, Perm: protocol.PermRead}},
		{Op: metaTopicPut, Topic: &protocol.TopicConfig{TopicName: "Gone", ReadQueueNums: 1, WriteQueueNums: 1}},
		{Op: metaTopicDelete, Name: "Gone"},
		{Op: metaGroupPut, Group: defaultSubscriptionGroup("G1", 3)},
		{Op: metaOffsets, Origin: "n0/x", Offsets: map[string]map[int32]int64{"T1@G1": {0: 5, 1: 9}}, Delay: map[int]int64{1: 7}},
		{Op: metaOffsets, Origin: "n0/x", Offsets: map[string]map[int32]int64{"T1@G1": {1: 11}},
			Timer: &protocol.TimerCheckpoint{LowWater: 4, Delivered: []int64{6, 9}}},
	}
	for round := 0; round < 2; round++ {
		for i, c := range cmds {
			applyMeta(t, m1, uint64(i+1), c)
		}
		if tc := b1.topics.get("T1"); tc == nil || tc.ReadQueueNums != 4 {
			t.Fatalf("round %d: topic T1 = %+v, want the put's 4 queues (a create of an existing topic keeps it)", round, tc)
		}
		if b1.topics.get("Gone") != nil || b1.groups.get("G1") == nil {
			t.Fatalf("round %d: Gone %v, G1 %v", round, b1.topics.get("Gone"), b1.groups.get("G1"))
		}
		if q0, q1 := b1.offsets.query("G1", "T1", 0), b1.offsets.query("G1", "T1", 1); q0 != 5 || q1 != 11 {
			t.Fatalf("round %d: offsets %d, %d; want 5, 11", round, q0, q1)
		}
	}
	applyMeta(t, m1, 10, metaCmd{Op: metaOffsets, Origin: b1.raft.offsets.origin, Offsets: map[string]map[int32]int64{"T1@G1": {0: 1}}})
	if q0 := b1.offsets.query("G1", "T1", 0); q0 != 5 {
		t.Fatalf("a node applied its own offsets entry: offset %d, want 5", q0)
	}
	snap, err := m1.SnapshotMeta()
	if err != nil {
		t.Fatal(err)
	}

	b2, m2 := raftTestBroker(t)
	applyMeta(t, m2, 1, metaCmd{Op: metaTopicPut, Topic: &protocol.TopicConfig{TopicName: "OnlyHere", ReadQueueNums: 1, WriteQueueNums: 1}})
	if err := m2.RestoreMeta(snap); err != nil {
		t.Fatal(err)
	}
	if b2.topics.get("OnlyHere") != nil || b2.topics.get("T1") == nil || b2.groups.get("G1") == nil {
		t.Fatalf("after restore: OnlyHere %v, T1 %v, G1 %v", b2.topics.get("OnlyHere"), b2.topics.get("T1"), b2.groups.get("G1"))
	}
	if q1 := b2.offsets.query("G1", "T1", 1); q1 != 11 || b2.schedule.Offset(1) != 7 {
		t.Fatalf("after restore: offset %d (want 11), delay offset %d (want 7)", q1, b2.schedule.Offset(1))
	}
	want := protocol.TimerCheckpoint{LowWater: 4, Delivered: []int64{6, 9}}
	for i, b := range []*Broker{b1, b2} {
		if cp, scanned := b.timer.Checkpoint(), b.timer.Status(b.clock.Now()).Scanned; !cp.Equal(want) || scanned != 4 {
			t.Fatalf("node %d: timer checkpoint %+v scanned %d, want %+v scanned 4", i+1, cp, scanned, want)
		}
	}
	data, err := os.ReadFile(filepath.Join(b2.cfg.StorePathRootDir, "config", "topics.json"))
	if err != nil || !strings.Contains(string(data), `"T1"`) || strings.Contains(string(data), "OnlyHere") {
		t.Fatalf("topics.json after restore: %v\n%s", err, data)
	}
}

// TestRaftFollowerRefusesWrites: a node that is not master refuses sends with SERVICE_NOT_AVAILABLE and
// maps the proposer's errors to retriable answers; metadata changes on it fail with ErrNotLeader, except
// the creations made on the side of a client request (retry topics, groups), which are skipped.
func TestRaftFollowerRefusesWrites(t *testing.T) {
	b, _ := raftTestBroker(t)
	if resp := b.role.refuseWrite(); resp == nil || resp.Code != int32(remoting.ServiceNotAvailable) {
		t.Fatalf("a follower's send answer: %+v", resp)
	}
	for _, err := range []error{&raftlog.NotLeaderError{LeaderID: "n0"}, raftlog.ErrLeadershipLost, raftlog.ErrProposalTimeout, raftlog.ErrShutdown} {
		if resp := putErrorResponse(err, "T"); resp.Code != int32(remoting.ServiceNotAvailable) {
			t.Errorf("%v: %s, want SERVICE_NOT_AVAILABLE", err, remoting.ResponseCode(resp.Code))
		}
	}
	if err := b.topics.update(&protocol.TopicConfig{TopicName: "X", ReadQueueNums: 1, WriteQueueNums: 1}); !errors.Is(err, raftlog.ErrNotLeader) {
		t.Fatalf("topic update on a follower: %v", err)
	}
	tc, err := b.topics.createIfAbsent("%RETRY%G", 1, protocol.PermRead|protocol.PermWrite, 0)
	if err != nil || tc == nil || b.topics.get("%RETRY%G") != nil {
		t.Fatalf("retry topic on a follower: %+v, %v, stored %v", tc, err, b.topics.get("%RETRY%G"))
	}
	if g := b.groups.find("NewGroup"); g == nil || b.groups.get("NewGroup") != nil {
		t.Fatalf("group on a follower: %+v, stored %v", g, b.groups.get("NewGroup"))
	}
}
