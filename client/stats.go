package client

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/rocketraft/rocketraft/protocol"
	"github.com/rocketraft/rocketraft/remoting"
)

// BrokerStats is VIEW_BROKER_STATS_DATA of one stats item (statsName TOPIC_PUT_NUMS, GROUP_GET_NUMS, ...; key
// topic or topic@group) at the broker at addr. An item the broker has not seen is a SYSTEM_ERROR
// *ResponseError, as RocketMQ's broker answers it.
func (c *Client) BrokerStats(ctx context.Context, addr, statsName, statsKey string) (*protocol.BrokerStatsData, error) {
	var out protocol.BrokerStatsData
	if err := c.CallJSON(ctx, addr, remoting.ViewBrokerStatsData, map[string]string{"statsName": statsName,
		"statsKey": statsKey}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ConsumeStats is GET_CONSUME_STATS of group (on topic, "" for every topic it has offsets on) at the broker at
// addr.
func (c *Client) ConsumeStats(ctx context.Context, addr, group, topic string) (*protocol.ConsumeStats, error) {
	ext := map[string]string{"consumerGroup": group}
	if topic != "" {
		ext["topic"] = topic
	}
	resp, err := c.Call(ctx, addr, remoting.GetConsumeStats, ext, nil)
	if err != nil {
		return nil, err
	}
	var out protocol.ConsumeStats
	if err := protocol.UnmarshalFastJSON(resp.Body, &out); err != nil {
		return nil, fmt.Errorf("%s from %s: decode answer: %w", remoting.GetConsumeStats, addr, err)
	}
	return &out, nil
}

// BrokerConsumeStats is GET_BROKER_CONSUME_STATS at the broker at addr: every group's consume stats there
// (ordered topics only with orderOnly).
func (c *Client) BrokerConsumeStats(ctx context.Context, addr string, orderOnly bool) (*protocol.ConsumeStatsList, error) {
	resp, err := c.Call(ctx, addr, remoting.GetBrokerConsumeStats, map[string]string{"isOrder": strconv.FormatBool(orderOnly)}, nil)
	if err != nil {
		return nil, err
	}
	var out protocol.ConsumeStatsList
	if err := protocol.UnmarshalFastJSON(resp.Body, &out); err != nil {
		return nil, fmt.Errorf("%s from %s: decode answer: %w", remoting.GetBrokerConsumeStats, addr, err)
	}
	return &out, nil
}

// SubscriptionGroups is GET_ALL_SUBSCRIPTIONGROUP_CONFIG at the broker at addr: its consumer groups by name.
func (c *Client) SubscriptionGroups(ctx context.Context, addr string) (map[string]*protocol.SubscriptionGroupConfig, error) {
	var w struct {
		Table map[string]*protocol.SubscriptionGroupConfig `json:"subscriptionGroupTable"`
	}
	resp, err := c.Call(ctx, addr, remoting.GetAllSubscriptionGroupConfig, nil, nil)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(resp.Body, &w); err != nil {
		return nil, fmt.Errorf("%s from %s: decode answer: %w", remoting.GetAllSubscriptionGroupConfig, addr, err)
	}
	return w.Table, nil
}
