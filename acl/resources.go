package acl

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/rocketraft/rocketraft/protocol"
	"github.com/rocketraft/rocketraft/remoting"
)

// need is one permission a request needs: perm on a topic, or on a consumer group when group is set.
type need struct {
	name  string
	group bool
	perm  Perm
}

func (n need) String() string {
	if n.group {
		return "group [" + n.name + "]"
	}
	return "topic [" + n.name + "]"
}

// traceTopic is the message-trace topic: a request whose only need is PUB on it passes once signed (RocketMQ
// lets every authenticated client write traces).
const traceTopic = protocol.TopicTrace

// adminCodes need an admin account (RocketMQ's Permission.ADMIN_CODE, plus the ACL edits and the Raft
// operations of ours).
var adminCodes = map[remoting.RequestCode]bool{
	remoting.UpdateAndCreateTopic:             true,
	remoting.UpdateBrokerConfig:               true,
	remoting.DeleteTopicInBroker:              true,
	remoting.UpdateAndCreateSubscriptionGroup: true,
	remoting.DeleteSubscriptionGroup:          true,
	// Ours: RocketMQ lets any account edit the ACL file and read its secrets; here only an admin may.
	remoting.UpdateAndCreateACLConfig:     true,
	remoting.DeleteACLConfig:              true,
	remoting.UpdateGlobalWhiteAddrsConfig: true,
	remoting.GetBrokerClusterACLConfig:    true,
	// Ours: the Raft mode's operations (moving leadership, changing the group's members).
	remoting.TransferRaftLeadership: true,
	remoting.AddRaftPeer:            true,
	remoting.RemoveRaftPeer:         true,
}

// AdminCode reports whether requests with code need an admin account.
func AdminCode(code remoting.RequestCode) bool { return adminCodes[code] }

// needsOf lists what req needs, following RocketMQ's PlainAccessResource.parse (5.1, the last version of the
// plain ACL):
//
//	SEND_MESSAGE, SEND_REPLY_MESSAGE              PUB on topic (header topic)
//	SEND_MESSAGE_V2, SEND_BATCH_MESSAGE,
//	SEND_REPLY_MESSAGE_V2                         PUB on topic (header b)
//	  ... to a retry topic %RETRY%G               SUB on group G instead
//	CONSUMER_SEND_MSG_BACK                        SUB on group (group)
//	PULL_MESSAGE                                  SUB on topic (topic) and on group (consumerGroup)
//	QUERY_MESSAGE                                 SUB on topic (topic)
//	HEART_BEAT                                    SUB on every consumer group of the body and every topic
//	                                              they subscribe to
//	UNREGISTER_CLIENT, GET_CONSUMER_LIST_BY_GROUP SUB on group (consumerGroup)
//	UPDATE_CONSUMER_OFFSET                        SUB on group (consumerGroup) and topic (topic)
//	POP_MESSAGE, ACK_MESSAGE, NOTIFICATION,       SUB on group (consumerGroup) and topic (topic; for the group's
//	POLLING_INFO, CHANGE_MESSAGE_INVISIBLETIME    pop retry topic %RETRY%G_T or %RETRY%G+T, on T)
//	BATCH_ACK_MESSAGE                             SUB on every group (c) and topic (t) of the body's acks
//	anything else                                 nothing beyond a valid signature (and admin for AdminCode)
//
// Differences: RocketMQ checks the reply sends not at all; a send to a retry topic it checks against the
// group named by the producerGroup header (so a consumer's fallback send-back, made with its inner producer
// group, needed SUB on that group) where here the group is the one the retry topic belongs to. A header that
// is missing adds no need, as in RocketMQ (the handler then refuses the request).
func needsOf(req *remoting.Command) ([]need, error) {
	ext := req.ExtFields
	var out []need
	topic := func(name string, perm Perm) {
		if name == "" {
			return
		}
		if g, ok := strings.CutPrefix(name, RetryGroupTopicPrefix); ok {
			out = append(out, need{name: g, group: true, perm: Sub})
			return
		}
		out = append(out, need{name: name, perm: perm})
	}
	group := func(name string) {
		if name != "" {
			out = append(out, need{name: name, group: true, perm: Sub})
		}
	}
	switch remoting.RequestCode(req.Code) {
	case remoting.SendMessage, remoting.SendReplyMessage, remoting.RecallMessage:
		topic(ext["topic"], Pub)
	case remoting.SendMessageV2, remoting.SendBatchMessage, remoting.SendReplyMessageV2:
		topic(ext["b"], Pub)
	case remoting.ConsumerSendMsgBack:
		group(ext["group"])
	case remoting.PullMessage:
		topic(ext["topic"], Sub)
		group(ext["consumerGroup"])
	case remoting.QueryMessage:
		topic(ext["topic"], Sub)
	case remoting.HeartBeat:
		var hb heartbeat
		if err := json.Unmarshal(req.Body, &hb); err != nil {
			return nil, fmt.Errorf("the heartbeat body does not decode: %v", err)
		}
		for _, c := range hb.ConsumerDataSet {
			group(c.GroupName)
			for _, s := range c.SubscriptionDataSet {
				topic(s.Topic, Sub)
			}
		}
	case remoting.UnregisterClient, remoting.GetConsumerListByGroup:
		group(ext["consumerGroup"])
	case remoting.UpdateConsumerOffset:
		group(ext["consumerGroup"])
		topic(ext["topic"], Sub)
	case remoting.PopMessage, remoting.AckMessage, remoting.ChangeMessageInvisibleTime, remoting.Notification, remoting.PollingInfo:
		group(ext["consumerGroup"])
		topic(popTopic(ext["topic"], ext["consumerGroup"]), Sub)
	case remoting.BatchAckMessage:
		var body struct {
			Acks []struct {
				Group string `json:"c"`
				Topic string `json:"t"`
			} `json:"acks"`
		}
		if err := json.Unmarshal(req.Body, &body); err != nil {
			return nil, fmt.Errorf("the batch ack body does not decode: %v", err)
		}
		for _, a := range body.Acks {
			group(a.Group)
			topic(popTopic(a.Topic, a.Group), Sub)
		}
	}
	return out, nil
}

// popTopic is the topic a pop request of group on name reads: an ack of a redelivered message names the
// group's pop retry topic, %RETRY%<group>_<topic> or %RETRY%<group>+<topic>, whose messages are the topic's.
func popTopic(name, group string) string {
	for _, sep := range []string{"_", "+"} {
		if t, ok := strings.CutPrefix(name, RetryGroupTopicPrefix+group+sep); ok && group != "" {
			return t
		}
	}
	return name
}

// heartbeat is the part of HEART_BEAT's body (HeartbeatData) the check reads.
type heartbeat struct {
	ConsumerDataSet []struct {
		GroupName           string `json:"groupName"`
		SubscriptionDataSet []struct {
			Topic string `json:"topic"`
		} `json:"subscriptionDataSet"`
	} `json:"consumerDataSet"`
}

// onlyTracePub reports whether the needs are exactly PUB on the trace topic.
func onlyTracePub(needs []need) bool {
	return len(needs) == 1 && !needs[0].group && needs[0].name == traceTopic && needs[0].perm == Pub
}
