package admin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/rocketraft/rocketraft/client"
	"github.com/rocketraft/rocketraft/message"
	"github.com/rocketraft/rocketraft/protocol"
	"github.com/rocketraft/rocketraft/remoting"
)

// messagesResult is one or more messages printed in full.
type messagesResult struct {
	Messages []*messageView `json:"messages"`
}

func (r *messagesResult) writeText(w io.Writer) error {
	for i, m := range r.Messages {
		if i > 0 {
			if _, err := io.WriteString(w, "\n"); err != nil {
				return err
			}
		}
		if err := m.writeText(w); err != nil {
			return err
		}
	}
	return nil
}

// present finishes the views of found messages: bodies saved under bodyDir when set, consumption tracks.
func (r *runner) present(ctx context.Context, msgs []*message.MessageExt, bodyDir string) (*messagesResult, error) {
	res := &messagesResult{Messages: []*messageView{}}
	for i, m := range msgs {
		v := newMessageView(m)
		if bodyDir != "" {
			if err := v.saveBody(bodyDir, i); err != nil {
				return nil, err
			}
		}
		v.Tracks = r.tracks(ctx, v)
		res.Messages = append(res.Messages, v)
	}
	return res, nil
}

func queryMsgByIdCmd() *command {
	return &command{name: "queryMsgById", desc: "Query Message by Id", setup: func(f *flags) runFunc {
		var ids, topic, bodyDir, group, clientID, cluster, unit string
		var resend bool
		f.String(&ids, "i", "msgId", "Message Id: the offset id, or with -t the unique id; several separated by commas", true)
		f.String(&topic, "t", "topic", "topic of the message: needed to find it by its unique (client) id", false)
		f.String(&group, "g", "consumerGroup", "consumer group name (with -d: have that consumer consume the message now)", false)
		f.String(&clientID, "d", "clientId", "The consumer's client id", false)
		f.BoolArg(&resend, "s", "sendMessage", "resend message")
		f.String(&unit, "u", "unitName", "unit name (accepted: in RocketMQ it only names the tool's client instance)", false)
		f.String(&cluster, "c", "cluster", "Cluster name: look a unique id up on its masters instead of the topic's route", false)
		f.String(&bodyDir, "", "bodyDir", "save each body to this folder as <msgId> (RocketMQ: /tmp/rocketmq/msgbodys)", false)
		return func(ctx context.Context, r *runner) (result, error) {
			if err := errors.Join(f.needs("consumerGroup", "clientId"), f.needs("clientId", "consumerGroup")); err != nil {
				return nil, err
			}
			var msgs []*message.MessageExt
			for _, id := range strings.Split(ids, ",") {
				if id = strings.TrimSpace(id); id == "" {
					continue
				}
				m, err := r.findByID(ctx, id, topic, cluster)
				if err != nil {
					return nil, err
				}
				msgs = append(msgs, m)
			}
			switch {
			case group != "":
				return r.consumeDirectly(ctx, msgs, group, clientID)
			case resend:
				return r.resend(ctx, msgs)
			}
			return r.present(ctx, msgs, bodyDir)
		}
	}}
}

// findByID finds a message by its offset id (which names the broker and the CommitLog offset) or, with a
// topic, by its unique id. Both are 32 hex digits, so an id that decodes as an offset id but is not one is
// looked up as a unique id, as RocketMQ's admin does.
func (r *runner) findByID(ctx context.Context, id, topic, cluster string) (*message.MessageExt, error) {
	var viewErr error
	if _, _, err := message.DecodeOffsetMsgID(id); err == nil {
		m, err := r.viewMessage(ctx, id)
		if err == nil && (topic == "" || m.Topic == topic) {
			return m, nil
		}
		viewErr = err
	}
	if topic == "" {
		if viewErr != nil {
			return nil, fmt.Errorf("message %s: %w (give -t to look it up as a unique id)", id, viewErr)
		}
		return nil, usagef("message %s is not an offset id: give its topic with -t to look it up as a unique id", id)
	}
	msgs, err := r.queryMessages(ctx, topic, cluster, id, true, 32, 0, math.MaxInt64)
	if len(msgs) > 0 {
		return msgs[0], nil
	}
	if err != nil {
		return nil, err
	}
	return nil, notFoundf("message %s not found in topic %s", id, topic)
}

type keyRow struct {
	MsgID       string `json:"msgId"`
	OffsetMsgID string `json:"offsetMsgId"`
	QueueID     int32  `json:"queueId"`
	QueueOffset int64  `json:"queueOffset"`
}

type queryByKeyResult struct {
	Topic    string   `json:"topic"`
	Key      string   `json:"key"`
	Messages []keyRow `json:"messages"`
}

func (r *queryByKeyResult) writeText(w io.Writer) error {
	tb := newTable("#Message ID", "#QID", "#Offset")
	for _, m := range r.Messages {
		tb.add(m.MsgID, m.QueueID, m.QueueOffset)
	}
	return tb.write(w)
}

func queryMsgByKeyCmd() *command {
	return &command{name: "queryMsgByKey", desc: "Query Message by Key", setup: func(f *flags) runFunc {
		var topic, key, cluster string
		maxNum := 64
		var begin, end int64 = 0, math.MaxInt64
		f.String(&topic, "t", "topic", "topic name", true)
		f.String(&key, "k", "msgKey", "Message Key", true)
		f.Int(&maxNum, "m", "maxNum", "the most messages to list per broker (RocketMQ 5.1's -c)", false)
		f.String(&cluster, "c", "cluster", "Cluster name: ask its masters instead of the topic's route", false)
		f.Int64(&begin, "b", "beginTimestamp", "stored at or after this time (ms)", false)
		f.Int64(&end, "e", "endTimestamp", "stored before this time (ms)", false)
		return func(ctx context.Context, r *runner) (result, error) {
			if maxNum <= 0 {
				return nil, usagef("option -m (--maxNum) must be positive")
			}
			msgs, err := r.queryMessages(ctx, topic, cluster, key, false, maxNum, begin, end)
			if err != nil {
				return nil, err
			}
			res := &queryByKeyResult{Topic: topic, Key: key, Messages: []keyRow{}}
			for _, m := range msgs {
				v := newMessageView(m)
				res.Messages = append(res.Messages, keyRow{MsgID: v.MsgID, OffsetMsgID: v.OffsetMsgID, QueueID: m.QueueID,
					QueueOffset: m.QueueOffset})
			}
			return res, nil
		}
	}}
}

func queryMsgByOffsetCmd() *command {
	return &command{name: "queryMsgByOffset", desc: "Query Message by offset", setup: func(f *flags) runFunc {
		var topic, brokerName, bodyDir string
		var qid int
		var offset int64
		f.String(&topic, "t", "topic", "topic name", true)
		f.String(&brokerName, "b", "brokerName", "Broker Name", true)
		f.Int(&qid, "i", "queueId", "Queue Id", true)
		f.Int64(&offset, "o", "offset", "Queue Offset", true)
		f.String(&bodyDir, "", "bodyDir", "save the body to this folder as <msgId>", false)
		return func(ctx context.Context, r *runner) (result, error) {
			q, err := r.readQueue(ctx, topic, brokerName, qid)
			if err != nil {
				return nil, err
			}
			status, msgs, _, err := r.pull(ctx, toolsConsumerGroup, q, offset, 1)
			if err != nil {
				return nil, err
			}
			if status != client.PullFound || len(msgs) == 0 {
				return nil, fmt.Errorf("no message at offset %d of %s (%s)", offset, client.MQString(q.MessageQueue), status)
			}
			return r.present(ctx, msgs[:1], bodyDir)
		}
	}}
}

// readQueue finds queue qid of topic on broker brokerName.
func (r *runner) readQueue(ctx context.Context, topic, brokerName string, qid int) (client.Queue, error) {
	route, err := r.c.Route(ctx, topic)
	if err != nil {
		return client.Queue{}, err
	}
	for _, q := range client.RouteQueues(route, topic, brokerName, false) {
		if int(q.QueueID) == qid {
			return q, nil
		}
	}
	return client.Queue{}, fmt.Errorf("topic %s has no readable queue %d on a broker named %s", topic, qid, brokerName)
}

type sendMessageResult struct {
	client.SendResult
}

func (r *sendMessageResult) writeText(w io.Writer) error {
	tb := newTable("#Broker Name", "#QID", "#Send Result", "#MsgId")
	tb.add(r.BrokerName, r.QueueID, r.SendStatus, r.MsgID)
	return tb.write(w)
}

// sendAttempts is how many queues a send without -i tries, as RocketMQ's producer (1 + retryTimesWhenSendFailed 2).
const sendAttempts = 3

func sendMessageCmd() *command {
	return &command{name: "sendMessage", desc: "Send a message", setup: func(f *flags) runFunc {
		var topic, body, keys, tags, brokerName string
		qid := -1
		f.String(&topic, "t", "topic", "Topic name", true)
		f.String(&body, "p", "body", "UTF-8 string format of the message body", true)
		f.String(&keys, "k", "key", "Message keys", false)
		f.String(&tags, "c", "tags", "Message tags", false)
		f.String(&brokerName, "b", "broker", "Send message to target broker", false)
		f.Int(&qid, "i", "qid", "Send message to target queue", false)
		var trace bool
		f.BoolArg(&trace, "m", "msgTraceEnable", "Message Trace Enable (only false: mqadmin writes no trace records yet)")
		return func(ctx context.Context, r *runner) (result, error) {
			if err := f.needs("qid", "broker"); err != nil {
				return nil, err
			}
			if trace {
				return nil, usagef("option -m (--msgTraceEnable) true: mqadmin does not write message traces yet; send without it")
			}
			route, err := r.c.Route(ctx, topic)
			if err != nil {
				return nil, err
			}
			queues := client.RouteQueues(route, topic, brokerName, true)
			if qid >= 0 {
				queues = filterQueue(queues, int32(qid))
			}
			if len(queues) == 0 {
				return nil, fmt.Errorf("topic %s has no writable queue%s", topic, where(brokerName, qid))
			}
			props := map[string]string{}
			if keys != "" {
				props[message.PropertyKeys] = keys
			}
			if tags != "" {
				props[message.PropertyTags] = tags
			}
			res, err := r.sendToAny(ctx, queues, props, []byte(body))
			if err != nil {
				return nil, err
			}
			return &sendMessageResult{*res}, nil
		}
	}}
}

func filterQueue(qs []client.Queue, qid int32) []client.Queue {
	for _, q := range qs {
		if q.QueueID == qid {
			return []client.Queue{q}
		}
	}
	return nil
}

func where(brokerName string, qid int) string {
	switch {
	case brokerName != "" && qid >= 0:
		return fmt.Sprintf(" %d on broker %s", qid, brokerName)
	case brokerName != "":
		return " on broker " + brokerName
	}
	return ""
}

// consumedQueue is what consumeMessage read from one queue.
type consumedQueue struct {
	Queue    protocol.MessageQueue `json:"queue"`
	From     int64                 `json:"from"`
	To       int64                 `json:"to"` // exclusive
	Status   client.PullStatus     `json:"status"`
	Messages []*messageView        `json:"messages"`
}

type consumeMessageResult struct {
	Queues []consumedQueue `json:"queues"`
}

func (r *consumeMessageResult) writeText(w io.Writer) error {
	t := &textWriter{w: w}
	for _, q := range r.Queues {
		if len(q.Messages) > 0 {
			t.printf("Consume ok\n")
		}
		for _, m := range q.Messages {
			body := m.Body
			if m.BodyEncoding != "text" {
				body = "base64:" + body
			}
			t.printf("MSGID: %s %s BODY: %s\n", m.MsgID, m, body)
		}
		if q.Status != client.PullFound { // as RocketMQ: a queue read to its end says so; one cut by -c or -e does not
			t.printf("%s print msg finished. status=%s, offset=%d\n", client.MQString(q.Queue), q.Status, q.To)
		}
	}
	return t.err
}

func consumeMessageCmd() *command {
	return &command{name: "consumeMessage", desc: "Consume message", setup: func(f *flags) runFunc {
		var topic, brokerName, group, begin, end string
		qid := -1
		var offset int64 = -1
		count := int64(128)
		f.String(&topic, "t", "topic", "Topic name", true)
		f.String(&brokerName, "b", "brokerName", "Broker name", false)
		f.Int(&qid, "i", "queueId", "Queue Id", false)
		f.Int64(&offset, "o", "offset", "Queue offset", false)
		f.String(&group, "g", "consumerGroup", "Consumer group name (default "+toolsConsumerGroup+")", false)
		f.String(&begin, "s", "beginTimestamp", "Begin timestamp[currentTimeMillis|yyyy-MM-dd#HH:mm:ss:SSS]", false)
		f.String(&end, "e", "endTimestamp", "End timestamp[currentTimeMillis|yyyy-MM-dd#HH:mm:ss:SSS]", false)
		f.Int64(&count, "c", "MessageNumber", "Number of message to be consumed", false)
		return func(ctx context.Context, r *runner) (result, error) {
			if err := errors.Join(f.needs("queueId", "brokerName"), f.needs("offset", "queueId")); err != nil {
				return nil, err
			}
			if count <= 0 {
				return nil, usagef("option -c (--MessageNumber) must be positive")
			}
			if group == "" {
				group = toolsConsumerGroup
			}
			window, err := parseWindow(begin, end)
			if err != nil {
				return nil, err
			}
			route, err := r.c.Route(ctx, topic)
			if err != nil {
				return nil, err
			}
			queues := client.RouteQueues(route, topic, brokerName, false)
			if qid >= 0 {
				queues = filterQueue(queues, int32(qid))
			}
			if len(queues) == 0 {
				return nil, fmt.Errorf("topic %s has no readable queue%s", topic, where(brokerName, qid))
			}
			res := &consumeMessageResult{Queues: []consumedQueue{}}
			left := count
			for _, q := range queues {
				if left == 0 {
					break
				}
				cq, err := r.consumeQueue(ctx, group, q, window, offset, &left)
				if err != nil {
					return res, err
				}
				res.Queues = append(res.Queues, cq)
			}
			return res, nil
		}
	}}
}

// timeWindow bounds consumeMessage by store time (0: unbounded).
type timeWindow struct{ begin, end int64 }

func parseWindow(begin, end string) (timeWindow, error) {
	var w timeWindow
	var err error
	if begin != "" {
		if w.begin, err = parseTimestamp(begin, false); err != nil {
			return w, usagef("option -s (--beginTimestamp): %v", err)
		}
	}
	if end != "" {
		if w.end, err = parseTimestamp(end, false); err != nil {
			return w, usagef("option -e (--endTimestamp): %v", err)
		}
		if w.begin > w.end {
			return w, usagef("option -s (--beginTimestamp) is after -e (--endTimestamp)")
		}
	}
	return w, nil
}

// consumeQueue pulls q's messages in the window, from offset when >= 0, taking at most *left. The status is
// the last pull's, NO_NEW_MSG once the queue was read to its end.
func (r *runner) consumeQueue(ctx context.Context, group string, q client.Queue, w timeWindow, offset int64, left *int64) (consumedQueue, error) {
	cq := consumedQueue{Queue: q.MessageQueue, Messages: []*messageView{}}
	var err error
	code, ts := remoting.GetMinOffset, int64(0)
	if w.begin > 0 {
		code, ts = remoting.SearchOffsetByTimestamp, w.begin
	}
	if cq.From, err = r.c.QueueOffset(ctx, code, q, ts); err != nil {
		return cq, err
	}
	code, ts = remoting.GetMaxOffset, 0
	if w.end > 0 {
		code, ts = remoting.SearchOffsetByTimestamp, w.end
	}
	last, err := r.c.QueueOffset(ctx, code, q, ts)
	if err != nil {
		return cq, err
	}
	cq.From = max(cq.From, offset)
	cq.To = min(last, cq.From+*left)
	cq.Status = client.PullNoNewMsg
	next := cq.From
	for next < cq.To {
		status, msgs, nextBegin, err := r.pull(ctx, group, q, next, int(min(cq.To-next, 32)))
		if err != nil {
			return cq, err
		}
		cq.Status = status
		for _, m := range msgs {
			if m.QueueOffset >= cq.To {
				break
			}
			cq.Messages = append(cq.Messages, newMessageView(m))
			*left--
		}
		if status != client.PullFound && status != client.PullNoMatchedMsg || nextBegin <= next {
			break
		}
		next = nextBegin
	}
	if next >= cq.To && cq.To == last && w.end == 0 {
		cq.Status = client.PullNoNewMsg
	}
	return cq, nil
}
