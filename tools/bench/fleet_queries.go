package bench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/rocketraft/rocketraft/remoting"
)

// The query load: Clients connections, each a plain TCP connection speaking the remoting protocol as the
// official Go client does (JSON headers, language GO, version 317), asking GET_ROUTEINFO_BY_TOPIC for a
// random topic. Query k of the run is due at start + k/Rate and goes out on connection k mod Clients,
// whether or not earlier answers came back (open loop): a slow server makes queries wait, and their
// latency, counted from when they were due, shows it, as it would for clients that keep asking. A few
// sender goroutines write the queries; one reader per connection matches answers to their due times by
// opaque. A connection being re-dialled keeps its queries and sends them once it is up.

const (
	ringSize       = 1024 // queries one connection may have outstanding
	histShards     = 16
	sendersDefault = 4
)

// Flags of a pending query.
const (
	pendBurst = 1 << iota // due while a registration round was in progress
	pendSent              // written to the connection
	pendCount             // due inside the measured phase
)

type pending struct {
	due   int64 // ns since the load's base; 0: the slot is free
	topic int32
	flags uint8
}

// qconn is one client connection.
type qconn struct {
	l    *queryLoad
	idx  int
	addr string

	wmu sync.Mutex // serialises writes to nc
	mu  struct {
		sync.Mutex
		nc         net.Conn // nil while (re)dialling
		next, tail uint32   // the next opaque to use; the oldest that may be outstanding
		ring       [ringSize]pending
		redial     bool // close nc and dial again at once (reconnect storm)
		target     string
	}
}

// hshard is one shard of the latency histograms (connections record into shard idx mod histShards).
type hshard struct {
	mu    sync.Mutex
	all   *hdrhistogram.Histogram // measured phase
	burst *hdrhistogram.Histogram // measured phase, due inside a registration round
	tick  *hdrhistogram.Histogram // this report interval (warm-up included)
}

// queryCounts are the query counters of a phase.
type queryCounts struct {
	asked, answered, lost, overflow atomic.Int64
	busy, notFound, otherCode       atomic.Int64
	incomplete, masterless, checked atomic.Int64
	tickAnswered, tickErrors        atomic.Int64
	dialFailures                    atomic.Int64
}

type queryLoad struct {
	f      *fleet
	base   time.Time
	burst  *atomic.Int64 // a registration round in progress (brokers.burst)
	shards [histShards]hshard
	c      queryCounts

	counting atomic.Bool // queries due now count for the phase's figures
	stopped  atomic.Bool
	// firstGood and lastBad are when (ns since base) the first complete answer and the last answer that
	// was not (an error code, or a group missing) came in since they were reset (0: none).
	firstGood, lastBad atomic.Int64

	mu struct {
		sync.Mutex
		codes     map[int32]int64 // non-zero answer codes
		firstErr  string
		firstMiss string // the first incomplete route, for the summary
	}

	conns []*qconn
	wg    sync.WaitGroup
}

func newQueryLoad(f *fleet, base time.Time, burst *atomic.Int64) *queryLoad {
	l := &queryLoad{f: f, base: base, burst: burst}
	for i := range l.shards {
		l.shards[i] = hshard{all: newHist(), burst: newHist(), tick: newHist()}
	}
	l.mu.codes = make(map[int32]int64)
	return l
}

func (l *queryLoad) now() int64 { return int64(time.Since(l.base)) }

// connect opens the connections to targets (connection i to targets[i mod len]) and starts their readers.
func (l *queryLoad) connect(ctx context.Context, targets []string) error {
	for i := 0; i < l.f.cfg.Clients; i++ {
		c := &qconn{l: l, idx: i}
		c.mu.target = targets[i%len(targets)]
		l.conns = append(l.conns, c)
	}
	// Dial in parallel: a thousand connections one by one take a while on a loaded machine.
	errs := make(chan error, len(l.conns))
	sem := make(chan struct{}, 64)
	for _, c := range l.conns {
		sem <- struct{}{}
		go func() {
			defer func() { <-sem }()
			nc, err := net.DialTimeout("tcp", c.mu.target, 5*time.Second)
			if err != nil {
				errs <- fmt.Errorf("client connection %d to %s: %w", c.idx, c.mu.target, err)
				return
			}
			c.mu.Lock()
			c.mu.nc = nc
			c.mu.Unlock()
			errs <- nil
		}()
	}
	var first error
	for range l.conns {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	if first != nil {
		for _, c := range l.conns {
			if c.mu.nc != nil {
				_ = c.mu.nc.Close()
			}
		}
		return first
	}
	for _, c := range l.conns {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			c.serve(ctx)
		}()
	}
	return nil
}

// retarget points every connection at targets and makes each re-dial (the name servers changed).
func (l *queryLoad) retarget(targets []string) {
	for _, c := range l.conns {
		c.mu.Lock()
		c.mu.target = targets[c.idx%len(targets)]
		c.mu.redial = true
		nc := c.mu.nc
		c.mu.Unlock()
		if nc != nil {
			_ = nc.Close()
		}
	}
}

// reconnect closes connection c and has it dial again at once, as a restarted client would.
func (c *qconn) reconnect() {
	c.mu.Lock()
	c.mu.redial = true
	nc := c.mu.nc
	c.mu.Unlock()
	if nc != nil {
		_ = nc.Close()
	}
}

// serve reads answers until ctx ends, re-dialling when the connection breaks: at once when asked to
// (redial), else after 100 ms.
func (c *qconn) serve(ctx context.Context) {
	br := bufio.NewReaderSize(nil, 16<<10)
	var scratch []byte
	for ctx.Err() == nil && !c.l.stopped.Load() {
		c.mu.Lock()
		nc := c.mu.nc
		c.mu.Unlock()
		if nc == nil {
			if !c.dial(ctx) {
				return
			}
			continue
		}
		br.Reset(nc)
		for {
			frame, err := remoting.ReadFrame(br, remoting.MaxFrameSize, scratch)
			if err != nil {
				break
			}
			if cap(frame) > cap(scratch) {
				scratch = frame[:0]
			}
			c.answer(frame)
		}
		_ = nc.Close()
		c.mu.Lock()
		c.mu.nc = nil
		redial := c.mu.redial
		c.mu.redial = false
		// What was written and not answered is lost with the connection; what is not written yet goes
		// out on the next one.
		lost := 0
		for o := c.mu.tail; o != c.mu.next; o++ {
			p := &c.mu.ring[o%ringSize]
			if p.due != 0 && p.flags&pendSent != 0 {
				if p.flags&pendCount != 0 {
					lost++
				}
				p.due = 0
			}
		}
		c.mu.Unlock()
		c.l.c.lost.Add(int64(lost))
		if !redial && !c.l.stopped.Load() {
			select {
			case <-ctx.Done():
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
}

// dial connects to the current target, then sends what waited for the connection. It reports false when
// ctx ended.
func (c *qconn) dial(ctx context.Context) bool {
	for !c.l.stopped.Load() {
		c.mu.Lock()
		target := c.mu.target
		c.mu.Unlock()
		nc, err := net.DialTimeout("tcp", target, 2*time.Second)
		if err == nil {
			c.mu.Lock()
			c.mu.nc = nc
			var unsent []uint32
			for o := c.mu.tail; o != c.mu.next; o++ {
				if p := &c.mu.ring[o%ringSize]; p.due != 0 && p.flags&pendSent == 0 {
					unsent = append(unsent, o)
				}
			}
			c.mu.Unlock()
			for _, o := range unsent {
				c.write(o)
			}
			return true
		}
		c.l.c.dialFailures.Add(1)
		if c.l.stopped.Load() {
			return false
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(100 * time.Millisecond):
		}
	}
	return false
}

// ask queues a query for topic, due at due, and writes it when the connection is up.
func (c *qconn) ask(topic int32, due int64, flags uint8) {
	c.mu.Lock()
	if c.mu.next-c.mu.tail >= ringSize {
		c.expireLocked(due)
	}
	if c.mu.next-c.mu.tail >= ringSize {
		c.mu.Unlock()
		if flags&pendCount != 0 {
			c.l.c.overflow.Add(1)
		}
		return
	}
	o := c.mu.next
	c.mu.next++
	c.mu.ring[o%ringSize] = pending{due: due, topic: topic, flags: flags}
	up := c.mu.nc != nil
	c.mu.Unlock()
	if up {
		c.write(o)
	}
}

// expireLocked frees the oldest slots: answered ones, and those outstanding for longer than the timeout
// (counted lost). Lock should be held.
func (c *qconn) expireLocked(now int64) {
	limit := int64(c.l.f.cfg.Timeout)
	for c.mu.tail != c.mu.next {
		p := &c.mu.ring[c.mu.tail%ringSize]
		if p.due != 0 {
			if now-p.due < limit {
				return
			}
			if p.flags&pendCount != 0 {
				c.l.c.lost.Add(1)
			}
			p.due = 0
		}
		c.mu.tail++
	}
}

// write sends query o, unless it was answered, expired or already sent meanwhile.
func (c *qconn) write(o uint32) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.mu.Lock()
	p := &c.mu.ring[o%ringSize]
	nc := c.mu.nc
	if p.due == 0 || p.flags&pendSent != 0 || nc == nil {
		c.mu.Unlock()
		return
	}
	p.flags |= pendSent
	topic := c.l.f.topics[p.topic]
	c.mu.Unlock()
	cmd := remoting.Command{Code: int32(remoting.GetRouteInfoByTopic), Language: remoting.LanguageGoName,
		Version: remoting.CurrentVersion, Opaque: int32(o), ExtFields: map[string]string{"topic": topic}}
	var buf [256]byte
	frame, err := remoting.EncodeFrame(buf[:0], &cmd)
	if err == nil {
		_, err = nc.Write(frame)
	}
	if err != nil {
		_ = nc.Close() // the reader sees it, counts the query lost and re-dials
	}
}

// answer matches one answer frame to its query and records it.
func (c *qconn) answer(frame []byte) {
	now := c.l.now()
	cmd, err := remoting.DecodeFrame(frame)
	if err != nil || !cmd.IsResponse() {
		return
	}
	o := uint32(cmd.Opaque)
	c.mu.Lock()
	p := &c.mu.ring[o%ringSize]
	if o-c.mu.tail >= c.mu.next-c.mu.tail || p.due == 0 {
		c.mu.Unlock()
		return // expired, or not ours
	}
	q := *p
	p.due = 0
	for c.mu.tail != c.mu.next && c.mu.ring[c.mu.tail%ringSize].due == 0 {
		c.mu.tail++
	}
	c.mu.Unlock()
	l := c.l
	d := time.Duration(now - q.due)
	sh := &l.shards[c.idx%histShards]
	sh.mu.Lock()
	record(sh.tick, d)
	if q.flags&pendCount != 0 {
		record(sh.all, d)
		if q.flags&pendBurst != 0 {
			record(sh.burst, d)
		}
	}
	sh.mu.Unlock()
	l.c.tickAnswered.Add(1)
	if cmd.Code != int32(remoting.Success) {
		l.c.tickErrors.Add(1)
	}
	if q.flags&pendCount == 0 {
		return
	}
	answered := l.c.answered.Add(1)
	switch cmd.Code {
	case int32(remoting.Success):
		if answered%int64(l.f.cfg.Check) == 0 && !l.checkRoute(q.topic, cmd.Body) {
			l.lastBad.Store(now)
		} else {
			l.firstGood.CompareAndSwap(0, now)
		}
		return
	case int32(remoting.SystemBusy):
		l.c.busy.Add(1)
	case int32(remoting.TopicNotExist):
		l.c.notFound.Add(1)
	default:
		l.c.otherCode.Add(1)
	}
	l.lastBad.Store(now)
	l.mu.Lock()
	l.mu.codes[cmd.Code]++
	if l.mu.firstErr == "" {
		l.mu.firstErr = fmt.Sprintf("code %d for %s: %s", cmd.Code, l.f.topics[q.topic], cmd.Remark)
	}
	l.mu.Unlock()
}

// The route body's markers, counted to tell whether an answer lists every group of its topic: one
// "brokerAddrs" per broker data, one "readQueueNums" per queue data, and a master's id 0 first in
// brokerAddrs (keys are written sorted).
var (
	markBroker = []byte(`"brokerAddrs":`)
	markMaster = []byte(`"brokerAddrs":{"0":`)
	markQueue  = []byte(`"readQueueNums":`)
)

// checkRoute counts an answer's groups against the topic's and reports whether it lists them all.
func (l *queryLoad) checkRoute(topic int32, body []byte) bool {
	l.c.checked.Add(1)
	want := l.f.cfg.Spread
	brokers, queues := bytes.Count(body, markBroker), bytes.Count(body, markQueue)
	if brokers != want || queues != want {
		if l.c.incomplete.Add(1) == 1 {
			l.mu.Lock()
			l.mu.firstMiss = fmt.Sprintf("%s: %d broker datas and %d queue datas of %d groups", l.f.topics[topic],
				brokers, queues, want)
			l.mu.Unlock()
		}
		return false
	}
	if bytes.Count(body, markMaster) != want {
		l.c.masterless.Add(1)
	}
	return true
}

// run sends queries at Rate until ctx ends, from a few goroutines: sender s sends queries s, s+S, ... of
// the schedule.
func (l *queryLoad) run(ctx context.Context, start time.Time) {
	senders := sendersDefault
	interval := float64(time.Second) / l.f.cfg.Rate
	t0 := int64(start.Sub(l.base))
	var wg sync.WaitGroup
	for s := 0; s < senders; s++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(s)+1, uint64(time.Now().UnixNano())))
			n := len(l.f.topics)
			timer := time.NewTimer(time.Hour)
			defer timer.Stop()
			for k := int64(s); ; k += int64(senders) {
				due := t0 + int64(float64(k)*interval) + 1
				if wait := due - l.now(); wait > 0 {
					timer.Reset(time.Duration(wait))
					select {
					case <-ctx.Done():
						return
					case <-timer.C:
					}
				} else if ctx.Err() != nil {
					return
				}
				var flags uint8
				if l.counting.Load() {
					flags |= pendCount
					l.c.asked.Add(1)
				}
				if l.burst.Load() != 0 {
					flags |= pendBurst
				}
				l.conns[k%int64(len(l.conns))].ask(int32(rng.IntN(n)), due, flags)
			}
		}()
	}
	wg.Wait()
}

// drain waits until every counted query is answered or lost, at most the timeout.
func (l *queryLoad) drain() {
	deadline := time.Now().Add(l.f.cfg.Timeout)
	for time.Now().Before(deadline) {
		if l.c.answered.Load()+l.c.lost.Load()+l.c.overflow.Load() >= l.c.asked.Load() {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, c := range l.conns {
		c.mu.Lock()
		c.expireLocked(l.now() + 2*int64(l.f.cfg.Timeout))
		c.mu.Unlock()
	}
}

// close stops the connections and waits for their readers.
func (l *queryLoad) close() {
	l.stopped.Store(true)
	for _, c := range l.conns {
		c.mu.Lock()
		nc := c.mu.nc
		c.mu.Unlock()
		if nc != nil {
			_ = nc.Close()
		}
	}
	l.wg.Wait()
}

// tick returns the answers of the interval since the last tick: count, errors and latency.
func (l *queryLoad) tick() (answered, errs int64, p Percentiles) {
	h := newHist()
	for i := range l.shards {
		sh := &l.shards[i]
		sh.mu.Lock()
		h.Merge(sh.tick)
		sh.tick.Reset()
		sh.mu.Unlock()
	}
	return l.c.tickAnswered.Swap(0), l.c.tickErrors.Swap(0), percentiles(h)
}

// querySummary is the queries' part of a phase's summary.
type querySummary struct {
	Asked      int64           `json:"asked"`
	Answered   int64           `json:"answered"`
	AskedPS    float64         `json:"asked_per_sec"`
	AnsweredPS float64         `json:"answered_per_sec"`
	Lost       int64           `json:"lost"`     // written and never answered within the timeout, or on a connection that broke
	Overflow   int64           `json:"overflow"` // not sent: ringSize queries outstanding on the connection
	Busy       int64           `json:"busy"`     // SYSTEM_BUSY answers
	NotFound   int64           `json:"topic_not_exist"`
	OtherCode  int64           `json:"other_codes"`
	Codes      map[int32]int64 `json:"codes,omitempty"`
	FirstErr   string          `json:"first_error,omitempty"`
	Checked    int64           `json:"checked"`    // answers whose groups were counted
	Incomplete int64           `json:"incomplete"` // of those, missing a group
	Masterless int64           `json:"masterless"` // of the complete ones, a group without its master (id 0)
	FirstMiss  string          `json:"first_incomplete,omitempty"`
	Latency    *Percentiles    `json:"latency_ms"`
	Burst      *Percentiles    `json:"burst_latency_ms"` // queries due while a registration round was in progress
	Dials      int64           `json:"dial_failures"`
}

// summary gathers the phase's figures over secs seconds and starts the next phase afresh.
func (l *queryLoad) summary(secs float64) querySummary {
	all, burst := newHist(), newHist()
	for i := range l.shards {
		sh := &l.shards[i]
		sh.mu.Lock()
		all.Merge(sh.all)
		burst.Merge(sh.burst)
		sh.all.Reset()
		sh.burst.Reset()
		sh.mu.Unlock()
	}
	pa, pb := percentiles(all), percentiles(burst)
	s := querySummary{
		Asked: l.c.asked.Swap(0), Answered: l.c.answered.Swap(0), Lost: l.c.lost.Swap(0), Overflow: l.c.overflow.Swap(0),
		Busy: l.c.busy.Swap(0), NotFound: l.c.notFound.Swap(0), OtherCode: l.c.otherCode.Swap(0),
		Checked: l.c.checked.Swap(0), Incomplete: l.c.incomplete.Swap(0), Masterless: l.c.masterless.Swap(0),
		Dials: l.c.dialFailures.Swap(0), Latency: &pa, Burst: &pb,
	}
	if secs > 0 {
		s.AskedPS, s.AnsweredPS = float64(s.Asked)/secs, float64(s.Answered)/secs
	}
	l.mu.Lock()
	if len(l.mu.codes) > 0 {
		s.Codes = l.mu.codes
		l.mu.codes = make(map[int32]int64)
	}
	s.FirstErr, s.FirstMiss = l.mu.firstErr, l.mu.firstMiss
	l.mu.firstErr, l.mu.firstMiss = "", ""
	l.mu.Unlock()
	return s
}
