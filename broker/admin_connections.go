package broker

import (
	"context"
	"sort"

	"github.com/rocketraft/rocketraft/protocol"
	"github.com/rocketraft/rocketraft/remoting"
)

// processGetConsumerConnectionList is GET_CONSUMER_CONNECTION_LIST (mqadmin consumerConnection): the live
// connections of a consumer group with their client ids, languages and versions, and its subscriptions.
func (b *Broker) processGetConsumerConnectionList(ctx context.Context, conn *remoting.Conn, req *remoting.Command) *remoting.Command {
	group, err := req.ExtString("consumerGroup")
	if err != nil {
		return errResponse(remoting.InvalidParameter, "%v", err)
	}
	cc, ok := b.clients.consumerConnection(group)
	if !ok {
		return errResponse(remoting.ConsumerNotOnline, "the consumer group[%s] not online", group)
	}
	return remoting.NewJSONResponse(cc)
}

// processGetProducerConnectionList is GET_PRODUCER_CONNECTION_LIST (mqadmin producerConnection).
func (b *Broker) processGetProducerConnectionList(ctx context.Context, conn *remoting.Conn, req *remoting.Command) *remoting.Command {
	group, err := req.ExtString("producerGroup")
	if err != nil {
		return errResponse(remoting.InvalidParameter, "%v", err)
	}
	pc, ok := b.clients.producerConnection(group)
	if !ok {
		return errResponse(remoting.SystemError, "the producer group[%s] not exist", group)
	}
	return remoting.NewJSONResponse(pc)
}

// processQueryTopicConsumeByWho is QUERY_TOPIC_CONSUME_BY_WHO: the groups subscribed to a topic now, and
// those with committed offsets on it.
func (b *Broker) processQueryTopicConsumeByWho(ctx context.Context, conn *remoting.Conn, req *remoting.Command) *remoting.Command {
	topic, err := req.ExtString("topic")
	if err != nil {
		return errResponse(remoting.InvalidParameter, "%v", err)
	}
	groups := dedupe(append(b.clients.groupsSubscribedTo(topic), b.offsets.groupsOf(topic)...))
	sort.Strings(groups)
	return remoting.NewJSONResponse(GroupList{GroupList: groups})
}

// consumerConnection describes a consumer group's live connections; ok is false when none is online.
func (m *clientManager) consumerConnection(group string) (cc ConsumerConnection, ok bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	g := m.consumers[group]
	if g == nil || len(g.channels) == 0 {
		return cc, false
	}
	cc = ConsumerConnection{ConnectionSet: connections(g.channels), ConsumeFromWhere: g.consumeFromWhere,
		ConsumeType: g.consumeType, MessageModel: g.messageModel,
		SubscriptionTable: make(map[string]*protocol.SubscriptionData, len(g.subscriptions))}
	for topic, si := range g.subscriptions {
		sd := si.data
		cc.SubscriptionTable[topic] = &sd
	}
	return cc, true
}

// producerConnection describes a producer group's live connections; ok is false when none is online.
func (m *clientManager) producerConnection(group string) (pc ProducerConnection, ok bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	chans := m.producers[group]
	if len(chans) == 0 {
		return pc, false
	}
	return ProducerConnection{ConnectionSet: connections(chans)}, true
}

// connections lists channels by client id then address. m.mu must be held.
func connections(chans map[uint64]*clientChannel) []Connection {
	out := make([]Connection, 0, len(chans))
	for _, ch := range chans {
		out = append(out, Connection{ClientAddr: ch.conn.RemoteAddr(), ClientID: ch.clientID, Language: ch.language,
			Version: ch.version})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].ClientID != out[j].ClientID {
			return out[i].ClientID < out[j].ClientID
		}
		return out[i].ClientAddr < out[j].ClientAddr
	})
	return out
}

// subscribedTopics is the set of topics an online group subscribes to (nil when it is not online).
func (m *clientManager) subscribedTopics(group string) map[string]bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	g := m.consumers[group]
	if g == nil || len(g.subscriptions) == 0 {
		return nil
	}
	out := make(map[string]bool, len(g.subscriptions))
	for topic := range g.subscriptions {
		out[topic] = true
	}
	return out
}

// groupsSubscribedTo lists the online groups that subscribe to topic.
func (m *clientManager) groupsSubscribedTo(topic string) []string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	var out []string
	for name, g := range m.consumers {
		if _, ok := g.subscriptions[topic]; ok {
			out = append(out, name)
		}
	}
	return out
}

// isConsumer reports whether conn is a live channel of the consumer group (it sent the group's heartbeat).
func (m *clientManager) isConsumer(group string, conn *remoting.Conn) bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	g := m.consumers[group]
	return g != nil && g.channels[conn.ID()] != nil
}

// consumerChannels returns the live channels of a consumer group (copies; the connections are shared).
func (m *clientManager) consumerChannels(group string) []clientChannel {
	m.mu.RLock()
	defer m.mu.RUnlock()
	g := m.consumers[group]
	if g == nil {
		return nil
	}
	out := make([]clientChannel, 0, len(g.channels))
	for _, ch := range g.channels {
		out = append(out, *ch)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].conn.ID() < out[j].conn.ID() })
	return out
}
