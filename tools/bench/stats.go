package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Latencies are recorded in microseconds from 1 µs to 5 minutes with three significant digits (0.1 %).
const (
	histMinMicros = 1
	histMaxMicros = int64(5 * time.Minute / time.Microsecond)
	histSigFigs   = 3
)

func newHist() *hdrhistogram.Histogram {
	return hdrhistogram.New(histMinMicros, histMaxMicros, histSigFigs)
}

// record adds d to h, clamped to the histogram's range (a negative clock difference counts as 0).
func record(h *hdrhistogram.Histogram, d time.Duration) {
	v := int64(d / time.Microsecond)
	v = max(v, histMinMicros)
	v = min(v, histMaxMicros)
	_ = h.RecordValue(v) // cannot fail: v is within the range
}

// counts are the event counters of a window.
type counts struct {
	msgs     int64  // messages sent (acknowledged) or consumed
	bytes    int64  // body bytes of those messages
	failed   int64  // requests that got no answer: connection errors, timeouts
	rejected int64  // requests the broker answered with an error code
	dups     int64  // messages a consumer was handed again after counting them once (not in msgs)
	firstErr string // the first failure or rejection, for the summary
}

func (c *counts) add(o counts) {
	c.msgs += o.msgs
	c.bytes += o.bytes
	c.failed += o.failed
	c.rejected += o.rejected
	c.dups += o.dups
	if c.firstErr == "" {
		c.firstErr = o.firstErr
	}
}

// Meter is one worker's share of a run's statistics: counters and latency histograms since the last report
// tick. Each worker has its own Meter, so recording never contends with other workers; the reporter takes
// the meter's lock once per tick. Safe for concurrent use (async callbacks record from their own goroutines).
type Meter struct {
	mu struct {
		sync.Mutex
		counts
		lat   []*hdrhistogram.Histogram // one per latency series of the run
		first time.Time                 // when the first message was recorded (kept across windows)
		last  time.Time                 // when the last message was recorded
	}
}

func newMeter(series int) *Meter {
	m := &Meter{}
	for range series {
		m.mu.lat = append(m.mu.lat, newHist())
	}
	return m
}

// Sent records n messages of size bytes each, acknowledged after d (series 0).
func (m *Meter) Sent(n int, size int, d time.Duration) {
	m.mu.Lock()
	m.mu.msgs += int64(n)
	m.mu.bytes += int64(n) * int64(size)
	record(m.mu.lat[0], d)
	m.mu.last = time.Now()
	m.mu.Unlock()
}

// Consumed records one consumed message of size body bytes, born and stored the given times before now
// (series 0 and 1).
func (m *Meter) Consumed(size int, bornToConsume, storeToConsume time.Duration, now time.Time) {
	m.mu.Lock()
	m.mu.msgs++
	m.mu.bytes += int64(size)
	record(m.mu.lat[0], bornToConsume)
	record(m.mu.lat[1], storeToConsume)
	if m.mu.first.IsZero() {
		m.mu.first = now
	}
	m.mu.last = now
	m.mu.Unlock()
}

// Duplicates counts n messages a consumer was handed again after counting them once.
func (m *Meter) Duplicates(n int) {
	m.mu.Lock()
	m.mu.dups += int64(n)
	m.mu.Unlock()
}

// Failed counts a request that got no answer (connection error or timeout).
func (m *Meter) Failed(err error) {
	m.mu.Lock()
	m.mu.failed++
	if m.mu.firstErr == "" {
		m.mu.firstErr = err.Error()
	}
	m.mu.Unlock()
}

// Rejected counts a request the broker answered with an error code; why says what it answered.
func (m *Meter) Rejected(why string) {
	m.mu.Lock()
	m.mu.rejected++
	if m.mu.firstErr == "" {
		m.mu.firstErr = why
	}
	m.mu.Unlock()
}

// drainInto adds the meter's window to c and hs and starts a new window. It returns the times of the first and
// the last message recorded (zero when none).
func (m *Meter) drainInto(c *counts, hs []*hdrhistogram.Histogram) (first, last time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c.add(m.mu.counts)
	m.mu.counts = counts{}
	for i, h := range m.mu.lat {
		hs[i].Merge(h)
		h.Reset()
	}
	return m.mu.first, m.mu.last
}

// Percentiles summarises one latency series, in milliseconds.
type Percentiles struct {
	Count int64   `json:"count"`
	Mean  float64 `json:"mean"`
	P50   float64 `json:"p50"`
	P99   float64 `json:"p99"`
	P999  float64 `json:"p999"`
	Max   float64 `json:"max"`
}

func percentiles(h *hdrhistogram.Histogram) Percentiles {
	ms := func(us int64) float64 { return float64(us) / 1000 }
	return Percentiles{
		Count: h.TotalCount(),
		Mean:  h.Mean() / 1000,
		P50:   ms(h.ValueAtQuantile(50)),
		P99:   ms(h.ValueAtQuantile(99)),
		P999:  ms(h.ValueAtQuantile(99.9)),
		Max:   ms(h.Max()),
	}
}

func (p Percentiles) String() string {
	return fmt.Sprintf("p50: %.3f p99: %.3f p999: %.3f max: %.3f", p.P50, p.P99, p.P999, p.Max)
}

// Summary is a run's result; --json prints it as one object.
type Summary struct {
	Role        string `json:"role"`   // "producer" or "consumer"
	Client      string `json:"client"` // "native" or "official"
	Mode        string `json:"mode,omitempty"`
	Topic       string `json:"topic"`
	Topics      int    `json:"topics,omitempty"` // a producer's --topics when above 1 (Topic is then their prefix)
	Group       string `json:"group,omitempty"`
	Threads     int    `json:"threads"`
	MessageSize int    `json:"message_size,omitempty"`
	Messages    int64  `json:"messages"`
	Bytes       int64  `json:"bytes"`
	Failed      int64  `json:"failed"`   // no answer: connection errors, timeouts
	Rejected    int64  `json:"rejected"` // answered with an error code
	// Duplicates is, for a consumer, how many messages were handed to it again after being counted once
	// (same queue and offset): they are not in Messages.
	Duplicates int64  `json:"duplicates"`
	FirstError string `json:"first_error,omitempty"`
	// Stored is, for oneway sends only, how many messages the topic's queues grew by during the run (of the
	// Messages handed to the connections).
	Stored     int64   `json:"stored,omitempty"`
	Seconds    float64 `json:"seconds"`
	MsgsPerSec float64 `json:"msgs_per_sec"`
	MBPerSec   float64 `json:"mb_per_sec"`
	// Latency is the send latency (request to acknowledgement) of a producer; for oneway sends, the time to
	// hand the request to the connection.
	Latency *Percentiles `json:"latency_ms,omitempty"`
	// BornToConsume and StoreToConsume are a consumer's delays from the producer's born timestamp and from the
	// broker's store timestamp to the moment the message was handed to the benchmark (millisecond clocks).
	BornToConsume  *Percentiles `json:"born_to_consume_ms,omitempty"`
	StoreToConsume *Percentiles `json:"store_to_consume_ms,omitempty"`
}

// WriteJSON writes s as one line of JSON.
func (s *Summary) WriteJSON(w io.Writer) error {
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// WriteText writes the closing "[Complete]" line, in the manner of RocketMQ's benchmark tool.
func (s *Summary) WriteText(w io.Writer) error {
	var err error
	switch s.Role {
	case roleProducer:
		_, err = fmt.Fprintf(w, "[Complete] Send Total: %d | Send TPS: %.0f | MB/s: %.2f | RT(ms) %s avg: %.3f | Send Failed: %d | Response Failed: %d | %.1fs\n",
			s.Messages+s.Failed+s.Rejected, s.MsgsPerSec, s.MBPerSec, s.Latency, s.Latency.Mean, s.Failed, s.Rejected, s.Seconds)
	case roleHop:
		_, err = fmt.Fprintf(w, "[Complete] Round trips: %d | RT(ms) %s avg: %.3f | %.1fs\n", s.Messages, s.Latency, s.Latency.Mean, s.Seconds)
	default:
		_, err = fmt.Fprintf(w, "[Complete] Consume Total: %d | Consume TPS: %.0f | MB/s: %.2f | B2C(ms) %s avg: %.3f | S2C(ms) %s avg: %.3f | Pull Failed: %d | Duplicates: %d | %.1fs\n",
			s.Messages, s.MsgsPerSec, s.MBPerSec, s.BornToConsume, s.BornToConsume.Mean, s.StoreToConsume, s.StoreToConsume.Mean,
			s.Failed+s.Rejected, s.Duplicates, s.Seconds)
	}
	if err == nil && s.FirstError != "" {
		_, err = fmt.Fprintf(w, "[Complete] first failure: %s\n", s.FirstError)
	}
	return err
}

const (
	roleProducer = "producer"
	roleConsumer = "consumer"
	roleHop      = "hop"
)

// Stats gathers the meters of a run, prints a line per interval and builds the summary.
type Stats struct {
	role   string
	out    io.Writer // per-interval lines; nil prints none
	start  time.Time
	mu     sync.Mutex // guards everything below (the reporter and the caller of Summary)
	meters []*Meter
	total  counts
	tick   []*hdrhistogram.Histogram // this interval, merged from the meters
	all    []*hdrhistogram.Histogram // the whole run
	first  time.Time                 // earliest first-message time of any meter (consumers)
	last   time.Time                 // latest message time seen in any meter
	prev   time.Time                 // time of the previous report
}

// NewStats returns the statistics of a producer run (one latency series) or a consumer run (two).
func newStats(role string, out io.Writer) *Stats {
	series := 1
	if role == roleConsumer {
		series = 2
	}
	s := &Stats{role: role, out: out}
	for range series {
		s.tick = append(s.tick, newHist())
		s.all = append(s.all, newHist())
	}
	return s
}

// NewMeter adds a meter for one worker.
func (s *Stats) NewMeter() *Meter {
	m := newMeter(len(s.tick))
	s.mu.Lock()
	s.meters = append(s.meters, m)
	s.mu.Unlock()
	return m
}

// Start marks the beginning of the measured run.
func (s *Stats) Start(now time.Time) {
	s.mu.Lock()
	s.start, s.prev = now, now
	s.mu.Unlock()
}

// Report gathers the meters and prints one line for the interval since the previous report.
func (s *Stats) Report(now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.collectLocked()
	secs := now.Sub(s.prev).Seconds()
	s.prev = now
	if s.out == nil || secs <= 0 {
		return
	}
	elapsed := now.Sub(s.start).Round(time.Second)
	tps, mbs := float64(c.msgs)/secs, float64(c.bytes)/secs/(1<<20)
	if s.role == roleProducer {
		fmt.Fprintf(s.out, "[%5s] Send TPS: %.0f | MB/s: %.2f | RT(ms) %s | Send Failed: %d | Response Failed: %d\n",
			elapsed, tps, mbs, percentiles(s.tick[0]), c.failed, c.rejected)
	} else {
		fmt.Fprintf(s.out, "[%5s] Consume TPS: %.0f | MB/s: %.2f | B2C(ms) %s | S2C(ms) %s | Pull Failed: %d\n",
			elapsed, tps, mbs, percentiles(s.tick[0]), percentiles(s.tick[1]), c.failed+c.rejected)
	}
}

// collectLocked drains every meter into the interval histograms, adds them to the run's, and returns the
// interval's counters; the interval histograms hold the interval until the next call.
func (s *Stats) collectLocked() counts {
	var c counts
	for _, h := range s.tick {
		h.Reset()
	}
	for _, m := range s.meters {
		first, last := m.drainInto(&c, s.tick)
		if !first.IsZero() && (s.first.IsZero() || first.Before(s.first)) {
			s.first = first
		}
		if last.After(s.last) {
			s.last = last
		}
	}
	for i, h := range s.tick {
		s.all[i].Merge(h)
	}
	s.total.add(c)
	return c
}

// Summary gathers what the meters hold and summarises the run. A producer's run lasts from Start to end. A
// consumer's lasts from its first message to its last, so that neither the client's start-up (route lookup,
// rebalancing) nor the wait for more after a drained backlog counts; it falls back to Start..end when fewer
// than two messages were consumed.
func (s *Stats) Summary(end time.Time) *Summary {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.collectLocked()
	start := s.start
	if s.role == roleConsumer && s.last.After(s.first) {
		start, end = s.first, s.last
	}
	secs := end.Sub(start).Seconds()
	sum := &Summary{Role: s.role, Messages: s.total.msgs, Bytes: s.total.bytes, Failed: s.total.failed,
		Rejected: s.total.rejected, Duplicates: s.total.dups, FirstError: s.total.firstErr, Seconds: secs}
	if secs > 0 {
		sum.MsgsPerSec = float64(s.total.msgs) / secs
		sum.MBPerSec = float64(s.total.bytes) / secs / (1 << 20)
	}
	p0 := percentiles(s.all[0])
	if s.role == roleProducer {
		sum.Latency = &p0
	} else {
		p1 := percentiles(s.all[1])
		sum.BornToConsume, sum.StoreToConsume = &p0, &p1
	}
	return sum
}
