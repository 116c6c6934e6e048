package broker

import (
	"context"
	"sort"
	"strconv"
	"strings"

	"github.com/rocketraft/rocketraft/broker/internal/pop"
	"github.com/rocketraft/rocketraft/protocol"
	"github.com/rocketraft/rocketraft/remoting"
)

// processGetTopicStatsInfo is GET_TOPIC_STATS_INFO (mqadmin topicStatus): min and max offset and the time of
// the last message of every queue of a topic on this broker.
func (b *Broker) processGetTopicStatsInfo(ctx context.Context, conn *remoting.Conn, req *remoting.Command) *remoting.Command {
	topic, err := req.ExtString("topic")
	if err != nil {
		return errResponse(remoting.InvalidParameter, "%v", err)
	}
	tc := b.topics.get(topic)
	if tc == nil {
		return errResponse(remoting.TopicNotExist, "topic[%s] not exist", topic)
	}
	entries := make([]protocol.QueueEntry[protocol.TopicOffset], 0, tc.WriteQueueNums)
	for q := range tc.WriteQueueNums {
		minOff := max(b.store.MinOffsetInQueue(topic, q), 0)
		maxOff := max(b.store.MaxOffsetInQueue(topic, q), 0)
		var last int64
		if maxOff > 0 {
			last, _ = b.store.MessageStoreTime(topic, q, maxOff-1) // 0 when the record is gone
		}
		entries = append(entries, protocol.QueueEntry[protocol.TopicOffset]{MQ: b.queue(topic, q), Value: protocol.TopicOffset{
			LastUpdateTimestamp: last, MaxOffset: maxOff, MinOffset: minOff}})
	}
	return bodyResponse(queueTableBody("", entries))
}

// processGetConsumeStats is GET_CONSUME_STATS (mqadmin consumerProgress): for one group, the broker offset,
// the committed offset and the time of the last consumed message of every read queue of the group's
// topics here (the topic named in the header, or every topic the group has offsets for), and the rate at
// which the group's committed offsets advanced over the last minute as consumeTps.
func (b *Broker) processGetConsumeStats(ctx context.Context, conn *remoting.Conn, req *remoting.Command) *remoting.Command {
	group, err := req.ExtString("consumerGroup")
	if err != nil {
		return errResponse(remoting.InvalidParameter, "%v", err)
	}
	topics := []string{req.OptString("topic", "")}
	if topics[0] == "" {
		topics = b.offsets.topicsOf(group)
	}
	entries, tps := b.consumeEntries(group, topics, false)
	return bodyResponse(consumeStatsBody(tps, entries))
}

// consumeEntries is group's offset table over topics here (all queues of each topic it may count) and its
// consume TPS. As RocketMQ: while the group is online, only the topics it subscribes to count; with
// orderOnly only ordered topics.
func (b *Broker) consumeEntries(group string, topics []string, orderOnly bool) ([]protocol.QueueEntry[protocol.OffsetWrapper], float64) {
	subscribed := b.clients.subscribedTopics(group)
	pops := b.pop.InFlight()
	var (
		entries []protocol.QueueEntry[protocol.OffsetWrapper]
		tps     float64
	)
	for _, topic := range topics {
		tc := b.topics.get(topic)
		if tc == nil || (orderOnly && !tc.Order) {
			continue
		}
		if len(subscribed) > 0 && !subscribed[topic] {
			continue
		}
		for q := range tc.ReadQueueNums {
			w := protocol.OffsetWrapper{BrokerOffset: max(b.store.MaxOffsetInQueue(topic, q), 0),
				ConsumerOffset: max(b.offsets.query(group, topic, q), 0)}
			w.PullOffset = max(w.ConsumerOffset, b.stats.PullOffset(group, topic, q))
			if f, ok := pops[pop.GroupQueue{Group: group, Topic: topic, QueueID: q}]; ok {
				// A pop group: its pull offset is the next to pop (its committed pop offset may be behind while
				// pops are in the engine's merge buffer); what it has in flight starts at f.First.
				next := w.ConsumerOffset
				if f.Next >= 0 {
					next = f.Next
				}
				w.PullOffset, w.ConsumerOffset = next, min(next, f.First)
			}
			if w.ConsumerOffset > 0 {
				w.LastTimestamp, _ = b.store.MessageStoreTime(topic, q, w.ConsumerOffset-1) // 0 when gone
			}
			entries = append(entries, protocol.QueueEntry[protocol.OffsetWrapper]{MQ: b.queue(topic, q), Value: w})
		}
		tps += b.admin.rates.consumeTPS(topic, group)
	}
	return entries, tps
}

// processGetBrokerConsumeStats is GET_BROKER_CONSUME_STATS (mqadmin brokerConsumeStats): for every
// subscription group, a ConsumeStats per topic it has offsets on here (header isOrder: ordered topics only).
// Body: {"brokerAddr":..,"consumeStatsList":[{"group":[ConsumeStats,..]},..],"totalDiff":N,"totalInflightDiff":0}.
func (b *Broker) processGetBrokerConsumeStats(ctx context.Context, conn *remoting.Conn, req *remoting.Command) *remoting.Command {
	orderOnly, err := req.OptBool("isOrder", false)
	if err != nil {
		return errResponse(remoting.InvalidParameter, "%v", err)
	}
	table, _ := b.groups.versionedTable.snapshot()
	groups := make([]string, 0, len(table))
	for g := range table {
		groups = append(groups, g)
	}
	sort.Strings(groups)
	body := []byte(`{"brokerAddr":`)
	body = strconv.AppendQuote(body, b.addr)
	body = append(body, `,"consumeStatsList":[`...)
	var total int64
	for i, g := range groups {
		if i > 0 {
			body = append(body, ',')
		}
		body = append(strconv.AppendQuote(append(body, '{'), g), ":["...)
		first := true
		for _, topic := range b.offsets.topicsOf(g) {
			entries, tps := b.consumeEntries(g, []string{topic}, orderOnly)
			if len(entries) == 0 {
				continue
			}
			for _, e := range entries {
				total += e.Value.BrokerOffset - e.Value.ConsumerOffset
			}
			cs, err := consumeStatsBody(tps, entries)
			if err != nil {
				return errResponse(remoting.SystemError, "encode answer: %v", err)
			}
			if !first {
				body = append(body, ',')
			}
			first = false
			body = append(body, cs...)
		}
		body = append(body, "]}"...)
	}
	body = append(body, `],"totalDiff":`...)
	body = strconv.AppendInt(body, total, 10)
	body = append(body, `,"totalInflightDiff":0}`...)
	resp := remoting.NewResponse(remoting.Success, "")
	resp.Body = body
	return resp
}

// queue names queue q of topic on this broker.
func (b *Broker) queue(topic string, q int32) protocol.MessageQueue {
	return protocol.MessageQueue{BrokerName: b.cfg.BrokerName, QueueID: q, Topic: topic}
}

// bodyResponse answers SUCCESS with body, or SYSTEM_ERROR when encoding failed.
func bodyResponse(body []byte, err error) *remoting.Command {
	if err != nil {
		return errResponse(remoting.SystemError, "encode answer: %v", err)
	}
	resp := remoting.NewResponse(remoting.Success, "")
	resp.Body = body
	return resp
}

// topicsOf lists, sorted, the topics group has committed offsets on.
func (m *consumerOffsetManager) topicsOf(group string) []string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	var out []string
	for k := range m.table {
		if t, g, ok := strings.Cut(k, offsetKeySep); ok && g == group {
			out = append(out, t)
		}
	}
	sort.Strings(out)
	return out
}

// progress returns, by "topic@group", the sum of the committed offsets over the queues: how many messages
// each group has consumed of each topic (the consume-rate sampler differences it).
func (m *consumerOffsetManager) progress() map[string]int64 {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make(map[string]int64, len(m.table))
	for k, qs := range m.table {
		var sum int64
		for _, off := range qs {
			sum += off
		}
		out[k] = sum
	}
	return out
}
