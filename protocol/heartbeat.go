package protocol

import "strings"

// SubscriptionData is one topic subscription of a consumer group, as the heartbeat carries it.
type SubscriptionData struct {
	ClassFilterMode bool     `json:"classFilterMode"`
	Topic           string   `json:"topic"`
	SubString       string   `json:"subString"`
	TagsSet         []string `json:"tagsSet"`
	CodeSet         []any    `json:"codeSet"` // the Go client sends strings, Java sends numbers
	SubVersion      int64    `json:"subVersion"`
	ExpressionType  string   `json:"expressionType"`
}

// SplitTags splits a TAG subscription expression "A || B" into its tags (nil for none; "*" is the
// caller's to check).
func SplitTags(expr string) []string {
	var out []string
	for _, t := range strings.Split(expr, "||") {
		if t = strings.TrimSpace(t); t != "" {
			out = append(out, t)
		}
	}
	return out
}

// ConsumerData is one consumer group in a heartbeat.
type ConsumerData struct {
	GroupName           string              `json:"groupName"`
	ConsumeType         string              `json:"consumeType"`  // CONSUME_PASSIVELY (push) / CONSUME_ACTIVELY (pull)
	MessageModel        string              `json:"messageModel"` // CLUSTERING / BROADCASTING
	ConsumeFromWhere    string              `json:"consumeFromWhere"`
	SubscriptionDataSet []*SubscriptionData `json:"subscriptionDataSet"`
	UnitMode            bool                `json:"unitMode"`
}

// ProducerData is one producer group in a heartbeat.
type ProducerData struct {
	GroupName string `json:"groupName"`
}

// HeartbeatData is the HEART_BEAT body.
type HeartbeatData struct {
	ClientID        string          `json:"clientID"`
	ProducerDataSet []*ProducerData `json:"producerDataSet"`
	ConsumerDataSet []*ConsumerData `json:"consumerDataSet"`
}
