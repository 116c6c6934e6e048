package bench

import (
	"context"
	"log/slog"
	"strconv"
	"time"

	"github.com/rocketraft/rocketraft/protocol"
	"github.com/rocketraft/rocketraft/remoting"
)

// Wire is mqbench's request maker for other tools of this module (internal/chaos): name server routes, topic
// creation, queue offsets, over one remoting.Client with ROCKETMQ binary headers.
type Wire struct{ w *wire }

// NewWire talks to namesrvs; timeout bounds each request.
func NewWire(namesrvs []string, timeout time.Duration, log *slog.Logger) *Wire {
	c := DefaultCommon()
	c.NamesrvAddrs, c.Timeout = namesrvs, timeout
	return &Wire{w: newWire(c, remoting.SerializeRocketMQ, 1, log)}
}

// Client is the wire's remoting client, for requests of the caller's own.
func (w *Wire) Client() *remoting.Client { return w.w.rc }

// Request is a request in the wire's header encoding.
func (w *Wire) Request(code remoting.RequestCode, ext map[string]string, body []byte) *remoting.Command {
	return w.w.request(code, ext, body)
}

// Route asks the name servers for topic's route.
func (w *Wire) Route(ctx context.Context, topic string) (*protocol.TopicRouteData, error) {
	return w.w.route(ctx, topic)
}

// EnsureTopic creates topic with queues queues on every broker master unless it is routed, and waits until
// every name server routes it.
func (w *Wire) EnsureTopic(ctx context.Context, topic string, queues int, log *slog.Logger) error {
	_, err := w.w.ensureTopic(ctx, topic, queues, log)
	return err
}

// QueueOffset asks the broker at addr for the min (GET_MIN_OFFSET) or max (GET_MAX_OFFSET) offset of queue id
// of topic on broker brokerName.
func (w *Wire) QueueOffset(ctx context.Context, code remoting.RequestCode, addr, brokerName, topic string, id int32) (int64, error) {
	return w.w.queueOffset(ctx, code, topic, queueRef{broker: brokerName, addr: addr, id: id})
}

// Close closes the client.
func (w *Wire) Close() error { return w.w.close() }

// SendExt is the header of a SEND_MESSAGE_V2 of one message to queue id of topic on broker brokerName, born
// now, with the encoded properties props: the one-letter keys of RocketMQ's SendMessageRequestHeaderV2.
func SendExt(group, topic, brokerName string, id int32, now time.Time, props string) map[string]string {
	return map[string]string{
		"a": group,    // producerGroup
		"b": topic,    // topic
		"c": "TBW102", // defaultTopic
		"d": "4",      // defaultTopicQueueNums
		"e": strconv.Itoa(int(id)),
		"f": "0", // sysFlag
		"g": strconv.FormatInt(now.UnixMilli(), 10),
		"h": "0", // flag
		"i": props,
		"j": "0",     // reconsumeTimes
		"k": "false", // unitMode
		"m": "false", // batch
		"n": brokerName,
	}
}

// PullExt is the header of a long-polling PULL_MESSAGE of queue id of topic on broker brokerName from offset,
// at most maxNums messages, held up to suspend, with the subscription "*" in the request (no heartbeat
// needed); commit also commits offset for group.
func PullExt(group, topic, brokerName string, id int32, offset int64, maxNums int, suspend time.Duration, commit bool) map[string]string {
	sysFlag := remoting.PullFlagSuspend | remoting.PullFlagSubscription
	if commit {
		sysFlag |= remoting.PullFlagCommitOffset
	}
	return map[string]string{
		"consumerGroup":        group,
		"topic":                topic,
		"queueId":              strconv.Itoa(int(id)),
		"queueOffset":          strconv.FormatInt(offset, 10),
		"maxMsgNums":           strconv.Itoa(maxNums),
		"sysFlag":              strconv.Itoa(sysFlag),
		"commitOffset":         strconv.FormatInt(offset, 10),
		"suspendTimeoutMillis": strconv.FormatInt(suspend.Milliseconds(), 10),
		"subscription":         "*",
		"subVersion":           "0",
		"expressionType":       "TAG",
		"bname":                brokerName,
	}
}

// MessageProps encodes message properties as a send carries them: KEYS keys and UNIQ_KEY uniq (either may
// be empty).
func MessageProps(keys, uniq string) string {
	return string(messageProps{keys: keys}.encode(nil, uniq))
}
