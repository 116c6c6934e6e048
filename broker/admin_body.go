package broker

import (
	"encoding/json"
	"sort"
	"strconv"

	"github.com/rocketraft/rocketraft/protocol"
)

// The bodies of the admin answers that mqadmin reads (RocketMQ's TopicStatsTable, ConsumeStats,
// ResetOffsetBody, ConsumerConnection, ProducerConnection, GroupList). Field names are RocketMQ's: wire
// format, never rename a tag.
//
// Three of them are maps keyed by a MessageQueue. Java brokers write those with fastjson, whose object keys
// are objects, not strings:
//
//	{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:{"lastUpdateTimestamp":0,"maxOffset":5,"minOffset":0}}}
//
// That is not JSON, but it is what Java admin tools and clients parse, and the official Go client parses
// it too (ResetOffsetBody.Decode); so these bodies are written the same way, keys in fastjson's field order.

// Connection is one client connection in a ConsumerConnection or ProducerConnection.
type Connection struct {
	ClientAddr string `json:"clientAddr"`
	ClientID   string `json:"clientId"`
	Language   string `json:"language"`
	Version    int32  `json:"version"`
}

// ConsumerConnection is GET_CONSUMER_CONNECTION_LIST's answer.
type ConsumerConnection struct {
	ConnectionSet     []Connection                 `json:"connectionSet"`
	ConsumeFromWhere  string                       `json:"consumeFromWhere"`
	ConsumeType       string                       `json:"consumeType"`
	MessageModel      string                       `json:"messageModel"`
	SubscriptionTable map[string]*SubscriptionData `json:"subscriptionTable"`
}

// ProducerConnection is GET_PRODUCER_CONNECTION_LIST's answer.
type ProducerConnection struct {
	ConnectionSet []Connection `json:"connectionSet"`
}

// GroupList is QUERY_TOPIC_CONSUME_BY_WHO's answer.
type GroupList struct {
	GroupList []string `json:"groupList"`
}

// queueEntry is one entry of a MessageQueue-keyed table.
type queueEntry[V any] struct {
	mq protocol.MessageQueue
	v  V
}

// appendQueueTable appends entries as a fastjson object with MessageQueue keys, sorted by topic, broker
// name and queue id.
func appendQueueTable[V any](dst []byte, entries []queueEntry[V]) ([]byte, error) {
	sort.Slice(entries, func(i, j int) bool {
		a, b := entries[i].mq, entries[j].mq
		if a.Topic != b.Topic {
			return a.Topic < b.Topic
		}
		if a.BrokerName != b.BrokerName {
			return a.BrokerName < b.BrokerName
		}
		return a.QueueID < b.QueueID
	})
	dst = append(dst, '{')
	for i, e := range entries {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendQueueKey(dst, e.mq)
		v, err := json.Marshal(e.v)
		if err != nil {
			return nil, err
		}
		dst = append(append(dst, ':'), v...)
	}
	return append(dst, '}'), nil
}

// appendQueueKey appends mq as fastjson writes it: fields in alphabetical order.
func appendQueueKey(dst []byte, mq protocol.MessageQueue) []byte {
	name, _ := json.Marshal(mq.BrokerName) // strings always encode
	topic, _ := json.Marshal(mq.Topic)
	dst = append(append(dst, `{"brokerName":`...), name...)
	dst = strconv.AppendInt(append(dst, `,"queueId":`...), int64(mq.QueueID), 10)
	return append(append(append(dst, `,"topic":`...), topic...), '}')
}

// queueTableBody is {"offsetTable":<table>} preceded by prefix fields (already encoded, each ending in ',').
func queueTableBody[V any](prefix string, entries []queueEntry[V]) ([]byte, error) {
	b := append([]byte("{"+prefix), `"offsetTable":`...)
	b, err := appendQueueTable(b, entries)
	if err != nil {
		return nil, err
	}
	return append(b, '}'), nil
}

// consumeStatsBody is a ConsumeStats: {"consumeTps":1.5,"offsetTable":{...}}.
func consumeStatsBody(tps float64, entries []queueEntry[protocol.OffsetWrapper]) ([]byte, error) {
	return queueTableBody(`"consumeTps":`+strconv.FormatFloat(tps, 'f', -1, 64)+",", entries)
}
