package bench

import (
	"bytes"
	"context"
	"encoding/binary"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rocketraft/rocketraft/client"

	"github.com/rocketraft/rocketraft/message"
)

func TestWorkerQuota(t *testing.T) {
	for _, tc := range []struct {
		total int64
		n     int
	}{{10, 3}, {3, 10}, {16, 16}, {1000, 7}} {
		var sum int64
		for i := range tc.n {
			q := workerQuota(tc.total, tc.n, i)
			if q < 0 {
				t.Fatalf("total %d over %d: worker %d quota %d", tc.total, tc.n, i, q)
			}
			sum += q
		}
		if sum != tc.total {
			t.Errorf("total %d over %d workers: quotas add up to %d", tc.total, tc.n, sum)
		}
	}
	if q := workerQuota(0, 4, 1); q != -1 {
		t.Errorf("no total: quota %d, want -1 (no limit)", q)
	}
}

// TestProgressTake: concurrent takers count exactly the quota, and reaching it ends the run.
func TestProgressTake(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	p := &progress{quota: 1000, cancel: cancel}
	var (
		mu    sync.Mutex
		taken int
		wg    sync.WaitGroup
	)
	for range 8 {
		wg.Go(func() {
			for range 50 {
				n := p.take(3)
				mu.Lock()
				taken += n
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if taken != 1000 {
		t.Errorf("took %d, want the quota 1000", taken)
	}
	if ctx.Err() == nil {
		t.Error("reaching the quota did not end the run")
	}
	unlimited := &progress{cancel: func() { t.Error("cancelled without a quota") }}
	if n := unlimited.take(5); n != 5 {
		t.Errorf("no quota: took %d of 5", n)
	}
}

func TestStatsProducer(t *testing.T) {
	var out bytes.Buffer
	s := newStats(roleProducer, &out)
	start := time.Unix(1000, 0)
	s.Start(start)
	m1, m2 := s.NewMeter(), s.NewMeter()
	for i := 1; i <= 1000; i++ {
		m := m1
		if i%2 == 0 {
			m = m2
		}
		m.Sent(1, 100, time.Duration(i)*time.Microsecond*10) // 10 µs .. 10 ms
	}
	m1.Failed(context.DeadlineExceeded)
	m2.Rejected("SYSTEM_BUSY (2)")
	s.Report(start.Add(time.Second))
	if line := out.String(); !strings.Contains(line, "Send TPS: 1000 |") || !strings.Contains(line, "Send Failed: 1 | Response Failed: 1") {
		t.Errorf("report line %q", line)
	}
	m1.Sent(16, 100, time.Millisecond)
	sum := s.Summary(start.Add(2 * time.Second))
	if sum.Messages != 1016 || sum.Bytes != 101600 || sum.Failed != 1 || sum.Rejected != 1 || sum.MsgsPerSec != 508 {
		t.Errorf("summary %+v", sum)
	}
	if sum.FirstError == "" {
		t.Error("summary without the first failure")
	}
	l := sum.Latency
	if l.Count != 1001 || math.Abs(l.P50-5) > 0.1 || math.Abs(l.P99-9.9) > 0.1 || math.Abs(l.Max-10) > 0.02 {
		t.Errorf("latency %+v: want 1001 values, p50 ~5 ms, p99 ~9.9 ms, max ~10 ms", l)
	}
}

// TestStatsConsumerWindow: a consumer's rate counts from its first message to its last.
func TestStatsConsumerWindow(t *testing.T) {
	s := newStats(roleConsumer, nil)
	start := time.Unix(1000, 0)
	s.Start(start)
	m := s.NewMeter()
	first := start.Add(5 * time.Second) // client start-up
	for i := range 101 {
		m.Consumed(10, 2*time.Millisecond, time.Millisecond, first.Add(time.Duration(i)*10*time.Millisecond))
	}
	sum := s.Summary(first.Add(10 * time.Second)) // then waited for more
	if sum.Seconds != 1 || sum.MsgsPerSec != 101 {
		t.Errorf("consumer window %v s, %v msgs/s: want 1 s from first to last message, 101 msgs/s", sum.Seconds, sum.MsgsPerSec)
	}
	if sum.BornToConsume.P50 != 2 || sum.StoreToConsume.P50 != 1 {
		t.Errorf("born-to-consume %+v, store-to-consume %+v", sum.BornToConsume, sum.StoreToConsume)
	}
}

// TestBatchRecord checks one SEND_BATCH_MESSAGE record against the layout the broker decodes.
func TestBatchRecord(t *testing.T) {
	props := messageProps{keys: "1700000000", tag: "tag1"}.encode(nil, "UNIQ1")
	rec := client.AppendBatchRecord(nil, []byte("hello"), props)
	be := binary.BigEndian
	if total := int(be.Uint32(rec)); total != len(rec) || total != 22+5+len(props) {
		t.Fatalf("total size %d, record %d bytes", total, len(rec))
	}
	if bodyLen := be.Uint32(rec[16:]); bodyLen != 5 || string(rec[20:25]) != "hello" {
		t.Errorf("body length %d, body %q", bodyLen, rec[20:25])
	}
	if propsLen := int(be.Uint16(rec[25:])); propsLen != len(props) {
		t.Errorf("properties length %d, want %d", propsLen, len(props))
	}
	got := message.ParseProperties(string(rec[27:]))
	if got[message.PropertyKeys] != "1700000000" || got[message.PropertyTags] != "tag1" || got[message.PropertyUniqKey] != "UNIQ1" {
		t.Errorf("properties %v", got)
	}
}
