package admin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/rocketraft/rocketraft/client"
	"github.com/rocketraft/rocketraft/protocol"
)

// statsAll, brokerConsumeStats, sendMsgStatus and clusterRT (RocketMQ's stats, broker and cluster commands).

// The broker stats items statsAll reads (BrokerStatsManager's names).
const (
	statsTopicPutNums = "TOPIC_PUT_NUMS" // key topic
	statsGroupGetNums = "GROUP_GET_NUMS" // key topic@group
)

type statsAllRow struct {
	Topic        string  `json:"topic"`
	Group        string  `json:"consumerGroup"` // "" when nobody consumes the topic
	Accumulation int64   `json:"accumulation"`
	InTPS        float64 `json:"inTps"`
	OutTPS       float64 `json:"outTps"`
	InMsg24Hour  int64   `json:"inMsg24Hour"`
	OutMsg24Hour int64   `json:"outMsg24Hour"`
}

type statsAllResult struct {
	Rows []statsAllRow `json:"rows"`
}

func (r *statsAllResult) writeText(w io.Writer) error {
	tb := newTable("#Topic", "#Consumer Group", "#Accumulation", "#InTPS", "#OutTPS", "#InMsg24Hour", "#OutMsg24Hour")
	for _, x := range r.Rows {
		if x.Group == "" {
			tb.add(x.Topic, "", 0, fmt.Sprintf("%.2f", x.InTPS), "", x.InMsg24Hour, "NO_CONSUMER")
			continue
		}
		tb.add(x.Topic, x.Group, x.Accumulation, fmt.Sprintf("%.2f", x.InTPS), fmt.Sprintf("%.2f", x.OutTPS),
			x.InMsg24Hour, x.OutMsg24Hour)
	}
	return tb.write(w)
}

// sum24h is RocketMQ's compute24HourSum: the day window's sum, else the hour's.
func sum24h(d *protocol.BrokerStatsData) int64 {
	if d.StatsDay.Sum != 0 {
		return d.StatsDay.Sum
	}
	return d.StatsHour.Sum
}

func statsAllCmd() *command {
	return &command{name: "statsAll", desc: "Topic and Consumer tps stats.", setup: func(f *flags) runFunc {
		var active bool
		var only string
		f.Switch(&active, "a", "activeTopic", "print active topic only")
		f.String(&only, "t", "topic", "print select topic only", false)
		return func(ctx context.Context, r *runner) (result, error) {
			topics, err := r.c.TopicList(ctx)
			if err != nil {
				return nil, err
			}
			res := &statsAllResult{Rows: []statsAllRow{}}
			var errs []error
			for _, topic := range sortedStrings(topics) {
				if strings.HasPrefix(topic, retryTopicPrefix) || strings.HasPrefix(topic, dlqTopicPrefix) ||
					(only != "" && topic != only) {
					continue
				}
				rows, err := r.topicStatsRows(ctx, topic, active)
				if err != nil {
					errs = append(errs, err)
				}
				res.Rows = append(res.Rows, rows...)
			}
			return res, errors.Join(errs...)
		}
	}}
}

// topicStatsRows is statsAll's rows of one topic: its put TPS and day count summed over its masters, and per group
// consuming it the get TPS, day count and accumulation. A stats item a broker has not seen counts 0, as in
// RocketMQ's tool; a topic without route is an error.
func (r *runner) topicStatsRows(ctx context.Context, topic string, active bool) ([]statsAllRow, error) {
	route, err := r.c.Route(ctx, topic)
	if err != nil {
		return nil, err
	}
	var masters []string
	for _, bd := range route.BrokerDatas {
		if a := bd.BrokerAddrs[protocol.MasterID]; a != "" {
			masters = append(masters, a)
		}
	}
	base := statsAllRow{Topic: topic}
	for _, a := range masters {
		if d, err := r.c.BrokerStats(ctx, a, statsTopicPutNums, topic); err == nil {
			base.InTPS += d.StatsMinute.Tps
			base.InMsg24Hour += sum24h(d)
		}
	}
	var groups []string
	if len(masters) > 0 {
		groups, _ = r.consumersOf(ctx, masters[0], topic)
	}
	if len(groups) == 0 {
		if active && base.InMsg24Hour == 0 {
			return nil, nil
		}
		return []statsAllRow{base}, nil
	}
	var rows []statsAllRow
	for _, g := range groups {
		row := base
		row.Group = g
		for _, a := range masters {
			if d, err := r.c.BrokerStats(ctx, a, statsGroupGetNums, topic+"@"+g); err == nil {
				row.OutTPS += d.StatsMinute.Tps
				row.OutMsg24Hour += sum24h(d)
			}
			if cs, err := r.c.ConsumeStats(ctx, a, g, topic); err == nil {
				for _, e := range cs.OffsetTable {
					row.Accumulation += e.Value.BrokerOffset - e.Value.ConsumerOffset
				}
			}
		}
		row.Accumulation = max(row.Accumulation, 0)
		if !active || row.InMsg24Hour > 0 || row.OutMsg24Hour > 0 {
			rows = append(rows, row)
		}
	}
	return rows, nil
}

func sortedStrings(in []string) []string {
	m := make(map[string]struct{}, len(in))
	for _, s := range in {
		m[s] = struct{}{}
	}
	return sortedKeys(m)
}

type brokerConsumeRow struct {
	Topic          string `json:"topic"`
	Group          string `json:"group"`
	BrokerName     string `json:"brokerName"`
	QueueID        int32  `json:"queueId"`
	BrokerOffset   int64  `json:"brokerOffset"`
	ConsumerOffset int64  `json:"consumerOffset"`
	Diff           int64  `json:"diff"`
	LastTime       int64  `json:"lastTimestamp"`
}

type brokerConsumeStatsResult struct {
	Rows      []brokerConsumeRow `json:"rows"`
	TotalDiff int64              `json:"totalDiff"`
}

func (r *brokerConsumeStatsResult) writeText(w io.Writer) error {
	tb := newTable("#Topic", "#Group", "#Broker Name", "#QID", "#Broker Offset", "#Consumer Offset", "#Diff", "#LastTime")
	for _, x := range r.Rows {
		tb.add(x.Topic, x.Group, x.BrokerName, x.QueueID, x.BrokerOffset, x.ConsumerOffset, x.Diff, dateTime(x.LastTime))
	}
	t := &textWriter{w: w}
	t.table(tb)
	t.printf("\nDiff Total: %d\n", r.TotalDiff)
	return t.err
}

func brokerConsumeStatsCmd() *command {
	return &command{name: "brokerConsumeStats", desc: "Fetch broker consume stats data.", setup: func(f *flags) runFunc {
		var addr string
		var timeoutMillis, level int64
		var order bool
		f.String(&addr, "b", "brokerAddr", "Broker address", true)
		f.Int64(&timeoutMillis, "t", "timeoutMillis", "request timeout Millis (default: --timeout)", false)
		f.Int64(&level, "l", "level", "threshold of print diff", false)
		f.BoolArg(&order, "o", "order", "order topic")
		return func(ctx context.Context, r *runner) (result, error) {
			if timeoutMillis > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, time.Duration(timeoutMillis)*time.Millisecond)
				defer cancel()
			}
			list, err := r.c.BrokerConsumeStats(ctx, addr, order)
			if err != nil {
				return nil, err
			}
			res := &brokerConsumeStatsResult{Rows: []brokerConsumeRow{}, TotalDiff: list.TotalDiff}
			for _, byGroup := range list.ConsumeStatsList {
				for _, g := range sortedKeys(byGroup) {
					for _, cs := range byGroup[g] {
						for _, e := range cs.OffsetTable {
							diff := e.Value.BrokerOffset - e.Value.ConsumerOffset
							// As RocketMQ's tool: queues below the level, and queues nothing was consumed from yet, are left out.
							if diff < level || e.Value.LastTimestamp <= 0 {
								continue
							}
							res.Rows = append(res.Rows, brokerConsumeRow{Topic: e.MQ.Topic, Group: g, BrokerName: e.MQ.BrokerName,
								QueueID: e.MQ.QueueID, BrokerOffset: e.Value.BrokerOffset, ConsumerOffset: e.Value.ConsumerOffset,
								Diff: diff, LastTime: e.Value.LastTimestamp})
						}
					}
				}
			}
			return res, nil
		}
	}}
}

// sendResultString is RocketMQ's SendResult.toString.
func sendResultString(s *client.SendResult, topic string) string {
	return fmt.Sprintf("SendResult [sendStatus=%s, msgId=%s, offsetMsgId=%s, messageQueue=MessageQueue [topic=%s, brokerName=%s, queueId=%d], queueOffset=%d]",
		s.SendStatus, s.MsgID, s.OffsetMsgID, topic, s.BrokerName, s.QueueID, s.QueueOffset)
}

type sendStatusRow struct {
	RTMillis int64             `json:"rtMillis"`
	Result   client.SendResult `json:"sendResult"`
}

type sendMsgStatusResult struct {
	Topic string          `json:"topic"`
	Sends []sendStatusRow `json:"sends"`
}

func (r *sendMsgStatusResult) writeText(w io.Writer) error {
	t := &textWriter{w: w}
	for _, s := range r.Sends {
		t.printf("rt=%dms, SendResult=%s\n", s.RTMillis, sendResultString(&s.Result, r.Topic))
	}
	return t.err
}

// brokerTopicQueues are the writable queues of the topic named after a broker (every broker has one, as
// RocketMQ's), which reach that broker only.
func (r *runner) brokerTopicQueues(ctx context.Context, brokerName string) ([]client.Queue, error) {
	route, err := r.c.Route(ctx, brokerName)
	if err != nil {
		return nil, err
	}
	qs := client.RouteQueues(route, brokerName, brokerName, true)
	if len(qs) == 0 {
		return nil, fmt.Errorf("broker %s has no writable master: its topic %s has no writable queue", brokerName, brokerName)
	}
	return qs, nil
}

func filler(size int) []byte { return []byte(strings.Repeat("a", max(size, 0))) }

func sendMsgStatusCmd() *command {
	return &command{name: "sendMsgStatus", desc: "Send msg to broker.", setup: func(f *flags) runFunc {
		var brokerName string
		size, count := 128, 50
		f.String(&brokerName, "b", "brokerName", "Broker Name e.g. clusterName_brokerName as DefaultCluster_broker-a", true)
		f.Int(&size, "s", "messageSize", "Message Size", false)
		f.Int(&count, "c", "count", "send message count", false)
		return func(ctx context.Context, r *runner) (result, error) {
			if size < 0 || count < 0 {
				return nil, usagef("options -s (--messageSize) and -c (--count) must not be negative")
			}
			qs, err := r.brokerTopicQueues(ctx, brokerName)
			if err != nil {
				return nil, err
			}
			// A first small message warms the connection up, as RocketMQ's tool sends one.
			if _, err := r.sendToAny(ctx, qs, map[string]string{}, filler(16)); err != nil {
				return nil, err
			}
			res := &sendMsgStatusResult{Topic: brokerName, Sends: []sendStatusRow{}}
			for range count {
				begin := time.Now()
				sr, err := r.sendToAny(ctx, qs, map[string]string{}, filler(size))
				if err != nil {
					return res, err
				}
				res.Sends = append(res.Sends, sendStatusRow{RTMillis: time.Since(begin).Milliseconds(), Result: *sr})
			}
			return res, nil
		}
	}}
}

type clusterRTRow struct {
	Cluster string  `json:"cluster"`
	Broker  string  `json:"brokerName"`
	RT      float64 `json:"rtMillis"`
	Success int     `json:"successCount"`
	Fail    int     `json:"failCount"`
}

type clusterRTResult struct {
	Rows []clusterRTRow `json:"rows"`
	tlog bool
	room string
	at   time.Time
}

func (r *clusterRTResult) writeText(w io.Writer) error {
	if r.tlog {
		t := &textWriter{w: w}
		for _, x := range r.Rows {
			t.printf("%s|%s|%s|%s|%.0f\n", r.at.Format("2006-01-02 15:04:05"), r.room, x.Cluster, x.Broker, x.RT)
		}
		return t.err
	}
	tb := newTable("#Cluster Name", "#Broker Name", "#RT", "#successCount", "#failCount")
	for _, x := range r.Rows {
		tb.add(x.Cluster, x.Broker, fmt.Sprintf("%.2f", x.RT), x.Success, x.Fail)
	}
	return tb.write(w)
}

func clusterRTCmd() *command {
	return &command{name: "clusterRT", desc: "List All clusters Message Send RT.", setup: func(f *flags) runFunc {
		amount, size := 100, 128
		var cluster, room string
		var tlog bool
		var interval int
		room = "noname"
		f.Int(&amount, "a", "amount", "message amount", false)
		f.Int(&size, "s", "size", "message size in bytes", false)
		f.String(&cluster, "c", "cluster", "cluster name (default every cluster)", false)
		f.BoolArg(&tlog, "p", "printLog", "print as tlog")
		f.String(&room, "m", "machineRoom", "machine room name", false)
		f.Int(&interval, "i", "interval", "measure again every this many seconds, until interrupted (0: once)", false)
		return func(ctx context.Context, r *runner) (result, error) {
			if amount < 1 || size < 0 || interval < 0 {
				return nil, usagef("option -a (--amount) must be at least 1, -s (--size) and -i (--interval) not negative")
			}
			return r.repeat(ctx, interval, func() (result, error) {
				res, err := r.clusterRT(ctx, cluster, amount, size)
				if res == nil {
					return nil, err
				}
				res.tlog, res.room = tlog, room
				return res, err
			})
		}
	}}
}

// clusterRT sends amount messages of size bytes to the topic of each broker of the cluster (every cluster for
// ""), and measures the mean send time, the first send left out as a warm-up.
func (r *runner) clusterRT(ctx context.Context, cluster string, amount, size int) (*clusterRTResult, error) {
	ci, err := r.c.ClusterInfo(ctx)
	if err != nil {
		return nil, err
	}
	if cluster != "" {
		if _, ok := ci.ClusterAddrTable[cluster]; !ok {
			return nil, fmt.Errorf("cluster [%s] not exist (clusters: %v)", cluster, sortedKeys(ci.ClusterAddrTable))
		}
	}
	res := &clusterRTResult{Rows: []clusterRTRow{}, at: time.Now()}
	body := filler(size)
	for _, cl := range sortedKeys(ci.ClusterAddrTable) {
		if cluster != "" && cl != cluster {
			continue
		}
		for _, bn := range sortedStrings(ci.ClusterAddrTable[cl]) {
			row := clusterRTRow{Cluster: cl, Broker: bn}
			qs, qerr := r.brokerTopicQueues(ctx, bn)
			var elapsed time.Duration
			for i := range amount {
				start := time.Now()
				err := qerr
				if err == nil {
					_, err = r.sendToAny(ctx, qs, map[string]string{}, body)
				}
				if err != nil {
					row.Fail++
				} else {
					row.Success++
				}
				if i > 0 || amount == 1 {
					elapsed += time.Since(start)
				}
			}
			row.RT = float64(elapsed.Microseconds()) / 1000 / float64(max(amount-1, 1))
			res.Rows = append(res.Rows, row)
		}
	}
	return res, nil
}
