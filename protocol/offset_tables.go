package protocol

import "slices"

// ConsumerOffsetWrapper is the broker's consumerOffset.json and the GET_ALL_CONSUMER_OFFSET body (RocketMQ's
// ConsumerOffsetManager as fastjson writes it): "topic@group" -> queue id -> the next queue offset the group
// consumes.
type ConsumerOffsetWrapper struct {
	OffsetTable map[string]map[int32]int64 `json:"offsetTable"`
}

// DelayOffsetWrapper is the broker's delayOffset.json and the GET_ALL_DELAY_OFFSET body: the next
// SCHEDULE_TOPIC_XXXX queue offset of each delay level.
type DelayOffsetWrapper struct {
	OffsetTable map[int]int64 `json:"offsetTable"`
}

// TimerCheckpoint is the broker's timerCheckpoint.json, and the timer's progress in the Raft mode's offsets
// entries and snapshots: every timer-topic queue offset below LowWater is delivered, and so are those in
// Delivered (sorted, each >= LowWater).
type TimerCheckpoint struct {
	LowWater  int64   `json:"lowWater"`
	Delivered []int64 `json:"delivered"`
}

// Equal reports whether two checkpoints are the same.
func (c TimerCheckpoint) Equal(o TimerCheckpoint) bool {
	return c.LowWater == o.LowWater && slices.Equal(c.Delivered, o.Delivered)
}
