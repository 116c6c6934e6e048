package proxy

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/rocketraft/rocketraft/protocol"
	"github.com/rocketraft/rocketraft/proxy/v2pb"
)

// The v5 consumers at the brokers. A v5 client talks to the proxy only, so the brokers would not know
// it: mqadmin consumerConnection, consumerProgress's client column and the console would call its group
// offline. The heartbeater registers every consumer whose settings the proxy holds, under the client's
// own id, as a CONSUME_POP consumer of its group with its subscriptions, at the masters of its topics'
// brokers (HEART_BEAT, on the proxy's connection, every HeartbeatInterval and at once when a consumer
// comes); a consumer that ends (NotifyClientTermination) or goes silent (clientIdle) is unregistered
// (UNREGISTER_CLIENT) at the next beat.

// consumeTypePop is RocketMQ 5's ConsumeType of a pop consumer.
const consumeTypePop = "CONSUME_POP"

// consumerReg is one v5 consumer as registered at the brokers.
type consumerReg struct {
	id, group string
	subs      []*protocol.SubscriptionData
}

// consumers lists the consumers (push and simple) whose settings name a group and a subscription, sorted
// by id.
func (r *registry) consumers() []consumerReg {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []consumerReg
	for id, cs := range r.m {
		if cs.typ != v2pb.ClientType_PUSH_CONSUMER && cs.typ != v2pb.ClientType_SIMPLE_CONSUMER || cs.group == "" {
			continue
		}
		var subs []*protocol.SubscriptionData
		for _, e := range cs.settings.GetSubscription().GetSubscriptions() {
			subs = append(subs, subscriptionData(e.GetTopic().GetName(), e.GetExpression()))
		}
		if len(subs) > 0 {
			out = append(out, consumerReg{id: id, group: cs.group, subs: subs})
		}
	}
	slices.SortFunc(out, func(a, b consumerReg) int { return strings.Compare(a.id, b.id) })
	return out
}

// subscriptionData is a v5 subscription as a heartbeat's: a tag expression with its tags, or SQL92.
func subscriptionData(topic string, f *v2pb.FilterExpression) *protocol.SubscriptionData {
	sd := &protocol.SubscriptionData{Topic: topic, SubString: f.GetExpression(), ExpressionType: "TAG",
		SubVersion: time.Now().UnixMilli(), TagsSet: []string{}, CodeSet: []any{}}
	if f.GetType() == v2pb.FilterType_SQL {
		sd.ExpressionType = "SQL92"
		return sd
	}
	if sd.SubString == "" {
		sd.SubString = "*"
	}
	if sd.SubString != "*" {
		sd.TagsSet = append(sd.TagsSet, protocol.SplitTags(sd.SubString)...)
	}
	return sd
}

// beatConsumers registers each consumer at the masters of its topics' brokers and unregisters, where they
// were registered, the consumers no longer there.
func (h *heartbeater) beatConsumers(ctx context.Context) {
	now := map[string]consumerReg{}
	for _, c := range h.clients.consumers() {
		now[c.id] = c
		hb := &protocol.HeartbeatData{ClientID: c.id, ProducerDataSet: []*protocol.ProducerData{},
			ConsumerDataSet: []*protocol.ConsumerData{{GroupName: c.group, ConsumeType: consumeTypePop,
				MessageModel: "CLUSTERING", ConsumeFromWhere: "CONSUME_FROM_LAST_OFFSET", SubscriptionDataSet: c.subs}}}
		addrs := h.consumerAddrs(ctx, c)
		for _, addr := range addrs {
			if err := h.c.Heartbeat(ctx, addr, hb); err != nil {
				h.log.Warn("consumer heartbeat to broker failed", "broker", addr, "client", c.id, "group", c.group, "err", err)
			}
		}
		h.registered[c.id] = registered{group: c.group, addrs: addrs}
	}
	for id, reg := range h.registered {
		if _, ok := now[id]; ok {
			continue
		}
		delete(h.registered, id)
		for _, addr := range reg.addrs {
			if err := h.c.Unregister(ctx, addr, id, "", reg.group); err != nil {
				h.log.Debug("unregister consumer at broker failed", "broker", addr, "client", id, "err", err)
			}
		}
	}
}

// registered is where a consumer was last registered.
type registered struct {
	group string
	addrs []string
}

// consumerAddrs lists the masters of the brokers of c's topics.
func (h *heartbeater) consumerAddrs(ctx context.Context, c consumerReg) []string {
	var out []string
	for _, sd := range c.subs {
		r, err := h.routes.get(ctx, sd.Topic)
		if err != nil {
			h.log.Debug("consumer heartbeat: no route", "topic", sd.Topic, "err", err)
			continue
		}
		for _, bd := range r.data.BrokerDatas {
			if addr := r.master(bd.BrokerName); addr != "" && !slices.Contains(out, addr) {
				out = append(out, addr)
			}
		}
	}
	return out
}
