package admin

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/rocketraft/rocketraft/client"
	"github.com/rocketraft/rocketraft/message"
	"github.com/rocketraft/rocketraft/remoting"
)

// toolsConsumerGroup is the group RocketMQ's tools pull as (MixAll.TOOLS_CONSUMER_GROUP).
const toolsConsumerGroup = "TOOLS_CONSUMER"

// pull reads up to max messages of q from offset without waiting and without committing anything. A FOUND
// answer without a nextBeginOffset is an error.
func (r *runner) pull(ctx context.Context, group string, q client.Queue, offset int64, max int) (client.PullStatus, []*message.MessageExt, int64, error) {
	res, err := r.c.PullMessage(ctx, q.Addr, &client.Pull{Group: group, Topic: q.Topic, QueueID: q.QueueID,
		Offset: offset, MaxNums: max})
	if res == nil {
		return "", nil, offset, err
	}
	if res.Status == client.PullFound && res.NextBegin < 0 {
		return "", nil, offset, fmt.Errorf("pull %s: answer without a nextBeginOffset", client.MQString(q.MessageQueue))
	}
	return res.Status, res.Msgs, res.NextBegin, err
}

// topicBrokers are the brokers to ask about topic: the masters of cluster when it is given (RocketMQ 5's -c,
// for topics the name servers do not route), else the brokers of the topic's route.
func (r *runner) topicBrokers(ctx context.Context, topic, cluster string) ([]brokerRef, error) {
	if cluster != "" {
		return r.targets(ctx, "", cluster, true)
	}
	route, err := r.c.Route(ctx, topic)
	if err != nil {
		return nil, err
	}
	return routeBrokers(route), nil
}

// queryMessages is QUERY_MESSAGE for key on every broker of topic (topicBrokers): messages indexed under the
// key (or, with uniq, under the unique id), stored between begin and end (ms).
func (r *runner) queryMessages(ctx context.Context, topic, cluster, key string, uniq bool, maxNum int, begin, end int64) ([]*message.MessageExt, error) {
	refs, err := r.topicBrokers(ctx, topic, cluster)
	if err != nil {
		return nil, err
	}
	ext := map[string]string{"topic": topic, "key": key, "maxNum": strconv.Itoa(maxNum),
		"beginTimestamp": strconv.FormatInt(begin, 10), "endTimestamp": strconv.FormatInt(end, 10)}
	if uniq {
		ext["_UNIQUE_KEY_QUERY"] = "true"
	}
	var (
		out  []*message.MessageExt
		errs []error
	)
	for _, ref := range refs {
		resp, err := r.c.Call(ctx, ref.addr, remoting.QueryMessage, ext, nil)
		if client.HasCode(err, remoting.QueryNotFound) {
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		msgs, err := client.DecodeMessages(resp.Body)
		if err != nil {
			errs = append(errs, err)
		}
		for _, m := range msgs {
			if m.Topic == topic && matchesKey(m, key, uniq) {
				out = append(out, m)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].StoreTimestamp < out[j].StoreTimestamp })
	return out, errors.Join(errs...)
}

// matchesKey keeps what the index returned for key: messages with it among their keys, or as their unique id
// (the index hashes, so other keys can come back).
func matchesKey(m *message.MessageExt, key string, uniq bool) bool {
	props := message.ParseProperties(m.Properties)
	if uniq {
		return props[message.PropertyUniqKey] == key
	}
	for _, k := range strings.Split(props[message.PropertyKeys], message.KeySeparator) {
		if k == key {
			return true
		}
	}
	return false
}

// viewMessage is VIEW_MESSAGE_BY_ID at the broker an offset message id names.
func (r *runner) viewMessage(ctx context.Context, offsetID string) (*message.MessageExt, error) {
	host, phy, err := message.DecodeOffsetMsgID(offsetID)
	if err != nil {
		return nil, err
	}
	resp, err := r.c.Call(ctx, host.String(), remoting.ViewMessageByID, map[string]string{"offset": strconv.FormatInt(phy, 10)}, nil)
	if err != nil {
		return nil, err
	}
	msgs, err := client.DecodeMessages(resp.Body)
	if err != nil || len(msgs) == 0 {
		return nil, fmt.Errorf("message %s: the broker's answer holds no message: %v", offsetID, err)
	}
	return msgs[0], nil
}

// send stores one message in q (SEND_MESSAGE_V2), with a new unique id unless props has one, waiting for the
// store (WAIT true). Answers that store the message but miss the asked durability are results with that
// status (client.SendMessage).
func (r *runner) send(ctx context.Context, q client.Queue, props map[string]string, body []byte) (*client.SendResult, error) {
	if props[message.PropertyUniqKey] == "" {
		props[message.PropertyUniqKey] = client.NewUniqID()
	}
	props[message.PropertyWaitStoreMsgOK] = "true"
	return r.c.SendMessage(ctx, q.Addr, &client.Send{Group: strconv.FormatInt(time.Now().UnixMilli(), 10),
		Topic: q.Topic, BrokerName: q.BrokerName, QueueID: q.QueueID, Properties: message.EncodeProperties(props),
		Body: body})
}

// sendToAny sends one message to one of queues, starting at a random one and trying up to sendAttempts of
// them, as RocketMQ's producer retries; it returns the first success or every failure joined. props gets the
// message's UNIQ_KEY (one for all attempts).
func (r *runner) sendToAny(ctx context.Context, queues []client.Queue, props map[string]string, body []byte) (*client.SendResult, error) {
	if len(queues) == 0 {
		return nil, errors.New("no writable queue")
	}
	start := rand.IntN(len(queues))
	var errs []error
	for i := range min(sendAttempts, len(queues)) {
		res, err := r.send(ctx, queues[(start+i)%len(queues)], props, body)
		if err == nil {
			return res, nil
		}
		errs = append(errs, err)
	}
	return nil, errors.Join(errs...)
}
