package broker

import (
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rocketraft/rocketraft/internal/logging"
	"github.com/rocketraft/rocketraft/internal/loop"
	"github.com/rocketraft/rocketraft/store"
)

// adminState is what the admin request families (the admin_*.go files) keep: the live config, the
// per-second samples behind the TPS figures of GET_BROKER_RUNTIME_INFO, and the consume rates of
// GET_CONSUME_STATS. Its zero value is ready to use.
type adminState struct {
	live     atomic.Pointer[Config] // nil until the first UPDATE_BROKER_CONFIG
	configMu sync.Mutex             // serialises UPDATE_BROKER_CONFIG
	tps      tpsSampler
	rates    consumeRates
	putTimes putTimes
	// dispatchMax is the most CommitLog bytes seen waiting for dispatch at a sample (dispatchMaxBuffer).
	dispatchMax atomic.Int64
}

// consumeRateEvery is how often the committed offsets are summed for the consume rates (every tenth sample).
const consumeRateEvery = 10

// sampleAdminStats runs every second (Start): it samples the put and get counters and, every tenth call,
// the groups' consume progress.
func (b *Broker) sampleAdminStats() {
	now := time.Now()
	st := b.sampleTPS(now)
	if b.admin.tps.samples()%consumeRateEvery == 1 {
		b.admin.rates.sample(now, b.offsets.progress())
	}
	b.admin.putTimes.sample(now)
	if st.DispatchBehindBytes > b.admin.dispatchMax.Load() {
		b.admin.dispatchMax.Store(st.DispatchBehindBytes) // only this goroutine stores
	}
	b.stats.Sample(now, func(topic string) bool { return b.topics.get(topic) != nil })
}

// startStatsLog prints the stats.log lines (broker/internal/stats, log.go) every Options.StatsLogInterval
// (a minute) until Close, on a logger tagged component=stats (mqbroker routes it to stats.log alone).
func (b *Broker) startStatsLog() {
	interval := b.opts.StatsLogInterval
	if interval <= 0 {
		interval = time.Minute
	}
	w := b.stats.NewLogWriter(b.log.With(logging.ComponentKey, logging.ComponentStats))
	loop.Every(b.stop, &b.wg, interval, func() { w.Write(time.Now()) })
}

// sampleTPS samples the counters behind the TPS figures and returns the store's stats it read.
func (b *Broker) sampleTPS(now time.Time) store.Stats {
	st := b.store.Stats()
	b.admin.tps.sample(now, tpsCounters{put: b.stats.Puts(), get: b.stats.Gets(),
		found: st.GetFound, miss: st.GetMiss})
	return st
}

// tpsCounters are the monotonic counters the sampler differentiates.
type tpsCounters struct {
	put   int64 // messages stored
	get   int64 // messages handed to consumers
	found int64 // store reads that found messages
	miss  int64 // store reads that found none
}

// tpsWindow is the history kept: RocketMQ's TPS figures look back 10 s, 1 min and 10 min.
const tpsWindow = 600

// tpsSampler keeps one sample of the counters per second over the last ten minutes, and the counters at
// the start of today and of yesterday (RocketMQ's msgPutTotalTodayMorning and the like).
type tpsSampler struct {
	mu struct {
		sync.Mutex
		ring  [tpsWindow + 1]tpsSample
		n     int // samples taken
		day   int // yearday*10000+year of the last sample
		today tpsCounters
		yest  tpsCounters
	}
}

type tpsSample struct {
	at time.Time
	c  tpsCounters
}

func (s *tpsSampler) sample(now time.Time, c tpsCounters) {
	s.mu.Lock()
	defer s.mu.Unlock()
	day := now.YearDay()*10000 + now.Year()
	if s.mu.n == 0 {
		s.mu.day = day
	} else if day != s.mu.day {
		s.mu.yest, s.mu.today, s.mu.day = s.mu.today, c, day
	}
	s.mu.ring[s.mu.n%len(s.mu.ring)] = tpsSample{at: now, c: c}
	s.mu.n++
}

func (s *tpsSampler) samples() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mu.n
}

// rates returns, for each counter, the per-second rate over the last 10 s, 1 min and 10 min, formatted as
// RocketMQ's runtime table has them ("put 10s 60s 600s"). With less history the oldest sample is used.
func (s *tpsSampler) rates(pick func(tpsCounters) int64) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := ""
	for i, window := range []int{10, 60, 600} {
		if i > 0 {
			out += " "
		}
		out += strconv.FormatFloat(s.rateLocked(window, pick), 'f', 2, 64)
	}
	return out
}

// rateLocked is the rate of pick over the last window seconds. s.mu must be held.
func (s *tpsSampler) rateLocked(window int, pick func(tpsCounters) int64) float64 {
	if s.mu.n < 2 {
		return 0
	}
	last := s.mu.ring[(s.mu.n-1)%len(s.mu.ring)]
	back := min(window, s.mu.n-1)
	first := s.mu.ring[(s.mu.n-1-back)%len(s.mu.ring)]
	secs := last.at.Sub(first.at).Seconds()
	if secs <= 0 {
		return 0
	}
	return float64(max(pick(last.c)-pick(first.c), 0)) / secs
}

func (s *tpsSampler) mornings() (today, yest tpsCounters) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mu.today, s.mu.yest
}

// consumeRateSamples is how many progress samples are kept: a minute at one per consumeRateEvery seconds.
const consumeRateSamples = 60/consumeRateEvery + 1

// consumeRates keeps the last minute of the groups' consume progress (sum of committed offsets per
// "topic@group"), sampled every ten seconds.
type consumeRates struct {
	mu struct {
		sync.Mutex
		ring [consumeRateSamples]progressSample
		n    int
	}
}

type progressSample struct {
	at   time.Time
	sums map[string]int64
}

func (r *consumeRates) sample(now time.Time, sums map[string]int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.mu.ring[r.mu.n%len(r.mu.ring)] = progressSample{at: now, sums: sums}
	r.mu.n++
}

// consumeTPS is how many messages per second group committed on topic over the last minute (0 without two
// samples; a reset that moved the offsets back counts as 0).
func (r *consumeRates) consumeTPS(topic, group string) float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.mu.n < 2 {
		return 0
	}
	last := r.mu.ring[(r.mu.n-1)%len(r.mu.ring)]
	first := r.mu.ring[(r.mu.n-min(r.mu.n, len(r.mu.ring)))%len(r.mu.ring)]
	secs := last.at.Sub(first.at).Seconds()
	key := topic + offsetKeySep + group
	if secs <= 0 {
		return 0
	}
	return float64(max(last.sums[key]-first.sums[key], 0)) / secs
}

// addAdminRuntimeInfo adds to GET_BROKER_RUNTIME_INFO's table the keys RocketMQ's mqadmin clusterList and
// brokerStatus print: TPS figures, the day counters, pool queues, the earliest message time and disk use.
func (b *Broker) addAdminRuntimeInfo(m map[string]string, st store.Stats) {
	t := &b.admin.tps
	m["putTps"] = t.rates(func(c tpsCounters) int64 { return c.put })
	m["getTransferedTps"] = t.rates(func(c tpsCounters) int64 { return c.get })
	m["getFoundTps"] = t.rates(func(c tpsCounters) int64 { return c.found })
	m["getMissTps"] = t.rates(func(c tpsCounters) int64 { return c.miss })
	m["getTotalTps"] = t.rates(func(c tpsCounters) int64 { return c.found + c.miss })
	today, yest := t.mornings()
	m["msgPutTotalTodayMorning"] = itoa(today.put)
	m["msgPutTotalYesterdayMorning"] = itoa(yest.put)
	m["msgGetTotalTodayMorning"] = itoa(today.get)
	m["msgGetTotalYesterdayMorning"] = itoa(yest.get)
	for _, p := range b.pools {
		switch name := p.Name(); name {
		case "send", "pull", "query":
			m[name+"ThreadPoolQueueSize"] = strconv.Itoa(p.Queued())
		}
	}
	m["sendThreadPoolQueueCapacity"] = strconv.Itoa(b.cfg.SendThreadPoolQueueCapacity)
	m["pullThreadPoolQueueCapacity"] = strconv.Itoa(b.cfg.PullThreadPoolQueueCapacity)
	if first, err := b.store.LookMessageByOffset(b.store.MinPhyOffset()); err == nil {
		m["earliestMessageTimeStamp"] = itoa(first.StoreTimestamp)
	}
	m["commitLogDiskRatio"] = strconv.FormatFloat(st.DiskUsedRatio, 'f', -1, 64)
	m["putMessageFailedTimes"] = itoa(st.PutFailures)
	m["putMessageEntireTimeMax"] = itoa(st.PutLatency.Max.Milliseconds())
	m["remainHowManyDataToFlush"] = humanBytes(st.FlushLagBytes)
	m["runtime"] = runtimeText(time.Since(b.stats.Boot()))
	b.addExporterRuntimeInfo(m, st)
}

// runtimeText is RocketMQ's "[ 0 days, 1 hours, 2 minutes, 3 seconds ]".
func runtimeText(d time.Duration) string {
	s := int64(d.Seconds())
	return fmt.Sprintf("[ %d days, %d hours, %d minutes, %d seconds ]", s/86400, s%86400/3600, s%3600/60, s%60)
}

// humanBytes is MixAll.humanReadableByteCount(n, false): "512 B", "1.5 KiB", "3.2 MiB".
func humanBytes(n int64) string {
	if n < 1024 {
		return strconv.FormatInt(n, 10) + " B"
	}
	f, units := float64(n), "KMGTPE"
	i := -1
	for f >= 1024 && i < len(units)-1 {
		f /= 1024
		i++
	}
	return fmt.Sprintf("%.1f %ciB", f, units[i])
}
