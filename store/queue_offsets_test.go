package store

import (
	"errors"
	"fmt"
	"testing"
)

// TestFramedSeedQueueOffsets: a replica seeded with another's table of next queue offsets
// (a Raft snapshot install whose files hold no record of queue B/0) reads B/0 as a queue
// whose records expired: minimum and maximum at the seed; its next record gets the seed, and
// so does the same record dispatched again after a crash that lost its unit (recovery keeps
// the fillers before the unit it cuts) or after a clean restart.
func TestFramedSeedQueueOffsets(t *testing.T) {
	src := openFramed(t, smallConfig(t))
	for i := range 10 {
		dispatchFramed(t, src, appendFramed(t, src, testMessage("B", 0, bodyOf(i, 100), nil)))
	}
	for i := range 3 {
		dispatchFramed(t, src, appendFramed(t, src, testMessage("T", 1, bodyOf(i, 100), nil)))
	}
	table := src.QueueOffsetTable()
	if got := fmt.Sprint(table); got != "[{B 0 10} {T 1 3}]" {
		t.Fatalf("QueueOffsetTable = %s", got)
	}

	cfg := smallConfig(t)
	cfg.FlushConsumeQueueThoroughInterval = 3600 * 1000 // the checkpoint stays where the test flushes it
	dst := openFramed(t, cfg)
	if err := dst.SeedQueueOffsets(table); err != nil {
		t.Fatalf("SeedQueueOffsets: %v", err)
	}
	if err := dst.SeedQueueOffsets([]QueueNext{{Topic: "B", QueueID: 0, Next: 4}}); err != nil {
		t.Fatalf("SeedQueueOffsets below the end: %v", err)
	}
	bounds := func(s *Store, topic string, q int32) string {
		return fmt.Sprintf("[%d, %d)", s.MinOffsetInQueue(topic, q), s.MaxOffsetInQueue(topic, q))
	}
	for _, e := range table {
		if got, want := bounds(dst, e.Topic, e.QueueID), fmt.Sprintf("[%d, %d)", e.Next, e.Next); got != want {
			t.Fatalf("%s/%d after the seed: %s, want %s", e.Topic, e.QueueID, got, want)
		}
	}
	if err := dst.Flush(); err != nil { // the checkpoint: nothing of B/0 dispatched yet
		t.Fatal(err)
	}
	e := appendFramed(t, dst, testMessage("B", 0, bodyOf(10, 100), nil))
	if got := dispatchFramed(t, dst, e)[0].QueueOffset; got != 10 {
		t.Fatalf("the next B/0 record got queue offset %d, want 10", got)
	}

	crashed := t.TempDir()
	copyDir(t, cfg.StorePathRootDir, crashed)
	crashCfg := cfg
	crashCfg.StorePathRootDir = crashed
	c := openFramed(t, crashCfg)
	if got := bounds(c, "B", 0); got != "[10, 10)" {
		t.Fatalf("B/0 after the crash (its unit past the checkpoint cut): %s, want [10, 10)", got)
	}
	if got := dispatchFramed(t, c, framedEntryAt(t, c, e.pos))[0].QueueOffset; got != 10 {
		t.Fatalf("B/0's record dispatched again after the crash got queue offset %d, want 10", got)
	}
	if got := readQueue(t, c, "B", 0); len(got) != 1 || got[0].QueueOffset != 10 {
		t.Fatalf("B/0 after the crash reads %d records", len(got))
	}

	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
	r := openFramed(t, cfg)
	if got := bounds(r, "T", 1); got != "[3, 3)" {
		t.Fatalf("T/1 (seeded only) after a restart: %s, want [3, 3)", got)
	}
	if got := bounds(r, "B", 0); got != "[10, 11)" {
		t.Fatalf("B/0 after a restart: %s, want [10, 11)", got)
	}
}

func TestSeedQueueOffsetsRefused(t *testing.T) {
	s := openFramed(t, smallConfig(t))
	err := s.SeedQueueOffsets([]QueueNext{{Topic: "", QueueID: 0, Next: 3}, {Topic: "T", QueueID: -1, Next: 3}})
	if err == nil || s.MaxOffsetInQueue("T", -1) != 0 {
		t.Fatalf("SeedQueueOffsets of no queue = %v", err)
	}
	classic := openStore(t, smallConfig(t), testOptions(t))
	if err := classic.SeedQueueOffsets([]QueueNext{{Topic: "T", QueueID: 0, Next: 3}}); !errors.Is(err, errNotFramed) {
		t.Fatalf("SeedQueueOffsets on a classic store = %v, want errNotFramed", err)
	}
}
