package broker

import (
	"context"
	"encoding/json"
	"log/slog"
	"maps"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/rocketraft/rocketraft/message"
)

// DelayOffsetWrapper is delayOffset.json and the GET_ALL_DELAY_OFFSET body: the next SCHEDULE_TOPIC_XXXX
// queue offset of each delay level.
type DelayOffsetWrapper struct {
	OffsetTable map[int]int64 `json:"offsetTable"`
}

// scheduleService is RocketMQ's ScheduleMessageService: one loop per delay level reads its queue of
// SCHEDULE_TOPIC_XXXX in order and, when a message is due (its ConsumeQueue tag code holds the delivery
// time), stores it again in its real topic and queue. A level's offset moves only after the re-put
// succeeded and is persisted every flushDelayOffsetInterval and at close, so a restart re-delivers at most
// what was delivered since the last persist (at-least-once), and loses nothing.
type scheduleService struct {
	scheduleOptions
	log     *slog.Logger
	path    string
	wakes   []chan struct{} // per level, capacity 1: a message arrived in its queue
	stop    chan struct{}
	wg      sync.WaitGroup
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

// scheduleOptions is what the delay service is built with.
type scheduleOptions struct {
	store        queueStore      // reads SCHEDULE_TOPIC_XXXX and the parked records
	put          putFunc         // stores a due message in its real topic (the broker's put path)
	clock        Clock           // the steady clock (clock.go)
	log          *slog.Logger    // tagged service=schedule here
	levels       []time.Duration // messageDelayLevel: level n is levels[n-1]
	dir          string          // storePathRootDir: delayOffset.json goes to its config directory
	persistEvery time.Duration   // flushDelayOffsetInterval
}

func newScheduleService(o scheduleOptions) *scheduleService {
	s := &scheduleService{scheduleOptions: o, log: o.log.With("service", "schedule"),
		path: filepath.Join(o.dir, "config", "delayOffset.json"), stop: make(chan struct{}), offsets: map[int]int64{}}
	for range o.levels {
		s.wakes = append(s.wakes, make(chan struct{}, 1))
	}
	s.arrivals = make([][]arrival, len(o.levels))
	return s
}

func (s *scheduleService) load() error {
	var w DelayOffsetWrapper
	found, err := loadJSON(s.path, &w)
	if err != nil || !found {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for level, off := range w.OffsetTable {
		s.offsets[level] = off
	}
	return nil
}

func (s *scheduleService) snapshot() DelayOffsetWrapper {
	s.mu.Lock()
	defer s.mu.Unlock()
	w := DelayOffsetWrapper{OffsetTable: make(map[int]int64, len(s.offsets))}
	for k, v := range s.offsets {
		w.OffsetTable[k] = v
	}
	return w
}

func (s *scheduleService) persist() error {
	data, err := json.MarshalIndent(s.snapshot(), "", "\t")
	if err != nil {
		return err
	}
	return writeConfigFile(s.path, data)
}

func (s *scheduleService) offset(level int) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.offsets[level]
}

func (s *scheduleService) setOffset(level int, off int64) {
	s.mu.Lock()
	s.offsets[level] = off
	s.mu.Unlock()
}

// setOffsets takes the levels' offsets in table (the master's, or a Raft offsets entry); levels not in
// it keep theirs.
func (s *scheduleService) setOffsets(table map[int]int64) {
	s.mu.Lock()
	maps.Copy(s.offsets, table)
	s.mu.Unlock()
}

// replaceOffsets makes table the offsets (a Raft snapshot); levels not in it start from 0.
func (s *scheduleService) replaceOffsets(table map[int]int64) {
	s.mu.Lock()
	s.offsets = maps.Clone(table)
	if s.offsets == nil {
		s.offsets = map[int]int64{}
	}
	s.mu.Unlock()
}

func (s *scheduleService) start() {
	s.stop = make(chan struct{}) // started again after a close when Raft leadership comes back
	for i := range s.levels {
		s.wg.Add(1)
		go s.levelLoop(i + 1)
	}
	runEvery(s.stop, &s.wg, s.persistEvery, func() {
		if err := s.persist(); err != nil {
			s.log.Error("persist delay offsets", "err", err)
		}
	})
}

func (s *scheduleService) close() error {
	close(s.stop)
	s.wg.Wait()
	return s.persist()
}

// arrived notes when the message at queueOffset of a level's queue arrived and wakes the level's loop
// (the store's dispatch goroutine: it does not block).
func (s *scheduleService) arrived(queueID int32, queueOffset int64) {
	if int(queueID) >= len(s.wakes) {
		return
	}
	at := s.clock.Elapsed()
	s.amu.Lock()
	if a := s.arrivals[queueID]; len(a) < maxArrivals && (len(a) == 0 || a[len(a)-1].off < queueOffset) {
		s.arrivals[queueID] = append(a, arrival{off: queueOffset, at: at})
	}
	s.amu.Unlock()
	wake(s.wakes[queueID])
}

// arrivalOf returns when the message at off of the level's queue arrived, if it is remembered, and forgets
// the arrivals below off (delivered).
func (s *scheduleService) arrivalOf(queueID int32, off int64) (time.Duration, bool) {
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
func (s *scheduleService) dueAt(queueID int32, off, tagsCode int64, delay time.Duration) time.Duration {
	now := s.clock.Elapsed()
	if at, ok := s.arrivalOf(queueID, off); ok {
		return at + delay
	}
	ahead := time.Duration(tagsCode-s.clock.Now().UnixMilli()) * time.Millisecond
	return now + min(max(ahead, 0), delay)
}

func wake(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// idleRecheck bounds how long a level waits without a wake-up (it re-checks its queue after it).
const idleRecheck = time.Second

// retryBackoff is the pause after a failed re-put (RocketMQ's DELAY_FOR_A_PERIOD is 10 s; shorter here,
// the store usually recovers faster).
const retryBackoff = time.Second

func (s *scheduleService) levelLoop(level int) {
	defer s.wg.Done()
	queueID := int32(level - 1)
	delay := s.levels[level-1]
	timer := time.NewTimer(0)
	defer timer.Stop()
	headOff, headDue := int64(-1), time.Duration(0) // the head message and when it is due (Clock.Elapsed)
	wait := func(d time.Duration) bool {
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		timer.Reset(d)
		select {
		case <-s.stop:
			return false
		case <-s.wakes[queueID]:
		case <-timer.C:
		}
		return true
	}
	for {
		select {
		case <-s.stop:
			return
		default:
		}
		off := s.offset(level)
		if min := s.store.MinOffsetInQueue(TopicSchedule, queueID); off < min {
			s.log.Warn("delay level offset below the queue's minimum (expired): skipping ahead", "level", level, "offset", off, "min", min)
			s.setOffset(level, min)
			continue
		}
		u, err := s.store.ConsumeQueueUnit(TopicSchedule, queueID, off)
		if err != nil {
			if !wait(idleRecheck) {
				return
			}
			continue
		}
		if off != headOff {
			headOff, headDue = off, s.dueAt(queueID, off, u.TagsCode, delay)
		}
		if d := headDue - s.clock.Elapsed(); d > 0 {
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
func (s *scheduleService) deliver(phy int64) error {
	m, err := s.store.LookMessageByOffset(phy)
	if err != nil {
		if recordGone(err) {
			s.log.Warn("delayed message no longer in the CommitLog; skipped", "phyOffset", phy)
			return nil
		}
		return err
	}
	real := restoreReal(m, message.PropertyDelayLevel)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = s.put(ctx, real)
	return err
}

// restoreReal rebuilds the message parked under SCHEDULE_TOPIC_XXXX, the timer topic or the transaction
// half topic: its REAL_TOPIC and REAL_QID become topic and queue again, and the properties named in drop
// (what parked it) go.
func restoreReal(m *message.MessageExt, drop ...string) *message.Message {
	var topic string
	qid := int32(0)
	props := editProperties(m.Properties, func(p map[string]string) {
		topic = p[message.PropertyRealTopic]
		if n, err := strconv.Atoi(p[message.PropertyRealQueueID]); err == nil {
			qid = int32(n)
		}
		for _, k := range drop {
			delete(p, k)
		}
	})
	out := m.Message
	out.Topic, out.QueueID, out.Properties = topic, qid, props
	return &out
}
