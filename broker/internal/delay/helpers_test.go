package delay

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rocketraft/rocketraft/internal/testutil"
	"github.com/rocketraft/rocketraft/message"
	"github.com/rocketraft/rocketraft/protocol"
	"github.com/rocketraft/rocketraft/store"
)

// The engine's tests run it over a real store in a temporary folder, with the store's own put and a clock
// the test moves: what a broker gives it, without the broker.

// testClock is a steady clock the test moves by hand: Now and Elapsed advance together.
type testClock struct {
	wall0   time.Time
	elapsed atomic.Int64 // nanoseconds
}

func newTestClock() *testClock { return &testClock{wall0: time.UnixMilli(1_700_000_000_000)} }

func (c *testClock) Now() time.Time          { return c.wall0.Add(c.Elapsed()) }
func (c *testClock) Elapsed() time.Duration  { return time.Duration(c.elapsed.Load()) }
func (c *testClock) advance(d time.Duration) { c.elapsed.Add(int64(d)) }
func (c *testClock) nowMillis() int64        { return c.Now().UnixMilli() }

// hidingStore answers every record read as the store does in Raft mode for a record whose ConsumeQueue
// unit was dispatched before the state machine raised the read limit over it (store.ErrNotVisibleYet with
// store.ErrNotFound; store's TestFramedDispatchAssignsQueueOffsets checks that this is the error it gives)
// while hidden is set, and counts those reads.
type hidingStore struct {
	*store.Store
	hidden atomic.Bool
	looks  atomic.Int32
}

func (h *hidingStore) LookMessageByOffset(phy int64) (*message.MessageExt, error) {
	if h.hidden.Load() {
		h.looks.Add(1)
		return nil, fmt.Errorf("%w: %w %d", store.ErrNotFound, store.ErrNotVisibleYet, phy)
	}
	return h.Store.LookMessageByOffset(phy)
}

// testLevels are the harness's delay levels: level 1 is one second.
var testLevels = []time.Duration{time.Second, 5 * time.Second}

// harness is a Schedule and a Timer over one store, the store's arrivals reported to them as the broker's
// listener does, its tag codes TagsCode's.
type harness struct {
	t        *testing.T
	clock    *testClock
	st       *store.Store
	sview    *hidingStore // what the Schedule reads the store through
	tview    *hidingStore // what the Timer reads the store through
	schedule *Schedule
	timer    *Timer
}

func newHarness(t *testing.T) *harness {
	h := &harness{t: t, clock: newTestClock(), sview: &hidingStore{}, tview: &hidingStore{}}
	dir := t.TempDir()
	log := testutil.Logger(t, slog.LevelInfo)
	// Built before the store opens, as the broker builds them: they read it only once started.
	h.schedule = NewSchedule(ScheduleOptions{Store: h.sview, Put: h.put, Clock: h.clock, Log: log,
		Levels: testLevels, Dir: dir, PersistEvery: time.Hour})
	h.timer = NewTimer(TimerOptions{Store: h.tview, Put: h.put, Clock: h.clock, Log: log, Dir: dir, PersistEvery: time.Hour})
	cfg := store.DefaultConfig()
	cfg.StorePathRootDir = dir
	cfg.MappedFileSizeCommitLog, cfg.MaxMessageSize = 1<<20, 64<<10
	st, err := store.Open(cfg, store.Options{Logger: log, StoreHost: netip.MustParseAddrPort("127.0.0.1:10911"),
		TagsCode: TagsCode(testLevels), ArrivingListener: h.arrived})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	if err := st.Start(); err != nil {
		t.Fatal(err)
	}
	h.st, h.sview.Store, h.tview.Store = st, st, st
	return h
}

// put is the engine's put path: the store's.
func (h *harness) put(ctx context.Context, m *message.Message) (store.PutResult, error) {
	return h.st.PutMessage(ctx, m)
}

// arrived is the store's arrival listener, as the broker's: parked units wake their service.
func (h *harness) arrived(a store.Arrival) {
	switch a.Topic {
	case protocol.TopicSchedule:
		h.schedule.Arrived(a.QueueID, a.QueueOffset)
	case protocol.TopicTimer:
		h.timer.Arrived()
	}
}

// start starts both services; they are closed at cleanup.
func (h *harness) start() {
	h.schedule.Start()
	h.timer.Start()
	h.t.Cleanup(func() {
		if err := h.timer.Close(); err != nil {
			h.t.Error(err)
		}
		if err := h.schedule.Close(); err != nil {
			h.t.Error(err)
		}
	})
}

// park stores a message for topic as the broker's put path parks it: with level > 0 in SCHEDULE_TOPIC_XXXX
// queue level-1, else in the timer topic due at dueMs.
func (h *harness) park(topic string, level int, dueMs int64) {
	h.t.Helper()
	props := map[string]string{message.PropertyRealTopic: topic, message.PropertyRealQueueID: "0"}
	m := &message.Message{Topic: protocol.TopicTimer, Body: []byte(topic), BornTimestamp: h.clock.nowMillis()}
	if level > 0 {
		props[message.PropertyDelayLevel] = strconv.Itoa(level)
		m.Topic, m.QueueID = protocol.TopicSchedule, int32(level-1)
	} else {
		props[message.PropertyTimerOutMs] = strconv.FormatInt(dueMs, 10)
	}
	m.Properties = message.EncodeProperties(props)
	if _, err := h.st.PutMessage(context.Background(), m); err != nil {
		h.t.Fatal(err)
	}
}

// waitArrival waits until the Schedule heard of the unit at off of a level's queue (dispatch reports it
// after the put returned): its due time counts from then.
func (h *harness) waitArrival(level int, off int64) {
	h.t.Helper()
	testutil.WaitFor(h.t, 20*time.Second, "the delay-level unit's arrival", func() bool {
		h.schedule.amu.Lock()
		defer h.schedule.amu.Unlock()
		a := h.schedule.arrivals[level-1]
		return len(a) > 0 && a[len(a)-1].off >= off
	})
}

// delivered is how many messages topic's queue 0 holds.
func (h *harness) delivered(topic string) int64 { return h.st.MaxOffsetInQueue(topic, 0) }
