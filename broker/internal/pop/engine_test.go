package pop

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/rocketraft/rocketraft/internal/testutil"
	"github.com/rocketraft/rocketraft/protocol"
)

// The revive log is read once a term (when it begins) and never again: pops, acks, batch acks, changes of
// invisible time and the revive service keep the state from their own puts' results. A new term reads it
// again and finds the same messages in flight, whatever it read before (the read is idempotent).
func TestReviveLogReadOnceATerm(t *testing.T) {
	cfg := testConfig()
	h := newHarness(t, cfg)
	h.send(testTopic, 0, 10)
	got := h.pop(0, 6, time.Hour)
	if len(got) != 6 {
		t.Fatalf("popped %d, want 6", len(got))
	}
	afterLoad := h.reviveReads.Load()
	if afterLoad == 0 {
		t.Fatal("the first pop of the term did not read the revive log")
	}
	if err := h.ack(got[0]); err != nil {
		t.Fatal(err)
	}
	res, err := h.e.BatchAck(context.Background(), []protocol.BatchAck{batchAckOf(got[0], got[1], got[2])})
	if err != nil || res[0].Err != nil || len(res[0].NotInFlight) != 1 || res[0].NotInFlight[0] != got[0].offset {
		t.Fatalf("batch ack of an acked message and two others: %+v %v", res, err)
	}
	if _, err := h.e.ChangeInvisible(context.Background(), testGroup, testTopic, 0, got[3].offset, got[3].handle, time.Hour.Milliseconds()); err != nil {
		t.Fatal(err)
	}
	rest := h.pop(0, 32, 50*time.Millisecond) // redelivered from the retry topic soon
	if len(rest) != 4 {
		t.Fatalf("second pop: %d messages, want 4", len(rest))
	}
	retry := h.e.RetryTopic(testTopic, testGroup)
	testutil.WaitFor(t, 10*time.Second, "the revive service redelivered the second pop", func() bool {
		return h.st.MaxOffsetInQueue(retry, 0) >= 4
	})
	if n := h.reviveReads.Load(); n != afterLoad {
		t.Fatalf("the revive log was read %d times more during the term", n-afterLoad)
	}
	inFlight := h.e.InFlight()
	if f := inFlight[GroupQueue{testGroup, testTopic, 0}]; f.Count != 3 || f.First != got[3].offset {
		t.Fatalf("in flight %+v, want 3 from %d (the changed one and two unacked)", f, got[3].offset)
	}
	for range 2 {
		h.restart()
		if _, err := h.e.ensureLoaded(context.Background()); err != nil {
			t.Fatal(err)
		}
		a, b := h.e.InFlight()[GroupQueue{testGroup, testTopic, 0}], inFlight[GroupQueue{testGroup, testTopic, 0}]
		if a.Count != b.Count || a.First != b.First {
			t.Fatalf("after a restart in flight %+v, before %+v", a, b)
		}
	}
	if err := h.ack(got[0]); !errors.Is(err, ErrHandleNotInFlight) {
		t.Fatalf("ack of an acked message after the restart: %v", err)
	}
	if err := h.ack(got[4]); err != nil {
		t.Fatalf("ack of a message in flight after the restart: %v", err)
	}
}

// batchAckOf is the BATCH_ACK_MESSAGE entry of messages of one pop.
func batchAckOf(ps ...popped) protocol.BatchAck {
	h := ps[0].handle
	b := protocol.BatchAck{ConsumerGroup: testGroup, Topic: testTopic, Retry: h.RetryMark, StartOffset: h.CKQueueOffset,
		QueueID: h.QueueID, ReviveQueueID: h.ReviveQueueID, PopTime: h.PopTime, InvisibleTime: h.InvisibleTime}
	for _, p := range ps {
		b.SetOffset(p.offset)
	}
	return b
}
