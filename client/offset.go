package client

import (
	"context"
	"strconv"

	"github.com/rocketraft/rocketraft/remoting"
)

// QueueOffset asks the broker of q for the queue's min (GET_MIN_OFFSET), max (GET_MAX_OFFSET) or by-time
// (SEARCH_OFFSET_BY_TIMESTAMP, of ts in ms) offset.
func (c *Client) QueueOffset(ctx context.Context, code remoting.RequestCode, q Queue, ts int64) (int64, error) {
	ext := map[string]string{"topic": q.Topic, "queueId": strconv.Itoa(int(q.QueueID))}
	if q.BrokerName != "" {
		ext["bname"] = q.BrokerName
	}
	if code == remoting.SearchOffsetByTimestamp {
		ext["timestamp"] = strconv.FormatInt(ts, 10)
	}
	resp, err := c.Call(ctx, q.Addr, code, ext, nil)
	if err != nil {
		return 0, err
	}
	return resp.ExtInt64("offset")
}

// QueryConsumerOffset asks the broker of q for group's committed offset of the queue
// (QUERY_CONSUMER_OFFSET); found is false when the group has none (QUERY_NOT_FOUND).
func (c *Client) QueryConsumerOffset(ctx context.Context, group string, q Queue) (offset int64, found bool, err error) {
	ext := map[string]string{"consumerGroup": group, "topic": q.Topic, "queueId": strconv.Itoa(int(q.QueueID))}
	if q.BrokerName != "" {
		ext["bname"] = q.BrokerName
	}
	resp, err := c.Call(ctx, q.Addr, remoting.QueryConsumerOffset, ext, nil)
	if HasCode(err, remoting.QueryNotFound) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	off, err := resp.ExtInt64("offset")
	return off, err == nil, err
}

// UpdateConsumerOffset stores group's offset of q at its broker (UPDATE_CONSUMER_OFFSET).
func (c *Client) UpdateConsumerOffset(ctx context.Context, group string, q Queue, offset int64) error {
	ext := map[string]string{"consumerGroup": group, "topic": q.Topic, "queueId": strconv.Itoa(int(q.QueueID)),
		"commitOffset": strconv.FormatInt(offset, 10)}
	if q.BrokerName != "" {
		ext["bname"] = q.BrokerName
	}
	_, err := c.Call(ctx, q.Addr, remoting.UpdateConsumerOffset, ext, nil)
	return err
}
