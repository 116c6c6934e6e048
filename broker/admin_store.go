package broker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/rocketraft/rocketraft/protocol"
	"github.com/rocketraft/rocketraft/remoting"
	"github.com/rocketraft/rocketraft/store"
)

// The store maintenance requests (mqadmin deleteExpiredCommitLog, cleanExpiredCQ, cleanUnusedTopic) and
// QUERY_CONSUME_QUEUE (mqadmin queryCq). Each acts on this broker's store only.

// processDeleteExpiredCommitLog is DELETE_EXPIRED_COMMITLOG: the expired CommitLog files go now, whatever the
// deleteWhen hour (store.DeleteExpiredFilesNow). The remark says how many.
func (b *Broker) processDeleteExpiredCommitLog(ctx context.Context, conn *remoting.Conn, req *remoting.Command) *remoting.Command {
	n := b.store.DeleteExpiredFilesNow(ctx)
	b.log.Info("expired commitlog files deleted on request", "files", n, "by", conn.RemoteAddr())
	return remoting.NewResponse(remoting.Success, fmt.Sprintf("%d expired commitlog files deleted", n))
}

// processCleanExpiredConsumeQueue is CLEAN_EXPIRED_CONSUMEQUEUE: the ConsumeQueues whose messages are all gone
// from the CommitLog are destroyed (store.CleanExpiredConsumeQueues). The remark lists them.
func (b *Broker) processCleanExpiredConsumeQueue(ctx context.Context, conn *remoting.Conn, req *remoting.Command) *remoting.Command {
	gone, err := b.store.CleanExpiredConsumeQueues()
	if err != nil {
		return errResponse(remoting.SystemError, "clean expired consume queues: %v", err)
	}
	b.log.Info("expired consume queues cleaned on request", "queues", gone, "by", conn.RemoteAddr())
	return remoting.NewResponse(remoting.Success, "cleaned: "+strings.Join(gone, ","))
}

// processCleanUnusedTopic is CLEAN_UNUSED_TOPIC: the ConsumeQueues of topics this broker's topic table no
// longer has (system topics kept) are deleted, as RocketMQ's cleanUnusedTopic. The remark lists the topics.
func (b *Broker) processCleanUnusedTopic(ctx context.Context, conn *remoting.Conn, req *remoting.Command) *remoting.Command {
	var unused []string
	for _, t := range b.store.ConsumeQueueTopics() {
		if b.topics.get(t) == nil && !isSystemTopic(t, b.cfg.BrokerClusterName) {
			unused = append(unused, t)
		}
	}
	if err := b.store.DeleteTopics(unused); err != nil {
		return errResponse(remoting.SystemError, "delete the consume queues of %v: %v", unused, err)
	}
	b.log.Info("unused topics cleaned on request", "topics", unused, "by", conn.RemoteAddr())
	return remoting.NewResponse(remoting.Success, "cleaned: "+strings.Join(unused, ","))
}

// processQueryConsumeQueue is QUERY_CONSUME_QUEUE: header topic, queueId, index, count and optional
// consumerGroup; the body is protocol.QueryConsumeQueueResponseBody with the units from index (at most count).
// With a group online on the topic, each unit's eval says whether its tag hash passes the group's tag
// subscription (SQL92 subscriptions are evaluated on the message, so eval is then true).
func (b *Broker) processQueryConsumeQueue(ctx context.Context, conn *remoting.Conn, req *remoting.Command) *remoting.Command {
	topic, err := req.ExtString("topic")
	if err != nil {
		return errResponse(remoting.InvalidParameter, "%v", err)
	}
	qid, err := req.ExtInt32("queueId")
	if err != nil {
		return errResponse(remoting.InvalidParameter, "%v", err)
	}
	index, err := req.ExtInt64("index")
	if err != nil {
		return errResponse(remoting.InvalidParameter, "%v", err)
	}
	count, err := req.OptInt32("count", 10)
	if err != nil {
		return errResponse(remoting.InvalidParameter, "%v", err)
	}
	if count < 1 || count > 1000 {
		return errResponse(remoting.InvalidParameter, "count %d is not within 1..1000", count)
	}
	maxIdx, minIdx := b.store.MaxOffsetInQueue(topic, qid), b.store.MinOffsetInQueue(topic, qid)
	if maxIdx <= 0 && b.topics.get(topic) == nil {
		return errResponse(remoting.SystemError, "%d@%s is not exist!", qid, topic)
	}
	body := protocol.QueryConsumeQueueResponseBody{MaxQueueIndex: maxIdx, MinQueueIndex: minIdx, QueueData: []protocol.ConsumeQueueData{}}
	var sub *subscriptionInfo
	if group := req.OptString("consumerGroup", ""); group != "" {
		sub = b.clients.subscription(group, topic)
		if sub == nil {
			body.FilterData = fmt.Sprintf("%s@%s is not online!", group, topic)
		} else if body.SubscriptionData, err = json.Marshal(sub.data); err != nil {
			return errResponse(remoting.SystemError, "encode subscription: %v", err)
		}
	}
	for i := index; i < index+int64(count) && i < maxIdx; i++ {
		u, err := b.store.ConsumeQueueUnit(topic, qid, i)
		if errors.Is(err, store.ErrNotFound) {
			continue // below the minimum, or a filler unit
		}
		if err != nil {
			return errResponse(remoting.SystemError, "read %d@%s index %d: %v", qid, topic, i, err)
		}
		d := protocol.ConsumeQueueData{PhysicOffset: u.PhysicalOffset, PhysicSize: u.Size, TagsCode: u.TagsCode}
		if sub != nil {
			d.Eval = tagsPass(sub, u.TagsCode)
		}
		body.QueueData = append(body.QueueData, d)
	}
	return remoting.NewJSONResponse(body)
}

// tagsPass reports whether a unit's tag hash passes a tag subscription ("*" or a SQL92 one pass everything).
func tagsPass(sub *subscriptionInfo, code int64) bool {
	return sub.all || sub.sql != nil || sub.sqlErr != nil || sub.codes[code]
}
