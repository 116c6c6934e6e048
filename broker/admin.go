package broker

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/rocketraft/rocketraft/protocol"
	"github.com/rocketraft/rocketraft/remoting"
)

// processUpdateAndCreateTopic is UPDATE_AND_CREATE_TOPIC: create or change a topic, persist topics.json,
// and re-register with the name servers at once.
func (b *Broker) processUpdateAndCreateTopic(ctx context.Context, conn *remoting.Conn, req *remoting.Command) *remoting.Command {
	topic, err := req.ExtString("topic")
	if err != nil {
		return errResponse(remoting.InvalidParameter, "%v", err)
	}
	if err := protocol.ValidateTopicName(topic); err != nil {
		return errResponse(remoting.InvalidParameter, "%v", err)
	}
	if topic == b.cfg.BrokerClusterName || topic == TopicAutoCreate {
		return errResponse(remoting.InvalidParameter, "the topic[%s] is conflict with system topic", topic)
	}
	tc := &protocol.TopicConfig{TopicName: topic, TopicFilterType: req.OptString("topicFilterType", "SINGLE_TAG")}
	var perr error
	get32 := func(key string, def int32) int32 {
		v, err := req.OptInt32(key, def)
		if err != nil && perr == nil {
			perr = err
		}
		return v
	}
	tc.ReadQueueNums = get32("readQueueNums", 8)
	tc.WriteQueueNums = get32("writeQueueNums", 8)
	tc.Perm = get32("perm", protocol.PermRead|protocol.PermWrite)
	tc.TopicSysFlag = get32("topicSysFlag", 0)
	if tc.Order, err = req.OptBool("order", false); err != nil && perr == nil {
		perr = err
	}
	if perr != nil {
		return errResponse(remoting.InvalidParameter, "%v", perr)
	}
	if err := validateQueueNums(tc); err != nil {
		return errResponse(remoting.InvalidParameter, "%v", err)
	}
	var current map[string]string
	existing := b.topics.get(topic)
	if existing != nil {
		current = existing.Attributes
	}
	if tc.Attributes, err = alterTopicAttributes(current, existing == nil, req.OptString("attributes", "")); err != nil {
		return errResponse(remoting.InvalidParameter, "topic %s: %v", topic, err)
	}
	if err := b.topics.update(tc); err != nil {
		return errResponse(remoting.SystemError, "persist topic %s: %v", topic, err)
	}
	// Answer once the name servers route the topic (or the registration timed out), as RocketMQ does.
	wctx, cancel := context.WithTimeout(ctx, ms(b.cfg.RegisterBrokerTimeoutMills))
	b.waitRegistered(wctx)
	cancel()
	b.log.Info("topic updated", "topic", topic, "read", tc.ReadQueueNums, "write", tc.WriteQueueNums, "perm", tc.Perm, "by", conn.RemoteAddr())
	return remoting.NewResponse(remoting.Success, "")
}

func validateQueueNums(tc *protocol.TopicConfig) error {
	const limit = 1024
	if tc.ReadQueueNums < 1 || tc.ReadQueueNums > limit {
		return fmt.Errorf("readQueueNums %d is not within 1..%d", tc.ReadQueueNums, limit)
	}
	if tc.WriteQueueNums < 1 || tc.WriteQueueNums > limit {
		return fmt.Errorf("writeQueueNums %d is not within 1..%d", tc.WriteQueueNums, limit)
	}
	if tc.Perm&^(protocol.PermPriority|protocol.PermRead|protocol.PermWrite|protocol.PermInherit) != 0 {
		return fmt.Errorf("perm %d has bits other than 8|4|2|1", tc.Perm)
	}
	return nil
}

// processDeleteTopic is DELETE_TOPIC_IN_BROKER: drop the config, the ConsumeQueues and the group offsets.
func (b *Broker) processDeleteTopic(ctx context.Context, conn *remoting.Conn, req *remoting.Command) *remoting.Command {
	topic, err := req.ExtString("topic")
	if err != nil {
		return errResponse(remoting.InvalidParameter, "%v", err)
	}
	if isSystemTopic(topic, b.cfg.BrokerClusterName) {
		return errResponse(remoting.InvalidParameter, "the topic[%s] is a system topic and cannot be deleted", topic)
	}
	if _, err := b.topics.delete(topic); err != nil {
		return errResponse(remoting.SystemError, "persist topics after deleting %s: %v", topic, err)
	}
	b.offsets.removeTopic(topic)
	if err := b.store.DeleteTopics([]string{topic}); err != nil {
		return errResponse(remoting.SystemError, "delete consume queues of %s: %v", topic, err)
	}
	b.log.Info("topic deleted", "topic", topic, "by", conn.RemoteAddr())
	return remoting.NewResponse(remoting.Success, "")
}

func isSystemTopic(topic, cluster string) bool {
	switch topic {
	case TopicAutoCreate, TopicSelfTest, TopicOffsetMoved, TopicSchedule, TopicTrace, TopicTransHalf, TopicTransOpHalf, cluster:
		return true
	}
	return protocol.HasSystemTopicPrefix(topic)
}

func (b *Broker) processGetAllTopicConfig(ctx context.Context, conn *remoting.Conn, req *remoting.Command) *remoting.Command {
	return remoting.NewJSONResponse(b.topics.snapshot())
}

func (b *Broker) processGetAllSubscriptionGroup(ctx context.Context, conn *remoting.Conn, req *remoting.Command) *remoting.Command {
	return remoting.NewJSONResponse(b.groups.snapshot())
}

func (b *Broker) processGetAllConsumerOffset(ctx context.Context, conn *remoting.Conn, req *remoting.Command) *remoting.Command {
	return remoting.NewJSONResponse(b.offsets.snapshot())
}

func (b *Broker) processGetAllDelayOffset(ctx context.Context, conn *remoting.Conn, req *remoting.Command) *remoting.Command {
	return remoting.NewJSONResponse(b.schedule.Offsets())
}

func (b *Broker) processUpdateSubscriptionGroup(ctx context.Context, conn *remoting.Conn, req *remoting.Command) *remoting.Command {
	var g protocol.SubscriptionGroupConfig
	if err := json.Unmarshal(req.Body, &g); err != nil {
		return errResponse(remoting.InvalidParameter, "bad subscription group body: %v", err)
	}
	if g.GroupName == "" {
		return errResponse(remoting.InvalidParameter, "the subscription group has no groupName")
	}
	if err := b.groups.update(&g); err != nil {
		return errResponse(remoting.SystemError, "persist subscription group %s: %v", g.GroupName, err)
	}
	return remoting.NewResponse(remoting.Success, "")
}

func (b *Broker) processDeleteSubscriptionGroup(ctx context.Context, conn *remoting.Conn, req *remoting.Command) *remoting.Command {
	group, err := req.ExtString("groupName")
	if err != nil {
		return errResponse(remoting.InvalidParameter, "%v", err)
	}
	if _, err := b.groups.delete(group); err != nil {
		return errResponse(remoting.SystemError, "persist subscription groups: %v", err)
	}
	if clean, _ := req.OptBool("cleanOffset", false); clean {
		b.offsets.removeGroup(group)
	}
	return remoting.NewResponse(remoting.Success, "")
}

// processGetBrokerConfig answers the effective configuration as a properties text (GET_BROKER_CONFIG).
func (b *Broker) processGetBrokerConfig(ctx context.Context, conn *remoting.Conn, req *remoting.Command) *remoting.Command {
	resp := remoting.NewResponse(remoting.Success, "")
	resp.Body = []byte(b.configText())
	return resp
}

// processGetBrokerRuntimeInfo answers a table of runtime figures (GET_BROKER_RUNTIME_INFO), as RocketMQ's
// KVTable: {"table":{"key":"value",...}}.
func (b *Broker) processGetBrokerRuntimeInfo(ctx context.Context, conn *remoting.Conn, req *remoting.Command) *remoting.Command {
	return remoting.NewJSONResponse(struct {
		Table map[string]string `json:"table"`
	}{b.runtimeInfo()})
}
