package broker

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"testing"

	"github.com/rocketraft/rocketraft/protocol"
)

// TestTopicsFileEncoding: topics.json from the per-topic fragments is byte for byte json.MarshalIndent's,
// after creations, an update in place, a removal, and for names JSON escapes; it reads back to the table.
func TestTopicsFileEncoding(t *testing.T) {
	cfg := DefaultConfig()
	m := newTopicConfigManager(&cfg, slog.New(slog.DiscardHandler))
	check := func(step string) {
		t.Helper()
		got, err := m.encodeTopicsFile()
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		want, err := json.MarshalIndent(m.snapshot(), "", "\t")
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%s: encoded\n%s\nwant\n%s", step, got, want)
		}
		var back protocol.TopicConfigSerializeWrapper
		if err := json.Unmarshal(got, &back); err != nil || len(back.TopicConfigTable) != m.size() {
			t.Fatalf("%s: reads back %d topics (%v), want %d", step, len(back.TopicConfigTable), err, m.size())
		}
	}
	check("system topics")
	for _, name := range []string{"T1", "T2", `we"ird<&>`, "Ä"} {
		m.put(name, &protocol.TopicConfig{TopicName: name, ReadQueueNums: 8, WriteQueueNums: 8, Perm: 6, Attributes: map[string]string{"+k": "v"}})
	}
	check("after creations")
	m.put("T1", &protocol.TopicConfig{TopicName: "T1", ReadQueueNums: 2, WriteQueueNums: 2, Perm: 4})
	check("after an update")
	m.remove("T2")
	check("after a removal")
	empty := &topicConfigManager{versionedTable: newVersionedTable[protocol.TopicConfig]()}
	if got, _ := empty.encodeTopicsFile(); !bytes.Contains(got, []byte(`"topicConfigTable": {},`)) {
		t.Fatalf("empty table encoded as\n%s", got)
	}
}
