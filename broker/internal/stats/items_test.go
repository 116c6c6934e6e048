package stats

import (
	"testing"
	"time"
)

// A stats item's windows: the minute covers the snapshots of the last 60 s (every 10 s, 7 kept), the hour and
// the day start at the item's birth until their rings fill; tps is per second, avgpt per call.
func TestStatsItemWindows(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	it := newItem(t0)
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
	it = newItem(t0)
	it.add(7, 0)
	if d := it.data(t0.Add(time.Second)); d.StatsMinute.Sum != 7 || d.StatsMinute.Avgpt != 0 {
		t.Errorf("%+v", d.StatsMinute)
	}
}

// The table creates an item on first add, answers nil for one never added to, and forgets the items of a
// deleted topic at the next sample (the cluster-wide ones stay).
func TestStatsTable(t *testing.T) {
	var tab table
	tab.add(topicPutNums, "T", 3, 1)
	tab.add(groupGetNums, topicGroupKey("T", "G"), 2, 1)
	tab.add(brokerPutNums, "DefaultCluster", 3, 0)
	if tab.get(topicPutNums, "U") != nil {
		t.Fatal("an item nothing was added to exists")
	}
	if it := tab.get(groupGetNums, "T@G"); it == nil || it.value.Load() != 2 {
		t.Fatalf("T@G item %v", it)
	}
	// The put items live in the topic's record: found by name, and the other one stays absent.
	if it := tab.get(topicPutNums, "T"); it == nil || it.value.Load() != 3 || it.times.Load() != 1 {
		t.Fatalf("T's put nums item %v", it)
	}
	if tab.get(topicPutSize, "T") != nil {
		t.Fatal("T's put size item exists though nothing was added to it")
	}
	seen := map[itemID]int64{}
	tab.each(func(k itemID, it *item) { seen[k] = it.value.Load() })
	if len(seen) != 3 || seen[itemID{topicPutNums, "T"}] != 3 || seen[itemID{brokerPutNums, "DefaultCluster"}] != 3 {
		t.Fatalf("each saw %v", seen)
	}
	tab.sample(time.Now(), func(topic string) bool { return topic != "T" })
	if tab.get(topicPutNums, "T") != nil || tab.get(groupGetNums, "T@G") != nil {
		t.Error("items of a deleted topic survive a sample")
	}
	if tab.get(brokerPutNums, "DefaultCluster") == nil {
		t.Error("the cluster-wide item went with a topic")
	}
}
