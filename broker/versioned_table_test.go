package broker

import (
	"maps"
	"slices"
	"testing"

	"github.com/rocketraft/rocketraft/protocol"
)

// TestTakeChanges: a tracking table hands out the entries put since the last take with the version that
// counts them, says when an entry was removed or the table replaced (only the whole table tells that), and
// starts over after each take.
func TestTakeChanges(t *testing.T) {
	tb := newVersionedTable[protocol.TopicConfig]()
	tb.trackChanges()
	tb.put("A", &protocol.TopicConfig{TopicName: "A", ReadQueueNums: 1})
	tb.putIfAbsent("B", func() *protocol.TopicConfig { return &protocol.TopicConfig{TopicName: "B"} })
	tb.putIfAbsent("B", func() *protocol.TopicConfig { t.Fatal("B made twice"); return nil })
	tb.put("A", &protocol.TopicConfig{TopicName: "A", ReadQueueNums: 2})
	got, version, dropped := tb.takeChanges()
	if names := slices.Sorted(maps.Keys(got)); !slices.Equal(names, []string{"A", "B"}) || dropped {
		t.Fatalf("first take: %v, dropped %v; want [A B], false", names, dropped)
	}
	if got["A"].ReadQueueNums != 2 || version.Counter != 3 {
		t.Fatalf("first take: A with %d read queues at version %d, want 2 at 3", got["A"].ReadQueueNums, version.Counter)
	}
	if got, _, dropped := tb.takeChanges(); len(got) != 0 || dropped {
		t.Fatalf("second take: %d changes, dropped %v; want none", len(got), dropped)
	}
	tb.put("C", &protocol.TopicConfig{TopicName: "C"})
	tb.remove("C")
	tb.remove("A")
	got, version, dropped = tb.takeChanges()
	if len(got) != 0 || !dropped || version.Counter != 6 {
		t.Fatalf("take after removals: %d changes, dropped %v, version %d; want 0, true, 6", len(got), dropped, version.Counter)
	}
	if !tb.replaceFrom(map[string]*protocol.TopicConfig{"D": {TopicName: "D"}}, protocol.DataVersion{Counter: 9}) {
		t.Fatal("replaceFrom with another version replaced nothing")
	}
	if _, _, dropped = tb.takeChanges(); !dropped {
		t.Fatal("a replaced table is not reported as dropped")
	}
	tb.replace(map[string]*protocol.TopicConfig{"E": {TopicName: "E"}}) // a Raft snapshot restored
	if _, _, dropped = tb.takeChanges(); !dropped {
		t.Fatal("a table replaced from a snapshot is not reported as dropped")
	}
}
