package broker

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/rocketraft/rocketraft/message"
	"github.com/rocketraft/rocketraft/store"
)

// startStopper is a service that runs only on the master: started when the broker becomes master (at
// start on a classic master, on leadership in the Raft mode) and stopped when it stops being one.
type startStopper interface {
	// start starts the service's goroutines. Called only while it is stopped.
	start()
	// close stops them, waits for them and persists the service's progress; the error is the persist's.
	// Called only while it runs. A closed service may be started again.
	close() error
}

// masterServices are the services only the master runs (delay-level delivery, timer delivery,
// transaction check-back), started and stopped together by the replication role. A start after
// closeForGood does nothing, so a late leadership event cannot restart them during Close.
type masterServices struct {
	list []namedService

	mu struct {
		sync.Mutex
		running bool
		closed  bool
	}
}

// namedService is a master service and the words its close error is wrapped in.
type namedService struct {
	what string
	svc  startStopper
}

// start starts the services unless they run or closeForGood ran.
func (m *masterServices) start() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.mu.running || m.mu.closed {
		return
	}
	for _, s := range m.list {
		s.svc.start()
	}
	m.mu.running = true
}

// stop stops the services if they run; the error joins what their persists returned.
func (m *masterServices) stop() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.stopLocked()
}

// closeForGood stops the services if they run; none starts after it.
func (m *masterServices) closeForGood() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.mu.closed = true
	return m.stopLocked()
}

// stopLocked stops the services if they run. m.mu must be held.
func (m *masterServices) stopLocked() error {
	if !m.mu.running {
		return nil
	}
	var errs []error
	for i := len(m.list) - 1; i >= 0; i-- { // the reverse of start's order
		s := m.list[i]
		if err := s.svc.close(); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", s.what, err))
		}
	}
	m.mu.running = false
	return errors.Join(errs...)
}

// queueStore is what the master services read of the message store: ConsumeQueue units and the records
// they point at. *store.Store is one. Every method is safe from any goroutine.
type queueStore interface {
	// MinOffsetInQueue is the first queue offset still readable of a queue (0 for an unknown queue).
	MinOffsetInQueue(topic string, queueID int32) int64
	// MaxOffsetInQueue is the next queue offset to be dispatched (0 for an unknown queue).
	MaxOffsetInQueue(topic string, queueID int32) int64
	// ConsumeQueueUnit is the unit at queueOffset (record position and tag code), its record not read;
	// store.ErrNotFound (wrapped) when the queue or offset does not exist.
	ConsumeQueueUnit(topic string, queueID int32, queueOffset int64) (store.QueueUnit, error)
	// LookMessageByOffset decodes a copy of the record at a physical offset, which the caller owns;
	// store.ErrNotFound (wrapped) when its CommitLog file is gone, and also, with
	// store.ErrNotVisibleYet, in Raft mode for a record whose unit was dispatched before the state
	// machine raised the read limit over it: recordGone tells the two apart.
	LookMessageByOffset(phyOffset int64) (*message.MessageExt, error)
}

// recordGone reports whether err, from reading a record a ConsumeQueue unit points at, means the record
// will never be readable (its CommitLog file expired or was cleaned), so a service walking a queue may
// skip it. A record not visible yet (Raft mode, store.ErrNotVisibleYet) is not gone: skipping it would
// lose an acknowledged message; the service waits and reads it again.
func recordGone(err error) bool {
	return errors.Is(err, store.ErrNotFound) && !errors.Is(err, store.ErrNotVisibleYet)
}

var _ queueStore = (*store.Store)(nil)

// putFunc stores m and returns once the store's durability policy (and, in the Raft mode, the commit)
// answered, or ctx ended. Safe from any goroutine; m is the callee's once called.
type putFunc func(ctx context.Context, m *message.Message) (store.PutResult, error)

// openedStore is the queueStore New gives the master services: it builds them before it opens the store
// (the store's recovery reports arrivals to them already), and they read the store only once started,
// after New set it.
type openedStore struct{ st **store.Store }

func (o openedStore) MinOffsetInQueue(topic string, queueID int32) int64 {
	return (*o.st).MinOffsetInQueue(topic, queueID)
}

func (o openedStore) MaxOffsetInQueue(topic string, queueID int32) int64 {
	return (*o.st).MaxOffsetInQueue(topic, queueID)
}

func (o openedStore) ConsumeQueueUnit(topic string, queueID int32, queueOffset int64) (store.QueueUnit, error) {
	return (*o.st).ConsumeQueueUnit(topic, queueID, queueOffset)
}

func (o openedStore) GetMessage(group, topic string, queueID int32, offset int64, maxMsgNums, maxBytes int, f store.MessageFilter) (*store.GetResult, error) {
	return (*o.st).GetMessage(group, topic, queueID, offset, maxMsgNums, maxBytes, f)
}

func (o openedStore) LookMessageByOffset(phyOffset int64) (*message.MessageExt, error) {
	return (*o.st).LookMessageByOffset(phyOffset)
}
