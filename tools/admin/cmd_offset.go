package admin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/rocketraft/rocketraft/client"
	"github.com/rocketraft/rocketraft/protocol"
	"github.com/rocketraft/rocketraft/remoting"
)

// timestampLayout is RocketMQ's yyyy-MM-dd#HH:mm:ss:SSS (in local time) without its milliseconds, which
// follow a ':' that Go's layouts do not take as a fraction separator.
const timestampLayout = "2006-01-02#15:04:05"

// parseTimestamp reads RocketMQ's timestamp argument: "now" (-1: the end of each queue), milliseconds since
// the epoch, or yyyy-MM-dd#HH:mm:ss:SSS.
func parseTimestamp(s string, allowNow bool) (int64, error) {
	if s == "now" && allowNow {
		return -1, nil
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil && n >= 0 {
		return n, nil
	}
	bad := fmt.Errorf("%q is not a timestamp (now, milliseconds, or yyyy-MM-dd#HH:mm:ss:SSS)", s)
	i := strings.LastIndexByte(s, ':')
	if i < 0 || len(s)-i != 4 {
		return 0, bad
	}
	t, err := time.ParseInLocation(timestampLayout, s[:i], time.Local)
	ms, merr := strconv.Atoi(s[i+1:])
	if err != nil || merr != nil || ms < 0 {
		return 0, bad
	}
	return t.UnixMilli() + int64(ms), nil
}

type resetRow struct {
	BrokerName string `json:"brokerName"`
	QueueID    int32  `json:"queueId"`
	Offset     int64  `json:"offset"`
}

type resetOffsetResult struct {
	Group           string     `json:"group"`
	Topic           string     `json:"topic"`
	Force           bool       `json:"force"`
	TimestampString string     `json:"timestampString"`
	Timestamp       int64      `json:"timestamp"`
	Queues          []resetRow `json:"queues"`
}

func (r *resetOffsetResult) writeText(w io.Writer) error {
	t := &textWriter{w: w}
	t.printf("rollback consumer offset by specified group[%s], topic[%s], force[%t], timestamp(string)[%s], timestamp(long)[%d]\n",
		r.Group, r.Topic, r.Force, r.TimestampString, r.Timestamp)
	tb := newTable("#brokerName", "#queueId", "#offset")
	for _, q := range r.Queues {
		tb.add(q.BrokerName, q.QueueID, q.Offset)
	}
	t.table(tb)
	return t.err
}

func resetOffsetByTimeCmd() *command {
	return &command{name: "resetOffsetByTime", desc: "Reset consumer offset by timestamp(without client restart).", setup: func(f *flags) runFunc {
		var group, topic, stamp, cluster, addr string
		var qid int32 = -1
		var offset int64
		force := true
		f.String(&group, "g", "group", "set the consumer group", true)
		f.String(&topic, "t", "topic", "set the topic", true)
		f.String(&stamp, "s", "timestamp", "set the timestamp[now|currentTimeMillis|yyyy-MM-dd#HH:mm:ss:SSS]", true)
		f.BoolArg(&force, "f", "force", "set the force rollback by timestamp switch")
		f.String(&cluster, "c", "cluster", "cluster name: reset on its masters instead of the topic's route", false)
		f.String(&addr, "b", "broker", "broker addr (with -q: reset one queue)", false)
		f.Int32(&qid, "q", "queue", "queue id (with -b)", false)
		f.Int64(&offset, "o", "offset", "Expect queue offset (with -b and -q; default: the offset at -s)", false)
		return func(ctx context.Context, r *runner) (result, error) {
			ts, err := parseTimestamp(stamp, true)
			if err != nil {
				return nil, usagef("option -s (--timestamp): %v", err)
			}
			if err := errors.Join(f.needs("broker", "queue"), f.needs("queue", "broker"), f.needs("offset", "queue")); err != nil {
				return nil, err
			}
			if addr != "" {
				return r.resetQueueOffset(ctx, addr, group, topic, qid, stamp, ts, offset, f.has("offset"))
			}
			return r.resetOffset(ctx, group, topic, cluster, stamp, ts, force)
		}
	}}
}

// resetOffset moves group's offsets on topic to the first message stored at or after ts (-1: the end of
// each queue) on every broker of the topic's route (INVOKE_BROKER_TO_RESET_OFFSET), going on after a
// failure; stamp is ts as the user wrote it.
func (r *runner) resetOffset(ctx context.Context, group, topic, cluster, stamp string, ts int64, force bool) (*resetOffsetResult, error) {
	refs, err := r.topicBrokers(ctx, topic, cluster)
	if err != nil {
		return nil, err
	}
	res := &resetOffsetResult{Group: group, Topic: topic, Force: force, TimestampString: stamp, Timestamp: ts,
		Queues: []resetRow{}}
	ext := map[string]string{"topic": topic, "group": group, "timestamp": strconv.FormatInt(ts, 10),
		"isForce": strconv.FormatBool(force)}
	var errs []error
	for _, ref := range refs {
		resp, err := r.c.Call(ctx, ref.addr, remoting.InvokeBrokerToResetOffset, ext, nil)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		var body struct {
			OffsetTable protocol.QueueTable[int64] `json:"offsetTable"`
		}
		if err := protocol.UnmarshalFastJSON(resp.Body, &body); err != nil {
			errs = append(errs, fmt.Errorf("reset offset answer from %s: %w", ref.addr, err))
			continue
		}
		for _, e := range body.OffsetTable {
			res.Queues = append(res.Queues, resetRow{BrokerName: e.MQ.BrokerName, QueueID: e.MQ.QueueID, Offset: e.Value})
		}
	}
	return res, errors.Join(errs...)
}

type resetQueueResult struct {
	Group     string `json:"group"`
	Topic     string `json:"topic"`
	QueueID   int32  `json:"queueId"`
	Broker    string `json:"broker"`
	Stamp     string `json:"timestampString"`
	Timestamp int64  `json:"timestamp"`
	Offset    int64  `json:"offset"`
}

func (r *resetQueueResult) writeText(w io.Writer) error {
	t := &textWriter{w: w}
	t.printf("start reset consumer offset by specified, group[%s], topic[%s], queueId[%d], broker[%s], timestamp(string)[%s], timestamp(long)[%d]\n",
		r.Group, r.Topic, r.QueueID, r.Broker, r.Stamp, r.Timestamp)
	t.printf("reset consumer offset to %d\n", r.Offset)
	return t.err
}

// resetQueueOffset is resetOffsetByTime -b -q (RocketMQ 5): group's offset of one queue at the broker at addr
// becomes offset (with -o) or the queue's offset at ts, committed with UPDATE_CONSUMER_OFFSET. An online
// consumer is not told (RocketMQ 5's broker tells it); it may commit its own offset over this one.
func (r *runner) resetQueueOffset(ctx context.Context, addr, group, topic string, qid int32, stamp string, ts, offset int64, haveOffset bool) (*resetQueueResult, error) {
	ci, err := r.c.ClusterInfo(ctx)
	if err != nil {
		return nil, err
	}
	name, ok := brokerNameOf(ci, addr)
	if !ok {
		return nil, fmt.Errorf("no broker is registered at %s", addr)
	}
	q := client.Queue{Addr: addr}
	q.Topic, q.BrokerName, q.QueueID = topic, name, qid
	if !haveOffset {
		code := remoting.SearchOffsetByTimestamp
		if ts == -1 {
			code = remoting.GetMaxOffset
		}
		if offset, err = r.c.QueueOffset(ctx, code, q, ts); err != nil {
			return nil, err
		}
	}
	if offset < 0 {
		return nil, usagef("option -o (--offset) %d must not be negative", offset)
	}
	if err := r.c.UpdateConsumerOffset(ctx, group, q, offset); err != nil {
		return nil, err
	}
	return &resetQueueResult{Group: group, Topic: topic, QueueID: qid, Broker: addr, Stamp: stamp, Timestamp: ts, Offset: offset}, nil
}
