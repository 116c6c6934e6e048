package broker

import (
	"slices"
	"sync"
	"time"

	"github.com/rocketraft/rocketraft/remoting"
)

// heldPop is a POP_MESSAGE or NOTIFICATION that found nothing and waits, up to its pollTime, for a message
// of its topic or of its group's retry topic.
type heldPop struct {
	conn     *remoting.Conn    // nil for a pop of the gRPC endpoint's local mode: wake is told instead
	req      *remoting.Command // nil with conn
	wake     chan struct{}     // capacity 1; set for a pop of local mode (grpc_local.go)
	group    string
	topics   []string // the topic, and the group's retry topic of it (not for ordered pops)
	queueID  int32    // -1: any queue
	deadline time.Time
}

// popPollService is RocketMQ 5's PopLongPollingService: held pops and notifications by topic, woken when
// dispatch reports a message of their topic (or of the group's retry topic), when an ordered ack unblocks a
// queue, or at their deadline; the woken request runs again (on the pull pool) and is held again for the
// time it has left if it still finds nothing. popPollingSize bounds the requests held on one topic,
// maxPopPollingSize all of them: beyond, a pop is answered POLLING_FULL at once.
type popPollService struct {
	perTopic, total int
	rerun           func(p *heldPop) // runs the request again without waiting; on the pull pool
	wake            chan struct{}    // capacity 1: a new earliest deadline
	stop            chan struct{}
	wg              sync.WaitGroup

	mu struct {
		sync.Mutex
		held     map[string][]*heldPop // topic -> held requests
		n        int                   // held requests
		earliest time.Time
		closed   bool // close ran: nothing is held any more
	}
}

func newPopPollService(perTopic, total int, rerun func(*heldPop)) *popPollService {
	s := &popPollService{perTopic: perTopic, total: total, rerun: rerun, wake: make(chan struct{}, 1), stop: make(chan struct{})}
	s.mu.held = map[string][]*heldPop{}
	return s
}

// hold parks p and reports true, or false when the limits are reached (answer POLLING_FULL). The caller
// checks for a message once more after parking (arrivals in between wake nobody) and calls arrived.
func (s *popPollService) hold(p *heldPop) bool {
	s.mu.Lock()
	if s.mu.closed || s.mu.n >= s.total || len(s.mu.held[p.topics[0]]) >= s.perTopic {
		s.mu.Unlock()
		return false
	}
	for _, t := range p.topics {
		s.mu.held[t] = append(s.mu.held[t], p)
	}
	s.mu.n++
	earlier := s.mu.earliest.IsZero() || p.deadline.Before(s.mu.earliest)
	if earlier {
		s.mu.earliest = p.deadline
	}
	s.mu.Unlock()
	if earlier {
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
	return true
}

// arrived wakes the requests held on topic for queueID (or any queue); queueID -1 wakes all of them. It
// runs for every dispatched message: a topic nobody waits on costs one map lookup.
func (s *popPollService) arrived(topic string, queueID int32) {
	s.wakeSelected(func() (ready []*heldPop) {
		for _, p := range s.mu.held[topic] {
			if queueID < 0 || p.queueID < 0 || p.queueID == queueID || topic != p.topics[0] {
				ready = append(ready, p)
			}
		}
		return ready
	})
}

// wakeWhere reruns and forgets the held requests match selects.
func (s *popPollService) wakeWhere(match func(*heldPop) bool) {
	s.wakeSelected(func() (ready []*heldPop) {
		for t, list := range s.mu.held {
			for _, p := range list {
				if t == p.topics[0] && match(p) {
					ready = append(ready, p)
				}
			}
		}
		return ready
	})
}

// wakeSelected forgets the held requests selectLocked picks (under s.mu, each once) and reruns them.
func (s *popPollService) wakeSelected(selectLocked func() []*heldPop) {
	s.mu.Lock()
	ready := selectLocked()
	for _, p := range ready {
		s.forgetLocked(p)
	}
	s.mu.Unlock()
	for _, p := range ready {
		s.rerun(p)
	}
}

// forgetLocked removes p from every list it is held in. s.mu must be held.
func (s *popPollService) forgetLocked(p *heldPop) {
	for _, t := range p.topics {
		list := slices.DeleteFunc(s.mu.held[t], func(q *heldPop) bool { return q == p })
		if len(list) == 0 {
			delete(s.mu.held, t)
		} else {
			s.mu.held[t] = list
		}
	}
	s.mu.n--
}

// forget removes p if it is still held (a local-mode pop whose caller gave up).
func (s *popPollService) forget(p *heldPop) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if slices.Contains(s.mu.held[p.topics[0]], p) {
		s.forgetLocked(p)
	}
}

// heldOn is how many requests of group are held on topic's queue queueID (POLLING_INFO).
func (s *popPollService) heldOn(group, topic string, queueID int32) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, p := range s.mu.held[topic] {
		if p.group == group && p.topics[0] == topic && p.queueID == queueID {
			n++
		}
	}
	return n
}

// heldCount is how many requests are held (tests, metrics).
func (s *popPollService) heldCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mu.n
}

func (s *popPollService) start() {
	s.wg.Add(1)
	go s.loop()
}

// close stops the deadline loop and answers everything held.
func (s *popPollService) close() {
	close(s.stop)
	s.wg.Wait()
	s.mu.Lock()
	s.mu.closed = true
	s.mu.Unlock()
	s.wakeWhere(func(*heldPop) bool { return true })
}

// loop answers requests at their deadline.
func (s *popPollService) loop() {
	defer s.wg.Done()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		now := time.Now()
		s.wakeWhere(func(p *heldPop) bool { return !now.Before(p.deadline) })
		next := time.Hour
		s.mu.Lock()
		s.mu.earliest = time.Time{}
		for t, list := range s.mu.held {
			for _, p := range list {
				if t == p.topics[0] && (s.mu.earliest.IsZero() || p.deadline.Before(s.mu.earliest)) {
					s.mu.earliest = p.deadline
				}
			}
		}
		if !s.mu.earliest.IsZero() {
			next = max(time.Until(s.mu.earliest), time.Millisecond)
		}
		s.mu.Unlock()
		timer.Reset(next)
		select {
		case <-s.stop:
			return
		case <-s.wake:
		case <-timer.C:
		}
	}
}
