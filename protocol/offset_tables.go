package protocol

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
