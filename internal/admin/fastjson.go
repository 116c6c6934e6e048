package admin

import (
	"fmt"

	"github.com/rocketraft/rocketraft/protocol"
)

// Brokers write the MessageQueue-keyed tables of their admin answers as fastjson does, with objects as
// keys; protocol.UnmarshalFastJSON and protocol.QueueTable read them (protocol/fastjson.go).

// mqString is RocketMQ's MessageQueue.toString.
func mqString(q protocol.MessageQueue) string {
	return fmt.Sprintf("MessageQueue [topic=%s, brokerName=%s, queueId=%d]", q.Topic, q.BrokerName, q.QueueID)
}
