package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"

	"github.com/rocketraft/rocketraft/client"
	"github.com/rocketraft/rocketraft/protocol"
	"github.com/rocketraft/rocketraft/remoting"
)

// consumerStatus, skipAccumulatedMessage, cloneGroupOffset and getConsumerConfig (RocketMQ's consumer and
// offset commands).

// runningInfo is the part of a ConsumerRunningInfo (GET_CONSUMER_RUNNING_INFO's body, fastjson) consumerStatus
// shows.
type runningInfo struct {
	Properties      map[string]string `json:"properties"`
	SubscriptionSet []struct {
		Topic     string `json:"topic"`
		SubString string `json:"subString"`
	} `json:"subscriptionSet"`
	MQTable protocol.QueueTable[json.RawMessage] `json:"mqTable"`
	Jstack  string                               `json:"jstack,omitempty"`
}

// consumerRunningInfo asks client clientID of group, through the broker at addr, for its running info.
func (r *runner) consumerRunningInfo(ctx context.Context, addr, group, clientID string, jstack bool) (*runningInfo, error) {
	resp, err := r.c.Call(ctx, addr, remoting.GetConsumerRunningInfo,
		map[string]string{"consumerGroup": group, "clientId": clientID, "jstackEnable": strconv.FormatBool(jstack)}, nil)
	if err != nil {
		return nil, err
	}
	var info runningInfo
	if len(resp.Body) == 0 {
		return nil, fmt.Errorf("client %s answered GET_CONSUMER_RUNNING_INFO without a body", clientID)
	}
	if err := protocol.UnmarshalFastJSON(resp.Body, &info); err != nil {
		return nil, fmt.Errorf("running info of %s: %w", clientID, err)
	}
	return &info, nil
}

type consumerStatusRow struct {
	ClientID      string                  `json:"clientId"`
	Version       string                  `json:"version"`
	Subscriptions []string                `json:"subscriptions"` // topic=expression
	Queues        []protocol.MessageQueue `json:"queues"`
	Failed        string                  `json:"error,omitempty"`
}

type consumerStatusResult struct {
	Group       string              `json:"group"`
	Clients     []consumerStatusRow `json:"clients"`
	SameSub     bool                `json:"sameSubscription"`
	RebalanceOK bool                `json:"rebalanceOK"`
	one         *runningInfo        // -i: the one client's full report
}

func (r *consumerStatusResult) writeText(w io.Writer) error {
	t := &textWriter{w: w}
	if r.one != nil {
		t.printf("#Consumer Properties#\n")
		for _, k := range sortedKeys(r.one.Properties) {
			t.printf("%-40s: %s\n", k, r.one.Properties[k])
		}
		t.printf("\n\n#Consumer Subscription#\n")
		for i, s := range r.one.SubscriptionSet {
			t.printf("%03d Topic: %-40s SubExpression: %s\n", i+1, s.Topic, s.SubString)
		}
		t.printf("\n\n#Consumer Offset#\n")
		tb := newTable("#Topic", "#Broker Name", "#QID", "#Consumer Offset")
		for _, e := range r.one.MQTable {
			var pq struct {
				CommitOffset int64 `json:"commitOffset"`
			}
			_ = json.Unmarshal(e.Value, &pq)
			tb.add(e.MQ.Topic, e.MQ.BrokerName, e.MQ.QueueID, pq.CommitOffset)
		}
		t.table(tb)
		if r.one.Jstack != "" {
			t.printf("\n\n#Consumer jstack#\n%s\n", r.one.Jstack)
		}
		return t.err
	}
	tb := newTable("#Index", "#ClientId", "#Version", "#Queues")
	for i, c := range r.Clients {
		queues := strconv.Itoa(len(c.Queues))
		if c.Failed != "" {
			queues = "no answer: " + c.Failed
		}
		tb.add(i+1, c.ClientID, c.Version, queues)
	}
	t.table(tb)
	if len(r.Clients) == 0 {
		return t.err
	}
	if r.SameSub {
		t.printf("\n\nSame subscription in the same group of consumer")
		t.printf("\n\nRebalance %s\n", map[bool]string{true: "OK", false: "Failed"}[r.RebalanceOK])
	} else {
		t.printf("\n\nWARN: Different subscription in the same group of consumer!!!\n")
	}
	return t.err
}

func consumerStatusCmd() *command {
	return &command{name: "consumerStatus", desc: "Query consumer's internal data structure.", setup: func(f *flags) runFunc {
		var group, clientID, addr string
		var jstack bool
		f.String(&group, "g", "consumerGroup", "consumer group name", true)
		f.String(&clientID, "i", "clientId", "The consumer's client id", false)
		f.String(&addr, "b", "brokerAddr", "broker address", false)
		f.Switch(&jstack, "s", "jstack", "Run jstack command in the consumer progress")
		return func(ctx context.Context, r *runner) (result, error) {
			cc, err := r.consumerConnection(ctx, group, addr)
			if err != nil {
				return nil, err
			}
			if addr == "" {
				refs, err := r.groupBrokers(ctx, group)
				if err != nil || len(refs) == 0 {
					return nil, fmt.Errorf("consumer group %s: no broker to ask: %v", group, err)
				}
				addr = refs[0].addr
			}
			res := &consumerStatusResult{Group: group, Clients: []consumerStatusRow{}}
			if clientID != "" {
				info, err := r.consumerRunningInfo(ctx, addr, group, clientID, jstack)
				if err != nil {
					return nil, err
				}
				res.one = info
				res.Clients = append(res.Clients, statusRow(clientID, "", info))
				return res, nil
			}
			conns := append([]clientConnection(nil), cc.ConnectionSet...)
			sort.Slice(conns, func(i, j int) bool { return conns[i].ClientID < conns[j].ClientID })
			var errs []error
			for _, c := range conns {
				info, err := r.consumerRunningInfo(ctx, addr, group, c.ClientID, jstack)
				row := statusRow(c.ClientID, versionDesc(c.Version), info)
				if err != nil {
					row.Failed = err.Error()
					errs = append(errs, err)
				}
				res.Clients = append(res.Clients, row)
			}
			res.SameSub, res.RebalanceOK = analyzeClients(res.Clients)
			return res, errors.Join(errs...)
		}
	}}
}

func statusRow(clientID, version string, info *runningInfo) consumerStatusRow {
	row := consumerStatusRow{ClientID: clientID, Version: version, Subscriptions: []string{}, Queues: []protocol.MessageQueue{}}
	if info == nil {
		return row
	}
	for _, s := range info.SubscriptionSet {
		row.Subscriptions = append(row.Subscriptions, s.Topic+"="+s.SubString)
	}
	sort.Strings(row.Subscriptions)
	for _, e := range info.MQTable {
		row.Queues = append(row.Queues, e.MQ)
	}
	return row
}

// analyzeClients is RocketMQ's ConsumerRunningInfo.analyzeSubscription and analyzeRebalance for the clients
// that answered: the same subscriptions everywhere, and no queue held by two clients.
func analyzeClients(rows []consumerStatusRow) (sameSub, rebalanceOK bool) {
	sameSub, rebalanceOK = true, true
	var first []string
	held := map[protocol.MessageQueue]bool{}
	seen := false
	for _, c := range rows {
		if c.Failed != "" {
			continue
		}
		if !seen {
			first, seen = c.Subscriptions, true
		} else if fmt.Sprint(first) != fmt.Sprint(c.Subscriptions) {
			sameSub = false
		}
		for _, q := range c.Queues {
			if held[q] {
				rebalanceOK = false
			}
			held[q] = true
		}
	}
	return sameSub, sameSub && rebalanceOK
}

type skipResult struct {
	Queues []resetRow `json:"queues"`
}

func (r *skipResult) writeText(w io.Writer) error {
	tb := newTable("#brokerName", "#queueId", "#offset")
	for _, q := range r.Queues {
		tb.add(q.BrokerName, q.QueueID, q.Offset)
	}
	return tb.write(w)
}

func skipAccumulatedMessageCmd() *command {
	return &command{name: "skipAccumulatedMessage", desc: "Skip all messages that are accumulated (not consumed) currently.",
		setup: func(f *flags) runFunc {
			var group, topic string
			force := true
			f.String(&group, "g", "group", "set the consumer group", true)
			f.String(&topic, "t", "topic", "set the topic", true)
			f.BoolArg(&force, "f", "force", "set the force rollback by timestamp switch")
			return func(ctx context.Context, r *runner) (result, error) {
				res, err := r.resetOffset(ctx, group, topic, "", "-1", -1, force)
				if res == nil {
					return nil, err
				}
				return &skipResult{Queues: res.Queues}, err
			}
		}}
}

type cloneResult struct {
	SrcGroup  string     `json:"srcGroup"`
	DestGroup string     `json:"destGroup"`
	Topic     string     `json:"topic"`
	Queues    []resetRow `json:"queues"`
}

func (r *cloneResult) writeText(w io.Writer) error {
	_, err := fmt.Fprintf(w, "clone group offset success. srcGroup[%s], destGroup=[%s], topic[%s]\n", r.SrcGroup, r.DestGroup, r.Topic)
	return err
}

func cloneGroupOffsetCmd() *command {
	return &command{name: "cloneGroupOffset", desc: "Clone offset from other group.", setup: func(f *flags) runFunc {
		var src, dest, topic string
		var offline bool
		f.String(&src, "s", "srcGroup", "set source consumer group", true)
		f.String(&dest, "d", "destGroup", "set destination consumer group", true)
		f.String(&topic, "t", "topic", "set the topic", true)
		f.BoolArg(&offline, "o", "offline", "the group or the topic is offline (accepted; as in RocketMQ it changes nothing)")
		return func(ctx context.Context, r *runner) (result, error) {
			cs, err := r.consumeStats(ctx, src)
			if err != nil {
				return nil, err
			}
			route, err := r.c.Route(ctx, topic)
			if err != nil {
				return nil, err
			}
			res := &cloneResult{SrcGroup: src, DestGroup: dest, Topic: topic, Queues: []resetRow{}}
			var errs []error
			for _, e := range cs.OffsetTable {
				// RocketMQ's tool copies every queue of the source group, looking up the broker in -t's route;
				// here only -t's queues are copied.
				if e.MQ.Topic != topic || e.Value.ConsumerOffset < 0 {
					continue
				}
				q := client.Queue{MessageQueue: e.MQ}
				for _, bd := range route.BrokerDatas {
					if bd.BrokerName == e.MQ.BrokerName {
						q.Addr = bd.BrokerAddrs[protocol.MasterID]
					}
				}
				if q.Addr == "" {
					errs = append(errs, fmt.Errorf("queue %s: its broker has no master in the route", client.MQString(e.MQ)))
					continue
				}
				if err := r.c.UpdateConsumerOffset(ctx, dest, q, e.Value.ConsumerOffset); err != nil {
					errs = append(errs, err)
					continue
				}
				res.Queues = append(res.Queues, resetRow{BrokerName: e.MQ.BrokerName, QueueID: e.MQ.QueueID, Offset: e.Value.ConsumerOffset})
			}
			if len(res.Queues) == 0 && len(errs) == 0 {
				return nil, fmt.Errorf("consumer group %s has no offset on topic %s to clone", src, topic)
			}
			return res, errors.Join(errs...)
		}
	}}
}

type consumerConfigRow struct {
	Cluster    string                           `json:"clusterName"`
	BrokerName string                           `json:"brokerName"`
	Config     protocol.SubscriptionGroupConfig `json:"subscriptionGroupConfig"`
}

type consumerConfigResult struct {
	Rows []consumerConfigRow `json:"brokers"`
}

func (r *consumerConfigResult) writeText(w io.Writer) error {
	t := &textWriter{w: w}
	for _, x := range r.Rows {
		c := x.Config
		t.printf("=============================%s:%s=============================\n", x.Cluster, x.BrokerName)
		for _, kv := range [][2]any{{"groupName", c.GroupName}, {"consumeEnable", c.ConsumeEnable},
			{"consumeFromMinEnable", c.ConsumeFromMinEnable}, {"consumeBroadcastEnable", c.ConsumeBroadcastEnable},
			{"retryQueueNums", c.RetryQueueNums}, {"retryMaxTimes", c.RetryMaxTimes}, {"brokerId", c.BrokerID},
			{"whichBrokerWhenConsumeSlowly", c.WhichBrokerWhenConsumeSlowly},
			{"notifyConsumerIdsChangedEnable", c.NotifyConsumerIdsChangedEnable}} {
			t.printf("%-40s=  %v\n", kv[0], kv[1])
		}
	}
	return t.err
}

func getConsumerConfigCmd() *command {
	return &command{name: "getConsumerConfig", desc: "Get consumer config by subscription group name.", setup: func(f *flags) runFunc {
		var group string
		f.String(&group, "g", "groupName", "subscription group name", true)
		return func(ctx context.Context, r *runner) (result, error) {
			ci, err := r.c.ClusterInfo(ctx)
			if err != nil {
				return nil, err
			}
			refs, _ := brokers(ci, "", true)
			res := &consumerConfigResult{Rows: []consumerConfigRow{}}
			var errs []error
			for _, ref := range refs {
				groups, err := r.c.SubscriptionGroups(ctx, ref.addr)
				if err != nil {
					errs = append(errs, err)
					continue
				}
				if g := groups[group]; g != nil {
					res.Rows = append(res.Rows, consumerConfigRow{Cluster: ref.cluster, BrokerName: ref.name, Config: *g})
				}
			}
			if len(res.Rows) == 0 && len(errs) == 0 {
				return nil, fmt.Errorf("no broker has subscription group %s", group)
			}
			return res, errors.Join(errs...)
		}
	}}
}
