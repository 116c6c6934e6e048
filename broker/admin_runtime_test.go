package broker

import (
	"testing"
	"time"

	"github.com/rocketraft/rocketraft/broker/internal/stats"
	"github.com/rocketraft/rocketraft/protocol"
)

func TestTPSSampler(t *testing.T) {
	var s tpsSampler
	put := func(c tpsCounters) int64 { return c.put }
	if got := s.rates(put); got != "0.00 0.00 0.00" {
		t.Fatalf("no samples: %q", got)
	}
	t0 := time.Date(2024, 5, 1, 23, 59, 0, 0, time.Local)
	for i := range 61 { // one sample a second for a minute: 10 puts a second, 2 gets
		s.sample(t0.Add(time.Duration(i)*time.Second), tpsCounters{put: int64(10 * i), get: int64(2 * i)})
	}
	if got := s.rates(put); got != "10.00 10.00 10.00" {
		t.Fatalf("put rates %q", got)
	}
	// A burst in the last 10 s shows in the 10 s figure and less in the minute one.
	s.sample(t0.Add(61*time.Second), tpsCounters{put: 600 + 100, get: 122})
	if got := s.rates(put); got != "19.00 11.50 11.48" {
		t.Fatalf("put rates after a burst %q", got)
	}
	today, yest := s.mornings()
	if today.put != 600 || yest.put != 0 { // the counter at the first sample of the new day; boot counts as the first morning
		t.Fatalf("the day turned at midnight: today %+v, yesterday %+v", today, yest)
	}
}

// TestTPSSampleAtStart: a started broker has a first sample of its TPS counters from before its port
// served, so what it stores in its first second counts in putTps (the ticker's first sample comes a
// second later; the console's throughput plot of a new broker that took its messages at once stayed at 0).
func TestTPSSampleAtStart(t *testing.T) {
	b := startMetricsBroker(t, metricsTestConfig(t))
	b.admin.tps.mu.Lock()
	n, first := b.admin.tps.mu.n, b.admin.tps.mu.ring[0]
	b.admin.tps.mu.Unlock()
	if n < 1 || first.c.put != 0 {
		t.Fatalf("right after Start: %d samples, the first with %d puts; want a sample with 0", n, first.c.put)
	}
	b.stats.RecordPut("T", stats.Normal, 40, 40<<10) // messages stored before the ticker's first sample
	b.sampleTPS(first.at.Add(time.Second))
	if got := b.admin.tps.rates(func(c tpsCounters) int64 { return c.put }); got == "0.00 0.00 0.00" {
		t.Fatalf("putTps %q after 40 puts in the first second", got)
	}
}

func TestConsumeRates(t *testing.T) {
	var r consumeRates
	t0 := time.Unix(1_700_000_000, 0)
	if got := r.consumeTPS("T", "G"); got != 0 {
		t.Fatalf("no samples: %v", got)
	}
	for i := range 10 { // 6 messages every 10 s, and a reset that moves another group back
		r.sample(t0.Add(time.Duration(i*10)*time.Second), map[string]int64{"T@G": int64(6 * i), "T@H": int64(100 - i)})
	}
	if got := r.consumeTPS("T", "G"); got != 0.6 {
		t.Fatalf("consume rate %v, want 0.6 over the last minute", got)
	}
	if got := r.consumeTPS("T", "H"); got != 0 {
		t.Fatalf("a group moved back has rate %v", got)
	}
}

func TestQueueTableBodies(t *testing.T) {
	body, err := consumeStatsBody(1.5, []protocol.QueueEntry[protocol.OffsetWrapper]{
		{MQ: protocol.MessageQueue{Topic: "T", BrokerName: "b", QueueID: 1}, Value: protocol.OffsetWrapper{BrokerOffset: 5, ConsumerOffset: 3}},
		{MQ: protocol.MessageQueue{Topic: "T", BrokerName: "b", QueueID: 0}, Value: protocol.OffsetWrapper{BrokerOffset: 2, ConsumerOffset: 2, LastTimestamp: 7}},
	})
	want := `{"consumeTps":1.5,"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:{"brokerOffset":2,"consumerOffset":2,"lastTimestamp":7,"pullOffset":0},` +
		`{"brokerName":"b","queueId":1,"topic":"T"}:{"brokerOffset":5,"consumerOffset":3,"lastTimestamp":0,"pullOffset":0}}}`
	if err != nil || string(body) != want {
		t.Fatalf("ConsumeStats body\n%s\nwant\n%s", body, want)
	}
	// The reset body in exactly the shape the official Go client's ResetOffsetBody.Decode splits.
	body, err = queueTableBody("", []protocol.QueueEntry[int64]{{MQ: protocol.MessageQueue{Topic: "T", BrokerName: "b", QueueID: 0}, Value: 11110}})
	if want := `{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:11110}}`; err != nil || string(body) != want {
		t.Fatalf("ResetOffsetBody %s, want %s", body, want)
	}
	if body, _ := queueTableBody("", []protocol.QueueEntry[int64]{}); string(body) != `{"offsetTable":{}}` {
		t.Fatalf("empty table %s", body)
	}
}

func TestRuntimeFormats(t *testing.T) {
	if got := runtimeText(26*time.Hour + 3*time.Minute + 4*time.Second); got != "[ 1 days, 2 hours, 3 minutes, 4 seconds ]" {
		t.Fatalf("runtime %q", got)
	}
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1536: "1.5 KiB", 3 << 20: "3.0 MiB"} {
		if got := humanBytes(n); got != want {
			t.Errorf("humanBytes(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestApplyConfigText(t *testing.T) {
	cfg := DefaultConfig()
	if err := applyConfigText(&cfg, []string{"--brokerPermission=4"}); err != nil || cfg.BrokerPermission != 4 {
		t.Fatalf("brokerPermission=4: %v, %d", err, cfg.BrokerPermission)
	}
	for _, bad := range []string{"--brokerPermission=x", "--brokerPermission=99", "--noSuchKey=1"} {
		c := DefaultConfig()
		if err := applyConfigText(&c, []string{bad}); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

// The put time distribution: RocketMQ's bucket names and bounds, the last full minute once one is over, and
// the quantiles as bucket bounds.
func TestPutTimes(t *testing.T) {
	for ms, want := range map[int64]int{0: 0, 1: 1, 9: 1, 10: 2, 499: 5, 999: 6, 9999: 11, 10000: 12, 60000: 12} {
		if got := putTimeBucket(ms); got != want {
			t.Errorf("bucket of %d ms: %d, want %d", ms, got, want)
		}
	}
	var p putTimes
	t0 := time.Unix(1_700_000_000, 0)
	p.sample(t0)
	for range 99 {
		p.recordPut(3 * time.Millisecond)
	}
	p.recordPut(700 * time.Millisecond)
	if got := distributionText(p.lastMinute()); got != "[<=0ms]:0 [0~10ms]:99 [10~50ms]:0 [50~100ms]:0 [100~200ms]:0 "+
		"[200~500ms]:0 [500ms~1s]:1 [1~2s]:0 [2~3s]:0 [3~4s]:0 [4~5s]:0 [5~10s]:0 [10s~]:0 " {
		t.Errorf("first minute %q", got)
	}
	if p99, p999 := putLatencyPX(p.lastMinute(), 0.99), putLatencyPX(p.lastMinute(), 0.999); p99 != "10.00" || p999 != "1000.00" {
		t.Errorf("p99 %s p999 %s, want 10.00 and 1000.00", p99, p999)
	}
	p.sample(t0.Add(61 * time.Second)) // the minute closes with those 100
	p.recordPut(0)
	if d := p.lastMinute(); d[1] != 99 || d[0] != 0 {
		t.Errorf("the last full minute %v changed with a put of the new minute", d)
	}
	p.sample(t0.Add(122 * time.Second))
	if d := p.lastMinute(); d[0] != 1 || d[1] != 0 {
		t.Errorf("the next minute %v, want the one 0 ms put", d)
	}
	if putLatencyPX([13]int64{}, 0.99) != "0.00" {
		t.Error("quantile without puts")
	}
}
