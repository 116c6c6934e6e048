package protocol

import "fmt"

// MaxTopicNameLength is the longest topic name RocketMQ's TopicValidator accepts.
const MaxTopicNameLength = 127

// ValidateTopicName checks a topic name the way RocketMQ's TopicValidator does.
func ValidateTopicName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("the topic name is empty")
	case len(name) > MaxTopicNameLength:
		return fmt.Errorf("the topic name %q is %d bytes, longer than the limit of %d", name, len(name), MaxTopicNameLength)
	}
	for i := 0; i < len(name); i++ {
		if !topicChar[name[i]] {
			return fmt.Errorf("the topic name %q contains characters other than %%|a-zA-Z0-9_-", name)
		}
	}
	return nil
}

// topicChar marks the bytes a topic name may hold: ^[%|a-zA-Z0-9_-]+$ (checked on every send, so a
// table rather than a regexp).
var topicChar = func() (t [256]bool) {
	for _, c := range "%|_-" {
		t[c] = true
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for c := 'a'; c <= 'z'; c++ {
		t[c], t[c-'a'+'A'] = true, true
	}
	return t
}()

// DataVersion versions a broker's topic or subscription-group table (DataVersion.java): name servers
// and slaves re-read a table only when it changes. stateVersion is written even when 0, as RocketMQ
// 5.x's fastjson does (4.x readers ignore it); the name server and the broker share this form.
// Wire format (and topics.json, subscriptionGroup.json): never rename a tag.
type DataVersion struct {
	StateVersion int64 `json:"stateVersion"`
	Timestamp    int64 `json:"timestamp"`
	Counter      int64 `json:"counter"`
}

// TopicConfig is one topic's configuration, in RocketMQ's JSON shape (topics.json, REGISTER_BROKER
// bodies, GET_ALL_TOPIC_CONFIG answers). Wire format: never rename a tag.
type TopicConfig struct {
	TopicName       string            `json:"topicName"`
	ReadQueueNums   int32             `json:"readQueueNums"`
	WriteQueueNums  int32             `json:"writeQueueNums"`
	Perm            int32             `json:"perm"`
	TopicFilterType string            `json:"topicFilterType"`
	TopicSysFlag    int32             `json:"topicSysFlag"`
	Order           bool              `json:"order"`
	Attributes      map[string]string `json:"attributes"`
}

// QueueNums is the number of queues a consumer or producer may address: max(read, write).
func (t *TopicConfig) QueueNums() int32 { return max(t.ReadQueueNums, t.WriteQueueNums) }

// TopicConfigSerializeWrapper is a broker's topic table with its version: topics.json, the
// GET_ALL_TOPIC_CONFIG body and the table inside REGISTER_BROKER's body.
type TopicConfigSerializeWrapper struct {
	TopicConfigTable map[string]*TopicConfig `json:"topicConfigTable"`
	DataVersion      DataVersion             `json:"dataVersion"`
}
