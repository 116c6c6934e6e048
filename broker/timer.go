package broker

import (
	"container/heap"
	"context"
	"encoding/json"
	"log/slog"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/rocketraft/rocketraft/message"
	"github.com/rocketraft/rocketraft/protocol"
)

// timerService delivers messages with an arbitrary delivery time (TIMER_DELIVER_MS, TIMER_DELAY_SEC,
// TIMER_DELAY_MS, __STARTDELIVERTIME). They are stored in the timer topic, whose ConsumeQueue tag code is
// the delivery time; the service loads the queue into a min-heap ordered by delivery time and sleeps on a
// single timer until the earliest is due: no timer per message. Its progress (the lowest queue offset not
// yet delivered, and what was delivered above it) is persisted in timerCheckpoint.json every
// flushDelayOffsetInterval and at close; a restart re-delivers at most what was delivered since then.
type timerService struct {
	timerOptions
	log  *slog.Logger
	path string
	wake chan struct{}
	stop chan struct{}
	wg   sync.WaitGroup

	mu        sync.Mutex
	pending   timerHeap      // guarded by mu
	scanned   int64          // guarded by mu: next queue offset to load
	lowWater  int64          // guarded by mu: every offset below is delivered
	delivered map[int64]bool // guarded by mu: delivered offsets >= lowWater
}

// TimerCheckpoint is timerCheckpoint.json.
type TimerCheckpoint struct {
	LowWater  int64   `json:"lowWater"`
	Delivered []int64 `json:"delivered"`
}

type timerEntry struct {
	due, queueOffset, phy int64
}

type timerHeap []timerEntry

func (h timerHeap) Len() int { return len(h) }
func (h timerHeap) Less(i, j int) bool {
	return h[i].due < h[j].due || (h[i].due == h[j].due && h[i].queueOffset < h[j].queueOffset)
}
func (h timerHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *timerHeap) Push(x any)   { *h = append(*h, x.(timerEntry)) }
func (h *timerHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

// timerOptions is what the timer service is built with.
type timerOptions struct {
	store        queueStore    // reads the timer topic and the parked records
	put          putFunc       // stores a due message in its real topic (the broker's put path)
	clock        Clock         // the steady clock (clock.go)
	log          *slog.Logger  // tagged service=timer here
	dir          string        // storePathRootDir: timerCheckpoint.json goes to its config directory
	persistEvery time.Duration // flushDelayOffsetInterval
	// onDelivered counts a message delivered to its real topic (the timer dequeue series); it must not
	// block. nil: not counted.
	onDelivered func(topic string)
}

func newTimerService(o timerOptions) *timerService {
	return &timerService{timerOptions: o, log: o.log.With("service", "timer"),
		path: filepath.Join(o.dir, "config", "timerCheckpoint.json"),
		wake: make(chan struct{}, 1), stop: make(chan struct{}), delivered: map[int64]bool{}}
}

func (s *timerService) load() error {
	var cp TimerCheckpoint
	found, err := loadJSON(s.path, &cp)
	if err != nil || !found {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lowWater, s.scanned = cp.LowWater, cp.LowWater
	for _, off := range cp.Delivered {
		if off >= cp.LowWater {
			s.delivered[off] = true
		}
	}
	return nil
}

func (s *timerService) persist() error {
	data, err := json.Marshal(s.checkpoint())
	if err != nil {
		return err
	}
	return writeConfigFile(s.path, data)
}

func (s *timerService) start() {
	s.stop = make(chan struct{}) // started again after a close when Raft leadership comes back
	s.wg.Add(1)
	go s.loop()
	runEvery(s.stop, &s.wg, s.persistEvery, func() {
		if err := s.persist(); err != nil {
			s.log.Error("persist timer checkpoint", "err", err)
		}
	})
}

func (s *timerService) close() error {
	close(s.stop)
	s.wg.Wait()
	return s.persist()
}

func (s *timerService) arrived() { wake(s.wake) }

// scan loads the units dispatched since the last scan into the heap.
func (s *timerService) scan() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if min := s.store.MinOffsetInQueue(TopicTimer, 0); s.scanned < min {
		s.log.Warn("timer queue expired below its checkpoint: skipping ahead", "checkpoint", s.scanned, "min", min)
		s.scanned = min
		if s.lowWater < min {
			s.lowWater = min
		}
	}
	max := s.store.MaxOffsetInQueue(TopicTimer, 0)
	for ; s.scanned < max; s.scanned++ {
		if s.delivered[s.scanned] {
			continue
		}
		u, err := s.store.ConsumeQueueUnit(TopicTimer, 0, s.scanned)
		if err != nil {
			s.log.Warn("timer queue unit unreadable; skipped", "offset", s.scanned, "err", err)
			s.markDeliveredLocked(s.scanned)
			continue
		}
		heap.Push(&s.pending, timerEntry{due: u.TagsCode, queueOffset: s.scanned, phy: u.PhysicalOffset})
	}
}

func (s *timerService) markDeliveredLocked(off int64) {
	s.delivered[off] = true
	for s.delivered[s.lowWater] {
		delete(s.delivered, s.lowWater)
		s.lowWater++
	}
}

func (s *timerService) loop() {
	defer s.wg.Done()
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		s.scan()
		next := idleRecheck
		for {
			s.mu.Lock()
			if len(s.pending) == 0 {
				s.mu.Unlock()
				break
			}
			due := s.pending[0].due
			now := s.clock.Now().UnixMilli()
			if due > now {
				next = min(next, time.Duration(due-now)*time.Millisecond)
				s.mu.Unlock()
				break
			}
			var batch []timerEntry // everything due at this millisecond: a recall and its message are
			for len(s.pending) > 0 && s.pending[0].due == due {
				batch = append(batch, heap.Pop(&s.pending).(timerEntry))
			}
			s.mu.Unlock()
			if len(batch) > 1 {
				batch = s.dropRecalled(batch)
			}
			if failed := s.deliverBatch(batch); failed {
				next = retryBackoff
				break
			}
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		timer.Reset(next)
		select {
		case <-s.stop:
			return
		case <-s.wake:
		case <-timer.C:
		}
	}
}

// deliverBatch delivers entries due now in order and records each as delivered. When one cannot be
// stored again it is retried after the backoff, behind what is due before then (one message that cannot
// be stored does not hold back the others; none is delivered early either way), the rest of the batch
// goes back to the heap as it was, and deliverBatch reports true.
func (s *timerService) deliverBatch(batch []timerEntry) (failed bool) {
	for i, e := range batch {
		err := s.deliver(e.phy)
		if recordGone(err) {
			// The record's CommitLog file is gone (expired or cleaned under disk pressure): there is
			// nothing left to deliver, and retrying it would hold back every message due after it.
			s.log.Warn("timer message no longer in the CommitLog; skipped", "offset", e.queueOffset, "phyOffset", e.phy)
			err = nil
		}
		if err != nil {
			s.log.Error("deliver timer message failed; retrying", "offset", e.queueOffset, "err", err)
			e.due = max(e.due, s.clock.Now().UnixMilli()+retryBackoff.Milliseconds())
			s.mu.Lock()
			heap.Push(&s.pending, e)
			for _, rest := range batch[i+1:] {
				heap.Push(&s.pending, rest)
			}
			s.mu.Unlock()
			return true
		}
		s.mu.Lock()
		s.markDeliveredLocked(e.queueOffset)
		s.mu.Unlock()
	}
	return false
}

// dropRecalled takes the entries due at one millisecond and returns them without the recall records
// (RECALL_MESSAGE's, recall.go: TIMER_DEL_UNIQKEY set) and the messages they recall, which it records as
// delivered, both at once (a checkpoint never holds a recall without its message). A recall is stored due
// at its message's delivery time, so the two meet here whatever their order in the queue. A record that
// cannot be read stays in the batch (deliver reports it). The records are read here and again by deliver,
// not kept in between: a millisecond may hold a large batch (a sender's fixed delivery time), and
// dropRecalled runs only for batches of more than one entry.
func (s *timerService) dropRecalled(batch []timerEntry) []timerEntry {
	keys := make([]string, len(batch)) // the delete key each message answers to
	recall := make([]bool, len(batch))
	recalled := map[string]bool{}
	for i, e := range batch {
		m, err := s.store.LookMessageByOffset(e.phy)
		if err != nil {
			continue // kept: deliver reports it
		}
		if k, ok := propValue(m.Properties, message.PropertyTimerDelUniqKey); ok {
			recall[i], recalled[k] = true, true
			continue
		}
		topic, _ := propValue(m.Properties, message.PropertyRealTopic)
		uniq, _ := propValue(m.Properties, message.PropertyUniqKey)
		keys[i] = protocol.TimerDeleteKey(topic, uniq)
	}
	if len(recalled) == 0 {
		return batch
	}
	kept := batch[:0:0]
	var dropped []timerEntry
	for i, e := range batch {
		switch {
		case recall[i]:
			dropped = append(dropped, e)
		case keys[i] != "" && recalled[keys[i]]:
			dropped = append(dropped, e)
			s.log.Info("timer message recalled: not delivered", "key", keys[i], "offset", e.queueOffset)
		default:
			kept = append(kept, e)
		}
	}
	s.mu.Lock()
	for _, e := range dropped {
		s.markDeliveredLocked(e.queueOffset)
	}
	s.mu.Unlock()
	return kept
}

// deliver stores the timer record at phy in its real topic; a recall record is not delivered.
func (s *timerService) deliver(phy int64) error {
	m, err := s.store.LookMessageByOffset(phy)
	if err != nil {
		return err
	}
	if _, ok := propValue(m.Properties, message.PropertyTimerDelUniqKey); ok {
		return nil // a recall whose message was delivered before it came, or was never stored here
	}
	real := restoreReal(m, propTimerOutMs, propTimerDeliverMs, propTimerDelayMs, propTimerDelaySec, propStartDeliverTime)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err = s.put(ctx, real); err == nil && s.onDelivered != nil {
		s.onDelivered(real.Topic)
	}
	return err
}

// checkpoint is the timer service's progress (its TimerCheckpoint, delivered offsets sorted).
func (s *timerService) checkpoint() TimerCheckpoint {
	s.mu.Lock()
	cp := TimerCheckpoint{LowWater: s.lowWater, Delivered: make([]int64, 0, len(s.delivered))}
	for off := range s.delivered {
		cp.Delivered = append(cp.Delivered, off)
	}
	s.mu.Unlock()
	slices.Sort(cp.Delivered)
	return cp
}

// restoreCheckpoint takes another master's timer progress (Raft mode; the service is stopped on this
// node): the next start scans the timer queue again from its low water mark.
func (s *timerService) restoreCheckpoint(cp TimerCheckpoint) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lowWater, s.scanned, s.pending = cp.LowWater, cp.LowWater, nil
	s.delivered = make(map[int64]bool, len(cp.Delivered))
	for _, off := range cp.Delivered {
		if off >= cp.LowWater {
			s.delivered[off] = true
		}
	}
}

// equal reports whether two checkpoints (delivered sorted) are the same.
func (c TimerCheckpoint) equal(o TimerCheckpoint) bool {
	return c.LowWater == o.LowWater && slices.Equal(c.Delivered, o.Delivered)
}

// timerStatus is the timer's backlog for the metrics: messages due but not delivered and how late the most
// overdue one is, units stored but not yet loaded, and loaded messages waiting for their time.
type timerStatus struct {
	due, unloaded, waiting int64
	lateMillis             int64
	scanned                int64 // the next timer queue offset to load
	// ahead counts the loaded messages due within timerDistBounds[i] seconds and after timerDistBounds[i-1]
	// (RocketMQ's rocketmq_timer_message_snapshot); later ones are not counted.
	ahead [len(timerDistBounds)]int64
}

// timerDistBounds are RocketMQ's timer distribution bounds in seconds: 5 s, 1 min, 5 min, 15 min, 1 h, 4 h,
// 8 h, 24 h.
var timerDistBounds = [...]int64{5, 60, 300, 900, 3600, 14400, 28800, 86400}

// status reads the backlog at now. Safe from any goroutine.
func (s *timerService) status(now time.Time) timerStatus {
	max := s.store.MaxOffsetInQueue(TopicTimer, 0)
	s.mu.Lock()
	defer s.mu.Unlock()
	st := timerStatus{unloaded: max - s.scanned, scanned: s.scanned}
	ms := now.UnixMilli()
	for _, e := range s.pending {
		if e.due <= ms {
			st.due++
			st.lateMillis = maxInt64(st.lateMillis, ms-e.due)
		} else {
			st.waiting++
			for i, bound := range timerDistBounds {
				if e.due-ms <= bound*1000 {
					st.ahead[i]++
					break
				}
			}
		}
	}
	st.unloaded = maxInt64(st.unloaded, 0)
	return st
}

func maxInt64(a, b int64) int64 {
	if a > b {
		return a
	}
	return b
}
