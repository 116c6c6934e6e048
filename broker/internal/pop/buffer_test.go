package pop

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/rocketraft/rocketraft/internal/testutil"
	"github.com/rocketraft/rocketraft/protocol"
)

// reviveRecords is how many records the revive log holds (dispatched).
func (h *harness) reviveRecords() int64 {
	var n int64
	for q := range h.cfg.ReviveQueueNum {
		n += h.st.MaxOffsetInQueue(protocol.ReviveTopic(testCluster), q)
	}
	return n
}

func (h *harness) popOffset(q int32) int64 { return h.offsets.Query(testGroup, testTopic, q) }

// A pop acked within popCkStayBufferTime writes no record at all; the group's pop offset moves past it once
// it is acked, and stays at its start until then.
func TestBufferedPopAckedWritesNothing(t *testing.T) {
	for _, merge := range []bool{true, false} {
		t.Run(fmt.Sprintf("enablePopBufferMerge=%v", merge), func(t *testing.T) {
			cfg := testConfig()
			cfg.EnablePopBufferMerge = merge
			cfg.PopCkStayBufferTime = 300
			h := newHarness(t, cfg)
			offs := h.send(testTopic, 0, 8)
			got := h.pop(0, 32, time.Hour)
			if len(got) != 8 {
				t.Fatalf("popped %d, want 8", len(got))
			}
			if merge {
				if off := h.popOffset(0); off != offs[0] {
					t.Fatalf("pop offset %d with the pop unacked and in the buffer, want its start %d", off, offs[0])
				}
			}
			res, err := h.e.BatchAck(context.Background(), []protocol.BatchAck{batchAckOf(got...)})
			if err != nil || res[0].Err != nil || len(res[0].NotInFlight) != 0 {
				t.Fatalf("batch ack: %+v %v", res, err)
			}
			if off := h.popOffset(0); off != offs[7]+1 {
				t.Fatalf("pop offset %d after the ack, want %d", off, offs[7]+1)
			}
			time.Sleep(2 * time.Duration(cfg.PopCkStayBufferTime) * time.Millisecond) // past the stay: nothing to wait for
			want := int64(0)
			if !merge {
				want = 2 // its check point and one batch ack
				testutil.WaitFor(t, 10*time.Second, "the records dispatched", func() bool { return h.reviveRecords() >= want })
			}
			if n := h.reviveRecords(); n != want {
				t.Fatalf("%d revive records for a pop of 8 acked in one batch, want %d", n, want)
			}
		})
	}
}

// A pop not acked within popCkStayBufferTime gets its check point written (then the pop offset passes
// it), and its acks so far in one ack record after it; an ack after that writes its own record.
func TestBufferedPopStoredAfterItsStay(t *testing.T) {
	cfg := testConfig()
	cfg.PopCkStayBufferTime = 200
	h := newHarness(t, cfg)
	offs := h.send(testTopic, 0, 4)
	got := h.pop(0, 32, time.Hour)
	if err := h.ack(got[0]); err != nil {
		t.Fatal(err)
	}
	if off := h.popOffset(0); off != offs[0] {
		t.Fatalf("pop offset %d before the stay, want %d", off, offs[0])
	}
	testutil.WaitFor(t, 10*time.Second, "the check point written after its stay", func() bool { return h.popOffset(0) == offs[3]+1 })
	testutil.WaitFor(t, 10*time.Second, "its record and the ack so far", func() bool { return h.reviveRecords() == 2 })
	if err := h.ack(got[1]); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 10*time.Second, "one ack record more", func() bool { return h.reviveRecords() == 3 })
	if err := h.ack(got[0]); err == nil {
		t.Fatal("an ack of an acked message succeeded")
	}
	h.restart() // the log says the same: two of four in flight
	if _, err := h.e.ensureLoaded(context.Background()); err != nil {
		t.Fatal(err)
	}
	if f := h.e.InFlight()[GroupQueue{testGroup, testTopic, 0}]; f.Count != 2 || f.First != offs[2] {
		t.Fatalf("after a restart in flight %+v, want 2 from %d", f, offs[2])
	}
}

// A change of invisible time of a buffered message writes the check points of its pop and of the queue's
// pops before it first: the new check point's record lifts the pop offset after a crash, past the pops.
func TestChangeOfBufferedPopWritesItsQueueFirst(t *testing.T) {
	cfg := testConfig()
	h := newHarness(t, cfg)
	h.send(testTopic, 0, 6)
	first := h.pop(0, 3, time.Hour)
	second := h.pop(0, 3, time.Hour)
	if len(first) != 3 || len(second) != 3 {
		t.Fatalf("popped %d and %d, want 3 and 3", len(first), len(second))
	}
	if _, err := h.e.ChangeInvisible(context.Background(), testGroup, testTopic, 0, second[1].offset, second[1].handle, time.Hour.Milliseconds()); err != nil {
		t.Fatal(err)
	}
	h.crash(h.offsets.snapshot())
	if _, err := h.e.ensureLoaded(context.Background()); err != nil {
		t.Fatal(err)
	}
	f := h.e.InFlight()[GroupQueue{testGroup, testTopic, 0}]
	if f.Count != 6 || f.First != first[0].offset {
		t.Fatalf("after a crash in flight %+v, want all 6 from %d (both pops' check points and the change's)", f, first[0].offset)
	}
}

// Nothing popped and not acked is lost by a crash, whatever was in the buffer, written or half written, and
// whatever of the offset table the crash left (the table as it was, or as it was a while before): every
// such message is delivered again, from the queue (its pop offset) or the retry topic (its check point).
// Seeded: each seed a random run of pops, acks, batch acks, changes of invisible time and waits.
func TestCrashLosesNoMessageInFlight(t *testing.T) {
	for seed := range uint64(12) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { crashRun(t, seed) })
	}
}

func crashRun(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 38))
	cfg := testConfig()
	cfg.PopCkStayBufferTime = 60 + int64(rng.IntN(200))
	cfg.PopCkMaxBufferSize = int64(2 + rng.IntN(8))
	h := newHarness(t, cfg)
	const n = 60
	sent := map[string]bool{}
	for q := range int32(2) {
		h.send(testTopic, q, n/2)
		for i := range n / 2 {
			sent[fmt.Sprintf("%d/%d", q, i)] = true
		}
	}
	keyOf := func(p popped) string { return p.body }
	acked := map[string]bool{} // acked, as the engine answered
	var inHand []popped
	var persisted map[GroupQueue]int64
	ops := 10 + rng.IntN(30)
	for i := range ops {
		if i == ops/2 || persisted == nil && rng.IntN(4) == 0 {
			persisted = h.offsets.snapshot() // a persist of the table, while the run goes on
		}
		switch op := rng.IntN(10); {
		case op < 4:
			got := h.pop(int32(rng.IntN(2)), 1+rng.IntN(6), time.Duration(200+rng.IntN(800))*time.Millisecond)
			inHand = append(inHand, got...)
		case op < 6 && len(inHand) > 0:
			j := rng.IntN(len(inHand))
			if err := h.ack(inHand[j]); err == nil {
				acked[keyOf(inHand[j])] = true
			}
			inHand = append(inHand[:j], inHand[j+1:]...)
		case op < 7 && len(inHand) > 1:
			p := inHand[0]
			batch := []popped{p}
			for _, o := range inHand[1:] {
				if o.handle.CKQueueOffset == p.handle.CKQueueOffset && o.handle.PopTime == p.handle.PopTime && o.topic == p.topic {
					batch = append(batch, o)
				}
			}
			res, err := h.e.BatchAck(context.Background(), []protocol.BatchAck{batchAckOf(batch...)})
			if err != nil {
				t.Fatal(err)
			}
			missed := map[int64]bool{}
			for _, o := range res[0].NotInFlight {
				missed[o] = true
			}
			for _, b := range batch {
				if res[0].Err == nil && !missed[b.offset] {
					acked[keyOf(b)] = true
				}
			}
			inHand = inHand[len(batch):]
		case op < 8 && len(inHand) > 0:
			p := inHand[0]
			_, _ = h.e.ChangeInvisible(context.Background(), testGroup, p.topic, p.handle.QueueID, p.offset, p.handle,
				int64(100+rng.IntN(500)))
			inHand = inHand[1:]
		default:
			time.Sleep(time.Duration(rng.IntN(150)) * time.Millisecond)
		}
	}
	if rng.IntN(2) == 0 {
		persisted = h.offsets.snapshot() // the table as it was at the crash
	}
	h.crash(persisted)
	// Drain: pop and ack everything until every message not acked before the crash came back.
	want := map[string]bool{}
	for k := range sent {
		if !acked[k] {
			want[k] = true
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for len(want) > 0 && time.Now().Before(deadline) {
		a, err := h.e.Pop(context.Background(), &Request{Group: testGroup, Topic: testTopic, QueueID: -1, ReadQueues: 2,
			Max: 32, Invisible: 100, InitMode: protocol.PopInitModeMin})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range h.decode(a) {
			delete(want, keyOf(p))
			_ = h.ack(p)
		}
		a.Release()
		if a.Count == 0 {
			time.Sleep(20 * time.Millisecond)
		}
	}
	if len(want) > 0 {
		t.Fatalf("seed %d: %d messages popped and not acked before the crash never came back: %v (stay %d ms, buffer %d)",
			seed, len(want), want, cfg.PopCkStayBufferTime, cfg.PopCkMaxBufferSize)
	}
}
