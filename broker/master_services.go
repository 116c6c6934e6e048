package broker

import (
	"errors"
	"fmt"
	"sync"

	"github.com/rocketraft/rocketraft/message"
	"github.com/rocketraft/rocketraft/store"
)

// startStopper is a service that runs only on the master: started when the broker becomes master (at
// start on a classic master, on leadership in the Raft mode) and stopped when it stops being one.
type startStopper interface {
	// Start starts the service's goroutines. Called only while it is stopped.
	Start()
	// Close stops them, waits for them and persists the service's progress; the error is the persist's.
	// Called only while it runs. A closed service may be started again.
	Close() error
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
		s.svc.Start()
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
		if err := s.svc.Close(); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", s.what, err))
		}
	}
	m.mu.running = false
	return errors.Join(errs...)
}

// engineOffsets is the consumer-offset table as the engines take it (pop.Offsets, txcheck.Offsets).
type engineOffsets struct{ m *consumerOffsetManager }

func (o engineOffsets) Query(group, topic string, queueID int32) int64 {
	return o.m.query(group, topic, queueID)
}

func (o engineOffsets) Commit(group, topic string, queueID int32, offset int64) {
	o.m.commit(group, topic, queueID, offset)
}

// openedStore is the store New gives the master services (a store.QueueReader, and pop.Store): it builds
// them before it opens the store (the store's recovery reports arrivals to them already), and they read
// the store only once started, after New set it.
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

func (o openedStore) MaxPhyOffset() int64     { return (*o.st).MaxPhyOffset() }
func (o openedStore) DispatchedOffset() int64 { return (*o.st).DispatchedOffset() }
