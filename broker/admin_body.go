package broker

import (
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
	ConnectionSet     []Connection                          `json:"connectionSet"`
	ConsumeFromWhere  string                                `json:"consumeFromWhere"`
	ConsumeType       string                                `json:"consumeType"`
	MessageModel      string                                `json:"messageModel"`
	SubscriptionTable map[string]*protocol.SubscriptionData `json:"subscriptionTable"`
}

// ProducerConnection is GET_PRODUCER_CONNECTION_LIST's answer.
type ProducerConnection struct {
	ConnectionSet []Connection `json:"connectionSet"`
}

// GroupList is QUERY_TOPIC_CONSUME_BY_WHO's answer.
type GroupList struct {
	GroupList []string `json:"groupList"`
}

// queueTableBody is {"offsetTable":<table>} preceded by prefix fields (already encoded, each ending in ',').
func queueTableBody[V any](prefix string, entries []protocol.QueueEntry[V]) ([]byte, error) {
	b := append([]byte("{"+prefix), `"offsetTable":`...)
	b, err := protocol.AppendQueueTable(b, entries)
	if err != nil {
		return nil, err
	}
	return append(b, '}'), nil
}

// consumeStatsBody is a ConsumeStats: {"consumeTps":1.5,"offsetTable":{...}}.
func consumeStatsBody(tps float64, entries []protocol.QueueEntry[protocol.OffsetWrapper]) ([]byte, error) {
	return queueTableBody(`"consumeTps":`+strconv.FormatFloat(tps, 'f', -1, 64)+",", entries)
}
