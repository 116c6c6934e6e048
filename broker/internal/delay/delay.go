package delay

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/rocketraft/rocketraft/internal/loop"
	"github.com/rocketraft/rocketraft/message"
	"github.com/rocketraft/rocketraft/protocol"
	"github.com/rocketraft/rocketraft/store"
)

// Store is what the engine reads of the message store: the parked messages' ConsumeQueue units (each
// tag code a delivery time, see TagsCode) and the records they point at, with store.QueueReader's contract
// (recordGone tells a record gone from one not visible yet). *store.Store is one.
type Store interface {
	store.QueueReader
}

// PutFunc stores a due message in its real topic (the broker's put path) and returns once the store's
// durability policy (and, in the Raft mode, the commit) answered, or ctx ended. Safe from any goroutine; m
// is the callee's once called.
type PutFunc func(ctx context.Context, m *message.Message) (store.PutResult, error)

// Clock is the broker's steady clock (doc.go "Clocks"). Both methods are safe from any goroutine.
type Clock interface {
	// Now is wall time that does not step: the delivery times are compared with it.
	Now() time.Time
	// Elapsed is the time since a fixed point on a clock that never steps and never goes back.
	Elapsed() time.Duration
}

// recordGone reports whether err, from reading a record a ConsumeQueue unit points at, means the record
// will never be readable (its CommitLog file expired or was cleaned), so a service walking a queue may
// skip it. A record not visible yet (Raft mode, store.ErrNotVisibleYet) is not gone: skipping it would
// lose an acknowledged message; the service waits and reads it again.
func recordGone(err error) bool {
	return errors.Is(err, store.ErrNotFound) && !errors.Is(err, store.ErrNotVisibleYet)
}

// service is what Schedule and Timer share as master services: a run's stop channel and goroutines, and
// the progress persisted every persistEvery while it runs and at its end.
type service struct {
	log     *slog.Logger
	what    string       // the periodic persist's failure, in the log's words
	persist func() error // writes the progress
	stop    chan struct{}
	wg      sync.WaitGroup
}

func newService(log *slog.Logger, what string) service {
	return service{log: log, what: what, stop: make(chan struct{})}
}

// begin starts a run and its periodic persist (a closed service begins again when Raft leadership comes
// back); the caller then starts its loops in wg.
func (s *service) begin(persistEvery time.Duration) {
	s.stop = make(chan struct{})
	loop.Every(s.stop, &s.wg, persistEvery, func() {
		if err := s.persist(); err != nil {
			s.log.Error(s.what, "err", err)
		}
	})
}

// end stops the run, waits for its goroutines and persists; the error is the persist's.
func (s *service) end() error {
	close(s.stop)
	s.wg.Wait()
	return s.persist()
}

// sleep waits on t for d, or until wake is signalled; false when the run ended meanwhile. t is the
// loop's own timer (a Reset timer delivers no stale tick: Go 1.23's timers).
func (s *service) sleep(t *time.Timer, d time.Duration, wake <-chan struct{}) bool {
	t.Reset(d)
	select {
	case <-s.stop:
		return false
	case <-wake:
	case <-t.C:
	}
	return true
}

// idleRecheck bounds how long a loop waits without a wake-up (it re-checks its queue after it).
const idleRecheck = time.Second

// retryBackoff is the pause after a failed re-put (RocketMQ's DELAY_FOR_A_PERIOD is 10 s; shorter here,
// the store usually recovers faster).
const retryBackoff = time.Second

// deliverTimeout bounds one put of a due message.
const deliverTimeout = 10 * time.Second

// TagsCode is the store's tag-code hook (store.Options.TagsCode) for the parked topics, levels being the
// delay levels (messageDelayLevel: level n is levels[n-1]): a SCHEDULE_TOPIC_XXXX unit holds its delivery
// time, the store timestamp plus its level's delay (a level beyond the last is the last; a DELAY that is no
// level, the store timestamp), and a timer-topic unit its TIMER_OUT_MS (the store timestamp when that is no
// number), as RocketMQ's ConsumeQueue does for delayed messages. Other topics: ok is false. It runs on the
// store's dispatch goroutine and does not block.
func TagsCode(levels []time.Duration) func(topic string, props []byte, storeTimestamp int64) (code int64, ok bool) {
	return func(topic string, props []byte, storeTimestamp int64) (int64, bool) {
		switch topic {
		case protocol.TopicSchedule:
			v, _ := message.PropertyValue(props, message.PropertyDelayLevel)
			level, err := strconv.Atoi(string(v))
			if err != nil || level < 1 {
				return storeTimestamp, true
			}
			level = min(level, len(levels))
			return storeTimestamp + levels[level-1].Milliseconds(), true
		case protocol.TopicTimer:
			v, _ := message.PropertyValue(props, message.PropertyTimerOutMs)
			due, err := strconv.ParseInt(string(v), 10, 64)
			if err != nil {
				return storeTimestamp, true
			}
			return due, true
		}
		return 0, false
	}
}
