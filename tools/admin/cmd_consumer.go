package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/rocketraft/rocketraft/client"
	"github.com/rocketraft/rocketraft/protocol"
	"github.com/rocketraft/rocketraft/remoting"
)

type consumeStats = protocol.ConsumeStats

// consumeStats gathers GET_CONSUME_STATS of group from every broker of its retry topic's route (the
// brokers the group consumes from, as RocketMQ's examineConsumeStats does). A group that never consumed
// has no retry topic; then every master is asked, so offsets set by resetOffsetByTime show too.
func (r *runner) consumeStats(ctx context.Context, group string) (*consumeStats, error) {
	refs, err := r.groupBrokers(ctx, group)
	if err != nil {
		return nil, err
	}
	out := &consumeStats{}
	for _, ref := range refs {
		resp, err := r.c.Call(ctx, ref.addr, remoting.GetConsumeStats, map[string]string{"consumerGroup": group}, nil)
		if err != nil {
			return nil, err
		}
		var cs consumeStats
		if err := protocol.UnmarshalFastJSON(resp.Body, &cs); err != nil {
			return nil, fmt.Errorf("consume stats from %s: %w", ref.addr, err)
		}
		out.ConsumeTps += cs.ConsumeTps
		out.OffsetTable = append(out.OffsetTable, cs.OffsetTable...)
	}
	sort.Slice(out.OffsetTable, func(i, j int) bool { return out.OffsetTable[i].MQ.Less(out.OffsetTable[j].MQ) })
	return out, nil
}

// clientConnection is a Connection of a ConsumerConnection or ProducerConnection body.
type clientConnection struct {
	ClientID   string `json:"clientId"`
	ClientAddr string `json:"clientAddr"`
	Language   string `json:"language"`
	Version    int32  `json:"version"`
}

func (c clientConnection) row() connectionRow {
	return connectionRow{ClientID: c.ClientID, ClientAddr: c.ClientAddr, Language: c.Language, Version: versionDesc(c.Version)}
}

// groupBrokers are the brokers to ask about a group: those of its retry topic, else every master.
func (r *runner) groupBrokers(ctx context.Context, group string) ([]brokerRef, error) {
	route, err := r.c.Route(ctx, retryTopicPrefix+group)
	if err == nil {
		return routeBrokers(route), nil
	}
	if !client.HasCode(err, remoting.TopicNotExist) {
		return nil, fmt.Errorf("consumer group %s: %w", group, err)
	}
	ci, cerr := r.c.ClusterInfo(ctx)
	if cerr != nil {
		return nil, cerr
	}
	return brokers(ci, "", true)
}

// consumerConnection is a ConsumerConnection body.
type consumerConnection struct {
	ConnectionSet     []clientConnection `json:"connectionSet"`
	SubscriptionTable map[string]struct {
		Topic     string `json:"topic"`
		SubString string `json:"subString"`
	} `json:"subscriptionTable"`
	ConsumeType      string `json:"consumeType"`
	MessageModel     string `json:"messageModel"`
	ConsumeFromWhere string `json:"consumeFromWhere"`
}

// consumerConnection is GET_CONSUMER_CONNECTION_LIST at addr, or at a broker of the group's retry topic.
func (r *runner) consumerConnection(ctx context.Context, group, addr string) (*consumerConnection, error) {
	if addr == "" {
		route, err := r.c.Route(ctx, retryTopicPrefix+group)
		if err != nil {
			return nil, fmt.Errorf("consumer group %s: %w", group, err)
		}
		refs := routeBrokers(route)
		if len(refs) == 0 {
			return nil, fmt.Errorf("consumer group %s: its retry topic has no broker", group)
		}
		addr = refs[0].addr
	}
	var cc consumerConnection
	err := r.c.CallJSON(ctx, addr, remoting.GetConsumerConnectionList, map[string]string{"consumerGroup": group}, &cc)
	if client.HasCode(err, remoting.ConsumerNotOnline) {
		return nil, fmt.Errorf("consumer group %s is not online: %w", group, err)
	}
	return &cc, err
}

type progressRow struct {
	Topic          string `json:"topic"`
	BrokerName     string `json:"brokerName"`
	QueueID        int32  `json:"queueId"`
	BrokerOffset   int64  `json:"brokerOffset"`
	ConsumerOffset int64  `json:"consumerOffset"`
	ClientIP       string `json:"clientIP,omitempty"` // with -s true
	Diff           int64  `json:"diff"`
	Inflight       int64  `json:"inflight"` // 5.x: pull offset minus consumer offset (pop groups: popped, not acked)
	LastTimestamp  int64  `json:"lastTimestamp"`
}

type consumerProgressResult struct {
	Group               string        `json:"group"`
	Queues              []progressRow `json:"queues"`
	ConsumeTps          float64       `json:"consumeTps"`
	BrokerOffsetTotal   int64         `json:"brokerOffsetTotal"`
	ConsumerOffsetTotal int64         `json:"consumerOffsetTotal"`
	DiffTotal           int64         `json:"diffTotal"`
	InflightTotal       int64         `json:"inflightTotal"`
	showClientIP        bool
}

func (r *consumerProgressResult) writeText(w io.Writer) error {
	tb := newTable("#Topic", "#Broker Name", "#QID", "#Broker Offset", "#Consumer Offset", "#Diff", "#Inflight", "#LastTime")
	if r.showClientIP {
		tb = newTable("#Topic", "#Broker Name", "#QID", "#Broker Offset", "#Consumer Offset", "#Client IP", "#Diff", "#Inflight", "#LastTime")
	}
	for _, q := range r.Queues {
		if r.showClientIP {
			tb.add(q.Topic, q.BrokerName, q.QueueID, q.BrokerOffset, q.ConsumerOffset, naIfEmpty(q.ClientIP), q.Diff, q.Inflight, dateTime(q.LastTimestamp))
			continue
		}
		tb.add(q.Topic, q.BrokerName, q.QueueID, q.BrokerOffset, q.ConsumerOffset, q.Diff, q.Inflight, dateTime(q.LastTimestamp))
	}
	t := &textWriter{w: w}
	t.table(tb)
	t.printf("\nConsume TPS: %.2f\n", r.ConsumeTps)
	t.printf("Broker Offset Total: %d\n", r.BrokerOffsetTotal)
	t.printf("Consumer Offset Total: %d\n", r.ConsumerOffsetTotal)
	t.printf("Diff Total: %d\n", r.DiffTotal)
	t.printf("Inflight Total: %d\n", r.InflightTotal)
	return t.err
}

func naIfEmpty(s string) string {
	if s == "" {
		return "N/A"
	}
	return s
}

type groupRow struct {
	Group     string `json:"group"`
	Count     int    `json:"count"`
	Version   string `json:"version"`
	Type      string `json:"type"`
	Model     string `json:"model"`
	TPS       int64  `json:"tps"`
	DiffTotal int64  `json:"diffTotal"`
}

type groupsProgressResult struct {
	Groups []groupRow `json:"groups"`
}

func (r *groupsProgressResult) writeText(w io.Writer) error {
	tb := newTable("#Group", "#Count", "#Version", "#Type", "#Model", "#TPS", "#Diff Total")
	for _, g := range r.Groups {
		tb.add(g.Group, g.Count, g.Version, g.Type, g.Model, g.TPS, g.DiffTotal)
	}
	return tb.write(w)
}

func consumerProgressCmd() *command {
	return &command{name: "consumerProgress", desc: "Query consumers's progress, speed", setup: func(f *flags) runFunc {
		var group string
		var showClientIP bool
		f.String(&group, "g", "groupName", "consumer group name (without it: every group)", false)
		f.BoolArg(&showClientIP, "s", "showClientIP", "Show Client IP per Queue (asks each client which queues it holds)")
		return func(ctx context.Context, r *runner) (result, error) {
			if group == "" {
				return r.groupsProgress(ctx)
			}
			res, err := r.consumerProgress(ctx, group, showClientIP)
			if err != nil {
				return nil, err
			}
			if len(res.Queues) == 0 {
				return nil, fmt.Errorf("consumer group %s has no consume stats: it has committed no offset on its topics", group)
			}
			return res, nil
		}
	}}
}

// consumerProgress is group's lag per queue with the totals; with showClientIP each queue names the client
// that holds it.
func (r *runner) consumerProgress(ctx context.Context, group string, showClientIP bool) (*consumerProgressResult, error) {
	cs, err := r.consumeStats(ctx, group)
	if err != nil {
		return nil, err
	}
	res := &consumerProgressResult{Group: group, ConsumeTps: cs.ConsumeTps, Queues: []progressRow{},
		showClientIP: showClientIP}
	var owners map[protocol.MessageQueue]string
	if showClientIP {
		owners = r.queueOwners(ctx, group)
	}
	for _, e := range cs.OffsetTable {
		diff := e.Value.BrokerOffset - e.Value.ConsumerOffset
		inflight := max(e.Value.PullOffset-e.Value.ConsumerOffset, 0)
		res.Queues = append(res.Queues, progressRow{Topic: e.MQ.Topic, BrokerName: e.MQ.BrokerName,
			QueueID: e.MQ.QueueID, BrokerOffset: e.Value.BrokerOffset, ConsumerOffset: e.Value.ConsumerOffset,
			ClientIP: owners[e.MQ], Diff: diff, Inflight: inflight, LastTimestamp: e.Value.LastTimestamp})
		res.InflightTotal += inflight
		res.BrokerOffsetTotal += e.Value.BrokerOffset
		res.ConsumerOffsetTotal += e.Value.ConsumerOffset
		res.DiffTotal += diff
	}
	return res, nil
}

// groupsProgress is consumerProgress without -g: every group that has a retry topic, with its
// connections and total lag.
func (r *runner) groupsProgress(ctx context.Context) (*groupsProgressResult, error) {
	topics, err := r.c.TopicList(ctx)
	if err != nil {
		return nil, err
	}
	sort.Strings(topics)
	res := &groupsProgressResult{Groups: []groupRow{}}
	for _, topic := range topics {
		group, ok := strings.CutPrefix(topic, retryTopicPrefix)
		if !ok {
			continue
		}
		row := groupRow{Group: group}
		if cs, err := r.consumeStats(ctx, group); err == nil {
			row.TPS = int64(cs.ConsumeTps)
			for _, e := range cs.OffsetTable {
				row.DiffTotal += e.Value.BrokerOffset - e.Value.ConsumerOffset
			}
		}
		cc, err := r.consumerConnection(ctx, group, "")
		if err == nil && len(cc.ConnectionSet) > 0 {
			row.Count = len(cc.ConnectionSet)
			minV := cc.ConnectionSet[0].Version
			for _, c := range cc.ConnectionSet {
				minV = min(minV, c.Version)
			}
			row.Version = versionDesc(minV)
			row.Type = "PUSH"
			if cc.ConsumeType == "CONSUME_ACTIVELY" {
				row.Type = "PULL"
			} else {
				row.Model = cc.MessageModel
			}
		} else {
			row.Version = "OFFLINE"
		}
		res.Groups = append(res.Groups, row)
	}
	return res, nil
}

type connectionRow struct {
	ClientID   string `json:"clientId"`
	ClientAddr string `json:"clientAddr"`
	Language   string `json:"language"`
	Version    string `json:"version"`
}

type subscriptionRow struct {
	Topic         string `json:"topic"`
	SubExpression string `json:"subExpression"`
}

type consumerConnectionResult struct {
	Group            string            `json:"group"`
	Connections      []connectionRow   `json:"connections"`
	Subscriptions    []subscriptionRow `json:"subscriptions"`
	ConsumeType      string            `json:"consumeType"`
	MessageModel     string            `json:"messageModel"`
	ConsumeFromWhere string            `json:"consumeFromWhere"`
}

func (r *consumerConnectionResult) writeText(w io.Writer) error {
	t := &textWriter{w: w}
	tb := newTable("#ClientId", "#ClientAddr", "#Language", "#Version")
	for _, c := range r.Connections {
		tb.add(c.ClientID, c.ClientAddr, c.Language, c.Version)
	}
	t.table(tb)
	t.printf("\nBelow is subscription:\n")
	sb := newTable("#Topic", "#SubExpression")
	for _, s := range r.Subscriptions {
		sb.add(s.Topic, s.SubExpression)
	}
	t.table(sb)
	t.printf("\nConsumeType: %s\nMessageModel: %s\nConsumeFromWhere: %s\n", r.ConsumeType, r.MessageModel, r.ConsumeFromWhere)
	return t.err
}

func consumerConnectionCmd() *command {
	desc := "Query consumer's socket connection, client version and subscription"
	return &command{name: "consumerConnection", desc: desc, setup: func(f *flags) runFunc {
		var group, addr string
		f.String(&group, "g", "consumerGroup", "consumer group name", true)
		f.String(&addr, "b", "brokerAddr", "broker address", false)
		return func(ctx context.Context, r *runner) (result, error) {
			cc, err := r.consumerConnection(ctx, group, addr)
			if err != nil {
				return nil, err
			}
			res := &consumerConnectionResult{Group: group, ConsumeType: cc.ConsumeType, MessageModel: cc.MessageModel,
				ConsumeFromWhere: cc.ConsumeFromWhere, Connections: []connectionRow{}, Subscriptions: []subscriptionRow{}}
			for _, c := range cc.ConnectionSet {
				res.Connections = append(res.Connections, c.row())
			}
			for _, topic := range sortedKeys(cc.SubscriptionTable) {
				res.Subscriptions = append(res.Subscriptions, subscriptionRow{Topic: topic, SubExpression: cc.SubscriptionTable[topic].SubString})
			}
			return res, nil
		}
	}}
}

type producerConnectionResult struct {
	Group       string          `json:"group"`
	Connections []connectionRow `json:"connections"`
}

func (r *producerConnectionResult) writeText(w io.Writer) error {
	tb := newTable("#No", "#ClientId", "#ClientAddr", "#Language", "#Version")
	for i, c := range r.Connections {
		tb.add(fmt.Sprintf("%04d", i+1), c.ClientID, c.ClientAddr, c.Language, c.Version)
	}
	return tb.write(w)
}

func producerConnectionCmd() *command {
	return &command{name: "producerConnection", desc: "Query producer's socket connection and client version", setup: func(f *flags) runFunc {
		var group, topic string
		f.String(&group, "g", "producerGroup", "producer group name", true)
		f.String(&topic, "t", "topic", "topic name", true)
		return func(ctx context.Context, r *runner) (result, error) {
			res, err := r.producerConnections(ctx, group, topic)
			if res == nil || len(res.Connections) > 0 {
				return res, err
			}
			none := fmt.Sprintf("producer group %s has no connection to the brokers of topic %s", group, topic)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", none, err)
			}
			return nil, errors.New(none)
		}
	}}
}

// producerConnections lists the producers of group connected to the brokers of topic
// (GET_PRODUCER_CONNECTION_LIST), with the failures of the brokers that did not answer joined.
func (r *runner) producerConnections(ctx context.Context, group, topic string) (*producerConnectionResult, error) {
	route, err := r.c.Route(ctx, topic)
	if err != nil {
		return nil, err
	}
	res := &producerConnectionResult{Group: group, Connections: []connectionRow{}}
	seen := map[string]bool{}
	var errs []error
	for _, ref := range routeBrokers(route) {
		var pc struct {
			ConnectionSet []clientConnection `json:"connectionSet"`
		}
		err := r.c.CallJSON(ctx, ref.addr, remoting.GetProducerConnectionList, map[string]string{"producerGroup": group}, &pc)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, c := range pc.ConnectionSet {
			if !seen[c.ClientID] { // a producer instance has a connection to every broker; list it once
				seen[c.ClientID] = true
				res.Connections = append(res.Connections, c.row())
			}
		}
	}
	return res, errors.Join(errs...)
}

// subGroupString is RocketMQ's SubscriptionGroupConfig.toString.
func subGroupString(g protocol.SubscriptionGroupConfig) string {
	return fmt.Sprintf("SubscriptionGroupConfig [groupName=%s, consumeEnable=%t, consumeFromMinEnable=%t, "+
		"consumeBroadcastEnable=%t, retryQueueNums=%d, retryMaxTimes=%d, brokerId=%d, whichBrokerWhenConsumeSlowly=%d, "+
		"notifyConsumerIdsChangedEnable=%t]",
		g.GroupName, g.ConsumeEnable, g.ConsumeFromMinEnable, g.ConsumeBroadcastEnable, g.RetryQueueNums, g.RetryMaxTimes,
		g.BrokerID, g.WhichBrokerWhenConsumeSlowly, g.NotifyConsumerIdsChangedEnable)
}

type updateSubGroupResult struct {
	Brokers []string                         `json:"brokers"`
	Config  protocol.SubscriptionGroupConfig `json:"subscriptionGroupConfig"`
}

func (r *updateSubGroupResult) writeText(w io.Writer) error {
	t := &textWriter{w: w}
	for _, a := range r.Brokers {
		t.printf("create subscription group to %s success.\n", a)
	}
	t.printf("%s\n", subGroupString(r.Config))
	return t.err
}

func updateSubGroupCmd() *command {
	return &command{name: "updateSubGroup", desc: "Update or create subscription group", setup: func(f *flags) runFunc {
		g := protocol.SubscriptionGroupConfig{ConsumeEnable: true, RetryQueueNums: 1, RetryMaxTimes: 16, WhichBrokerWhenConsumeSlowly: 1,
			NotifyConsumerIdsChangedEnable: true}
		target := chooseBrokers(f, "create subscription group to which broker", "create subscription group to which cluster")
		f.String(&g.GroupName, "g", "groupName", "consumer group name", true)
		f.BoolArg(&g.ConsumeEnable, "s", "consumeEnable", "consume enable")
		f.BoolArg(&g.ConsumeFromMinEnable, "m", "consumeFromMinEnable", "from min offset")
		f.BoolArg(&g.ConsumeBroadcastEnable, "d", "consumeBroadcastEnable", "broadcast")
		f.Int32(&g.RetryQueueNums, "q", "retryQueueNums", "retry queue nums", false)
		f.Int32(&g.RetryMaxTimes, "r", "retryMaxTimes", "retry max times", false)
		f.Int64(&g.BrokerID, "i", "brokerId", "consumer from which broker id", false)
		f.Int64(&g.WhichBrokerWhenConsumeSlowly, "w", "whichBrokerWhenConsumeSlowly", "which broker id when consume slowly", false)
		f.BoolArg(&g.NotifyConsumerIdsChangedEnable, "a", "notifyConsumerIdsChanged", "notify consumerId changed")
		return func(ctx context.Context, r *runner) (result, error) {
			refs, err := target.resolve(ctx, r, true)
			if err != nil {
				return nil, err
			}
			res := &updateSubGroupResult{Config: g}
			res.Brokers, err = r.updateSubGroup(ctx, refs, g)
			return res, err
		}
	}}
}

// updateSubGroup is UPDATE_AND_CREATE_SUBSCRIPTIONGROUP of g on each broker; it returns the addresses that
// took it.
func (r *runner) updateSubGroup(ctx context.Context, refs []brokerRef, g protocol.SubscriptionGroupConfig) ([]string, error) {
	body, err := json.Marshal(g)
	if err != nil {
		return nil, err
	}
	return eachBroker(refs, func(ref brokerRef) error {
		_, err := r.c.Call(ctx, ref.addr, remoting.UpdateAndCreateSubscriptionGroup, nil, body)
		return err
	})
}

type deleteSubGroupResult struct {
	Group         string               `json:"group"`
	Cluster       string               `json:"cluster,omitempty"`
	Brokers       []string             `json:"brokers"`
	DeletedTopics []*deleteTopicResult `json:"deletedTopics,omitempty"`
}

func (r *deleteSubGroupResult) writeText(w io.Writer) error {
	t := &textWriter{w: w}
	for _, a := range r.Brokers {
		if r.Cluster != "" {
			t.printf("delete subscription group [%s] from broker [%s] in cluster [%s] success.\n", r.Group, a, r.Cluster)
		} else {
			t.printf("delete subscription group [%s] from broker [%s] success.\n", r.Group, a)
		}
	}
	for _, d := range r.DeletedTopics {
		if t.err == nil {
			t.err = d.writeText(w)
		}
	}
	return t.err
}

func deleteSubGroupCmd() *command {
	return &command{name: "deleteSubGroup", desc: "Delete subscription group from broker.", setup: func(f *flags) runFunc {
		var group string
		var removeOffset bool
		target := chooseBrokers(f, "delete subscription group from which broker", "delete subscription group from which cluster")
		f.String(&group, "g", "groupName", "subscription group name", true)
		f.BoolArg(&removeOffset, "r", "removeOffset", "remove offset")
		return func(ctx context.Context, r *runner) (result, error) {
			refs, err := target.resolve(ctx, r, true)
			if err != nil {
				return nil, err
			}
			cluster := target.cluster
			res := &deleteSubGroupResult{Group: group, Cluster: cluster}
			res.Brokers, err = r.deleteSubGroup(ctx, refs, group, removeOffset)
			if err != nil || cluster == "" {
				return res, err
			}
			// As RocketMQ's tool: with -c the group's retry and dead-letter topics go too.
			for _, topic := range []string{retryTopicPrefix + group, dlqTopicPrefix + group} {
				d, err := r.deleteTopic(ctx, topic, cluster)
				if err != nil {
					return res, err
				}
				res.DeletedTopics = append(res.DeletedTopics, d)
			}
			return res, nil
		}
	}}
}

// deleteSubGroup is DELETE_SUBSCRIPTIONGROUP of group on each broker, with its offsets when cleanOffset; it
// returns the addresses that deleted it.
func (r *runner) deleteSubGroup(ctx context.Context, refs []brokerRef, group string, cleanOffset bool) ([]string, error) {
	ext := map[string]string{"groupName": group, "cleanOffset": fmt.Sprint(cleanOffset)}
	return eachBroker(refs, func(ref brokerRef) error {
		_, err := r.c.Call(ctx, ref.addr, remoting.DeleteSubscriptionGroup, ext, nil)
		return err
	})
}
