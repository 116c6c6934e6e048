package pop

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rocketraft/rocketraft/message"
	"github.com/rocketraft/rocketraft/protocol"
	"github.com/rocketraft/rocketraft/store"
)

// Store is what the engine reads of the message store. *store.Store is one; every method is safe from
// any goroutine.
type Store interface {
	// The queues' bounds and units and the records they point at (store.QueueReader's contract).
	store.QueueReader
	// GetMessage reads up to maxMsgNums records of a queue from offset (store.Store.GetMessage: the caller
	// releases the result; a nil filter matches everything).
	GetMessage(group, topic string, queueID int32, offset int64, maxMsgNums, maxBytes int, f store.MessageFilter) (*store.GetResult, error)
	// MaxPhyOffset is the end of the CommitLog readable now; DispatchedOffset how far it is in the consume
	// queues. The revive log is read at start once dispatch has reached the end seen then.
	MaxPhyOffset() int64
	DispatchedOffset() int64
}

var _ Store = (*store.Store)(nil)

// Offsets is the consumer-offset table as the engine uses it: pop offsets (the next offset a pop of the
// group reads) and the revive offsets live there like any consumer offset, so they are persisted, synced
// to slaves and proposed through Raft like any other. Both methods are safe from any goroutine.
type Offsets interface {
	// Query is the committed offset, or -1 when none.
	Query(group, topic string, queueID int32) int64
	// Commit sets it (the last commit wins).
	Commit(group, topic string, queueID int32, offset int64)
}

// PutFunc stores m as it is (no delay rewriting) and returns once the store's durability policy (and, in
// the Raft mode, the commit) answered, or ctx ended. Safe from any goroutine; m is the callee's once called.
type PutFunc func(ctx context.Context, m *message.Message) (store.PutResult, error)

// Options builds an Engine.
type Options struct {
	Store   Store
	Offsets Offsets
	Put     PutFunc
	Clock   interface{ Now() time.Time }
	Log     *slog.Logger
	Config  Config
	Cluster string // the revive topic is rmq_sys_REVIVE_LOG_<cluster>
	Broker  string // brokerName, in receipt handles and check points
	Host    netip.AddrPort
	// EnsureTopic creates a topic with queues read-write queues when it does not exist (the revive topic,
	// retry and dead-letter topics).
	EnsureTopic func(topic string, queues int32) error
	// HasTopic reports whether a topic exists (a group's retry topic is read only once it does).
	HasTopic func(topic string) bool
	// Unblocked is told that an ack unblocked an ordered queue (held pops of it may run again).
	Unblocked func(topic string, queueID int32)
	// RecordGet counts messages handed out of a queue and the group's next offset there (stats, metrics).
	RecordGet func(topic, group string, queueID int32, n, bytes int, next int64)
	// MaxAttempts is how often a group's message is delivered before it goes to %DLQ%<group> (the group's
	// retryMaxTimes, 16 by default).
	MaxAttempts func(group string) int32
	// DeadLetter builds the %DLQ%<group> copy of a message a group's consumers gave up on.
	DeadLetter func(group string, m *message.MessageExt) (*message.Message, error)
}

// Engine is RocketMQ 5's pop consumption on the master (doc.go). It runs while the broker is master: Start
// begins a term (the state of the last one is forgotten; the revive log is read again before the first pop
// or ack is served), Close ends it. Safe for concurrent use.
type Engine struct {
	o     Options
	rlog  *reviveLog
	order *orderInfo
	st    state
	// counters are the pop series (metrics.go).
	counters popCounters
	next     atomic.Uint32 // round robin over the revive queues
	// loaded is the epoch whose revive log was read: until it is the current one, pops and acks read it
	// first (load.go).
	loaded atomic.Uint64
	loadMu sync.Mutex // held while the revive log is read

	mu struct {
		sync.Mutex
		running bool
		cancel  context.CancelFunc
	}
	wg sync.WaitGroup
}

// ErrNotRunning answers pops and acks on a broker that does not run the pop engine (not master).
var ErrNotRunning = errors.New("pop: this broker is not the master; pop, ack and change of invisible time are served by the master")

// New returns a stopped engine.
func New(o Options) *Engine {
	s := &Engine{o: o, order: newOrderInfo()}
	s.rlog = &reviveLog{topic: protocol.ReviveTopic(o.Cluster), store: o.Store, offsets: o.Offsets, put: o.Put, host: o.Host,
		queues: o.Config.ReviveQueueNum,
		counted: func(group, topic, kind string, err error) {
			s.counters.reviveIn.Get(popMetricKey{group: group, topic: topic, kind: kind, status: putStatus(err)}).Add(1)
		}}
	s.st.resetLocked(int(o.Config.ReviveQueueNum))
	return s
}

// Start begins a term as master: the state is new, the revive log is read before the first pop or ack is
// served, and the revive loop runs.
func (s *Engine) Start() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.st.mu.Lock()
	s.st.resetLocked(int(s.o.Config.ReviveQueueNum))
	s.st.mu.Unlock()
	s.order.reset()
	ctx, cancel := context.WithCancel(context.Background())
	s.mu.running, s.mu.cancel = true, cancel
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.reviveLoop(ctx)
	}()
}

// Close ends the term: it writes the buffered check points (for at most closeFlushWait; a check point not
// written leaves its messages to be read again from the pop offset), stops the revive loop and waits for it.
// The pop and revive offsets are in the offset table then.
func (s *Engine) Close() error {
	if s.running() && s.loaded.Load() == s.epoch() {
		ctx, cancel := context.WithTimeout(context.Background(), closeFlushWait)
		s.flushBuffer(ctx, s.epoch())
		cancel()
		s.commitReviveOffsets()
	}
	s.mu.Lock()
	cancel := s.mu.cancel
	s.mu.running, s.mu.cancel = false, nil
	s.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	s.wg.Wait()
	return nil
}

func (s *Engine) running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mu.running
}

// epoch is the current term's.
func (s *Engine) epoch() uint64 {
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	return s.st.epoch
}

func (s *Engine) nowMs() int64 { return s.o.Clock.Now().UnixMilli() }

// RetryTopic is where a group's unacked messages of topic come back.
func (s *Engine) RetryTopic(topic, group string) string {
	if s.o.Config.EnableRetryTopicV2 {
		return protocol.PopRetryTopicV2(topic, group)
	}
	return protocol.PopRetryTopicV1(topic, group)
}

// Request is a checked POP_MESSAGE.
type Request struct {
	Group, Topic string
	QueueID      int32 // -1: every readable queue, from a random one
	ReadQueues   int32
	Max          int
	Invisible    int64 // ms
	InitMode     int32
	Filter       store.MessageFilter // of the topic; the retry topic is read unfiltered
	Order        bool
	AttemptID    string
}

// Answer is what a pop found: the records to send (mapped memory valid until Release, or copies) and the
// answer header.
type Answer struct {
	Parts    [][]byte
	releases []func()
	Header   protocol.PopMessageResponseHeader
	Count    int
	Size     int
}

// Release gives the records' memory back; the Parts are not to be used after it.
func (a *Answer) Release() {
	for _, r := range a.releases {
		r()
	}
	a.releases = nil
}

// Pop reads up to r.Max messages for r.Group, hides them for r.Invisible (a check point, or the
// ordered-queue block) and moves the group's pop offsets past them. An error is returned only when nothing
// was found and something failed.
func (s *Engine) Pop(ctx context.Context, r *Request) (*Answer, error) {
	if !s.running() {
		return nil, ErrNotRunning
	}
	epoch, err := s.ensureLoaded(ctx)
	if err != nil {
		return nil, err
	}
	a := &Answer{}
	popTime := s.nowMs()
	rq := int32(s.next.Add(1) % uint32(s.o.Config.ReviveQueueNum))
	if r.Order {
		rq = protocol.PopOrderReviveQueue
	}
	var start, offs, counts strings.Builder
	c := &popCall{s: s, r: r, a: a, epoch: epoch, popTime: popTime, rq: rq, start: &start, offs: &offs, counts: &counts}
	retry := s.RetryTopic(r.Topic, r.Group)
	hasRetry := !r.Order && s.o.HasTopic(retry)
	retryFirst := hasRetry && rand.IntN(100) < s.o.Config.PopFromRetryProbability
	if retryFirst {
		c.queue(ctx, retry, 0, true)
	}
	if r.QueueID >= 0 {
		c.queue(ctx, r.Topic, r.QueueID, false)
	} else {
		first := rand.Int32N(max(r.ReadQueues, 1))
		for i := int32(0); i < r.ReadQueues && a.Count < r.Max; i++ {
			c.queue(ctx, r.Topic, (first+i)%r.ReadQueues, false)
		}
	}
	if hasRetry && !retryFirst && a.Count < r.Max {
		c.queue(ctx, retry, 0, true)
	}
	if a.Count == 0 && len(c.busy) > 0 {
		// Every queue with messages was being read by another pop of the group: wait for those (a read of
		// memory, short) rather than answer nothing or hold the pop for an arrival while messages are there.
		busy := c.busy
		c.busy, c.wait = nil, true
		for _, b := range busy {
			c.queue(ctx, b.topic, b.queueID, b.retry)
		}
	}
	if a.Count == 0 && c.err != nil {
		return nil, c.err
	}
	a.Header = protocol.PopMessageResponseHeader{PopTime: popTime, InvisibleTime: r.Invisible, ReviveQid: rq,
		RestNum: c.rest, StartOffsetInfo: start.String(), MsgOffsetInfo: offs.String()}
	if r.Order {
		a.Header.OrderCountInfo = counts.String()
	}
	return a, nil
}

// popCall is one pop across queues.
type popCall struct {
	s                   *Engine
	r                   *Request
	a                   *Answer
	epoch               uint64
	popTime             int64
	rq                  int32
	start, offs, counts *strings.Builder
	rest                int64
	err                 error
	// busy are the queues skipped because another pop read them; with wait, queue waits for such a queue.
	busy []busyQueue
	wait bool
}

type busyQueue struct {
	topic   string
	queueID int32
	retry   bool
}

// queue pops from one queue: read from where the group's next pop reads, record the check point (or take
// the ordered block), move that position past the records, add them to the answer.
func (c *popCall) queue(ctx context.Context, topic string, q int32, isRetry bool) {
	s, r := c.s, c.r
	if c.a.Count >= r.Max {
		return
	}
	gq := GroupQueue{Group: r.Group, Topic: topic, QueueID: q}
	s.st.mu.Lock()
	if s.st.epoch != c.epoch {
		s.st.mu.Unlock()
		return
	}
	qs := s.st.queueLocked(gq)
	s.st.mu.Unlock()
	if c.wait {
		qs.pop.Lock()
	} else if !qs.pop.TryLock() {
		// Another pop reads this queue now (RocketMQ's queueLockManager.tryLock): the others first.
		c.busy = append(c.busy, busyQueue{topic, q, isRetry})
		return
	}
	defer qs.pop.Unlock()
	var off int64
	if r.Order {
		if s.order.blocked(r.Group, topic, q, c.popTime, r.AttemptID) {
			return // the previous pop's messages are neither acked nor visible again
		}
		off = s.orderOffset(gq, r.InitMode)
	} else if off = s.cursor(c.epoch, qs, r.InitMode); off < 0 {
		return
	}
	var f store.MessageFilter
	if !isRetry {
		f = r.Filter
	}
	res, err := s.o.Store.GetMessage(r.Group, topic, q, off, r.Max-c.a.Count, maxReadBytes, f)
	if err == nil && (res.Status == store.OffsetTooSmall || res.Status == store.OffsetOverflowBadly || res.Status == store.OffsetFoundNull) {
		res.Release()
		s.o.Log.Debug("pop offset moved", "group", r.Group, "topic", topic, "queue", q, "from", off, "to", res.NextBeginOffset)
		off = res.NextBeginOffset
		if !r.Order {
			s.moveCursor(c.epoch, qs, off)
		}
		res, err = s.o.Store.GetMessage(r.Group, topic, q, off, r.Max-c.a.Count, maxReadBytes, f)
	}
	if err != nil {
		c.err = fmt.Errorf("pop: read %s queue %d at %d: %w", topic, q, off, err)
		return
	}
	c.rest += max(res.MaxOffset-res.NextBeginOffset, 0)
	if res.Status != store.Found || res.MessageCount == 0 {
		res.Release()
		if res.NextBeginOffset > off && !r.Order && (res.Status == store.NoMatchedMessage || res.Status == store.MessageWasRemoving) {
			s.moveCursor(c.epoch, qs, res.NextBeginOffset) // nothing matched: never look at them again
		}
		return
	}
	qoffs := make([]int64, 0, len(res.Records))
	for _, rec := range res.Records {
		v, err := message.ParseRecord(rec)
		if err != nil {
			res.Release()
			c.err = fmt.Errorf("pop: %s queue %d at %d: %w", topic, q, off, err)
			return
		}
		qoffs = append(qoffs, v.QueueOffset)
	}
	if r.Order {
		counts := s.order.update(r.Group, topic, q, c.popTime, r.Invisible, r.AttemptID, qoffs)
		protocol.AppendOrderCountInfo(c.counts, topic, q, counts)
	} else {
		ck := protocol.PopCheckPoint{StartOffset: off, PopTime: c.popTime, InvisibleTime: r.Invisible,
			Num: int8(len(qoffs)), QueueID: q, Topic: topic, CID: r.Group, BrokerName: s.o.Broker,
			QueueOffsetDiff: make([]int32, len(qoffs))}
		for i, o := range qoffs {
			ck.QueueOffsetDiff[i] = int32(o - off)
		}
		if err := s.recordPop(ctx, c.epoch, qs, &ckState{ck: ck, rq: c.rq, at: -1, next: res.NextBeginOffset, queue: qs,
			epoch: c.epoch}); err != nil {
			res.Release()
			c.err = err
			return
		}
	}
	s.o.RecordGet(topic, r.Group, q, res.MessageCount, res.BufferTotalSize, res.NextBeginOffset)
	protocol.AppendStartOffsetInfo(c.start, topic, q, off)
	protocol.AppendMsgOffsetInfo(c.offs, topic, q, qoffs)
	c.add(res, topic, q, off, isRetry)
}

// add appends a queue's records to the answer. Records of a retry topic are sent as the topic the consumer
// asked for, with their receipt handle in POP_CK (the consumer cannot tell the queue from the topic).
func (c *popCall) add(res *store.GetResult, topic string, q int32, off int64, isRetry bool) {
	c.a.Count += res.MessageCount
	if !isRetry {
		c.a.Parts = append(c.a.Parts, res.Records...)
		c.a.releases = append(c.a.releases, res.Release)
		c.a.Size += res.BufferTotalSize
		return
	}
	defer res.Release()
	for _, rec := range res.Records {
		m, err := message.DecodeMessage(rec, true)
		if err != nil {
			continue
		}
		h := protocol.ExtraInfo{CKQueueOffset: off, PopTime: c.popTime, InvisibleTime: c.r.Invisible,
			ReviveQueueID: c.rq, RetryMark: protocol.RetryMark(topic), BrokerName: c.s.o.Broker, QueueID: q,
			QueueOffset: m.QueueOffset}
		m.Properties = message.EditProperties(m.Properties, func(p map[string]string) {
			if _, ok := p[message.PropertyPopCK]; !ok {
				p[message.PropertyPopCK] = h.String()
			}
		})
		m.Topic = c.r.Topic
		b, err := message.EncodeRecord(nil, m)
		if err != nil {
			continue
		}
		c.a.Parts = append(c.a.Parts, b)
		c.a.Size += len(b)
	}
}

// initialOffset is where a group new to a queue starts: the queue's start (initMode MIN, and always for
// retry topics) or its last message (initMode MAX).
func (s *Engine) initialOffset(topic string, q int32, initMode int32) int64 {
	if initMode == protocol.PopInitModeMin || strings.HasPrefix(topic, protocol.RetryGroupTopicPrefix) {
		return s.o.Store.MinOffsetInQueue(topic, q)
	}
	return max(s.o.Store.MaxOffsetInQueue(topic, q)-1, 0)
}

// orderOffset is an ordered pop's offset of the queue: the group's committed offset (its first message
// not acked), or for a group new to the queue initialOffset, committed.
func (s *Engine) orderOffset(gq GroupQueue, initMode int32) int64 {
	if off := s.o.Offsets.Query(gq.Group, gq.Topic, gq.QueueID); off >= 0 {
		return off
	}
	off := s.initialOffset(gq.Topic, gq.QueueID, initMode)
	s.o.Offsets.Commit(gq.Group, gq.Topic, gq.QueueID, off)
	return off
}

// HasMessage reports whether a pop of r would find a message now: a queue (not blocked, for an ordered
// pop) with messages past where the group's next pop reads, or such a message in the group's retry topic.
// Filters are not applied (as RocketMQ's NotificationProcessor).
func (s *Engine) HasMessage(r *Request) bool {
	if !s.running() {
		return false
	}
	now := s.nowMs()
	queue := func(topic string, q int32) bool {
		if r.Order && s.order.blocked(r.Group, topic, q, now, r.AttemptID) {
			return false
		}
		off := s.nextPop(GroupQueue{Group: r.Group, Topic: topic, QueueID: q}, r.Order)
		if off < 0 {
			return s.o.Store.MaxOffsetInQueue(topic, q) > 0
		}
		return s.o.Store.MaxOffsetInQueue(topic, q) > off
	}
	if r.QueueID >= 0 {
		if queue(r.Topic, r.QueueID) {
			return true
		}
	} else {
		for q := int32(0); q < r.ReadQueues; q++ {
			if queue(r.Topic, q) {
				return true
			}
		}
	}
	retry := s.RetryTopic(r.Topic, r.Group)
	return !r.Order && s.o.HasTopic(retry) && queue(retry, 0)
}

// InFlight is what a group has popped and not acked on one queue: how many, the first offset, and where
// the group's next pop of the queue reads (-1 when this term has not popped it: the table's offset is).
// The committed pop offset may be behind Next while pops are in the merge buffer (doc.go).
type InFlight struct {
	Count int64
	First int64
	Next  int64
}

func (p InFlight) add(off int64) InFlight {
	if p.Count == 0 || off < p.First {
		p.First = off
	}
	p.Count++
	return p
}

// InFlight is every queue's popped and not acked messages: of the check points in flight and of the
// ordered pops (empty off the master).
func (s *Engine) InFlight() map[GroupQueue]InFlight {
	t := map[GroupQueue]InFlight{}
	if !s.running() {
		return t
	}
	s.st.mu.Lock()
	for _, c := range s.st.cks {
		k := GroupQueue{Group: c.ck.CID, Topic: c.ck.Topic, QueueID: c.ck.QueueID}
		for i := range c.ck.QueueOffsetDiff {
			if c.acked&(1<<i) == 0 {
				f, ok := t[k]
				if !ok {
					f.Next = -1
					if qs := s.st.queues[k]; qs != nil && qs.known {
						f.Next = qs.cursor
					}
				}
				t[k] = f.add(c.offset(i))
			}
		}
	}
	s.st.mu.Unlock()
	s.order.addInFlight(t)
	return t
}
