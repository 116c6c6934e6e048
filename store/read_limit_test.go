package store

import (
	"math"
	"testing"
)

// TestReadStopsAtInvisibleRecord: a ConsumeQueue unit whose record lies past the read limit (in framed
// mode the state machine makes an entry's units visible before it raises the limit over the entry) ends
// the read there: the records before it are returned and the next offset is the unit itself, never past
// it, so no message is skipped. Once the limit moves on, the same offset reads the record.
func TestReadStopsAtInvisibleRecord(t *testing.T) {
	s := openStore(t, smallConfig(t), testOptions(t))
	var puts []PutResult
	for i := range 4 {
		puts = append(puts, mustPut(t, s, testMessage("T", 0, bodyOf(i, 100), nil)))
	}
	waitDispatched(t, s)

	// Records 0 and 1 visible, 2 and 3 not.
	s.commitLog.readLimit.Store(puts[2].PhysicalOffset)
	r, err := s.GetMessage("G", "T", 0, 0, 32, 1<<20, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != Found || r.MessageCount != 2 || r.NextBeginOffset != 2 {
		t.Fatalf("limit before record 2: status %v, %d messages, next %d; want Found, 2, 2", r.Status, r.MessageCount, r.NextBeginOffset)
	}
	r.Release()

	// Nothing visible from offset 2: nothing found, the next offset stays at 2.
	r, err = s.GetMessage("G", "T", 0, 2, 32, 1<<20, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.MessageCount != 0 || r.NextBeginOffset != 2 {
		t.Fatalf("from offset 2: %d messages, next %d; want 0, 2", r.MessageCount, r.NextBeginOffset)
	}
	r.Release()

	s.commitLog.readLimit.Store(math.MaxInt64)
	r, err = s.GetMessage("G", "T", 0, 2, 32, 1<<20, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != Found || r.MessageCount != 2 || r.NextBeginOffset != 4 {
		t.Fatalf("limit lifted: status %v, %d messages, next %d; want Found, 2, 4", r.Status, r.MessageCount, r.NextBeginOffset)
	}
	r.Release()
}
