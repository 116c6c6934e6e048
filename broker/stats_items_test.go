package broker

import (
	"testing"
	"time"
)

// A stats item's windows: the minute covers the snapshots of the last 60 s (every 10 s, 7 kept), the hour and
// the day start at the item's birth until their rings fill; tps is per second, avgpt per call.
func TestStatsItemWindows(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	it := newStatsItem(t0)
	for s := 1; s <= 120; s++ { // 5 messages a second in one call, for two minutes
		it.add(5, 1)
		it.sample(t0.Add(time.Duration(s) * time.Second))
	}
	d := it.data(t0.Add(120 * time.Second))
	if d.StatsMinute.Sum != 5*60 || d.StatsMinute.Tps != 5 || d.StatsMinute.Avgpt != 5 {
		t.Errorf("minute %+v, want the last 60 s: sum 300, tps 5, avgpt 5", d.StatsMinute)
	}
	if d.StatsHour.Sum != 600 || d.StatsDay.Sum != 600 || d.StatsDay.Tps != 5 {
		t.Errorf("hour %+v day %+v, want everything since birth", d.StatsHour, d.StatsDay)
	}
	// Items that count no calls (the broker-wide ones) have no average.
	it = newStatsItem(t0)
	it.add(7, 0)
	if d := it.data(t0.Add(time.Second)); d.StatsMinute.Sum != 7 || d.StatsMinute.Avgpt != 0 {
		t.Errorf("%+v", d.StatsMinute)
	}
}

// The table creates an item on first add, answers nil for one never added to, and forgets the items of a
// deleted topic at the next sample (the cluster-wide ones stay).
func TestStatsTable(t *testing.T) {
	var tab statsTable
	tab.add(statsTopicPutNums, "T", 3, 1)
	tab.add(statsGroupGetNums, statsItemKey("T", "G"), 2, 1)
	tab.add(statsBrokerPutNums, "DefaultCluster", 3, 0)
	if tab.get(statsTopicPutNums, "U") != nil {
		t.Fatal("an item nothing was added to exists")
	}
	if it := tab.get(statsGroupGetNums, "T@G"); it == nil || it.value.Load() != 2 {
		t.Fatalf("T@G item %v", it)
	}
	// The put items live in the topic's record: found by name, and the other one stays absent.
	if it := tab.get(statsTopicPutNums, "T"); it == nil || it.value.Load() != 3 || it.times.Load() != 1 {
		t.Fatalf("T's put nums item %v", it)
	}
	if tab.get(statsTopicPutSize, "T") != nil {
		t.Fatal("T's put size item exists though nothing was added to it")
	}
	seen := map[statsKey]int64{}
	tab.each(func(k statsKey, it *statsItem) { seen[k] = it.value.Load() })
	if len(seen) != 3 || seen[statsKey{statsTopicPutNums, "T"}] != 3 || seen[statsKey{statsBrokerPutNums, "DefaultCluster"}] != 3 {
		t.Fatalf("each saw %v", seen)
	}
	tab.sample(time.Now(), func(topic string) bool { return topic != "T" })
	if tab.get(statsTopicPutNums, "T") != nil || tab.get(statsGroupGetNums, "T@G") != nil {
		t.Error("items of a deleted topic survive a sample")
	}
	if tab.get(statsBrokerPutNums, "DefaultCluster") == nil {
		t.Error("the cluster-wide item went with a topic")
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
