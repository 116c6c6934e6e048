package delay

import (
	"context"
	"encoding/json"
	"log/slog"
	"maps"
	"path/filepath"
	"sync"
	"time"

	"github.com/rocketraft/rocketraft/internal/loop"
	"github.com/rocketraft/rocketraft/message"
	"github.com/rocketraft/rocketraft/protocol"
	"github.com/rocketraft/rocketraft/store"
)

// Schedule is RocketMQ's ScheduleMessageService: one loop per delay level reads its queue of
// SCHEDULE_TOPIC_XXXX in order and, when a message is due (its ConsumeQueue tag code holds the delivery
// time), stores it again in its real topic and queue. A level's offset moves only after the re-put
// succeeded and is persisted every flushDelayOffsetInterval and at close, so a restart re-delivers at most
// what was delivered since the last persist (at-least-once), and loses nothing. Its methods are safe for
// concurrent use; Start and Close alternate (the broker's master services).
type Schedule struct {
	service
	o       ScheduleOptions
	path    string
	wakes   []chan struct{} // per level, capacity 1: a message arrived in its queue
	mu      sync.Mutex
	offsets map[int]int64 // level -> next queue offset; guarded by mu

	amu      sync.Mutex
	arrivals [][]arrival // per level, in queue offset order: when its messages arrived; guarded by amu
}

// arrival is when (Clock.Elapsed) the delay level message at a queue offset was dispatched here.
type arrival struct {
	off int64
	at  time.Duration
}

// maxArrivals bounds the arrivals remembered per level (16 bytes each); a message arriving beyond it is
// timed by its tag code alone (see dueAt).
const maxArrivals = 1 << 16

// ScheduleOptions is what a Schedule is built with.
type ScheduleOptions struct {
	Store        Store           // reads SCHEDULE_TOPIC_XXXX and the parked records
	Put          PutFunc         // stores a due message in its real topic (the broker's put path)
	Clock        Clock           // the steady clock
	Log          *slog.Logger    // tagged service=schedule here
	Levels       []time.Duration // messageDelayLevel: level n is Levels[n-1]
	Dir          string          // storePathRootDir: delayOffset.json goes to its config directory
	PersistEvery time.Duration   // flushDelayOffsetInterval
}

// NewSchedule returns a stopped Schedule with no offsets (Load reads them).
func NewSchedule(o ScheduleOptions) *Schedule {
	s := &Schedule{service: newService(o.Log.With("service", "schedule"), "persist delay offsets"), o: o,
		path: filepath.Join(o.Dir, "config", "delayOffset.json"), offsets: map[int]int64{}}
	s.persist = s.Persist
	for range o.Levels {
		s.wakes = append(s.wakes, make(chan struct{}, 1))
	}
	s.arrivals = make([][]arrival, len(o.Levels))
	return s
}

// Load reads delayOffset.json (a missing file leaves the offsets at 0). Called before Start.
func (s *Schedule) Load() error {
	var w protocol.DelayOffsetWrapper
	if _, err := store.ReadConfigJSON(s.path, &w); err != nil {
		return err
	}
	s.SetOffsets(w.OffsetTable)
	return nil
}

// Offsets is a copy of every level's offset: the next queue offset of its queue to deliver.
func (s *Schedule) Offsets() protocol.DelayOffsetWrapper {
	s.mu.Lock()
	defer s.mu.Unlock()
	w := protocol.DelayOffsetWrapper{OffsetTable: make(map[int]int64, len(s.offsets))}
	for k, v := range s.offsets {
		w.OffsetTable[k] = v
	}
	return w
}

// Persist writes the offsets to delayOffset.json, atomically.
func (s *Schedule) Persist() error {
	data, err := json.MarshalIndent(s.Offsets(), "", "\t")
	if err != nil {
		return err
	}
	return store.WriteFileAtomic(s.path, data)
}

// Offset is the level's offset.
func (s *Schedule) Offset(level int) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.offsets[level]
}

func (s *Schedule) setOffset(level int, off int64) {
	s.mu.Lock()
	s.offsets[level] = off
	s.mu.Unlock()
}

// SetOffsets takes the levels' offsets in table (the master's, or a Raft offsets entry); levels not in
// it keep theirs.
func (s *Schedule) SetOffsets(table map[int]int64) {
	s.mu.Lock()
	maps.Copy(s.offsets, table)
	s.mu.Unlock()
}

// ReplaceOffsets makes table the offsets (a Raft snapshot); levels not in it start from 0.
func (s *Schedule) ReplaceOffsets(table map[int]int64) {
	s.mu.Lock()
	s.offsets = maps.Clone(table)
	if s.offsets == nil {
		s.offsets = map[int]int64{}
	}
	s.mu.Unlock()
}

// Start starts a loop per level and the periodic persist. Called only while stopped; a closed Schedule
// may be started again (Raft leadership coming back).
func (s *Schedule) Start() {
	s.begin(s.o.PersistEvery)
	for i := range s.o.Levels {
		s.wg.Add(1)
		go s.levelLoop(i + 1)
	}
}

// Close stops the loops, waits for them and persists the offsets; the error is the persist's. Called only
// while started.
func (s *Schedule) Close() error { return s.end() }

// Arrived notes when the message at queueOffset of a level's queue (queueID: level-1) arrived and wakes
// the level's loop. The store's arrival listener calls it on the dispatch goroutine: it does not block.
// Safe before Start and after Close.
func (s *Schedule) Arrived(queueID int32, queueOffset int64) {
	if int(queueID) >= len(s.wakes) {
		return
	}
	at := s.o.Clock.Elapsed()
	s.amu.Lock()
	if a := s.arrivals[queueID]; len(a) < maxArrivals && (len(a) == 0 || a[len(a)-1].off < queueOffset) {
		s.arrivals[queueID] = append(a, arrival{off: queueOffset, at: at})
	}
	s.amu.Unlock()
	loop.Wake(s.wakes[queueID])
}

// arrivalOf returns when the message at off of the level's queue arrived, if it is remembered, and forgets
// the arrivals below off (delivered).
func (s *Schedule) arrivalOf(queueID int32, off int64) (time.Duration, bool) {
	s.amu.Lock()
	defer s.amu.Unlock()
	a := s.arrivals[queueID]
	i := 0
	for i < len(a) && a[i].off < off {
		i++
	}
	if i > 0 {
		a = a[i:] // the forgotten ones are freed when arrived's append next grows the array
		s.arrivals[queueID] = a
	}
	if len(a) > 0 && a[0].off == off {
		return a[0].at, true
	}
	return 0, false
}

// dueAt is when (Clock.Elapsed) the level's message at off, with tag code tagsCode, is due. A message that
// arrived while this service ran is due its level's delay after its arrival, on the monotonic clock: a step
// of the wall clock changes nothing. Otherwise (it arrived before a restart or a leadership change, or
// beyond maxArrivals) its tag code decides, the store's wall-clock timestamp plus the delay, against the
// steady clock, never more than the delay ahead (the wall clock stepped back between its store and now)
// and never in the past. Called once per message, when it reaches the head of its level.
func (s *Schedule) dueAt(queueID int32, off, tagsCode int64, delay time.Duration) time.Duration {
	now := s.o.Clock.Elapsed()
	if at, ok := s.arrivalOf(queueID, off); ok {
		return at + delay
	}
	ahead := time.Duration(tagsCode-s.o.Clock.Now().UnixMilli()) * time.Millisecond
	return now + min(max(ahead, 0), delay)
}

func (s *Schedule) levelLoop(level int) {
	defer s.wg.Done()
	queueID := int32(level - 1)
	delay := s.o.Levels[level-1]
	timer := time.NewTimer(0)
	defer timer.Stop()
	headOff, headDue := int64(-1), time.Duration(0) // the head message and when it is due (Clock.Elapsed)
	wait := func(d time.Duration) bool { return s.sleep(timer, d, s.wakes[queueID]) }
	for {
		select {
		case <-s.stop:
			return
		default:
		}
		off := s.Offset(level)
		if min := s.o.Store.MinOffsetInQueue(protocol.TopicSchedule, queueID); off < min {
			s.log.Warn("delay level offset below the queue's minimum (expired): skipping ahead", "level", level, "offset", off, "min", min)
			s.setOffset(level, min)
			continue
		}
		u, err := s.o.Store.ConsumeQueueUnit(protocol.TopicSchedule, queueID, off)
		if err != nil {
			if !wait(idleRecheck) {
				return
			}
			continue
		}
		if off != headOff {
			headOff, headDue = off, s.dueAt(queueID, off, u.TagsCode, delay)
		}
		if d := headDue - s.o.Clock.Elapsed(); d > 0 {
			if !wait(d) {
				return
			}
			continue
		}
		if err := s.deliver(u.PhysicalOffset); err != nil {
			s.log.Error("deliver delayed message failed; retrying", "level", level, "offset", off, "err", err)
			if !wait(retryBackoff) {
				return
			}
			continue
		}
		s.setOffset(level, off+1)
	}
}

// deliver stores the delayed message at phy again, in its real topic and queue.
func (s *Schedule) deliver(phy int64) error {
	m, err := s.o.Store.LookMessageByOffset(phy)
	if err != nil {
		if recordGone(err) {
			s.log.Warn("delayed message no longer in the CommitLog; skipped", "phyOffset", phy)
			return nil
		}
		return err
	}
	real := message.RestoreReal(m, message.PropertyDelayLevel)
	ctx, cancel := context.WithTimeout(context.Background(), deliverTimeout)
	defer cancel()
	_, err = s.o.Put(ctx, real)
	return err
}
