package delay

import (
	"container/heap"
	"context"
	"encoding/json"
	"log/slog"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/rocketraft/rocketraft/internal/loop"
	"github.com/rocketraft/rocketraft/message"
	"github.com/rocketraft/rocketraft/protocol"
	"github.com/rocketraft/rocketraft/store"
)

// Timer delivers messages with an arbitrary delivery time (TIMER_DELIVER_MS, TIMER_DELAY_SEC,
// TIMER_DELAY_MS, __STARTDELIVERTIME). They are stored in the timer topic, whose ConsumeQueue tag code is
// the delivery time; the service loads the queue into a min-heap ordered by delivery time and sleeps on a
// single timer until the earliest is due: no timer per message. Its progress (the lowest queue offset not
// yet delivered, and what was delivered above it) is persisted in timerCheckpoint.json every
// flushDelayOffsetInterval and at close; a restart re-delivers at most what was delivered since then. Its
// methods are safe for concurrent use; Start and Close alternate (the broker's master services).
type Timer struct {
	service
	o    TimerOptions
	path string
	wake chan struct{}

	mu        sync.Mutex
	pending   timerHeap      // guarded by mu
	scanned   int64          // guarded by mu: next queue offset to load
	lowWater  int64          // guarded by mu: every offset below is delivered
	delivered map[int64]bool // guarded by mu: delivered offsets >= lowWater
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

// TimerOptions is what a Timer is built with.
type TimerOptions struct {
	Store        Store         // reads the timer topic and the parked records
	Put          PutFunc       // stores a due message in its real topic (the broker's put path)
	Clock        Clock         // the steady clock
	Log          *slog.Logger  // tagged service=timer here
	Dir          string        // storePathRootDir: timerCheckpoint.json goes to its config directory
	PersistEvery time.Duration // flushDelayOffsetInterval
	// OnDelivered counts a message delivered to its real topic (the timer dequeue series); it must not
	// block. nil: not counted.
	OnDelivered func(topic string)
}

// NewTimer returns a stopped Timer with nothing delivered (Load reads its checkpoint).
func NewTimer(o TimerOptions) *Timer {
	s := &Timer{service: newService(o.Log.With("service", "timer"), "persist timer checkpoint"), o: o,
		path: filepath.Join(o.Dir, "config", "timerCheckpoint.json"), wake: make(chan struct{}, 1), delivered: map[int64]bool{}}
	s.persist = s.Persist
	return s
}

// Load reads timerCheckpoint.json (a missing file: nothing delivered). Called before Start.
func (s *Timer) Load() error {
	var cp protocol.TimerCheckpoint
	found, err := store.ReadConfigJSON(s.path, &cp)
	if found {
		s.RestoreCheckpoint(cp)
	}
	return err
}

// Persist writes the checkpoint to timerCheckpoint.json, atomically.
func (s *Timer) Persist() error {
	data, err := json.Marshal(s.Checkpoint())
	if err != nil {
		return err
	}
	return store.WriteFileAtomic(s.path, data)
}

// Start starts the delivery loop and the periodic persist. Called only while stopped; a closed Timer may
// be started again (Raft leadership coming back).
func (s *Timer) Start() {
	s.begin(s.o.PersistEvery)
	s.wg.Add(1)
	go s.loop()
}

// Close stops the loop, waits for it and persists the checkpoint; the error is the persist's. Called only
// while started.
func (s *Timer) Close() error { return s.end() }

// Arrived wakes the loop: a unit was dispatched to the timer topic. The store's arrival listener calls it
// on the dispatch goroutine: it does not block. Safe before Start and after Close.
func (s *Timer) Arrived() { loop.Wake(s.wake) }

// scan loads the units dispatched since the last scan into the heap.
func (s *Timer) scan() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if min := s.o.Store.MinOffsetInQueue(protocol.TopicTimer, 0); s.scanned < min {
		s.log.Warn("timer queue expired below its checkpoint: skipping ahead", "checkpoint", s.scanned, "min", min)
		s.scanned = min
		if s.lowWater < min {
			s.lowWater = min
		}
	}
	max := s.o.Store.MaxOffsetInQueue(protocol.TopicTimer, 0)
	for ; s.scanned < max; s.scanned++ {
		if s.delivered[s.scanned] {
			continue
		}
		u, err := s.o.Store.ConsumeQueueUnit(protocol.TopicTimer, 0, s.scanned)
		if err != nil {
			s.log.Warn("timer queue unit unreadable; skipped", "offset", s.scanned, "err", err)
			s.markDeliveredLocked(s.scanned)
			continue
		}
		heap.Push(&s.pending, timerEntry{due: u.TagsCode, queueOffset: s.scanned, phy: u.PhysicalOffset})
	}
}

func (s *Timer) markDeliveredLocked(off int64) {
	s.delivered[off] = true
	for s.delivered[s.lowWater] {
		delete(s.delivered, s.lowWater)
		s.lowWater++
	}
}

func (s *Timer) loop() {
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
			now := s.o.Clock.Now().UnixMilli()
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
		if !s.sleep(timer, next, s.wake) {
			return
		}
	}
}

// deliverBatch delivers entries due now in order and records each as delivered. When one cannot be
// stored again it is retried after the backoff, behind what is due before then (one message that cannot
// be stored does not hold back the others; none is delivered early either way), the rest of the batch
// goes back to the heap as it was, and deliverBatch reports true.
func (s *Timer) deliverBatch(batch []timerEntry) (failed bool) {
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
			e.due = max(e.due, s.o.Clock.Now().UnixMilli()+retryBackoff.Milliseconds())
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
// (RECALL_MESSAGE's: TIMER_DEL_UNIQKEY set) and the messages they recall, which it records as
// delivered, both at once (a checkpoint never holds a recall without its message). A recall is stored due
// at its message's delivery time, so the two meet here whatever their order in the queue. A record that
// cannot be read stays in the batch (deliver reports it). The records are read here and again by deliver,
// not kept in between: a millisecond may hold a large batch (a sender's fixed delivery time), and
// dropRecalled runs only for batches of more than one entry.
func (s *Timer) dropRecalled(batch []timerEntry) []timerEntry {
	keys := make([]string, len(batch)) // the delete key each message answers to
	recall := make([]bool, len(batch))
	recalled := map[string]bool{}
	for i, e := range batch {
		m, err := s.o.Store.LookMessageByOffset(e.phy)
		if err != nil {
			continue // kept: deliver reports it
		}
		if k, ok := message.FindProperty(m.Properties, message.PropertyTimerDelUniqKey); ok {
			recall[i], recalled[k] = true, true
			continue
		}
		topic, _ := message.FindProperty(m.Properties, message.PropertyRealTopic)
		uniq, _ := message.FindProperty(m.Properties, message.PropertyUniqKey)
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
func (s *Timer) deliver(phy int64) error {
	m, err := s.o.Store.LookMessageByOffset(phy)
	if err != nil {
		return err
	}
	if _, ok := message.FindProperty(m.Properties, message.PropertyTimerDelUniqKey); ok {
		return nil // a recall whose message was delivered before it came, or was never stored here
	}
	real := message.RestoreReal(m, message.PropertyTimerOutMs, message.PropertyTimerDeliverMs, message.PropertyTimerDelayMs,
		message.PropertyTimerDelaySec, message.PropertyStartDeliverTime)
	ctx, cancel := context.WithTimeout(context.Background(), deliverTimeout)
	defer cancel()
	if _, err = s.o.Put(ctx, real); err == nil && s.o.OnDelivered != nil {
		s.o.OnDelivered(real.Topic)
	}
	return err
}

// Checkpoint is the timer's progress (delivered offsets sorted).
func (s *Timer) Checkpoint() protocol.TimerCheckpoint {
	s.mu.Lock()
	cp := protocol.TimerCheckpoint{LowWater: s.lowWater, Delivered: make([]int64, 0, len(s.delivered))}
	for off := range s.delivered {
		cp.Delivered = append(cp.Delivered, off)
	}
	s.mu.Unlock()
	slices.Sort(cp.Delivered)
	return cp
}

// RestoreCheckpoint takes another master's timer progress (Raft mode; the Timer is stopped on this node):
// the next Start scans the timer queue again from its low water mark.
func (s *Timer) RestoreCheckpoint(cp protocol.TimerCheckpoint) {
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

// TimerStatus is the timer's backlog for the metrics: messages due but not delivered and how late the most
// overdue one is, units stored but not yet loaded, and loaded messages waiting for their time.
type TimerStatus struct {
	Due, Unloaded, Waiting int64
	LateMillis             int64
	Scanned                int64 // the next timer queue offset to load
	// Ahead counts the loaded messages due within TimerDistBounds[i] seconds and after TimerDistBounds[i-1]
	// (RocketMQ's rocketmq_timer_message_snapshot); later ones are not counted.
	Ahead [len(TimerDistBounds)]int64
}

// TimerDistBounds are RocketMQ's timer distribution bounds in seconds: 5 s, 1 min, 5 min, 15 min, 1 h, 4 h,
// 8 h, 24 h.
var TimerDistBounds = [...]int64{5, 60, 300, 900, 3600, 14400, 28800, 86400}

// Status reads the backlog at now (the steady clock's time: the delivery times are on it). Safe from any
// goroutine.
func (s *Timer) Status(now time.Time) TimerStatus {
	max := s.o.Store.MaxOffsetInQueue(protocol.TopicTimer, 0)
	s.mu.Lock()
	defer s.mu.Unlock()
	st := TimerStatus{Unloaded: max - s.scanned, Scanned: s.scanned}
	ms := now.UnixMilli()
	for _, e := range s.pending {
		if e.due <= ms {
			st.Due++
			st.LateMillis = maxInt64(st.LateMillis, ms-e.due)
		} else {
			st.Waiting++
			for i, bound := range TimerDistBounds {
				if e.due-ms <= bound*1000 {
					st.Ahead[i]++
					break
				}
			}
		}
	}
	st.Unloaded = maxInt64(st.Unloaded, 0)
	return st
}

func maxInt64(a, b int64) int64 {
	if a > b {
		return a
	}
	return b
}
