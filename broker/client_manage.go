package broker

import (
	"context"

	"github.com/rocketraft/rocketraft/protocol"
	"github.com/rocketraft/rocketraft/remoting"
)

// processHeartbeat registers the client's producer and consumer groups on this connection, creates each
// consumer group's subscription group and retry topic, and tells the members of a group that changed.
func (b *Broker) processHeartbeat(ctx context.Context, conn *remoting.Conn, req *remoting.Command) *remoting.Command {
	hb, err := decodeHeartbeat(req.Body)
	if err != nil {
		return errResponse(remoting.SystemError, "bad heartbeat body from %s: %v", conn.RemoteAddr(), err)
	}
	for _, cd := range hb.ConsumerDataSet {
		if cd == nil || cd.GroupName == "" {
			continue
		}
		sg := b.groups.find(cd.GroupName)
		if sg == nil {
			continue
		}
		retry := RetryGroupPrefix + cd.GroupName
		if b.topics.get(retry) == nil {
			queues := max(sg.RetryQueueNums, 1)
			if _, err := b.topics.createIfAbsent(retry, queues, protocol.PermRead|protocol.PermWrite, 0); err != nil {
				b.log.Error("create retry topic", "topic", retry, "err", err)
			}
		}
	}
	changed := b.clients.heartbeat(conn, hb, req.Language, req.Version)
	if len(changed) > 0 {
		b.clients.notifyConsumerIDsChanged(changed)
	}
	resp := remoting.NewResponse(remoting.Success, "")
	resp.SetExt("isSupportHeartBeatV2", "false")
	return resp
}

func (b *Broker) processUnregisterClient(ctx context.Context, conn *remoting.Conn, req *remoting.Command) *remoting.Command {
	clientID := req.OptString("clientID", "")
	producerGroup, consumerGroup := req.OptString("producerGroup", ""), req.OptString("consumerGroup", "")
	changed, gone := b.clients.unregister(conn, clientID, producerGroup, consumerGroup)
	b.clientsLeft(changed, gone)
	if consumerGroup != "" || producerGroup == "" {
		// The consumer's pulls held here are answered now, with no message (as RocketMQ answers a pull of a
		// group it no longer knows): woken by a later message they would hand it to a consumer that is gone,
		// and it would be counted as consumed (rocketmq_messages_out_total) although nobody consumes it.
		for _, p := range b.pullHold.takeLeft(conn.ID(), consumerGroup) {
			_ = conn.Reply(p.req, errResponse(remoting.SubscriptionNotExist,
				"the consumer of group %s left (UNREGISTER_CLIENT) while its pull was held", p.group))
		}
	}
	return remoting.NewResponse(remoting.Success, "")
}

// connClosed forgets the clients of a closed connection and tells the groups they left.
func (b *Broker) connClosed(conn *remoting.Conn) {
	b.pullHold.dropConn(conn.ID())
	b.clientsLeft(b.clients.connClosed(conn))
}

// clientsLeft releases the queue locks of clients that are gone (so an orderly queue passes to another
// member at once instead of after the lock lease) and tells the groups that changed.
func (b *Broker) clientsLeft(changed, gone []string) {
	for _, id := range gone {
		if n := b.locks.releaseClient(id); n > 0 {
			b.log.Info("released the queue locks of a departed client", "client", id, "queues", n)
		}
	}
	if len(changed) > 0 {
		b.clients.notifyConsumerIDsChanged(changed)
	}
}
