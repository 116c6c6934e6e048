package broker

import (
	"context"
	"strconv"

	"github.com/rocketraft/rocketraft/protocol"
	"github.com/rocketraft/rocketraft/remoting"
)

// minResetClientVersion is V3_0_7_SNAPSHOT: older clients do not understand RESET_CONSUMER_CLIENT_OFFSET.
const minResetClientVersion = 111

// processInvokeBrokerToResetOffset is INVOKE_BROKER_TO_RESET_OFFSET (mqadmin resetOffsetByTime). For every
// queue of the topic here it finds the first offset stored at or after the header's timestamp (-1: the
// queue's end), commits it as the group's offset (with isForce=false only where that moves the group
// back), tells each online consumer of the group with a oneway RESET_CONSUMER_CLIENT_OFFSET carrying the
// table, and answers the table.
//
// Unlike RocketMQ 4.x, the offsets are committed here too, so the reset also holds for a group with no
// consumer online (RocketMQ answers CONSUMER_NOT_ONLINE and its tool falls back to committing the offsets
// one by one); an online consumer commits the same offsets itself once it has applied the reset, and until
// then its commits of other offsets are ignored (consumer_offset_reset.go).
func (b *Broker) processInvokeBrokerToResetOffset(ctx context.Context, conn *remoting.Conn, req *remoting.Command) *remoting.Command {
	topic, err := req.ExtString("topic")
	if err != nil {
		return errResponse(remoting.InvalidParameter, "%v", err)
	}
	group, err := req.ExtString("group")
	if err != nil {
		return errResponse(remoting.InvalidParameter, "%v", err)
	}
	ts, err := req.ExtInt64("timestamp")
	if err != nil {
		return errResponse(remoting.InvalidParameter, "%v", err)
	}
	force, err := req.OptBool("isForce", true)
	if err != nil {
		return errResponse(remoting.InvalidParameter, "%v", err)
	}
	tc := b.topics.get(topic)
	if tc == nil {
		return errResponse(remoting.TopicNotExist, "[reset-offset] reset offset failed, no topic in this broker. topic=%s", topic)
	}
	entries := make([]protocol.QueueEntry[int64], 0, tc.QueueNums())
	// With consumers online the reset holds their commits of other offsets off until they take it up
	// (consumer_offset_reset.go); it is recorded before they are told.
	consumers := b.clients.consumerChannels(group)
	for q := range tc.QueueNums() {
		target := b.store.MaxOffsetInQueue(topic, q)
		if ts != -1 {
			target = b.store.OffsetInQueueByTime(topic, q, ts)
		}
		target = max(target, 0)
		if cur := b.offsets.query(group, topic, q); !force && cur >= 0 && cur < target {
			target = cur
		}
		b.offsets.commit(group, topic, q, target)
		if len(consumers) > 0 {
			b.resets.hold(group, topic, q, target)
		}
		entries = append(entries, protocol.QueueEntry[int64]{MQ: b.queue(topic, q), Value: target})
	}
	body, err := queueTableBody("", entries)
	if err != nil {
		return errResponse(remoting.SystemError, "encode offset table: %v", err)
	}
	notified := b.notifyResetOffset(consumers, topic, group, ts, force, body)
	b.log.Info("consumer offsets reset", "topic", topic, "group", group, "timestamp", ts, "force", force,
		"queues", len(entries), "consumersNotified", notified, "by", conn.RemoteAddr())
	resp := remoting.NewResponse(remoting.Success, "")
	resp.Body = body
	return resp
}

// notifyResetOffset sends RESET_CONSUMER_CLIENT_OFFSET (oneway, as RocketMQ) to the group's online consumers
// and returns how many it reached.
func (b *Broker) notifyResetOffset(consumers []clientChannel, topic, group string, ts int64, force bool, body []byte) int {
	n := 0
	for _, ch := range consumers {
		if ch.version < minResetClientVersion {
			b.log.Warn("consumer too old to reset its offsets", "group", group, "client", ch.clientID, "version", ch.version)
			continue
		}
		req := remoting.NewRequest(remoting.ResetConsumerClientOffset, map[string]string{
			"topic": topic, "group": group, "timestamp": strconv.FormatInt(ts, 10), "isForce": strconv.FormatBool(force),
		}, body)
		req.MarkOneway()
		if err := ch.conn.SendOneway(req); err != nil {
			b.log.Warn("tell consumer to reset its offsets", "group", group, "client", ch.clientID, "err", err)
			continue
		}
		n++
	}
	return n
}
