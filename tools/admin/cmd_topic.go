package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/rocketraft/rocketraft/protocol"
	"github.com/rocketraft/rocketraft/remoting"
)

// Topic system flags (TopicSysFlag.java). Wire format: never change.
const (
	topicFlagUnit    = 0x1
	topicFlagUnitSub = 0x2
)

// Retry and dead-letter topic prefixes (MixAll.java).
const (
	retryTopicPrefix = protocol.RetryGroupTopicPrefix
	dlqTopicPrefix   = protocol.DLQGroupTopicPrefix
)

// orderTopicNamespace is the name server KV namespace of ordered topics' queue layout.
const orderTopicNamespace = "ORDER_TOPIC_CONFIG"

// topicConfigText is RocketMQ's TopicConfig.toString, as updateTopic prints it.
func topicConfigText(t *protocol.TopicConfig) string {
	return fmt.Sprintf("TopicConfig [topicName=%s, readQueueNums=%d, writeQueueNums=%d, perm=%s, topicFilterType=SINGLE_TAG, topicSysFlag=%d, order=%t]",
		t.TopicName, t.ReadQueueNums, t.WriteQueueNums, permString(int(t.Perm)), t.TopicSysFlag, t.Order)
}

// permString is PermName.perm2String: R, W and X (inherit) or -.
func permString(perm int) string {
	b := []byte("---")
	if perm&protocol.PermRead != 0 {
		b[0] = 'R'
	}
	if perm&protocol.PermWrite != 0 {
		b[1] = 'W'
	}
	if perm&protocol.PermInherit != 0 {
		b[2] = 'X'
	}
	return string(b)
}

type updateTopicResult struct {
	Brokers     []string             `json:"brokers"`
	TopicConfig protocol.TopicConfig `json:"topicConfig"`
	OrderConf   string               `json:"orderConf,omitempty"`
}

func (r *updateTopicResult) writeText(w io.Writer) error {
	t := &textWriter{w: w}
	for _, a := range r.Brokers {
		t.printf("create topic to %s success.\n", a)
	}
	if r.OrderConf != "" {
		t.printf("set orderConf. isOrder=true, orderConf=[%s]\n", r.OrderConf)
	}
	t.printf("%s\n", topicConfigText(&r.TopicConfig))
	return t.err
}

func updateTopicCmd() *command {
	return &command{name: "updateTopic", desc: "Update or create topic", setup: func(f *flags) runFunc {
		tc := protocol.TopicConfig{ReadQueueNums: 8, WriteQueueNums: 8, Perm: protocol.PermRead | protocol.PermWrite,
			TopicFilterType: "SINGLE_TAG"}
		var unit, unitSub bool
		var attrs string
		target := chooseBrokers(f, "create topic to which broker", "create topic to which cluster")
		f.String(&attrs, "a", "attributes", "attribute(+a=b,+c=d,-e): message.type, queue.type, cleanup.policy", false)
		f.String(&tc.TopicName, "t", "topic", "topic name", true)
		f.Int32(&tc.ReadQueueNums, "r", "readQueueNums", "set read queue nums", false)
		f.Int32(&tc.WriteQueueNums, "w", "writeQueueNums", "set write queue nums", false)
		f.Int32(&tc.Perm, "p", "perm", "set topic's permission(2|4|6), intro[2:W 4:R; 6:RW]", false)
		f.BoolArg(&tc.Order, "o", "order", "set topic's order")
		f.BoolArg(&unit, "u", "unit", "is unit topic")
		f.BoolArg(&unitSub, "s", "hasUnitSub", "has unit sub")
		return func(ctx context.Context, r *runner) (result, error) {
			refs, err := target.resolve(ctx, r, true)
			if err != nil {
				return nil, err
			}
			if unit {
				tc.TopicSysFlag |= topicFlagUnit
			}
			if unitSub {
				tc.TopicSysFlag |= topicFlagUnitSub
			}
			return r.updateTopic(ctx, refs, tc, attrs)
		}
	}}
}

// updateTopic creates or updates topic tc on every broker of refs (UPDATE_AND_CREATE_TOPIC), going on after
// a failure, then records an ordered topic's layout at the name servers.
func (r *runner) updateTopic(ctx context.Context, refs []brokerRef, tc protocol.TopicConfig, attrs string) (*updateTopicResult, error) {
	res := &updateTopicResult{TopicConfig: tc}
	ptc := &tc
	var err error
	res.Brokers, err = eachBroker(refs, func(ref brokerRef) error { return r.c.CreateTopicAttributes(ctx, ref.addr, ptc, attrs) })
	if err == nil && tc.Order {
		res.OrderConf, err = r.setOrderConf(ctx, refs, tc)
	}
	return res, err
}

// setOrderConf records an ordered topic's "brokerName:queues;..." layout in the name servers' KV config, as
// RocketMQ's tool does.
func (r *runner) setOrderConf(ctx context.Context, refs []brokerRef, tc protocol.TopicConfig) (string, error) {
	ci, err := r.c.ClusterInfo(ctx)
	if err != nil {
		return "", err
	}
	var parts []string
	for _, ref := range refs {
		name := ref.name
		if name == "" {
			var ok bool
			if name, ok = brokerNameOf(ci, ref.addr); !ok {
				return "", fmt.Errorf("order conf: no broker is registered at %s", ref.addr)
			}
		}
		parts = append(parts, fmt.Sprintf("%s:%d", name, tc.WriteQueueNums))
	}
	conf := strings.Join(parts, ";")
	err = r.c.EachNamesrv(ctx, remoting.PutKVConfig, map[string]string{"namespace": orderTopicNamespace,
		"key": tc.TopicName, "value": conf})
	return conf, err
}

type deleteTopicResult struct {
	Topic   string   `json:"topic"`
	Cluster string   `json:"cluster"`
	Brokers []string `json:"brokers"`
}

func (r *deleteTopicResult) writeText(w io.Writer) error {
	t := &textWriter{w: w}
	t.printf("delete topic [%s] from cluster [%s] success.\n", r.Topic, r.Cluster)
	t.printf("delete topic [%s] from NameServer success.\n", r.Topic)
	return t.err
}

func deleteTopicCmd() *command {
	return &command{name: "deleteTopic", desc: "Delete topic from broker and NameServer.", setup: func(f *flags) runFunc {
		var topic, cluster string
		f.String(&topic, "t", "topic", "topic name", true)
		f.String(&cluster, "c", "clusterName", "delete topic from which cluster", true)
		return func(ctx context.Context, r *runner) (result, error) {
			res, err := r.deleteTopic(ctx, topic, cluster)
			if err != nil {
				return nil, err
			}
			return res, nil
		}
	}}
}

// deleteTopic deletes topic from every broker of cluster (masters and slaves), then from every name server.
func (r *runner) deleteTopic(ctx context.Context, topic, cluster string) (*deleteTopicResult, error) {
	refs, err := r.targets(ctx, "", cluster, false)
	if err != nil {
		return nil, err
	}
	res := &deleteTopicResult{Topic: topic, Cluster: cluster}
	for _, ref := range refs {
		if err := r.c.DeleteTopic(ctx, ref.addr, topic); err != nil {
			return nil, err
		}
		res.Brokers = append(res.Brokers, ref.addr)
	}
	if err := r.c.DeleteTopicInNamesrvs(ctx, topic, cluster); err != nil {
		return nil, err
	}
	return res, nil
}

type topicListRow struct {
	Cluster string `json:"cluster"`
	Topic   string `json:"topic"`
	Group   string `json:"consumerGroup"`
}

type topicListResult struct {
	Topics []string       `json:"topics,omitempty"`
	Rows   []topicListRow `json:"rows,omitempty"`
}

func (r *topicListResult) writeText(w io.Writer) error {
	if r.Rows == nil {
		t := &textWriter{w: w}
		for _, topic := range r.Topics {
			t.printf("%s\n", topic)
		}
		return t.err
	}
	tb := newTable("#Cluster Name", "#Topic", "#Consumer Group")
	for _, row := range r.Rows {
		tb.add(row.Cluster, row.Topic, row.Group)
	}
	return tb.write(w)
}

func topicListCmd() *command {
	return &command{name: "topicList", desc: "Fetch all topic list from name server", setup: func(f *flags) runFunc {
		var clusterModel bool
		f.Switch(&clusterModel, "c", "clusterModel", "print the cluster and the consumer groups of each topic")
		return func(ctx context.Context, r *runner) (result, error) {
			topics, err := r.c.TopicList(ctx)
			if err != nil {
				return nil, err
			}
			sort.Strings(topics)
			if !clusterModel {
				return &topicListResult{Topics: topics}, nil
			}
			res := &topicListResult{Rows: []topicListRow{}}
			for _, topic := range topics {
				if strings.HasPrefix(topic, retryTopicPrefix) || strings.HasPrefix(topic, dlqTopicPrefix) {
					continue
				}
				cluster, groups := r.topicOwners(ctx, topic)
				if len(groups) == 0 {
					groups = []string{""}
				}
				for _, g := range groups {
					res.Rows = append(res.Rows, topicListRow{Cluster: cluster, Topic: topic, Group: g})
				}
			}
			return res, nil
		}
	}}
}

// topicOwners is the cluster of a topic's first broker and the groups that consume it (QUERY_TOPIC_CONSUME_BY_WHO);
// what cannot be found stays empty, as in RocketMQ's tool.
func (r *runner) topicOwners(ctx context.Context, topic string) (string, []string) {
	route, err := r.c.Route(ctx, topic)
	if err != nil {
		return "", nil
	}
	refs := routeBrokers(route)
	if len(refs) == 0 {
		return "", nil
	}
	groups, _ := r.consumersOf(ctx, refs[0].addr, topic)
	return refs[0].cluster, groups
}

// consumersOf is QUERY_TOPIC_CONSUME_BY_WHO at one broker.
func (r *runner) consumersOf(ctx context.Context, addr, topic string) ([]string, error) {
	var gl struct {
		GroupList []string `json:"groupList"`
	}
	err := r.c.CallJSON(ctx, addr, remoting.QueryTopicConsumeByWho, map[string]string{"topic": topic}, &gl)
	sort.Strings(gl.GroupList)
	return gl.GroupList, err
}

// topicRouteResult is the route as the name server gave it, printed as JSON (RocketMQ's default) or, with
// -l, as a table.
type topicRouteResult struct {
	route *protocol.TopicRouteData
	list  bool
}

func (r *topicRouteResult) MarshalJSON() ([]byte, error) { return json.Marshal(r.route) }

func (r *topicRouteResult) writeText(w io.Writer) error {
	if !r.list {
		b, err := json.MarshalIndent(r.route, "", "\t")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	}
	queues := map[string]protocol.QueueData{}
	for _, q := range r.route.QueueDatas {
		queues[q.BrokerName] = q
	}
	bds := append([]protocol.BrokerData(nil), r.route.BrokerDatas...)
	sort.Slice(bds, func(i, j int) bool { return bds[i].BrokerName < bds[j].BrokerName })
	tb := newTable("#ClusterName", "#BrokerName", "#BrokerAddrs", "#ReadQueue", "#WriteQueue", "#Perm")
	var read, write int32
	for _, bd := range bds {
		q := queues[bd.BrokerName]
		read += q.ReadQueueNums
		write += q.WriteQueueNums
		tb.add(bd.Cluster, bd.BrokerName, brokerAddrsText(bd.BrokerAddrs), q.ReadQueueNums, q.WriteQueueNums, q.Perm)
	}
	tb.add("Total:", len(queues), "", read, write, "")
	return tb.write(w)
}

// brokerAddrsText is Java's map toString: {0=host:port, 1=host:port}.
func brokerAddrsText(addrs map[int64]string) string {
	ids := make([]int64, 0, len(addrs))
	for id := range addrs {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = fmt.Sprintf("%d=%s", id, addrs[id])
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

func topicRouteCmd() *command {
	return &command{name: "topicRoute", desc: "Examine topic route info", setup: func(f *flags) runFunc {
		var topic string
		var list bool
		f.String(&topic, "t", "topic", "topic name", true)
		f.Switch(&list, "l", "list", "Use list format to print data")
		return func(ctx context.Context, r *runner) (result, error) {
			route, err := r.c.Route(ctx, topic)
			if err != nil {
				return nil, err
			}
			return &topicRouteResult{route: route, list: list}, nil
		}
	}}
}

type topicStatusRow struct {
	BrokerName          string `json:"brokerName"`
	QueueID             int32  `json:"queueId"`
	MinOffset           int64  `json:"minOffset"`
	MaxOffset           int64  `json:"maxOffset"`
	LastUpdateTimestamp int64  `json:"lastUpdateTimestamp"`
}

type topicStatusResult struct {
	Topic  string           `json:"topic"`
	Queues []topicStatusRow `json:"queues"`
}

func (r *topicStatusResult) writeText(w io.Writer) error {
	tb := newTable("#Broker Name", "#QID", "#Min Offset", "#Max Offset", "#Last Updated")
	for _, q := range r.Queues {
		tb.add(q.BrokerName, q.QueueID, q.MinOffset, q.MaxOffset, humanTime(q.LastUpdateTimestamp))
	}
	return tb.write(w)
}

func topicStatusCmd() *command {
	return &command{name: "topicStatus", desc: "Examine topic Status info", setup: func(f *flags) runFunc {
		var topic, cluster string
		f.String(&topic, "t", "topic", "topic name", true)
		f.String(&cluster, "c", "cluster", "cluster name: ask its masters instead of the topic's route", false)
		return func(ctx context.Context, r *runner) (result, error) {
			refs, err := r.topicBrokers(ctx, topic, cluster)
			if err != nil {
				return nil, err
			}
			res, err := r.topicStatus(ctx, refs, topic)
			if err != nil {
				return nil, err
			}
			if len(res.Queues) == 0 {
				return nil, fmt.Errorf("topic %s: no broker has stats of it", topic)
			}
			return res, nil
		}
	}}
}

// topicStatus is the min and max offsets of every queue of topic, from each broker of refs
// (GET_TOPIC_STATS_INFO).
func (r *runner) topicStatus(ctx context.Context, refs []brokerRef, topic string) (*topicStatusResult, error) {
	res := &topicStatusResult{Topic: topic, Queues: []topicStatusRow{}}
	for _, ref := range refs {
		stats, err := r.topicStats(ctx, ref.addr, topic)
		if err != nil {
			return nil, err
		}
		for _, e := range stats {
			res.Queues = append(res.Queues, topicStatusRow{BrokerName: e.MQ.BrokerName, QueueID: e.MQ.QueueID,
				MinOffset: e.Value.MinOffset, MaxOffset: e.Value.MaxOffset, LastUpdateTimestamp: e.Value.LastUpdateTimestamp})
		}
	}
	return res, nil
}

// topicStats is GET_TOPIC_STATS_INFO at one broker.
func (r *runner) topicStats(ctx context.Context, addr, topic string) (protocol.QueueTable[protocol.TopicOffset], error) {
	resp, err := r.c.Call(ctx, addr, remoting.GetTopicStatsInfo, map[string]string{"topic": topic}, nil)
	if err != nil {
		return nil, err
	}
	var body struct {
		OffsetTable protocol.QueueTable[protocol.TopicOffset] `json:"offsetTable"`
	}
	if err := protocol.UnmarshalFastJSON(resp.Body, &body); err != nil {
		return nil, fmt.Errorf("topic stats from %s: %w", addr, err)
	}
	return body.OffsetTable, nil
}
