package broker

import (
	"log/slog"
	"sync"
	"time"

	"github.com/rocketraft/rocketraft/remoting"
	"github.com/rocketraft/rocketraft/store"
)

// heldPull is a PULL_MESSAGE that found nothing and waits for a message or its deadline.
type heldPull struct {
	conn     *remoting.Conn
	req      *remoting.Command
	topic    string
	group    string // consumerGroup of the request
	queueID  int32
	offset   int64 // the offset it asked for: any max offset above it may satisfy it
	filter   store.MessageFilter
	deadline time.Time
}

// pullHoldService is RocketMQ's PullRequestHoldService: held pulls by topic and queue, woken when dispatch
// reports a new unit for their queue (arrival), at their deadline, or by a periodic re-check of every held
// queue's max offset (recheck interval, 5 s), which catches arrivals the listener could not match.
type pullHoldService struct {
	log      *slog.Logger
	recheck  time.Duration
	maxOff   func(topic string, queueID int32) int64
	rerun    func(p *heldPull) // re-runs the pull without suspending, on the pull pool
	wake     chan struct{}     // capacity 1: a new earliest deadline
	stop     chan struct{}
	wg       sync.WaitGroup
	mu       sync.Mutex
	held     map[holdKey][]*heldPull // held pulls by queue; guarded by mu
	earliest time.Time               // guarded by mu: earliest deadline among held pulls
}

func newPullHoldService(log *slog.Logger, recheck time.Duration, maxOff func(string, int32) int64, rerun func(*heldPull)) *pullHoldService {
	return &pullHoldService{log: log, recheck: recheck, maxOff: maxOff, rerun: rerun,
		wake: make(chan struct{}, 1), stop: make(chan struct{}), held: map[holdKey][]*heldPull{}}
}

// holdKey names a queue in the held table (a struct: looking one up for every arrival builds no string).
type holdKey struct {
	topic   string
	queueID int32
}

// hold parks p. A message may have arrived between the pull's read and now, so the queue is checked once
// more after parking; that closes the race with the arrival listener.
func (s *pullHoldService) hold(p *heldPull) {
	key := holdKey{p.topic, p.queueID}
	s.mu.Lock()
	s.held[key] = append(s.held[key], p)
	earlier := s.earliest.IsZero() || p.deadline.Before(s.earliest)
	if earlier {
		s.earliest = p.deadline
	}
	s.mu.Unlock()
	if earlier {
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
	s.notify(p.topic, p.queueID, s.maxOff(p.topic, p.queueID), nil)
}

// arrived is the store's arrival listener: a unit at queueOffset was dispatched for topic/queue.
func (s *pullHoldService) arrived(a store.Arrival) {
	s.notify(a.Topic, a.QueueID, a.QueueOffset+1, &a)
}

// notify wakes the pulls on topic/queue that maxOffset satisfies (and whose filter accepts the arrived
// message, when known), and those past their deadline.
func (s *pullHoldService) notify(topic string, queueID int32, maxOffset int64, a *store.Arrival) {
	key := holdKey{topic, queueID}
	now := time.Now()
	s.mu.Lock()
	list := s.held[key]
	if len(list) == 0 {
		s.mu.Unlock()
		return
	}
	var ready, keep []*heldPull
	var props map[string]string // the arrival's, decoded for the first pull that needs them
	for _, p := range list {
		switch {
		case maxOffset > p.offset && (a == nil || arrivalMatches(p.filter, a, &props)):
			ready = append(ready, p)
		case !now.Before(p.deadline):
			ready = append(ready, p)
		default:
			keep = append(keep, p)
		}
	}
	if len(keep) == 0 {
		delete(s.held, key)
	} else {
		s.held[key] = keep
	}
	s.mu.Unlock()
	for _, p := range ready {
		s.rerun(p)
	}
}

// arrivalMatches says whether f accepts the arrived message a, decoding its properties into *props on first
// use (they are valid during the arrival listener's call only).
func arrivalMatches(f store.MessageFilter, a *store.Arrival, props *map[string]string) bool {
	if !f.MatchByConsumeQueue(a.TagsCode) {
		return false
	}
	if *props == nil {
		*props = a.PropertyMap()
	}
	return f.MatchByCommitLog(nil, *props)
}

func (s *pullHoldService) start() {
	s.wg.Add(1)
	go s.loop()
}

func (s *pullHoldService) close() {
	close(s.stop)
	s.wg.Wait()
	// Answer whatever is still held so clients do not wait for their timeouts.
	s.mu.Lock()
	all := s.held
	s.held = map[holdKey][]*heldPull{}
	s.mu.Unlock()
	for _, list := range all {
		for _, p := range list {
			s.rerun(p)
		}
	}
}

func (s *pullHoldService) loop() {
	defer s.wg.Done()
	timer := time.NewTimer(s.recheck)
	defer timer.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-s.wake:
		case <-timer.C:
		}
		s.checkAll()
		next := s.recheck
		s.mu.Lock()
		if !s.earliest.IsZero() {
			if d := time.Until(s.earliest); d < next {
				next = max(d, time.Millisecond)
			}
		}
		s.mu.Unlock()
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		timer.Reset(next)
	}
}

// checkAll re-checks every held queue against its max offset and the deadlines, then recomputes the
// earliest deadline.
func (s *pullHoldService) checkAll() {
	s.mu.Lock()
	type q struct {
		topic string
		id    int32
	}
	queues := make([]q, 0, len(s.held))
	for _, list := range s.held {
		if len(list) > 0 {
			queues = append(queues, q{list[0].topic, list[0].queueID})
		}
	}
	s.mu.Unlock()
	for _, x := range queues {
		s.notify(x.topic, x.id, s.maxOff(x.topic, x.id), nil)
	}
	s.mu.Lock()
	s.earliest = time.Time{}
	for _, list := range s.held {
		for _, p := range list {
			if s.earliest.IsZero() || p.deadline.Before(s.earliest) {
				s.earliest = p.deadline
			}
		}
	}
	s.mu.Unlock()
}

// dropConn forgets the held pulls of a closed connection: nobody is left to answer.
func (s *pullHoldService) dropConn(connID uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for key, list := range s.held {
		keep := list[:0]
		for _, p := range list {
			if p.conn.ID() != connID {
				keep = append(keep, p)
			}
		}
		if len(keep) == 0 {
			delete(s.held, key)
		} else {
			s.held[key] = keep
		}
	}
}

// takeLeft removes and returns the held pulls of a client that left group ("" = every group) on connection
// connID (UNREGISTER_CLIENT): a pull woken later would hand messages to a consumer that is gone while its
// connection stays open for the same client's producer.
func (s *pullHoldService) takeLeft(connID uint64, group string) []*heldPull {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*heldPull
	for key, list := range s.held {
		keep := list[:0]
		for _, p := range list {
			if p.conn.ID() == connID && (group == "" || p.group == group) {
				out = append(out, p)
			} else {
				keep = append(keep, p)
			}
		}
		if len(keep) == 0 {
			delete(s.held, key)
		} else {
			s.held[key] = keep
		}
	}
	return out
}

// count is the number of held pulls (metrics, tests).
func (s *pullHoldService) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, l := range s.held {
		n += len(l)
	}
	return n
}
