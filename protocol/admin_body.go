package protocol

import "encoding/json"

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
	PullOffset     int64 `json:"pullOffset"`     // 5.x: the next offset handed out (pull or pop); >= ConsumerOffset
}

// ConsumeStats is GET_CONSUME_STATS's body (RocketMQ's ConsumeStats): a group's offset table over the queues of
// one broker, and its consume TPS there. The table comes in fastjson's object-keyed form: decode with
// UnmarshalFastJSON.
type ConsumeStats struct {
	ConsumeTps  float64                   `json:"consumeTps"`
	OffsetTable QueueTable[OffsetWrapper] `json:"offsetTable"`
}

// ConsumeStatsList is GET_BROKER_CONSUME_STATS's body (RocketMQ's ConsumeStatsList): per subscription group of
// one broker, a ConsumeStats per topic, and the diff summed over all of them.
type ConsumeStatsList struct {
	BrokerAddr        string                      `json:"brokerAddr"`
	ConsumeStatsList  []map[string][]ConsumeStats `json:"consumeStatsList"`
	TotalDiff         int64                       `json:"totalDiff"`
	TotalInflightDiff int64                       `json:"totalInflightDiff"`
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
	// ConsumeMessageOrderly (RocketMQ 5): the group consumes FIFO; the gRPC endpoint then pops in order and
	// tells the group's v5 consumers so in their settings.
	ConsumeMessageOrderly bool `json:"consumeMessageOrderly"`
}

// SubscriptionGroupWrapper is a broker's subscription groups: its subscriptionGroup.json and the
// GET_ALL_SUBSCRIPTIONGROUP_CONFIG body.
type SubscriptionGroupWrapper struct {
	SubscriptionGroupTable map[string]*SubscriptionGroupConfig `json:"subscriptionGroupTable"`
	DataVersion            DataVersion                         `json:"dataVersion"`
}

// ConsumerRunningInfo is a consumer client's answer to GET_CONSUMER_RUNNING_INFO (RocketMQ's
// ConsumerRunningInfo), which the broker passes on: its properties (PROP_CLIENT_VERSION,
// PROP_CONSUME_TYPE, PROP_CONSUMER_START_TIMESTAMP, ...), subscriptions, the queues it holds with their
// process-queue state (mqTable, MessageQueue-keyed: decode with UnmarshalFastJSON) and its rates per topic.
type ConsumerRunningInfo struct {
	Properties      map[string]string            `json:"properties"`
	SubscriptionSet []RunningSubscription        `json:"subscriptionSet"`
	MQTable         QueueTable[ProcessQueueInfo] `json:"mqTable"`
	StatusTable     map[string]ConsumeStatus     `json:"statusTable"`
	JStack          string                       `json:"jstack"`
}

// RunningSubscription is one entry of a running info's subscriptionSet (RocketMQ's SubscriptionData).
type RunningSubscription struct {
	Topic          string `json:"topic"`
	SubString      string `json:"subString"`
	ExpressionType string `json:"expressionType"`
	SubVersion     int64  `json:"subVersion"`
}

// ProcessQueueInfo is a consumer's state of one queue it holds (RocketMQ's ProcessQueueInfo).
type ProcessQueueInfo struct {
	CommitOffset         int64 `json:"commitOffset"`
	CachedMsgMinOffset   int64 `json:"cachedMsgMinOffset"`
	CachedMsgMaxOffset   int64 `json:"cachedMsgMaxOffset"`
	CachedMsgCount       int64 `json:"cachedMsgCount"`
	CachedMsgSizeInMiB   int64 `json:"cachedMsgSizeInMiB"`
	Locked               bool  `json:"locked"`
	Dropped              bool  `json:"droped"` // RocketMQ's spelling; the Go client writes "dropped" (read as false)
	LastPullTimestamp    int64 `json:"lastPullTimestamp"`
	LastConsumeTimestamp int64 `json:"lastConsumeTimestamp"`
}

// ConsumeStatus is a consumer's rates on one topic over the last minute (RocketMQ's ConsumeStatus).
type ConsumeStatus struct {
	PullRT            float64 `json:"pullRT"`
	PullTPS           float64 `json:"pullTPS"`
	ConsumeRT         float64 `json:"consumeRT"`
	ConsumeOKTPS      float64 `json:"consumeOKTPS"`
	ConsumeFailedTPS  float64 `json:"consumeFailedTPS"`
	ConsumeFailedMsgs int64   `json:"consumeFailedMsgs"`
}

// BrokerStatsItem is one window of VIEW_BROKER_STATS_DATA's answer (RocketMQ's BrokerStatsItem): the sum added
// over the window, that sum per second, and the average added per call (0 for items that count no calls).
// Wire format: never rename a tag.
type BrokerStatsItem struct {
	Sum   int64   `json:"sum"`
	Tps   float64 `json:"tps"`
	Avgpt float64 `json:"avgpt"`
}

// BrokerStatsData is VIEW_BROKER_STATS_DATA's body (RocketMQ's BrokerStatsData). Wire format: never rename a
// tag.
type BrokerStatsData struct {
	StatsMinute BrokerStatsItem `json:"statsMinute"`
	StatsHour   BrokerStatsItem `json:"statsHour"`
	StatsDay    BrokerStatsItem `json:"statsDay"`
}

// ConsumeQueueData is one ConsumeQueue unit in QUERY_CONSUME_QUEUE's answer (RocketMQ's ConsumeQueueData).
// Wire format: never rename a tag.
type ConsumeQueueData struct {
	PhysicOffset   int64  `json:"physicOffset"`
	PhysicSize     int32  `json:"physicSize"`
	TagsCode       int64  `json:"tagsCode"`
	ExtendDataJSON string `json:"extendDataJson,omitempty"`
	BitMap         string `json:"bitMap,omitempty"`
	Eval           bool   `json:"eval"`
	Msg            string `json:"msg,omitempty"`
}

// QueryConsumeQueueResponseBody is QUERY_CONSUME_QUEUE's answer (RocketMQ's QueryConsumeQueueResponseBody): the
// queue's bounds and units from the asked index; with a consumer group, its subscription of the topic (raw
// JSON, null when it is not online) and a note on its filter. Wire format: never rename a tag.
type QueryConsumeQueueResponseBody struct {
	SubscriptionData json.RawMessage    `json:"subscriptionData,omitempty"`
	FilterData       string             `json:"filterData,omitempty"`
	QueueData        []ConsumeQueueData `json:"queueData"`
	MaxQueueIndex    int64              `json:"maxQueueIndex"`
	MinQueueIndex    int64              `json:"minQueueIndex"`
}
