package admin

import (
	"context"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"

	"github.com/rocketraft/rocketraft/client"
	"github.com/rocketraft/rocketraft/remoting"
)

// printMsg, printMsgByQueue and queryMsgByUniqueKey (RocketMQ's message commands): read messages as
// TOOLS_CONSUMER without committing anything.

// printQueue is one queue read by printMsg or printMsgByQueue.
type printQueue struct {
	Queue     string         `json:"queue"`
	MinOffset int64          `json:"minOffset"`
	MaxOffset int64          `json:"maxOffset"`
	Messages  []*messageView `json:"messages"`
	End       string         `json:"end"` // how reading stopped: "NO_NEW_MSG offset=N", ...
}

type printResult struct {
	Queues    []printQueue     `json:"queues"`
	TagCounts map[string]int64 `json:"tagCounts,omitempty"` // printMsgByQueue -f
	byQueue   bool             // printMsgByQueue: no per-queue header, messages only with -p
	printMsg  bool
	printBody bool
}

func (r *printResult) writeText(w io.Writer) error {
	t := &textWriter{w: w}
	for _, q := range r.Queues {
		if !r.byQueue {
			t.printf("minOffset=%d, maxOffset=%d, %s\n", q.MinOffset, q.MaxOffset, q.Queue)
		}
		if r.printMsg {
			for _, m := range q.Messages {
				body := "NOT PRINT BODY"
				if r.printBody {
					body = m.Body
				}
				t.printf("MSGID: %s %s BODY: %s\n", m.MsgID, m, body)
			}
		}
		if !r.byQueue {
			if q.End != "" {
				t.printf("%s %s\n", q.Queue, q.End)
			}
			t.printf("--------------------------------------------------------\n")
		}
	}
	if r.TagCounts != nil {
		tags := sortedKeys(r.TagCounts)
		sort.SliceStable(tags, func(i, j int) bool { return r.TagCounts[tags[i]] > r.TagCounts[tags[j]] })
		for _, tag := range tags {
			t.printf("Tag: %-30s Count: %d\n", tag, r.TagCounts[tag])
		}
	}
	return t.err
}

// readOptions are the options printMsg and printMsgByQueue share.
type readOptions struct {
	charset, sub, begin, end string
}

func (o *readOptions) register(f *flags) {
	o.charset, o.sub = "UTF-8", "*"
	f.String(&o.charset, "c", "charsetName", "CharsetName (only UTF-8: bodies that are not UTF-8 print as base64)", false)
	f.String(&o.sub, "s", "subExpression", "Subscribe Expression(eg: TagA || TagB)", false)
	f.String(&o.begin, "b", "beginTimestamp", "Begin timestamp[currentTimeMillis|yyyy-MM-dd#HH:mm:ss:SSS]", false)
	f.String(&o.end, "e", "endTimestamp", "End timestamp[currentTimeMillis|yyyy-MM-dd#HH:mm:ss:SSS]", false)
}

func (o *readOptions) check() error {
	if !strings.EqualFold(o.charset, "UTF-8") && !strings.EqualFold(o.charset, "UTF8") {
		return usagef("option -c (--charsetName) %q: only UTF-8 is supported", o.charset)
	}
	for _, p := range []struct{ v, name string }{{o.begin, "-b (--beginTimestamp)"}, {o.end, "-e (--endTimestamp)"}} {
		if p.v != "" {
			if _, err := parseTimestamp(p.v, false); err != nil {
				return usagef("option %s: %v", p.name, err)
			}
		}
	}
	return nil
}

// printQueue reads q from its min offset (or the first at -b) to its max (or the first at -e), 32 at a time,
// the tag subscription applied by the broker.
func (r *runner) printQueue(ctx context.Context, q client.Queue, o *readOptions) (printQueue, error) {
	pq := printQueue{Queue: client.MQString(q.MessageQueue), Messages: []*messageView{}}
	var err error
	if pq.MinOffset, err = r.c.QueueOffset(ctx, remoting.GetMinOffset, q, 0); err != nil {
		return pq, err
	}
	if pq.MaxOffset, err = r.c.QueueOffset(ctx, remoting.GetMaxOffset, q, 0); err != nil {
		return pq, err
	}
	if o.begin != "" {
		ts, _ := parseTimestamp(o.begin, false)
		if pq.MinOffset, err = r.c.QueueOffset(ctx, remoting.SearchOffsetByTimestamp, q, ts); err != nil {
			return pq, err
		}
	}
	if o.end != "" {
		ts, _ := parseTimestamp(o.end, false)
		if pq.MaxOffset, err = r.c.QueueOffset(ctx, remoting.SearchOffsetByTimestamp, q, ts); err != nil {
			return pq, err
		}
	}
	for off := pq.MinOffset; off < pq.MaxOffset; {
		res, err := r.c.PullMessage(ctx, q.Addr, &client.Pull{Group: toolsConsumerGroup, Topic: q.Topic,
			BrokerName: q.BrokerName, QueueID: q.QueueID, Offset: off, MaxNums: 32, Subscription: o.sub})
		if err != nil {
			return pq, err
		}
		if res.NextBegin < 0 {
			return pq, fmt.Errorf("pull %s: answer without a nextBeginOffset", pq.Queue)
		}
		switch res.Status {
		case client.PullFound:
			for _, m := range res.Msgs {
				if m.QueueOffset < pq.MaxOffset {
					pq.Messages = append(pq.Messages, newMessageView(m))
				}
			}
		case client.PullNoMatchedMsg:
		default:
			pq.End = fmt.Sprintf("print msg finished. status=%s, offset=%d", res.Status, res.NextBegin)
			return pq, nil
		}
		if res.NextBegin <= off {
			return pq, fmt.Errorf("pull %s at %d: the broker did not move on", pq.Queue, off)
		}
		off = res.NextBegin
	}
	return pq, nil
}

func printMsgCmd() *command {
	return &command{name: "printMsg", desc: "Print Message Detail.", setup: func(f *flags) runFunc {
		var topic string
		var o readOptions
		printBody := true
		f.String(&topic, "t", "topic", "topic name", true)
		o.register(f)
		f.BoolArg(&printBody, "d", "printBody", "print body")
		return func(ctx context.Context, r *runner) (result, error) {
			if err := o.check(); err != nil {
				return nil, err
			}
			route, err := r.c.Route(ctx, topic)
			if err != nil {
				return nil, err
			}
			res := &printResult{Queues: []printQueue{}, printMsg: true, printBody: printBody}
			for _, q := range client.RouteQueues(route, topic, "", false) {
				pq, err := r.printQueue(ctx, q, &o)
				res.Queues = append(res.Queues, pq)
				if err != nil {
					return res, err
				}
			}
			return res, nil
		}
	}}
}

func printMsgByQueueCmd() *command {
	return &command{name: "printMsgByQueue", desc: "Print Message Detail by queueId.", setup: func(f *flags) runFunc {
		var topic, brokerName string
		var qid int32
		var o readOptions
		var printMsg, printBody, byTag bool
		f.String(&topic, "t", "topic", "topic name", true)
		f.String(&brokerName, "a", "brokerName", "broker name", true)
		f.Int32(&qid, "i", "queueId", "queue id", true)
		o.register(f)
		f.BoolArg(&printMsg, "p", "printMsg", "print msg")
		f.BoolArg(&printBody, "d", "printBody", "print body")
		f.BoolArg(&byTag, "f", "calculate", "calculate by tag")
		return func(ctx context.Context, r *runner) (result, error) {
			if err := o.check(); err != nil {
				return nil, err
			}
			route, err := r.c.Route(ctx, topic)
			if err != nil {
				return nil, err
			}
			qs := filterQueue(client.RouteQueues(route, topic, brokerName, false), qid)
			if len(qs) == 0 {
				return nil, fmt.Errorf("topic %s has no readable queue %d on broker %s", topic, qid, brokerName)
			}
			pq, err := r.printQueue(ctx, qs[0], &o)
			res := &printResult{Queues: []printQueue{pq}, byQueue: true, printMsg: printMsg, printBody: printBody}
			if byTag {
				res.TagCounts = map[string]int64{}
				for _, m := range pq.Messages {
					res.TagCounts[m.Tags]++
				}
			}
			return res, err
		}
	}}
}

func queryMsgByUniqueKeyCmd() *command {
	return &command{name: "queryMsgByUniqueKey", desc: "Query Message by Unique key", setup: func(f *flags) runFunc {
		var id, topic, group, clientID, cluster string
		var all bool
		f.String(&id, "i", "msgId", "Message Id", true)
		f.String(&topic, "t", "topic", "The topic of msg", true)
		f.String(&group, "g", "consumerGroup", "consumer group name (with -d: have that consumer consume the message now)", false)
		f.String(&clientID, "d", "clientId", "The consumer's client id", false)
		f.Switch(&all, "a", "showAll", "Print all message, the limit is 32")
		f.String(&cluster, "c", "cluster", "Cluster name: ask its masters instead of the topic's route", false)
		return func(ctx context.Context, r *runner) (result, error) {
			if err := f.needs("consumerGroup", "clientId"); err != nil {
				return nil, err
			}
			if err := f.needs("clientId", "consumerGroup"); err != nil {
				return nil, err
			}
			msgs, err := r.queryMessages(ctx, topic, cluster, id, true, 32, 0, math.MaxInt64)
			if len(msgs) == 0 {
				if err != nil {
					return nil, err
				}
				return nil, notFoundf("message %s not found in topic %s", id, topic)
			}
			if !all {
				msgs = msgs[:1]
			}
			if group != "" {
				return r.consumeDirectly(ctx, msgs, group, clientID)
			}
			return r.present(ctx, msgs, "")
		}
	}}
}
