package store

import "github.com/rocketraft/rocketraft/message"

// QueueUnit is one ConsumeQueue entry: where its record is and its tag code.
type QueueUnit struct {
	PhysicalOffset int64
	Size           int32
	TagsCode       int64
}

// ConsumeQueueUnit returns the unit at queueOffset of a queue without reading its record
// (schedulers read delivery times from the tag codes). ErrNotFound (wrapped) when the queue or
// offset does not exist.
func (s *Store) ConsumeQueueUnit(topic string, queueID int32, queueOffset int64) (QueueUnit, error) {
	u, err := s.unit(topic, queueID, queueOffset)
	if err != nil {
		return QueueUnit{}, err
	}
	return QueueUnit{PhysicalOffset: u.phy, Size: u.size, TagsCode: u.tags}, nil
}

// QueueReader is what a service that walks consume queues reads of a store: the broker's engines (delay
// and timer delivery, the transaction check-back, pop) each take one, declared here once. *Store is one.
// Every method is safe from any goroutine.
type QueueReader interface {
	// MinOffsetInQueue is the first queue offset still readable of a queue (0 for an unknown queue).
	MinOffsetInQueue(topic string, queueID int32) int64
	// MaxOffsetInQueue is the next queue offset to be dispatched (0 for an unknown queue).
	MaxOffsetInQueue(topic string, queueID int32) int64
	// ConsumeQueueUnit is the unit at queueOffset (record position and tag code), its record not read;
	// ErrNotFound (wrapped) when the queue or offset does not exist.
	ConsumeQueueUnit(topic string, queueID int32, queueOffset int64) (QueueUnit, error)
	// LookMessageByOffset decodes a copy of the record at a physical offset, which the caller owns;
	// ErrNotFound (wrapped) when its CommitLog file is gone, and also, with ErrNotVisibleYet, in Raft mode
	// for a record whose unit was dispatched before the state machine raised the read limit over it (not
	// gone: read it again later).
	LookMessageByOffset(phyOffset int64) (*message.MessageExt, error)
}

var _ QueueReader = (*Store)(nil)
