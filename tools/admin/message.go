package admin

import (
	"bytes"
	"compress/zlib"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/rocketraft/rocketraft/client"
	"github.com/rocketraft/rocketraft/message"
	"github.com/rocketraft/rocketraft/remoting"
)

// maxInlineBody is the largest body printed inline by the text output of the query commands.
const maxInlineBody = 4 << 10

// messageView is a stored message as the query commands show it.
type messageView struct {
	MsgID           string            `json:"msgId"` // the unique id (UNIQ_KEY), else the offset id
	OffsetMsgID     string            `json:"offsetMsgId"`
	Topic           string            `json:"topic"`
	Tags            string            `json:"tags"`
	Keys            string            `json:"keys"`
	QueueID         int32             `json:"queueId"`
	QueueOffset     int64             `json:"queueOffset"`
	CommitLogOffset int64             `json:"commitLogOffset"`
	ReconsumeTimes  int32             `json:"reconsumeTimes"`
	BornTimestamp   int64             `json:"bornTimestamp"`
	StoreTimestamp  int64             `json:"storeTimestamp"`
	BornHost        string            `json:"bornHost"`
	StoreHost       string            `json:"storeHost"`
	SysFlag         int32             `json:"sysFlag"`
	StoreSize       int32             `json:"storeSize"`
	BodyCRC         int32             `json:"bodyCRC"`
	Properties      map[string]string `json:"properties"`
	Body            string            `json:"body"`
	BodyEncoding    string            `json:"bodyEncoding"` // "text" (UTF-8) or "base64"
	BodyPath        string            `json:"bodyPath,omitempty"`
	Tracks          []messageTrack    `json:"tracks,omitempty"`
	body            []byte
}

// newMessageView decodes what a stored message holds, inflating a compressed body.
func newMessageView(m *message.MessageExt) *messageView {
	props := message.ParseProperties(m.Properties)
	v := &messageView{
		OffsetMsgID: message.CreateOffsetMsgID(m.StoreHost, m.PhysicalOffset), Topic: m.Topic,
		Tags: props[message.PropertyTags], Keys: props[message.PropertyKeys], QueueID: m.QueueID, QueueOffset: m.QueueOffset,
		CommitLogOffset: m.PhysicalOffset, ReconsumeTimes: m.ReconsumeTimes, BornTimestamp: m.BornTimestamp,
		StoreTimestamp: m.StoreTimestamp, BornHost: m.BornHost.String(), StoreHost: m.StoreHost.String(),
		SysFlag: m.SysFlag, StoreSize: m.StoreSize, BodyCRC: m.BodyCRC, Properties: props, body: m.Body,
	}
	v.MsgID = props[message.PropertyUniqKey]
	if v.MsgID == "" {
		v.MsgID = v.OffsetMsgID
	}
	if m.SysFlag&message.SysFlagCompressed != 0 {
		if zr, err := zlib.NewReader(bytes.NewReader(m.Body)); err == nil {
			if b, err := io.ReadAll(io.LimitReader(zr, 64<<20)); err == nil {
				v.body = b
			}
		}
	}
	if utf8.Valid(v.body) {
		v.Body, v.BodyEncoding = string(v.body), "text"
	} else {
		v.Body, v.BodyEncoding = base64.StdEncoding.EncodeToString(v.body), "base64"
	}
	return v
}

// saveBody writes the body to dir/<msgId> (RocketMQ's tools write /tmp/rocketmq/msgbodys/<msgId>).
func (v *messageView) saveBody(dir string, index int) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("body folder: %w", err)
	}
	name := v.MsgID
	if index > 0 {
		name += fmt.Sprintf("_%d", index)
	}
	v.BodyPath = filepath.Join(dir, name)
	if err := os.WriteFile(v.BodyPath, v.body, 0o644); err != nil {
		return fmt.Errorf("write body: %w", err)
	}
	return nil
}

// javaMap is Java's Map.toString with sorted keys: {a=1, b=2}.
func javaMap(m map[string]string) string {
	parts := make([]string, 0, len(m))
	for _, k := range sortedKeys(m) {
		parts = append(parts, k+"="+m[k])
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

func orNull(s string) string {
	if s == "" {
		return "null"
	}
	return s
}

// writeText prints the message as RocketMQ's queryMsgById does.
func (v *messageView) writeText(w io.Writer) error {
	t := &textWriter{w: w}
	line := func(k string, val any) { t.printf("%-20s %v\n", k, val) }
	line("OffsetID:", v.OffsetMsgID)
	line("MsgId:", v.MsgID)
	line("Topic:", v.Topic)
	line("Tags:", "["+orNull(v.Tags)+"]")
	line("Keys:", "["+orNull(v.Keys)+"]")
	line("Queue ID:", v.QueueID)
	line("Queue Offset:", v.QueueOffset)
	line("CommitLog Offset:", v.CommitLogOffset)
	line("Reconsume Times:", v.ReconsumeTimes)
	line("Born Timestamp:", humanTime(v.BornTimestamp))
	line("Store Timestamp:", humanTime(v.StoreTimestamp))
	line("Born Host:", v.BornHost)
	line("Store Host:", v.StoreHost)
	line("System Flag:", v.SysFlag)
	line("Properties:", javaMap(v.Properties))
	switch {
	case v.BodyPath != "":
		line("Message Body Path:", v.BodyPath)
	case v.BodyEncoding == "text" && len(v.body) <= maxInlineBody:
		line("Message Body:", v.Body)
	default:
		line("Message Body:", fmt.Sprintf("<%d bytes: give --bodyDir to save it>", len(v.body)))
	}
	if v.Tracks != nil {
		if len(v.Tracks) == 0 {
			t.printf("\n\nWARN: No Consumer\n")
		} else {
			t.printf("\n\n")
			for _, mt := range v.Tracks {
				t.printf("%s\n", mt)
			}
		}
	}
	return t.err
}

// String is a short form of RocketMQ's MessageExt.toString, for consumeMessage.
func (v *messageView) String() string {
	return fmt.Sprintf("MessageExt [queueId=%d, storeSize=%d, queueOffset=%d, sysFlag=%d, bornTimestamp=%d, bornHost=%s, "+
		"storeTimestamp=%d, storeHost=%s, msgId=%s, commitLogOffset=%d, bodyCRC=%d, reconsumeTimes=%d, "+
		"Message{topic='%s', properties=%s, body=%d bytes}]",
		v.QueueID, v.StoreSize, v.QueueOffset, v.SysFlag, v.BornTimestamp, v.BornHost, v.StoreTimestamp, v.StoreHost,
		v.OffsetMsgID, v.CommitLogOffset, v.BodyCRC, v.ReconsumeTimes, v.Topic, javaMap(v.Properties), len(v.body))
}

// messageTrack is RocketMQ's MessageTrack: whether a group consumed a message. ConsumerOffset is the
// online push group's committed offset on the message's queue when it was read (the message is consumed once
// that offset is past the message's queue offset); nil when the group has none there or is not an online push
// group (RocketMQ's output).
type messageTrack struct {
	ConsumerGroup  string `json:"consumerGroup"`
	TrackType      string `json:"trackType"` // CONSUMED, CONSUMED_BUT_FILTERED, PULL, NOT_CONSUME_YET, NOT_ONLINE, UNKNOWN
	ExceptionDesc  string `json:"exceptionDesc,omitempty"`
	ConsumerOffset *int64 `json:"consumerOffset,omitempty"`

	// For the console's delivery trace, not printed: the group's committed offset on the message's queue
	// whatever the group's state (nil when it has none there), and whether the group has no retry topic (no
	// push consumer of it was ever online: RocketMQ says UNKNOWN, with the route lookup's error).
	groupOffset  *int64
	noRetryTopic bool
}

func (mt messageTrack) String() string {
	return fmt.Sprintf("MessageTrack [consumerGroup=%s, trackType=%s, exceptionDesc=%s]", mt.ConsumerGroup, mt.TrackType,
		orNull(mt.ExceptionDesc))
}

// tracks finds, for each group that consumes the message's topic, whether it consumed the message (RocketMQ's
// messageTrackDetail): an online push group has consumed it when its committed offset on the message's queue
// is past it. Every track carries that offset in groupOffset when the group has one, online or not.
func (r *runner) tracks(ctx context.Context, v *messageView) []messageTrack {
	groups, err := r.consumersOf(ctx, v.StoreHost, v.Topic)
	if err != nil {
		return []messageTrack{{TrackType: "UNKNOWN", ExceptionDesc: err.Error()}}
	}
	out := []messageTrack{}
	for _, g := range groups {
		offset, offErr := r.queueOffsetOf(ctx, v, g)
		mt := messageTrack{ConsumerGroup: g, TrackType: "UNKNOWN", groupOffset: offset}
		cc, err := r.consumerConnection(ctx, g, "")
		switch {
		case err != nil:
			mt.ExceptionDesc = err.Error()
			mt.noRetryTopic = client.HasCode(err, remoting.TopicNotExist)
			if strings.Contains(err.Error(), "not online") {
				mt.TrackType = "NOT_ONLINE"
			}
		case cc.ConsumeType == "CONSUME_ACTIVELY":
			mt.TrackType = "PULL"
		case offErr != nil:
			mt.ExceptionDesc = offErr.Error()
		case offset == nil || *offset <= v.QueueOffset:
			mt.TrackType, mt.ConsumerOffset = "NOT_CONSUME_YET", offset
		default:
			mt.TrackType, mt.ConsumerOffset = "CONSUMED", offset
			if sub, ok := cc.SubscriptionTable[v.Topic]; ok && !tagMatches(sub.SubString, v.Tags) {
				mt.TrackType = "CONSUMED_BUT_FILTERED"
			}
		}
		out = append(out, mt)
	}
	return out
}

// queueOffsetOf is group's committed offset on the message's queue, from its consume stats; nil when it has
// none there.
func (r *runner) queueOffsetOf(ctx context.Context, v *messageView, group string) (*int64, error) {
	cs, err := r.consumeStats(ctx, group)
	if err != nil {
		return nil, err
	}
	ci, err := r.c.ClusterInfo(ctx)
	if err != nil {
		return nil, err
	}
	for _, e := range cs.OffsetTable {
		if e.MQ.Topic != v.Topic || e.MQ.QueueID != v.QueueID {
			continue
		}
		if bd, ok := ci.BrokerAddrTable[e.MQ.BrokerName]; ok && client.ReadAddr(bd.BrokerAddrs) == v.StoreHost {
			offset := e.Value.ConsumerOffset
			return &offset, nil
		}
	}
	return nil, nil
}

// tagMatches reports whether a TAG subscription ("*", "", or "a || b") takes tag.
func tagMatches(sub, tag string) bool {
	if s := strings.TrimSpace(sub); s == "" || s == "*" {
		return true
	}
	for _, t := range strings.Split(sub, "||") {
		if strings.TrimSpace(t) == tag {
			return true
		}
	}
	return false
}
