package broker

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

// popStore is what the pop service reads of the message store. *store.Store is one; every method is safe
// from any goroutine.
type popStore interface {
	queueStore
	// GetMessage reads up to maxMsgNums records of a queue from offset (store.Store.GetMessage: the caller
	// releases the result; a nil filter matches everything).
	GetMessage(group, topic string, queueID int32, offset int64, maxMsgNums, maxBytes int, f store.MessageFilter) (*store.GetResult, error)
}

var _ popStore = (*store.Store)(nil)

// popOffsets is the consumer-offset table as the pop service uses it: pop offsets (the next offset a pop of
// the group reads) and the revive offsets live there like any consumer offset, so they are persisted,
// synced to slaves and proposed through Raft like any other. *consumerOffsetManager is one.
type popOffsets interface {
	// query is the committed offset, or -1 when none.
	query(group, topic string, queueID int32) int64
	// commit sets it (the last commit wins).
	commit(group, topic string, queueID int32, offset int64)
}

var _ popOffsets = (*consumerOffsetManager)(nil)

// popOptions builds a popService.
type popOptions struct {
	store   popStore
	offsets popOffsets
	put     putFunc // stores a message as it is (no delay rewriting)
	clock   interface{ Now() time.Time }
	log     *slog.Logger
	cfg     PopConfig
	cluster string // the revive topic is rmq_sys_REVIVE_LOG_<cluster>
	broker  string // brokerName, in receipt handles and check points
	host    netip.AddrPort
	// ensureTopic creates a topic with queues read-write queues when it does not exist (the revive topic,
	// retry and dead-letter topics).
	ensureTopic func(topic string, queues int32) error
	// hasTopic reports whether a topic exists (a group's retry topic is read only once it does).
	hasTopic func(topic string) bool
	// unblocked is told that an ack unblocked an ordered queue (held pops of it may run again).
	unblocked func(topic string, queueID int32)
	// recordGet counts messages handed out of a queue and the group's next offset there (stats, metrics).
	recordGet func(topic, group string, queueID int32, n, bytes int, next int64)
	// maxAttempts is how often a group's message is delivered before it goes to %DLQ%<group> (the group's
	// retryMaxTimes, 16 by default).
	maxAttempts func(group string) int32
	// deadLetter builds the %DLQ%<group> copy of a message a group's consumers gave up on.
	deadLetter func(group string, m *message.MessageExt) (*message.Message, error)
}

// popService is RocketMQ 5's pop consumption on the master: pops, acks, changes of invisible time, the
// revive service that redelivers what was not acked in time, and ordered pops (pop_order.go). It runs
// while the broker is master (a startStopper of the master services): start begins the revive loop, close
// stops it and forgets the in-memory state, which the next start (on this node or a new master) rebuilds
// from the revive log.
type popService struct {
	o      popOptions
	rlog   *reviveLog
	queues []*reviveQueue
	order  *orderInfo
	// counters are the pop series (pop_metrics.go).
	counters popCounters
	next     atomic.Uint32 // round robin over the revive queues
	// loaded is set once every revive queue was read since start: until then a pop reads them first, so
	// pop offsets that lag behind the log (a crash before the offsets were persisted, an offset sync that
	// had not reached this node) are lifted past the check points before anything is popped.
	loaded atomic.Bool

	busy struct { // topic@group@queue keys a pop is reading now
		sync.Mutex
		m map[string]bool
	}

	mu struct {
		sync.Mutex
		running bool
		cancel  context.CancelFunc
	}
	wg sync.WaitGroup
}

// errPopNotRunning answers pops and acks on a broker that does not run the pop service (not master).
var errPopNotRunning = errors.New("pop: this broker is not the master; pop, ack and change of invisible time are served by the master")

func newPopService(o popOptions) *popService {
	s := &popService{o: o, order: newOrderInfo()}
	s.rlog = &reviveLog{topic: protocol.ReviveTopic(o.cluster), store: o.store, offsets: o.offsets, put: o.put, host: o.host,
		counted: func(group, topic, kind string, err error) {
			s.counters.reviveIn.Get(popMetricKey{group: group, topic: topic, kind: kind, status: putStatus(err)}).Add(1)
		}}
	for i := int32(0); i < o.cfg.ReviveQueueNum; i++ {
		s.queues = append(s.queues, &reviveQueue{id: i})
		s.rlog.dispatched = append(s.rlog.dispatched, &signal{})
	}
	s.busy.m = map[string]bool{}
	return s
}

// start runs the revive loop; the revive queues are scanned from their revive offsets on first use.
func (s *popService) start() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, q := range s.queues {
		q.mu.Lock()
		q.loaded, q.cks = false, nil
		q.mu.Unlock()
	}
	s.order.reset()
	s.loaded.Store(false)
	ctx, cancel := context.WithCancel(context.Background())
	s.mu.running, s.mu.cancel = true, cancel
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.reviveLoop(ctx)
	}()
}

// close stops the revive loop and waits for it; the revive offsets are in the offset table already.
func (s *popService) close() error {
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

// arrived is the store's arrival listener's share (dispatch goroutine; must not block).
func (s *popService) arrived(a store.Arrival) {
	if a.Topic == s.rlog.topic {
		s.rlog.arrived(a.QueueID)
	}
}

func (s *popService) running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mu.running
}

func (s *popService) nowMs() int64 { return s.o.clock.Now().UnixMilli() }

// retryTopic is where a group's unacked messages of topic come back.
func (s *popService) retryTopic(topic, group string) string {
	if s.o.cfg.EnableRetryTopicV2 {
		return protocol.PopRetryTopicV2(topic, group)
	}
	return protocol.PopRetryTopicV1(topic, group)
}

// popRequest is a checked POP_MESSAGE.
type popRequest struct {
	group, topic string
	queueID      int32 // -1: every readable queue, from a random one
	readQueues   int32
	max          int
	invisible    int64 // ms
	initMode     int32
	filter       store.MessageFilter // of the topic; the retry topic is read unfiltered
	order        bool
	attemptID    string
}

// popAnswer is what a pop found: the records to send (mapped memory valid until release, or copies) and
// the answer header.
type popAnswer struct {
	parts    [][]byte
	releases []func()
	header   protocol.PopMessageResponseHeader
	count    int
	size     int
}

func (a *popAnswer) release() {
	for _, r := range a.releases {
		r()
	}
	a.releases = nil
}

// pop reads up to r.max messages for r.group, hides them for r.invisible (a check point in the revive log,
// or the ordered-queue block) and advances the group's pop offsets past them. An error is returned only
// when nothing was found and something failed.
func (s *popService) pop(ctx context.Context, r *popRequest) (*popAnswer, error) {
	if !s.running() {
		return nil, errPopNotRunning
	}
	if err := s.loadAll(); err != nil {
		return nil, err
	}
	a := &popAnswer{}
	popTime := s.nowMs()
	rq := int32(s.next.Add(1) % uint32(len(s.queues)))
	if r.order {
		rq = protocol.PopOrderReviveQueue
	}
	var start, offs, counts strings.Builder
	c := &popCall{s: s, r: r, a: a, popTime: popTime, rq: rq, start: &start, offs: &offs, counts: &counts}
	retry := s.retryTopic(r.topic, r.group)
	hasRetry := !r.order && s.o.hasTopic(retry)
	retryFirst := hasRetry && rand.IntN(100) < s.o.cfg.PopFromRetryProbability
	if retryFirst {
		c.queue(ctx, retry, 0, true)
	}
	if r.queueID >= 0 {
		c.queue(ctx, r.topic, r.queueID, false)
	} else {
		first := rand.Int32N(max(r.readQueues, 1))
		for i := int32(0); i < r.readQueues && a.count < r.max; i++ {
			c.queue(ctx, r.topic, (first+i)%r.readQueues, false)
		}
	}
	if hasRetry && !retryFirst && a.count < r.max {
		c.queue(ctx, retry, 0, true)
	}
	if a.count == 0 && c.err != nil {
		return nil, c.err
	}
	a.header = protocol.PopMessageResponseHeader{PopTime: popTime, InvisibleTime: r.invisible, ReviveQid: rq,
		RestNum: c.rest, StartOffsetInfo: start.String(), MsgOffsetInfo: offs.String()}
	if r.order {
		a.header.OrderCountInfo = counts.String()
	}
	return a, nil
}

// popCall is one pop across queues.
type popCall struct {
	s                   *popService
	r                   *popRequest
	a                   *popAnswer
	popTime             int64
	rq                  int32
	start, offs, counts *strings.Builder
	rest                int64
	err                 error
}

// queue pops from one queue: read from the pop offset, write the check point (or take the ordered block),
// move the pop offset, add the records.
func (c *popCall) queue(ctx context.Context, topic string, q int32, isRetry bool) {
	s, r := c.s, c.r
	if c.a.count >= r.max {
		return
	}
	key := topic + "@" + r.group + "@" + itoa(int64(q))
	if !s.tryBusy(key) {
		return // another pop reads this queue now (RocketMQ's queueLockManager.tryLock)
	}
	defer s.unbusy(key)
	off := s.popOffset(r.group, topic, q, r.initMode)
	if r.order {
		if s.order.blocked(r.group, topic, q, c.popTime, r.attemptID) {
			return // the previous pop's messages are neither acked nor visible again
		}
	}
	var f store.MessageFilter
	if !isRetry {
		f = r.filter
	}
	res, err := s.o.store.GetMessage(r.group, topic, q, off, r.max-c.a.count, maxPullBytes, f)
	if err == nil && (res.Status == store.OffsetTooSmall || res.Status == store.OffsetOverflowBadly || res.Status == store.OffsetFoundNull) {
		res.Release()
		s.o.log.Debug("pop offset moved", "group", r.group, "topic", topic, "queue", q, "from", off, "to", res.NextBeginOffset)
		off = res.NextBeginOffset
		if !r.order {
			s.o.offsets.commit(r.group, topic, q, off)
		}
		res, err = s.o.store.GetMessage(r.group, topic, q, off, r.max-c.a.count, maxPullBytes, f)
	}
	if err != nil {
		c.err = fmt.Errorf("pop: read %s queue %d at %d: %w", topic, q, off, err)
		return
	}
	c.rest += max(res.MaxOffset-res.NextBeginOffset, 0)
	if res.Status != store.Found || res.MessageCount == 0 {
		res.Release()
		if res.NextBeginOffset > off && !r.order && (res.Status == store.NoMatchedMessage || res.Status == store.MessageWasRemoving) {
			s.o.offsets.commit(r.group, topic, q, res.NextBeginOffset) // nothing matched: never look at them again
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
	if r.order {
		counts := s.order.update(r.group, topic, q, c.popTime, r.invisible, r.attemptID, qoffs)
		protocol.AppendOrderCountInfo(c.counts, topic, q, counts)
	} else {
		ck := &protocol.PopCheckPoint{StartOffset: off, PopTime: c.popTime, InvisibleTime: r.invisible,
			Num: int8(len(qoffs)), QueueID: q, Topic: topic, CID: r.group, BrokerName: s.o.broker}
		for _, o := range qoffs {
			ck.QueueOffsetDiff = append(ck.QueueOffsetDiff, int32(o-off))
		}
		if err := s.rlog.writeCheckPoint(ctx, c.rq, ck, c.popTime); err != nil {
			res.Release()
			c.err = err
			return
		}
		s.o.offsets.commit(r.group, topic, q, res.NextBeginOffset)
	}
	s.o.recordGet(topic, r.group, q, res.MessageCount, res.BufferTotalSize, res.NextBeginOffset)
	protocol.AppendStartOffsetInfo(c.start, topic, q, off)
	protocol.AppendMsgOffsetInfo(c.offs, topic, q, qoffs)
	c.add(res, topic, q, off, isRetry)
}

// add appends a queue's records to the answer. Records of a retry topic are sent as the topic the consumer
// asked for, with their receipt handle in POP_CK (the consumer cannot tell the queue from the topic).
func (c *popCall) add(res *store.GetResult, topic string, q int32, off int64, isRetry bool) {
	c.a.count += res.MessageCount
	if !isRetry {
		c.a.parts = append(c.a.parts, res.Records...)
		c.a.releases = append(c.a.releases, res.Release)
		c.a.size += res.BufferTotalSize
		return
	}
	defer res.Release()
	for _, rec := range res.Records {
		m, err := message.DecodeMessage(rec, true)
		if err != nil {
			continue
		}
		h := protocol.ExtraInfo{CKQueueOffset: off, PopTime: c.popTime, InvisibleTime: c.r.invisible,
			ReviveQueueID: c.rq, RetryMark: protocol.RetryMark(topic), BrokerName: c.s.o.broker, QueueID: q,
			QueueOffset: m.QueueOffset}
		m.Properties = editProperties(m.Properties, func(p map[string]string) {
			if _, ok := p[message.PropertyPopCK]; !ok {
				p[message.PropertyPopCK] = h.String()
			}
		})
		m.Topic = c.r.topic
		b, err := message.EncodeRecord(nil, m)
		if err != nil {
			continue
		}
		c.a.parts = append(c.a.parts, b)
		c.a.size += len(b)
	}
}

// popOffset is the group's next offset to pop in a queue: its committed offset, or, for a group new to the
// queue, the queue's start (initMode MIN, and always for retry topics) or its last message (initMode MAX),
// committed so the next pop starts there too.
func (s *popService) popOffset(group, topic string, q int32, initMode int32) int64 {
	if off := s.o.offsets.query(group, topic, q); off >= 0 {
		return off
	}
	var off int64
	if initMode == protocol.PopInitModeMin || strings.HasPrefix(topic, protocol.RetryGroupTopicPrefix) {
		off = s.o.store.MinOffsetInQueue(topic, q)
	} else {
		off = max(s.o.store.MaxOffsetInQueue(topic, q)-1, 0)
	}
	s.o.offsets.commit(group, topic, q, off)
	return off
}

func (s *popService) tryBusy(key string) bool {
	s.busy.Lock()
	defer s.busy.Unlock()
	if s.busy.m[key] {
		return false
	}
	s.busy.m[key] = true
	return true
}

func (s *popService) unbusy(key string) {
	s.busy.Lock()
	defer s.busy.Unlock()
	delete(s.busy.m, key)
}

// hasMessage reports whether a pop of r would find a message now: a queue (not blocked, for an ordered
// pop) with messages past the group's pop offset, or such a message in the group's retry topic. Filters are
// not applied (as RocketMQ's NotificationProcessor).
func (s *popService) hasMessage(r *popRequest) bool {
	if !s.running() {
		return false
	}
	now := s.nowMs()
	queue := func(topic string, q int32) bool {
		if r.order && s.order.blocked(r.group, topic, q, now, r.attemptID) {
			return false
		}
		off := s.o.offsets.query(r.group, topic, q)
		if off < 0 {
			return s.o.store.MaxOffsetInQueue(topic, q) > 0
		}
		return s.o.store.MaxOffsetInQueue(topic, q) > off
	}
	if r.queueID >= 0 {
		if queue(r.topic, r.queueID) {
			return true
		}
	} else {
		for q := int32(0); q < r.readQueues; q++ {
			if queue(r.topic, q) {
				return true
			}
		}
	}
	retry := s.retryTopic(r.topic, r.group)
	return !r.order && s.o.hasTopic(retry) && queue(retry, 0)
}

// popInFlight is what a group has popped and not acked on one queue: how many, and the first offset.
type popInFlight struct {
	count int64
	first int64
}

func (p popInFlight) add(off int64) popInFlight {
	if p.count == 0 || off < p.first {
		p.first = off
	}
	p.count++
	return p
}

// inFlight is every queue's popped-and-not-acked messages, from the pending check points of the revive
// queues read so far and the ordered pops (empty off the master). Takes each revive queue's lock in turn.
func (s *popService) inFlight() map[groupQueue]popInFlight {
	t := map[groupQueue]popInFlight{}
	if !s.running() {
		return t
	}
	for _, q := range s.queues {
		q.mu.Lock()
		for _, c := range q.cks {
			for i, d := range c.ck.QueueOffsetDiff {
				if c.acked&(1<<i) == 0 {
					k := groupQueue{c.ck.CID, c.ck.Topic, c.ck.QueueID}
					t[k] = t[k].add(c.ck.StartOffset + int64(d))
				}
			}
		}
		q.mu.Unlock()
	}
	s.order.addInFlight(t)
	return t
}

// loadAll reads every revive queue once since start (see loaded).
func (s *popService) loadAll() error {
	if s.loaded.Load() {
		return nil
	}
	for _, q := range s.queues {
		q.mu.Lock()
		err := s.rlog.scanLocked(q)
		q.mu.Unlock()
		if err != nil {
			return err
		}
	}
	s.loaded.Store(true)
	return nil
}
