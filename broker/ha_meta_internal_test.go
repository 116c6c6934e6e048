package broker

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/rocketraft/rocketraft/protocol"
)

// TestHAMetaOffsetsRecordsFit: an offsets change is packed into records whose bodies stay within
// maxMessageSize, and the records together carry exactly the change (a key's queues split over records
// when one key alone is too large).
func TestHAMetaOffsetsRecordsFit(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	for _, maxBody := range []int{1024, 4096, 65536} {
		for round := range 6 {
			set := map[string]map[int32]int64{}
			for k := range rnd.IntN(150) {
				key := fmt.Sprintf("topic-%d-%s@group-%d", k, strings.Repeat("<\x00", rnd.IntN(40)), rnd.IntN(9)) // escaped in JSON
				q := map[int32]int64{}
				for range 1 + rnd.IntN(100) {
					q[rnd.Int32N(1024)] = rnd.Int64()
				}
				set[key] = q
			}
			var removed []string
			for k := range rnd.IntN(200) {
				removed = append(removed, fmt.Sprintf("gone-%d@g", k))
			}
			delay := map[int]int64{1: rnd.Int64(), 18: rnd.Int64()}
			l := &haMetaLog{maxBody: maxBody}
			recs := l.offsetsRecords(set, removed, delay)
			gotSet := map[string]map[int32]int64{}
			var gotRemoved []string
			gotDelay := map[int]int64{}
			for _, r := range recs {
				body, err := json.Marshal(r)
				if err != nil {
					t.Fatal(err)
				}
				if len(body) > maxBody {
					t.Fatalf("maxBody %d round %d: a record of %d bytes", maxBody, round, len(body))
				}
				for k, q := range r.Offsets {
					if gotSet[k] == nil {
						gotSet[k] = map[int32]int64{}
					}
					maps.Copy(gotSet[k], q)
				}
				gotRemoved = append(gotRemoved, r.RemovedOffsets...)
				maps.Copy(gotDelay, r.Delay)
			}
			if !mapsEqualNested(gotSet, set) || !slices.Equal(gotRemoved, removed) || !maps.Equal(gotDelay, delay) {
				t.Fatalf("maxBody %d round %d: the %d records do not carry the change", maxBody, round, len(recs))
			}
		}
	}
}

func mapsEqualNested(a, b map[string]map[int32]int64) bool {
	return maps.EqualFunc(a, b, func(x, y map[int32]int64) bool { return maps.Equal(x, y) })
}

func TestHAMetaDiffOffsets(t *testing.T) {
	prev := map[string]map[int32]int64{"a@g": {0: 1, 1: 2}, "b@g": {0: 5}}
	cur := map[string]map[int32]int64{"a@g": {0: 1, 1: 3, 2: 0}, "c@g": {0: 7}}
	set, removed := diffOffsets(prev, cur)
	want := map[string]map[int32]int64{"a@g": {1: 3, 2: 0}, "c@g": {0: 7}}
	if !mapsEqualNested(set, want) || !slices.Equal(removed, []string{"b@g"}) {
		t.Fatalf("diff %v removed %v, want %v and [b@g]", set, removed, want)
	}
	if set, removed := diffOffsets(cur, cur); set != nil || removed != nil {
		t.Fatalf("no change gave %v %v", set, removed)
	}
}

// TestHAMetaCopyAfterRecords: a copy of the master's topics taken before a change the slave has from a
// record is skipped; a newer copy is taken; a master whose counter started again (topics.json lost) has
// newer timestamps, and its copy is taken. Offsets copies are skipped when an offsets record came
// meanwhile, and offsets a record set are not taken for commits made on the slave.
func TestHAMetaCopyAfterRecords(t *testing.T) {
	cfg := DefaultConfig()
	cfg.StorePathRootDir = t.TempDir()
	log := slog.New(slog.DiscardHandler)
	m := &slaveMeta{topics: newTopicConfigManager(&cfg, log), groups: newSubscriptionGroupManager(&cfg, log),
		offsets: newConsumerOffsetManager(&cfg, log), log: log}
	m.mu.synced = map[string]map[int32]int64{}
	before := m.topics.snapshot().TopicConfigTable

	apply := func(rec *haMetaRecord) {
		m.mu.Lock()
		m.applyLocked(rec, &tablesChanged{})
		m.mu.Unlock()
	}
	v5 := protocol.DataVersion{Timestamp: 2000, Counter: 5}
	apply(&haMetaRecord{Op: haMetaTopicPut, Topic: &protocol.TopicConfig{TopicName: "T", ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6},
		Version: &v5})
	if got := m.topics.currentVersion(); got != v5 {
		t.Fatalf("table version %+v after the record, want %+v", got, v5)
	}
	if m.takeTopicCopy(protocol.TopicConfigSerializeWrapper{TopicConfigTable: before, DataVersion: protocol.DataVersion{Timestamp: 1000, Counter: 4}}) {
		t.Fatal("a copy older than the record was taken")
	}
	if m.topics.get("T") == nil {
		t.Fatal("the record's topic is gone")
	}
	if m.takeTopicCopy(protocol.TopicConfigSerializeWrapper{TopicConfigTable: before, DataVersion: v5}) {
		t.Fatal("a copy with the table's own version replaced it")
	}
	newer := maps.Clone(before)
	newer["T"] = &protocol.TopicConfig{TopicName: "T", ReadQueueNums: 8, WriteQueueNums: 8, Perm: 6, Attributes: map[string]string{}}
	newer["U"] = &protocol.TopicConfig{TopicName: "U", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6, Attributes: map[string]string{}}
	if !m.takeTopicCopy(protocol.TopicConfigSerializeWrapper{TopicConfigTable: newer, DataVersion: protocol.DataVersion{Timestamp: 3000, Counter: 7}}) ||
		m.topics.get("U") == nil || m.topics.get("T").ReadQueueNums != 8 {
		t.Fatal("a newer copy was not taken")
	}
	if !m.takeTopicCopy(protocol.TopicConfigSerializeWrapper{TopicConfigTable: before, DataVersion: protocol.DataVersion{Timestamp: 9000, Counter: 1}}) {
		t.Fatal("the copy of a master whose counter started again was skipped")
	}

	gen := m.offsetsGeneration()
	apply(&haMetaRecord{Op: haMetaOffsets, Offsets: map[string]map[int32]int64{"T@g": {0: 10}}})
	if m.takeOffsetsCopy(gen, map[string]map[int32]int64{"T@g": {0: 3}}) {
		t.Fatal("an offsets copy fetched before a record was merged")
	}
	if got := m.offsets.query("g", "T", 0); got != 10 {
		t.Fatalf("offset %d, want the record's 10", got)
	}
	m.offsets.commit("g", "T", 0, 12) // a consumer of the slave, the master away
	apply(&haMetaRecord{Op: haMetaOffsets, Offsets: map[string]map[int32]int64{"T@g": {0: 11}}})
	if got := m.offsets.query("g", "T", 0); got != 12 {
		t.Fatalf("offset %d after a record of 11, want the slave's own commit 12 kept", got)
	}
	apply(&haMetaRecord{Op: haMetaOffsets, RemovedOffsets: []string{"T@g"}})
	if got := m.offsets.query("g", "T", 0); got != -1 {
		t.Fatalf("offset %d after its removal, want -1", got)
	}
}
