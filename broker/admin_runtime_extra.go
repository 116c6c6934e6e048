package broker

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rocketraft/rocketraft/store"
)

// putTimeBounds are the upper bounds, in milliseconds, of RocketMQ's put time distribution
// (putMessageDistributeTime): "[<=0ms]" holds the puts of 0 ms, "[0~10ms]" those below 10 ms, and so on; the
// last bucket, "[10s~]", those of 10 s and more.
var putTimeBounds = [...]int64{0, 10, 50, 100, 200, 500, 1000, 2000, 3000, 4000, 5000, 10000}

// putTimeNames are the bucket names RocketMQ prints, in bucket order.
var putTimeNames = [len(putTimeBounds) + 1]string{"[<=0ms]", "[0~10ms]", "[10~50ms]", "[50~100ms]", "[100~200ms]",
	"[200~500ms]", "[500ms~1s]", "[1~2s]", "[2~3s]", "[3~4s]", "[4~5s]", "[5~10s]", "[10s~]"}

// putTimes is the distribution of the entire time of sends (from the send processor to the answer the
// flush and replication modes allow), by RocketMQ's buckets, over the last full minute; and the longest
// store read of a pull (getMessageEntireTimeMax).
type putTimes struct {
	counts [len(putTimeBounds) + 1]atomic.Int64 // since boot
	getMax atomic.Int64                         // milliseconds

	mu struct {
		sync.Mutex
		at       time.Time                     // start of the current minute
		start    [len(putTimeBounds) + 1]int64 // counts at that start
		last     [len(putTimeBounds) + 1]int64 // the last full minute's counts
		haveLast bool
	}
}

func putTimeBucket(ms int64) int {
	if ms <= 0 {
		return 0
	}
	for i := 1; i < len(putTimeBounds); i++ {
		if ms < putTimeBounds[i] {
			return i
		}
	}
	return len(putTimeBounds)
}

func (p *putTimes) recordPut(d time.Duration) { p.counts[putTimeBucket(d.Milliseconds())].Add(1) }

func (p *putTimes) recordGet(d time.Duration) {
	ms := d.Milliseconds()
	for {
		m := p.getMax.Load()
		if ms <= m || p.getMax.CompareAndSwap(m, ms) {
			return
		}
	}
}

// sample closes the minute once it is over (called every second by the admin sampler).
func (p *putTimes) sample(now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.at.IsZero() {
		p.mu.at = now
		return
	}
	if now.Sub(p.mu.at) < time.Minute {
		return
	}
	for i := range p.counts {
		c := p.counts[i].Load()
		p.mu.last[i], p.mu.start[i] = c-p.mu.start[i], c
	}
	p.mu.at, p.mu.haveLast = now, true
}

// lastMinute is the distribution of the last full minute; before the first minute is over, that of the
// puts since boot.
func (p *putTimes) lastMinute() (out [len(putTimeBounds) + 1]int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.haveLast {
		return p.mu.last
	}
	for i := range p.counts {
		out[i] = p.counts[i].Load() - p.mu.start[i]
	}
	return out
}

// distributionText is RocketMQ's "[<=0ms]:0 [0~10ms]:12 ... [10s~]:0 " (a trailing space included).
func distributionText(counts [len(putTimeBounds) + 1]int64) string {
	var sb strings.Builder
	for i, n := range counts {
		fmt.Fprintf(&sb, "%s:%d ", putTimeNames[i], n)
	}
	return sb.String()
}

// putLatencyPX is the p-quantile (0..1) of a distribution in milliseconds, as the upper bound of the bucket
// holding it ("[10s~]" has none: its lower bound, 10 s, stands for it), with RocketMQ's "%.2f"; 0 without
// samples.
func putLatencyPX(counts [len(putTimeBounds) + 1]int64, p float64) string {
	var total int64
	for _, n := range counts {
		total += n
	}
	if total == 0 {
		return "0.00"
	}
	want := int64(math.Ceil(p * float64(total)))
	var cum int64
	i := 0
	for ; i < len(counts); i++ {
		if cum += counts[i]; cum >= want {
			break
		}
	}
	return fmt.Sprintf("%.2f", float64(putTimeBounds[min(i, len(putTimeBounds)-1)]))
}

// addExporterRuntimeInfo adds the keys of GET_BROKER_RUNTIME_INFO that rocketmq-exporter's BrokerRuntimeStats
// parses (and mqadmin brokerStatus prints) beyond those of addAdminRuntimeInfo, each in RocketMQ's format.
func (b *Broker) addExporterRuntimeInfo(m map[string]string, st store.Stats) {
	dist := b.admin.putTimes.lastMinute()
	m["putMessageDistributeTime"] = distributionText(dist)
	m["putLatency99"] = putLatencyPX(dist, 0.99)
	m["putLatency999"] = putLatencyPX(dist, 0.999)
	m["getMessageEntireTimeMax"] = itoa(b.admin.putTimes.getMax.Load())
	avg := 0.0 // RocketMQ divides by zero here and prints NaN; 0.0 says the same and parses everywhere
	if st.PutMessages > 0 {
		avg = float64(st.PutBytes) / float64(st.PutMessages)
	}
	m["putMessageAverageSize"] = strconv.FormatFloat(avg, 'f', -1, 64)
	if !strings.Contains(m["putMessageAverageSize"], ".") {
		m["putMessageAverageSize"] += ".0"
	}
	m["dispatchMaxBuffer"] = itoa(b.admin.dispatchMax.Load())
	m["pageCacheLockTimeMills"] = itoa(b.store.LockTimeMills())
	// The broker accepts sends as soon as it runs: RocketMQ's startAcceptSendRequestTimeStamp is then 0.
	m["startAcceptSendRequestTimeStamp"] = "0"
	// Without a transient store pool RocketMQ answers Integer.MAX_VALUE: no buffer can run out.
	m["remainTransientStoreBufferNumbs"] = strconv.Itoa(math.MaxInt32)
	if st.TransientPoolFree >= 0 {
		m["remainTransientStoreBufferNumbs"] = strconv.Itoa(st.TransientPoolFree)
	}
	m["remainHowManyDataToCommit"] = humanBytes(st.CommitLagBytes)
	for _, p := range b.pools {
		switch name := p.Name(); name {
		case "send", "pull", "query":
			m[name+"ThreadPoolQueueHeadWaitTimeMills"] = itoa(p.HeadWait().Milliseconds())
			m[name+"ThreadPoolQueueCapacity"] = strconv.Itoa(p.Capacity())
		}
	}
	if d, err := b.store.CommitLogDisk(); err == nil {
		m["commitLogDirCapacity"] = fmt.Sprintf("Total : %s, Free : %s.", humanBytes(d.Total), humanBytes(d.Free))
	}
	if d, err := b.store.ConsumeQueueDisk(); err == nil {
		m["consumeQueueDiskRatio"] = strconv.FormatFloat(d.UsedRatio, 'f', -1, 64)
	}
	// scheduleMessageOffset_<level>: "<delivered up to>,<max offset>" of each delay level's queue of
	// SCHEDULE_TOPIC_XXXX (the exporter reads both numbers of every such key).
	for level, off := range b.schedule.Offsets().OffsetTable {
		maxOff := max(b.store.MaxOffsetInQueue(TopicSchedule, int32(level-1)), 0)
		m[fmt.Sprintf("scheduleMessageOffset_%d", level)] = fmt.Sprintf("%d,%d", off, maxOff)
	}
	if _, ok := m["earliestMessageTimeStamp"]; !ok {
		m["earliestMessageTimeStamp"] = "-1" // an empty CommitLog: RocketMQ's answer when it has no message
	}
}
