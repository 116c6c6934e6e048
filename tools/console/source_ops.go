package console

import (
	"github.com/rocketraft/rocketraft/message"
	"github.com/rocketraft/rocketraft/protocol"
)

// The types of the operations pages (message trace, dead letters, subscription groups, consumer running
// info, broker config, topic throughput, test messages, consume directly). The methods that answer them are
// in Source and Admin (source.go).

// DefaultTraceTopic is where clients send trace records unless configured otherwise (the brokers'
// msgTraceTopicName).
const DefaultTraceTopic = protocol.TopicTrace

// TraceRecord is one trace record of a message (message.TraceRecord, the client's record as stored).
type TraceRecord = message.TraceRecord

// SubscriptionGroup is a subscription group's config on one broker.
type SubscriptionGroup struct {
	Cluster    string                           `json:"cluster"`
	BrokerName string                           `json:"brokerName"`
	Addr       string                           `json:"addr"`
	Config     protocol.SubscriptionGroupConfig `json:"config"`
}

// RunningInfo is what one consumer client reports of itself (GET_CONSUMER_RUNNING_INFO through a broker).
type RunningInfo struct {
	Group         string            `json:"group"`
	ClientID      string            `json:"clientId"`
	Version       string            `json:"version"`     // PROP_CLIENT_VERSION
	ConsumeType   string            `json:"consumeType"` // PROP_CONSUME_TYPE
	StartedAt     int64             `json:"startedAt"`   // PROP_CONSUMER_START_TIMESTAMP (ms), 0 when not reported
	Properties    map[string]string `json:"properties"`
	Subscriptions []Subscription    `json:"subscriptions"`
	Queues        []RunningQueue    `json:"queues"`
	Status        []RunningStatus   `json:"status"`
}

// RunningQueue is a queue the client holds, with its process-queue state.
type RunningQueue struct {
	protocol.MessageQueue
	protocol.ProcessQueueInfo
}

// RunningStatus is the client's rates on one topic.
type RunningStatus struct {
	Topic string `json:"topic"`
	protocol.ConsumeStatus
}

// TopicTPS is a topic's throughput over the last minute, as the brokers count it (VIEW_BROKER_STATS_DATA:
// TOPIC_PUT_NUMS, and GROUP_GET_NUMS of the groups that consume it).
type TopicTPS struct {
	Topic  string  `json:"topic"`
	InTPS  float64 `json:"inTps"`
	OutTPS float64 `json:"outTps"`
}

// TestMessage is a message sent from the topic page.
type TestMessage struct {
	Topic string `json:"topic"`
	Tags  string `json:"tags"`
	Keys  string `json:"keys"`
	Body  string `json:"body"`
}

// SendResult is where a sent message was stored.
type SendResult struct {
	Status      string `json:"status"`
	MsgID       string `json:"msgId"`
	OffsetMsgID string `json:"offsetMsgId"`
	BrokerName  string `json:"brokerName"`
	QueueID     int32  `json:"queueId"`
	QueueOffset int64  `json:"queueOffset"`
}

// Resent is one message sent again: the original's id, and the copy's result or the failure.
type Resent struct {
	MsgID  string      `json:"msgId"` // the id the page named (an offset id)
	Topic  string      `json:"topic"` // where the copy went
	Result *SendResult `json:"result,omitempty"`
	Error  string      `json:"error,omitempty"`
}

// DirectResult is a consumer's answer to CONSUME_MESSAGE_DIRECTLY.
type DirectResult struct {
	ConsumeResult string `json:"consumeResult"` // CR_SUCCESS, CR_LATER, ...
	Remark        string `json:"remark"`
	SpentMillis   int64  `json:"spentTimeMills"`
	Order         bool   `json:"order"`
	AutoCommit    bool   `json:"autoCommit"`
}

// BrokerACL is one broker's ACL file as the ACL page shows it. The accounts' secret keys are never sent to
// the pages (SecretKey is blanked).
type BrokerACL struct {
	Cluster          string                       `json:"cluster"`
	BrokerName       string                       `json:"brokerName"`
	Addr             string                       `json:"addr"`
	GlobalWhiteAddrs []string                     `json:"globalWhiteAddrs"`
	Accounts         []protocol.PlainAccessConfig `json:"accounts"`
	Error            string                       `json:"error,omitempty"` // the broker's refusal or failure
}
