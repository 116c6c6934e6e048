package store

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
