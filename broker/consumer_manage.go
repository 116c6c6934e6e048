package broker

import (
	"context"

	"github.com/rocketraft/rocketraft/remoting"
)

// processQueryConsumerOffset answers QUERY_CONSUMER_OFFSET. With no committed offset, a queue that still
// starts at offset 0 with its first message in memory answers 0, so a new group sees what was sent before
// it started (RocketMQ's rule); otherwise QUERY_NOT_FOUND lets the client apply its consumeFromWhere.
func (b *Broker) processQueryConsumerOffset(ctx context.Context, conn *remoting.Conn, req *remoting.Command) *remoting.Command {
	group, topic, qid, errResp := groupTopicQueue(req, "consumerGroup")
	if errResp != nil {
		return errResp
	}
	if off := b.offsets.query(group, topic, qid); off >= 0 {
		return remoting.NewResponse(remoting.Success, "").SetExt("offset", itoa(off))
	}
	if b.store.MinOffsetInQueue(topic, qid) <= 0 && !b.store.CheckInDiskByConsumeOffset(topic, qid, 0) {
		return remoting.NewResponse(remoting.Success, "").SetExt("offset", "0")
	}
	return errResponse(remoting.QueryNotFound, "Not found, V3_0_6_SNAPSHOT maybe this group consumer boot first")
}

func (b *Broker) processUpdateConsumerOffset(ctx context.Context, conn *remoting.Conn, req *remoting.Command) *remoting.Command {
	group, topic, qid, errResp := groupTopicQueue(req, "consumerGroup")
	if errResp != nil {
		return errResp
	}
	off, err := req.ExtInt64("commitOffset")
	if err != nil {
		return errResponse(remoting.InvalidParameter, "%v", err)
	}
	if b.topics.get(topic) == nil {
		return errResponse(remoting.TopicNotExist, "topic[%s] not exist", topic)
	}
	if b.resets.blocks(group, topic, qid, off) && b.clients.isConsumer(group, conn) {
		// As RocketMQ 5: answered SUCCESS, not applied (consumer_offset_reset.go). Only the group's own
		// consumers are held: an operator's commit (mqadmin resetOffsetByTime -q, cloneGroupOffset) applies.
		b.log.Info("consumer offset commit ignored: a reset of the queue is pending", "group", group, "topic", topic,
			"queueId", qid, "offset", off, "by", conn.RemoteAddr())
		return remoting.NewResponse(remoting.Success, "Offset has been previously reset")
	}
	b.offsets.commit(group, topic, qid, off)
	return remoting.NewResponse(remoting.Success, "")
}

func (b *Broker) processGetMaxOffset(ctx context.Context, conn *remoting.Conn, req *remoting.Command) *remoting.Command {
	topic, qid, errResp := topicQueue(req)
	if errResp != nil {
		return errResp
	}
	return remoting.NewResponse(remoting.Success, "").SetExt("offset", itoa(b.store.MaxOffsetInQueue(topic, qid)))
}

func (b *Broker) processGetMinOffset(ctx context.Context, conn *remoting.Conn, req *remoting.Command) *remoting.Command {
	topic, qid, errResp := topicQueue(req)
	if errResp != nil {
		return errResp
	}
	return remoting.NewResponse(remoting.Success, "").SetExt("offset", itoa(b.store.MinOffsetInQueue(topic, qid)))
}

func (b *Broker) processSearchOffsetByTimestamp(ctx context.Context, conn *remoting.Conn, req *remoting.Command) *remoting.Command {
	topic, qid, errResp := topicQueue(req)
	if errResp != nil {
		return errResp
	}
	ts, err := req.ExtInt64("timestamp")
	if err != nil {
		return errResponse(remoting.InvalidParameter, "%v", err)
	}
	return remoting.NewResponse(remoting.Success, "").SetExt("offset", itoa(b.store.OffsetInQueueByTime(topic, qid, ts)))
}

func (b *Broker) processGetEarliestMsgStoreTime(ctx context.Context, conn *remoting.Conn, req *remoting.Command) *remoting.Command {
	topic, qid, errResp := topicQueue(req)
	if errResp != nil {
		return errResp
	}
	ts, err := b.store.EarliestMessageTime(topic, qid)
	if err != nil {
		return errResponse(remoting.SystemError, "earliest message time of %s queue %d: %v", topic, qid, err)
	}
	return remoting.NewResponse(remoting.Success, "").SetExt("timestamp", itoa(ts))
}

// processGetConsumerListByGroup answers the live client ids of a group (the client's rebalance input).
func (b *Broker) processGetConsumerListByGroup(ctx context.Context, conn *remoting.Conn, req *remoting.Command) *remoting.Command {
	group, err := req.ExtString("consumerGroup")
	if err != nil {
		return errResponse(remoting.InvalidParameter, "%v", err)
	}
	ids := b.clients.consumerIDs(group)
	if len(ids) == 0 {
		return errResponse(remoting.SystemError, "no consumer for this group, %s", group)
	}
	return remoting.NewJSONResponse(struct {
		ConsumerIDList []string `json:"consumerIdList"`
	}{ids})
}

func topicQueue(req *remoting.Command) (string, int32, *remoting.Command) {
	topic, err := req.ExtString("topic")
	if err != nil {
		return "", 0, errResponse(remoting.InvalidParameter, "%v", err)
	}
	qid, err := req.ExtInt32("queueId")
	if err != nil {
		return "", 0, errResponse(remoting.InvalidParameter, "%v", err)
	}
	return topic, qid, nil
}

func groupTopicQueue(req *remoting.Command, groupKey string) (string, string, int32, *remoting.Command) {
	group, err := req.ExtString(groupKey)
	if err != nil {
		return "", "", 0, errResponse(remoting.InvalidParameter, "%v", err)
	}
	topic, qid, resp := topicQueue(req)
	return group, topic, qid, resp
}
