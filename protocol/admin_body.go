package protocol

// Bodies of the broker's admin answers that tools read (RocketMQ's MessageQueue, TopicStatsTable entries,
// ConsumeStats entries, SubscriptionGroupConfig). Field names are RocketMQ's: wire format, never rename a tag.

// MessageQueue names one queue, in the client's JSON shape.
type MessageQueue struct {
	Topic      string `json:"topic"`
	BrokerName string `json:"brokerName"`
	QueueID    int32  `json:"queueId"`
}

// TopicOffset is one queue's entry in a TopicStatsTable (GET_TOPIC_STATS_INFO).
type TopicOffset struct {
	LastUpdateTimestamp int64 `json:"lastUpdateTimestamp"` // store time of the last message, 0 when empty
	MaxOffset           int64 `json:"maxOffset"`
	MinOffset           int64 `json:"minOffset"`
}

// OffsetWrapper is one queue's entry in a ConsumeStats (GET_CONSUME_STATS).
type OffsetWrapper struct {
	BrokerOffset   int64 `json:"brokerOffset"`   // the queue's max offset
	ConsumerOffset int64 `json:"consumerOffset"` // the group's committed offset (0 when none)
	LastTimestamp  int64 `json:"lastTimestamp"`  // store time of the last consumed message, 0 when unknown
}

// SubscriptionGroupConfig is one consumer group's settings, in RocketMQ's JSON shape.
type SubscriptionGroupConfig struct {
	GroupName                      string `json:"groupName"`
	ConsumeEnable                  bool   `json:"consumeEnable"`
	ConsumeFromMinEnable           bool   `json:"consumeFromMinEnable"`
	ConsumeBroadcastEnable         bool   `json:"consumeBroadcastEnable"`
	RetryQueueNums                 int32  `json:"retryQueueNums"`
	RetryMaxTimes                  int32  `json:"retryMaxTimes"`
	BrokerID                       int64  `json:"brokerId"`
	WhichBrokerWhenConsumeSlowly   int64  `json:"whichBrokerWhenConsumeSlowly"`
	NotifyConsumerIdsChangedEnable bool   `json:"notifyConsumerIdsChangedEnable"`
}
