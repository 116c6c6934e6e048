package client

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"

	"github.com/rocketraft/rocketraft/protocol"
	"github.com/rocketraft/rocketraft/remoting"
)

// RuntimeInfo is GET_BROKER_RUNTIME_INFO: the broker's KVTable (version, TPS, dispatchBehindBytes, ...).
func (c *Client) RuntimeInfo(ctx context.Context, addr string) (map[string]string, error) {
	var kv struct {
		Table map[string]string `json:"table"`
	}
	if err := c.CallJSON(ctx, addr, remoting.GetBrokerRuntimeInfo, nil, &kv); err != nil {
		return nil, err
	}
	return kv.Table, nil
}

// CreateTopic is UPDATE_AND_CREATE_TOPIC of tc at the broker at addr (filter type SINGLE_TAG); the topic keeps
// the attributes it has.
func (c *Client) CreateTopic(ctx context.Context, addr string, tc *protocol.TopicConfig) error {
	return c.CreateTopicAttributes(ctx, addr, tc, "")
}

// CreateTopicAttributes is CreateTopic with RocketMQ 5's attribute changes ("+key=value,-key", the header
// attributes; "" changes none).
func (c *Client) CreateTopicAttributes(ctx context.Context, addr string, tc *protocol.TopicConfig, attributes string) error {
	ext := map[string]string{"topic": tc.TopicName, "defaultTopic": protocol.TopicAutoCreate,
		"readQueueNums": strconv.Itoa(int(tc.ReadQueueNums)), "writeQueueNums": strconv.Itoa(int(tc.WriteQueueNums)),
		"perm": strconv.Itoa(int(tc.Perm)), "topicFilterType": "SINGLE_TAG",
		"topicSysFlag": strconv.Itoa(int(tc.TopicSysFlag)), "order": strconv.FormatBool(tc.Order)}
	if attributes != "" {
		ext["attributes"] = attributes
	}
	_, err := c.Call(ctx, addr, remoting.UpdateAndCreateTopic, ext, nil)
	return err
}

// DeleteTopic is DELETE_TOPIC_IN_BROKER at the broker at addr.
func (c *Client) DeleteTopic(ctx context.Context, addr, topic string) error {
	_, err := c.Call(ctx, addr, remoting.DeleteTopicInBroker, map[string]string{"topic": topic}, nil)
	return err
}

// DeleteTopicInNamesrvs is DELETE_TOPIC_IN_NAMESRV of topic (of cluster, "" for every cluster) at every name
// server.
func (c *Client) DeleteTopicInNamesrvs(ctx context.Context, topic, cluster string) error {
	return c.EachNamesrv(ctx, remoting.DeleteTopicInNamesrv, map[string]string{"topic": topic, "clusterName": cluster})
}

// EnsureTopic creates topic with queues read and write queues on the master of every broker the name
// servers know (CreateTopic), unless they already route it to a writable queue, and waits until every name
// server routes it (WaitRoute). It returns the route. log (nil discards) records the creation.
func (c *Client) EnsureTopic(ctx context.Context, topic string, queues int, log *slog.Logger) (*protocol.TopicRouteData, error) {
	if r, err := c.Route(ctx, topic); err == nil && len(RouteQueues(r, topic, "", true)) > 0 {
		return r, nil
	}
	ci, err := c.ClusterInfo(ctx)
	if err != nil {
		return nil, fmt.Errorf("create topic %s: %w", topic, err)
	}
	tc := &protocol.TopicConfig{TopicName: topic, ReadQueueNums: int32(queues), WriteQueueNums: int32(queues),
		Perm: protocol.PermRead | protocol.PermWrite}
	var created []string
	for name, bd := range ci.BrokerAddrTable {
		addr := bd.BrokerAddrs[protocol.MasterID]
		if addr == "" {
			continue
		}
		if err := c.CreateTopic(ctx, addr, tc); err != nil {
			return nil, fmt.Errorf("create topic %s on broker %s: %w", topic, name, err)
		}
		created = append(created, name)
	}
	if len(created) == 0 {
		return nil, fmt.Errorf("create topic %s: the name servers %v know no broker master", topic, c.namesrvs)
	}
	if log != nil {
		log.Info("topic created", "topic", topic, "queues", queues, "brokers", created)
	}
	return c.WaitRoute(ctx, topic, len(created))
}

// TopicConfigs is GET_ALL_TOPIC_CONFIG at the broker at addr: its topic table (with its DataVersion).
func (c *Client) TopicConfigs(ctx context.Context, addr string) (*protocol.TopicConfigSerializeWrapper, error) {
	var w protocol.TopicConfigSerializeWrapper
	if err := c.CallJSON(ctx, addr, remoting.GetAllTopicConfig, nil, &w); err != nil {
		return nil, err
	}
	return &w, nil
}

// UpdateSubscriptionGroup is UPDATE_AND_CREATE_SUBSCRIPTIONGROUP of g at the broker at addr.
func (c *Client) UpdateSubscriptionGroup(ctx context.Context, addr string, g *protocol.SubscriptionGroupConfig) error {
	body, err := json.Marshal(g)
	if err != nil {
		return err
	}
	_, err = c.Call(ctx, addr, remoting.UpdateAndCreateSubscriptionGroup, nil, body)
	return err
}
