package store

// CheckInDiskByConsumeOffset reports whether the message at queueOffset of a queue is probably no
// longer in the page cache: more than accessMessageInMemoryMaxRatio percent of RAM has been written to
// the CommitLog after it (RocketMQ's checkInDiskByConsumeOffset). An offset with no message (an empty
// queue) is not on disk, as in RocketMQ.
// The broker uses it to decide whether a new consumer group starts at a queue's first message.
func (s *Store) CheckInDiskByConsumeOffset(topic string, queueID int32, queueOffset int64) bool {
	phy, err := s.CommitLogOffsetInQueue(topic, queueID, queueOffset)
	if err != nil {
		return false
	}
	memory := s.memoryBytes * int64(s.cfg.AccessMessageInMemoryMaxRatio) / 100
	return s.MaxPhyOffset()-phy > memory
}
