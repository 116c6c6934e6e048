package bench

import (
	"context"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
)

// TestOffsetRanges adds random offsets, in order, out of order and repeated, and checks every answer and the
// final contents against a map.
func TestOffsetRanges(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		var s offsetRanges
		ref := map[int64]bool{}
		span := int64(1 + rng.IntN(64))
		for range 300 {
			v := rng.Int64N(span)
			if got, want := s.add(v), !ref[v]; got != want {
				t.Fatalf("round %d: add(%d) = %v, want %v (ranges %v)", round, v, got, want, s.r)
			}
			ref[v] = true
		}
		for i, r := range s.r {
			if r[0] >= r[1] || (i > 0 && s.r[i-1][1] >= r[0]) {
				t.Fatalf("round %d: ranges not sorted, disjoint and apart: %v", round, s.r)
			}
			for v := r[0]; v < r[1]; v++ {
				if !ref[v] {
					t.Fatalf("round %d: %d in %v, never added", round, v, s.r)
				}
				delete(ref, v)
			}
		}
		if len(ref) != 0 {
			t.Fatalf("round %d: added but missing: %v (ranges %v)", round, ref, s.r)
		}
	}
	var s offsetRanges
	for v := range int64(100_000) {
		s.add(v)
	}
	if s.ranges() != 1 {
		t.Fatalf("a queue read in order holds %d ranges, want 1", s.ranges())
	}
}

// newTestOfficialConsumer is an official consumer's counting side, without a client: the tests call handle
// as the client's consume goroutines would.
func newTestOfficialConsumer(quota int64) (*officialConsumer, *Stats, context.Context) {
	stats := newStats(roleConsumer, nil)
	ctx, cancel := context.WithCancel(context.Background())
	c := &officialConsumer{cfg: &ConsumerConfig{}, stats: stats, prog: &progress{quota: quota, cancel: cancel},
		seen: newDistinct()}
	for range 2 {
		c.meters = append(c.meters, stats.NewMeter())
	}
	return c, stats, ctx
}

func testMessage(queue int, offset int64) *primitive.MessageExt {
	m := &primitive.MessageExt{QueueOffset: offset, BornTimestamp: 1, StoreTimestamp: 1}
	m.Topic, m.Body = "T", []byte("body")
	m.Queue = &primitive.MessageQueue{Topic: "T", BrokerName: "b", QueueId: queue}
	return m
}

// TestOfficialConsumerCountsDistinct: a message handed over again (same queue and offset) counts as a
// duplicate, not towards the quota, and the quota ends the run after that many distinct messages.
func TestOfficialConsumerCountsDistinct(t *testing.T) {
	c, stats, ctx := newTestOfficialConsumer(6)
	for _, batch := range [][2]int64{{0, 0}, {0, 1}, {0, 0}, {1, 0}, {0, 1}, {1, 1}, {1, 2}} {
		c.handle(ctx, testMessage(int(batch[0]), batch[1]))
	}
	if ctx.Err() != nil {
		t.Fatal("the run ended before the quota of distinct messages")
	}
	c.handle(ctx, testMessage(2, 0), testMessage(2, 1), testMessage(2, 2)) // one over the quota
	if ctx.Err() == nil {
		t.Fatal("the run did not end at the quota")
	}
	c.end()
	sum := stats.Summary(time.Now())
	if sum.Messages != 6 || sum.Duplicates != 2 {
		t.Fatalf("counted %d messages and %d duplicates, want 6 and 2", sum.Messages, sum.Duplicates)
	}
}

// TestOfficialConsumerEndWaitsForCallbacks is issue 36's flake: a callback that has claimed its messages but
// not recorded them when the quota ends the run. The end must wait for it, so the summary holds exactly the
// quota. The test holds the callback's meter, which stops it between its claim and its record.
func TestOfficialConsumerEndWaitsForCallbacks(t *testing.T) {
	c, stats, ctx := newTestOfficialConsumer(2)
	c.meters = c.meters[:1] // every callback records into the meter the test holds
	m := c.meters[0]
	m.mu.Lock()
	recorded := make(chan struct{})
	go func() {
		c.handle(ctx, testMessage(0, 0)) // claims 1 of 2, then waits for the meter
		close(recorded)
	}()
	for c.prog.n.Load() != 1 {
		time.Sleep(time.Millisecond) // polling for the claim, no timing assumed
	}
	var wg sync.WaitGroup
	wg.Go(func() { c.handle(ctx, testMessage(0, 1)) }) // claims the last one: the run ends
	<-ctx.Done()
	ended := make(chan struct{})
	go func() {
		c.end()
		close(ended)
	}()
	select {
	case <-ended:
		m.mu.Unlock()
		t.Fatal("the run ended while a callback had not recorded what it took")
	case <-time.After(100 * time.Millisecond): // a bound on watching for a wrong early end, not a wait for the right one
	}
	m.mu.Unlock()
	<-recorded
	wg.Wait()
	<-ended
	if sum := stats.Summary(time.Now()); sum.Messages != 2 {
		t.Fatalf("counted %d messages, want 2", sum.Messages)
	}
	c.handle(ctx, testMessage(0, 2)) // after the end: counted nowhere
	if sum := stats.Summary(time.Now()); sum.Messages != 2 || sum.Duplicates != 0 {
		t.Fatalf("after the end: %d messages, %d duplicates; want 2 and 0", sum.Messages, sum.Duplicates)
	}
}
