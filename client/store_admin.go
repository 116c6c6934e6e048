package client

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/rocketraft/rocketraft/protocol"
	"github.com/rocketraft/rocketraft/remoting"
)

// StoreMaintenance sends one of the store maintenance requests (DELETE_EXPIRED_COMMITLOG,
// CLEAN_EXPIRED_CONSUMEQUEUE, CLEAN_UNUSED_TOPIC) to the broker at addr and returns the answer's remark
// (RocketRaft's brokers say there what they removed).
func (c *Client) StoreMaintenance(ctx context.Context, addr string, code remoting.RequestCode) (string, error) {
	switch code {
	case remoting.DeleteExpiredCommitLog, remoting.CleanExpiredConsumeQueue, remoting.CleanUnusedTopic:
	default:
		return "", fmt.Errorf("client: %s is not a store maintenance request", code)
	}
	resp, err := c.Call(ctx, addr, code, nil, nil)
	if err != nil {
		return "", err
	}
	return resp.Remark, nil
}

// QueryConsumeQueue is QUERY_CONSUME_QUEUE at the broker at addr: up to count units of queue qid of topic
// from index, with group's subscription when group is not "".
func (c *Client) QueryConsumeQueue(ctx context.Context, addr, topic string, qid int32, index int64, count int, group string) (*protocol.QueryConsumeQueueResponseBody, error) {
	ext := map[string]string{"topic": topic, "queueId": strconv.Itoa(int(qid)), "index": strconv.FormatInt(index, 10),
		"count": strconv.Itoa(count)}
	if group != "" {
		ext["consumerGroup"] = group
	}
	resp, err := c.Call(ctx, addr, remoting.QueryConsumeQueue, ext, nil)
	if err != nil {
		return nil, err
	}
	var out protocol.QueryConsumeQueueResponseBody
	if len(resp.Body) == 0 { // RocketMQ answers an index past the end without a body
		return &out, nil
	}
	if err := json.Unmarshal(resp.Body, &out); err != nil {
		return nil, fmt.Errorf("%s from %s: decode answer: %w", remoting.QueryConsumeQueue, addr, err)
	}
	return &out, nil
}
