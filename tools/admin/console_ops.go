package admin

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/rocketraft/rocketraft/client"
	"github.com/rocketraft/rocketraft/message"
	"github.com/rocketraft/rocketraft/protocol"
	"github.com/rocketraft/rocketraft/remoting"
	"github.com/rocketraft/rocketraft/tools/console"
)

// The console's operations pages (tools/console/api_ops.go), answered with mqadmin's requests.

// MessageTrace is queryMsgTraceById's lookup. Records found are answered even when some trace message or
// broker failed (logged); with none found, the failure is the answer.
func (s *consoleSource) MessageTrace(ctx context.Context, traceTopic, msgID string) ([]console.TraceRecord, error) {
	recs, err := s.r.messageTrace(ctx, traceTopic, msgID, 64, 0, math.MaxInt64)
	if err != nil && len(recs) > 0 {
		s.log.Warn("console: message trace partly read", "msgId", msgID, "traceTopic", traceTopic, "err", err)
		err = nil
	}
	return recs, consoleErr(err)
}

// SubscriptionGroups is GET_ALL_SUBSCRIPTIONGROUP_CONFIG of every master, sorted by group and broker.
func (s *consoleSource) SubscriptionGroups(ctx context.Context) ([]console.SubscriptionGroup, error) {
	ci, err := s.r.c.ClusterInfo(ctx)
	if err != nil {
		return nil, consoleErr(err)
	}
	refs, _ := brokers(ci, "", true)
	var out []console.SubscriptionGroup
	var errs []error
	for _, ref := range refs {
		var w protocol.SubscriptionGroupWrapper
		if err := s.r.c.CallJSON(ctx, ref.addr, remoting.GetAllSubscriptionGroupConfig, nil, &w); err != nil {
			errs = append(errs, err)
			continue
		}
		for _, g := range w.SubscriptionGroupTable {
			if g != nil {
				out = append(out, console.SubscriptionGroup{Cluster: ref.cluster, BrokerName: ref.name, Addr: ref.addr, Config: *g})
			}
		}
	}
	if len(out) == 0 && len(errs) > 0 {
		return nil, consoleErr(errors.Join(errs...))
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Config.GroupName != out[j].Config.GroupName {
			return out[i].Config.GroupName < out[j].Config.GroupName
		}
		return out[i].BrokerName < out[j].BrokerName
	})
	return out, nil
}

// RunningInfo asks the client through a broker of the group (GET_CONSUMER_RUNNING_INFO, which the broker
// passes on to the client's connection).
func (s *consoleSource) RunningInfo(ctx context.Context, group, clientID string) (*console.RunningInfo, error) {
	refs, err := s.r.groupBrokers(ctx, group)
	if err != nil {
		return nil, consoleErr(err)
	}
	if len(refs) == 0 {
		return nil, &sentinelError{err: fmt.Errorf("no broker serves consumer group %s", group), is: console.ErrNotFound}
	}
	resp, err := s.r.c.Call(ctx, refs[0].addr, remoting.GetConsumerRunningInfo,
		map[string]string{"consumerGroup": group, "clientId": clientID, "jstackEnable": "false"}, nil)
	if err != nil {
		return nil, consoleErr(fmt.Errorf("client %s of group %s: %w", clientID, group, err))
	}
	if len(resp.Body) == 0 {
		// The official Go client answers SUCCESS without a body when it cannot encode its report (a NaN rate).
		return nil, fmt.Errorf("client %s of group %s answered without a report (remark %q)", clientID, group, resp.Remark)
	}
	var ri protocol.ConsumerRunningInfo
	if err := protocol.UnmarshalFastJSON(resp.Body, &ri); err != nil {
		return nil, fmt.Errorf("running info of client %s: %w", clientID, err)
	}
	out := &console.RunningInfo{Group: group, ClientID: clientID, Properties: ri.Properties,
		Version: ri.Properties["PROP_CLIENT_VERSION"], ConsumeType: ri.Properties["PROP_CONSUME_TYPE"],
		Subscriptions: []console.Subscription{}, Queues: []console.RunningQueue{}, Status: []console.RunningStatus{}}
	if out.Properties == nil {
		out.Properties = map[string]string{}
	}
	out.StartedAt, _ = strconv.ParseInt(ri.Properties["PROP_CONSUMER_START_TIMESTAMP"], 10, 64)
	for _, sub := range ri.SubscriptionSet {
		out.Subscriptions = append(out.Subscriptions, console.Subscription{Topic: sub.Topic, Expression: sub.SubString})
	}
	sort.Slice(out.Subscriptions, func(i, j int) bool { return out.Subscriptions[i].Topic < out.Subscriptions[j].Topic })
	for _, e := range ri.MQTable {
		out.Queues = append(out.Queues, console.RunningQueue{MessageQueue: e.MQ, ProcessQueueInfo: e.Value})
	}
	for _, topic := range sortedKeys(ri.StatusTable) {
		out.Status = append(out.Status, console.RunningStatus{Topic: topic, ConsumeStatus: ri.StatusTable[topic]})
	}
	return out, nil
}

func (s *consoleSource) BrokerConfig(ctx context.Context, addr string) (map[string]string, error) {
	resp, err := s.r.c.Call(ctx, addr, remoting.GetBrokerConfig, nil, nil)
	if err != nil {
		return nil, consoleErr(err)
	}
	return parseProperties(resp.Body), nil
}

// topicStatsParallel bounds the VIEW_BROKER_STATS_DATA requests of TopicTPS in flight.
const topicStatsParallel = 8

// TopicTPS asks the brokers of each topic for its TOPIC_PUT_NUMS and, for each group consuming it, its
// GROUP_GET_NUMS (statsAll's figures, the last minute's rate). A broker that counted nothing for a topic yet
// answers that the stats do not exist: 0.
func (s *consoleSource) TopicTPS(ctx context.Context) ([]console.TopicTPS, error) {
	names, err := s.r.c.TopicList(ctx)
	if err != nil {
		return nil, consoleErr(err)
	}
	ci, err := s.r.c.ClusterInfo(ctx)
	if err != nil {
		return nil, consoleErr(err)
	}
	var topics []string
	for _, t := range names {
		if !isSystemOrGroupTopic(t, ci) {
			topics = append(topics, t)
		}
	}
	out := make([]console.TopicTPS, len(topics))
	errs := make([]error, len(topics))
	sem := make(chan struct{}, topicStatsParallel)
	var wg sync.WaitGroup
	for i, t := range topics {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			out[i], errs[i] = s.topicTPS(ctx, t)
		})
	}
	wg.Wait()
	var kept []console.TopicTPS
	var failed []error
	for i := range out {
		if errs[i] != nil {
			failed = append(failed, errs[i])
			continue
		}
		kept = append(kept, out[i])
	}
	if len(kept) == 0 && len(failed) > 0 {
		return nil, consoleErr(errors.Join(failed...))
	}
	sort.SliceStable(kept, func(i, j int) bool {
		if kept[i].InTPS != kept[j].InTPS {
			return kept[i].InTPS > kept[j].InTPS
		}
		return kept[i].Topic < kept[j].Topic
	})
	return kept, nil
}

func (s *consoleSource) topicTPS(ctx context.Context, topic string) (console.TopicTPS, error) {
	res := console.TopicTPS{Topic: topic}
	route, err := s.r.c.Route(ctx, topic)
	if err != nil {
		return res, err
	}
	for _, ref := range routeBrokers(route) {
		in, err := s.r.statsMinuteTPS(ctx, ref.addr, "TOPIC_PUT_NUMS", topic)
		if err != nil {
			return res, err
		}
		res.InTPS += in
		groups, err := s.r.consumersOf(ctx, ref.addr, topic)
		if err != nil {
			return res, err
		}
		for _, g := range groups {
			out, err := s.r.statsMinuteTPS(ctx, ref.addr, "GROUP_GET_NUMS", topic+"@"+g)
			if err != nil {
				return res, err
			}
			res.OutTPS += out
		}
	}
	return res, nil
}

// statsMinuteTPS is VIEW_BROKER_STATS_DATA's last-minute rate of one stats item; 0 when the broker has none
// (it answers SYSTEM_ERROR "The stats <name> <key> not exist").
func (r *runner) statsMinuteTPS(ctx context.Context, addr, name, key string) (float64, error) {
	var d struct {
		StatsMinute struct {
			Tps float64 `json:"tps"`
		} `json:"statsMinute"`
	}
	err := r.c.CallJSON(ctx, addr, remoting.ViewBrokerStatsData, map[string]string{"statsName": name, "statsKey": key}, &d)
	var re *client.ResponseError
	if errors.As(err, &re) && re.Code == remoting.SystemError && strings.Contains(re.Remark, "not exist") {
		return 0, nil
	}
	return d.StatsMinute.Tps, err
}

// isSystemOrGroupTopic reports the topics the throughput table leaves out: retry and dead-letter topics,
// RocketMQ's system topics, and the topics named after a cluster or broker.
func isSystemOrGroupTopic(t string, ci *protocol.ClusterInfo) bool {
	if strings.HasPrefix(t, retryTopicPrefix) || strings.HasPrefix(t, dlqTopicPrefix) ||
		protocol.HasSystemTopicPrefix(t) || strings.HasSuffix(t, protocol.TopicReplySuffix) {
		return true
	}
	switch t {
	case protocol.TopicAutoCreate, protocol.TopicSelfTest, protocol.TopicOffsetMoved, protocol.TopicSchedule:
		return true
	}
	_, cluster := ci.ClusterAddrTable[t]
	_, broker := ci.BrokerAddrTable[t]
	return cluster || broker
}

func (a *consoleAdmin) UpdateSubscriptionGroup(ctx context.Context, cluster string, cfg protocol.SubscriptionGroupConfig) ([]string, error) {
	refs, err := a.r.targets(ctx, "", cluster, true)
	if err != nil {
		return nil, consoleErr(err)
	}
	done, err := a.r.updateSubGroup(ctx, refs, cfg)
	return done, consoleErr(err)
}

// DeleteSubscriptionGroup deletes the group's config and offsets (mqadmin deleteSubGroup -r true); its
// retry and dead-letter topics stay.
func (a *consoleAdmin) DeleteSubscriptionGroup(ctx context.Context, cluster, group string) ([]string, error) {
	refs, err := a.r.targets(ctx, "", cluster, true)
	if err != nil {
		return nil, consoleErr(err)
	}
	done, err := a.r.deleteSubGroup(ctx, refs, group, true)
	return done, consoleErr(err)
}

func (a *consoleAdmin) SendMessage(ctx context.Context, m console.TestMessage) (*console.SendResult, error) {
	route, err := a.r.c.Route(ctx, m.Topic)
	if err != nil {
		return nil, consoleErr(err)
	}
	queues := client.RouteQueues(route, m.Topic, "", true)
	if len(queues) == 0 {
		return nil, consoleErr(usagef("topic %s has no writable queue", m.Topic))
	}
	props := map[string]string{}
	if m.Tags != "" {
		props[message.PropertyTags] = m.Tags
	}
	if m.Keys != "" {
		props[message.PropertyKeys] = m.Keys
	}
	res, err := a.r.sendToAny(ctx, queues, props, []byte(m.Body))
	if err != nil {
		return nil, consoleErr(err)
	}
	return sendResult(res), nil
}

func sendResult(r *client.SendResult) *console.SendResult {
	return &console.SendResult{Status: r.SendStatus, MsgID: r.MsgID, OffsetMsgID: r.OffsetMsgID, BrokerName: r.BrokerName,
		QueueID: r.QueueID, QueueOffset: r.QueueOffset}
}

// resendDropped are the properties a resent copy does not carry over: the broker's and the retry path's
// bookkeeping (the copy is a new message: it gets a new unique id).
var resendDropped = map[string]bool{
	message.PropertyUniqKey: true, message.PropertyRetryTopic: true, message.PropertyOriginMessageID: true,
	message.PropertyDLQOriginTopic: true, message.PropertyDLQOriginMessageID: true, message.PropertyReconsumeTime: true,
	message.PropertyMaxReconsumeTimes: true, message.PropertyDelayLevel: true, message.PropertyRealTopic: true,
	message.PropertyRealQueueID: true, message.PropertyMinOffset: true, message.PropertyMaxOffset: true,
	message.PropertyConsumeStartTime: true, message.PropertyWaitStoreMsgOK: true, message.PropertyTransactionPrepared: true,
	message.PropertyProducerGroup: true, message.PropertyCluster: true, message.PropertyMsgRegion: true,
	message.PropertyTraceSwitch: true, message.PropertyInnerNum: true, message.PropertyInnerBase: true,
}

func (a *consoleAdmin) ResendMessages(ctx context.Context, topic string, ids []string) ([]console.Resent, error) {
	out := make([]console.Resent, 0, len(ids))
	for _, id := range ids {
		rs := console.Resent{MsgID: id}
		res, target, err := a.resendOne(ctx, topic, id)
		rs.Topic = target
		if err != nil {
			rs.Error = err.Error()
		} else {
			rs.Result = sendResult(res)
		}
		out = append(out, rs)
	}
	return out, nil
}

// resendOne sends a copy of message id of topic to the topic it was first sent to.
func (a *consoleAdmin) resendOne(ctx context.Context, topic, id string) (*client.SendResult, string, error) {
	m, err := a.r.findByID(ctx, strings.TrimSpace(id), topic, "")
	if err != nil {
		return nil, "", err
	}
	v := newMessageView(m)
	target := v.Properties[message.PropertyDLQOriginTopic]
	if target == "" {
		target = v.Properties[message.PropertyRetryTopic]
	}
	if target == "" {
		target = m.Topic
	}
	props := map[string]string{}
	for k, val := range v.Properties {
		if !resendDropped[k] {
			props[k] = val
		}
	}
	route, err := a.r.c.Route(ctx, target)
	if err != nil {
		return nil, target, err
	}
	queues := client.RouteQueues(route, target, "", true)
	if len(queues) == 0 {
		return nil, target, fmt.Errorf("topic %s has no writable queue", target)
	}
	res, err := a.r.sendToAny(ctx, queues, props, v.body)
	return res, target, err
}

func (a *consoleAdmin) ConsumeDirectly(ctx context.Context, topic, id, group, clientID string) (*console.DirectResult, error) {
	m, err := a.r.findByID(ctx, id, topic, "")
	if err != nil {
		return nil, consoleErr(err)
	}
	res, err := a.r.consumeDirectly(ctx, []*message.MessageExt{m}, group, clientID)
	if err != nil {
		return nil, consoleErr(err)
	}
	d := res.Results[0]
	return &console.DirectResult{ConsumeResult: d.ConsumeResult, Remark: d.Remark, SpentMillis: d.SpentTimeMills,
		Order: d.Order, AutoCommit: d.AutoCommit}, nil
}
