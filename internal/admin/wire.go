package admin

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/rocketraft/rocketraft/message"
	"github.com/rocketraft/rocketraft/protocol"
	"github.com/rocketraft/rocketraft/remoting"
)

// toolsConsumerGroup is the group RocketMQ's tools pull as (MixAll.TOOLS_CONSUMER_GROUP).
const toolsConsumerGroup = "TOOLS_CONSUMER"

// queueRef is one queue of a topic with the address of the broker that serves it.
type queueRef struct {
	protocol.MessageQueue
	addr string
}

// String is the queue as RocketMQ's MessageQueue.toString writes it.
func (q queueRef) String() string { return mqString(q.MessageQueue) }

// routeQueues lists a route's queues on brokers with a master, sorted: the write queues of writable
// brokers (write true) or the read queues of readable ones. brokerName != "" keeps that broker's only.
func routeQueues(route *protocol.TopicRouteData, topic, brokerName string, write bool) []queueRef {
	masters := map[string]string{}
	for _, bd := range route.BrokerDatas {
		masters[bd.BrokerName] = bd.BrokerAddrs[protocol.MasterID]
	}
	var out []queueRef
	for _, qd := range route.QueueDatas {
		n, perm := qd.ReadQueueNums, int32(protocol.PermRead)
		if write {
			n, perm = qd.WriteQueueNums, protocol.PermWrite
		}
		addr := masters[qd.BrokerName]
		if addr == "" || qd.Perm&perm == 0 || (brokerName != "" && qd.BrokerName != brokerName) {
			continue
		}
		for q := range n {
			out = append(out, queueRef{protocol.MessageQueue{Topic: topic, BrokerName: qd.BrokerName, QueueID: q}, addr})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].MessageQueue.Less(out[j].MessageQueue) })
	return out
}

// queueOffset asks for a queue's min (GET_MIN_OFFSET), max (GET_MAX_OFFSET) or by-time
// (SEARCH_OFFSET_BY_TIMESTAMP, with ts) offset.
func (r *runner) queueOffset(ctx context.Context, code remoting.RequestCode, q queueRef, ts int64) (int64, error) {
	ext := map[string]string{"topic": q.Topic, "queueId": strconv.Itoa(int(q.QueueID))}
	if code == remoting.SearchOffsetByTimestamp {
		ext["timestamp"] = strconv.FormatInt(ts, 10)
	}
	resp, err := r.c.invoke(ctx, q.addr, code, ext, nil)
	if err != nil {
		return 0, err
	}
	return resp.ExtInt64("offset")
}

// pullStatus is a pull's outcome, named as RocketMQ's PullStatus.
type pullStatus string

const (
	pullFound         pullStatus = "FOUND"
	pullNoNewMsg      pullStatus = "NO_NEW_MSG"
	pullNoMatchedMsg  pullStatus = "NO_MATCHED_MSG"
	pullOffsetIllegal pullStatus = "OFFSET_ILLEGAL"
)

// pull reads up to max messages of q from offset without waiting and without committing anything.
func (r *runner) pull(ctx context.Context, group string, q queueRef, offset int64, max int) (pullStatus, []*message.MessageExt, int64, error) {
	ext := map[string]string{
		"consumerGroup": group, "topic": q.Topic, "queueId": strconv.Itoa(int(q.QueueID)),
		"queueOffset": strconv.FormatInt(offset, 10), "maxMsgNums": strconv.Itoa(max),
		"sysFlag": strconv.Itoa(remoting.PullFlagSubscription), "commitOffset": "0", "suspendTimeoutMillis": "0",
		"subscription": "*", "subVersion": "0", "expressionType": "TAG",
	}
	resp, err := r.c.invoke(ctx, q.addr, remoting.PullMessage, ext, nil)
	var re *ResponseError
	if err != nil && !errors.As(err, &re) {
		return "", nil, offset, err
	}
	next, nerr := resp.ExtInt64("nextBeginOffset")
	switch remoting.ResponseCode(resp.Code) {
	case remoting.Success:
		if nerr != nil {
			return "", nil, offset, fmt.Errorf("pull %s: %w", mqString(q.MessageQueue), nerr)
		}
		msgs, err := decodeMessages(resp.Body)
		return pullFound, msgs, next, err
	case remoting.PullNotFound:
		return pullNoNewMsg, nil, next, nil
	case remoting.PullRetryImmediately:
		return pullNoMatchedMsg, nil, next, nil
	case remoting.PullOffsetMoved:
		return pullOffsetIllegal, nil, next, nil
	}
	return "", nil, offset, err
}

// decodeMessages decodes the stored records of a PULL or QUERY_MESSAGE answer.
func decodeMessages(body []byte) ([]*message.MessageExt, error) {
	var out []*message.MessageExt
	for off := 0; off < len(body); {
		m, err := message.DecodeMessage(body[off:], true)
		if err != nil {
			return out, fmt.Errorf("record at byte %d of the answer: %w", off, err)
		}
		if m.StoreSize <= 0 {
			return out, fmt.Errorf("record at byte %d of the answer has size %d", off, m.StoreSize)
		}
		out = append(out, m)
		off += int(m.StoreSize)
	}
	return out, nil
}

// queryMessages is QUERY_MESSAGE for key on every broker of topic's route: messages indexed under the key
// (or, with uniq, under the unique id), stored between begin and end (ms).
func (r *runner) queryMessages(ctx context.Context, topic, key string, uniq bool, maxNum int, begin, end int64) ([]*message.MessageExt, error) {
	route, err := r.c.route(ctx, topic)
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
	for _, ref := range routeBrokers(route) {
		resp, err := r.c.invoke(ctx, ref.addr, remoting.QueryMessage, ext, nil)
		if answered(err, remoting.QueryNotFound) {
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		msgs, err := decodeMessages(resp.Body)
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
	resp, err := r.c.invoke(ctx, host.String(), remoting.ViewMessageByID, map[string]string{"offset": strconv.FormatInt(phy, 10)}, nil)
	if err != nil {
		return nil, err
	}
	msgs, err := decodeMessages(resp.Body)
	if err != nil || len(msgs) == 0 {
		return nil, fmt.Errorf("message %s: the broker's answer holds no message: %v", offsetID, err)
	}
	return msgs[0], nil
}

// sendResult is a send's outcome, named as RocketMQ's SendResult.
type sendResult struct {
	BrokerName  string `json:"brokerName"`
	QueueID     int32  `json:"queueId"`
	SendStatus  string `json:"sendStatus"`
	MsgID       string `json:"msgId"`
	OffsetMsgID string `json:"offsetMsgId"`
	QueueOffset int64  `json:"queueOffset"`
}

// send stores one message in q (SEND_MESSAGE), with a new unique id unless props has one. Answers that
// store the message but miss the asked durability (FLUSH_DISK_TIMEOUT, FLUSH_SLAVE_TIMEOUT,
// SLAVE_NOT_AVAILABLE) are results with that status, as in RocketMQ; other refusals are errors.
func (r *runner) send(ctx context.Context, q queueRef, props map[string]string, body []byte) (*sendResult, error) {
	uniq := props[message.PropertyUniqKey]
	if uniq == "" {
		uniq = newUniqID()
		props[message.PropertyUniqKey] = uniq
	}
	props[message.PropertyWaitStoreMsgOK] = "true"
	ext := map[string]string{
		"producerGroup": strconv.FormatInt(time.Now().UnixMilli(), 10), "topic": q.Topic, "defaultTopic": "TBW102",
		"defaultTopicQueueNums": "4", "queueId": strconv.Itoa(int(q.QueueID)), "sysFlag": "0",
		"bornTimestamp": strconv.FormatInt(time.Now().UnixMilli(), 10), "flag": "0",
		"properties": message.EncodeProperties(props), "reconsumeTimes": "0", "unitMode": "false", "batch": "false",
	}
	resp, err := r.c.invoke(ctx, q.addr, remoting.SendMessage, ext, body)
	status := "SEND_OK"
	if err != nil {
		var re *ResponseError
		if !errors.As(err, &re) {
			return nil, err
		}
		switch re.Code {
		case remoting.FlushDiskTimeout, remoting.FlushSlaveTimeout, remoting.SlaveNotAvailable:
			status = re.Code.String()
		default:
			return nil, err
		}
	}
	res := &sendResult{BrokerName: q.BrokerName, QueueID: q.QueueID, SendStatus: status, MsgID: uniq,
		OffsetMsgID: resp.OptString("msgId", "")}
	if qid, err := resp.OptInt32("queueId", q.QueueID); err == nil {
		res.QueueID = qid
	}
	res.QueueOffset, _ = resp.OptInt64("queueOffset", -1)
	return res, nil
}

// uniqPrefix is this process's part of the message ids it makes: IPv4 address, pid, and 4 random bytes,
// as RocketMQ's MessageClientIDSetter lays them out.
var uniqPrefix = func() []byte {
	b := make([]byte, 10)
	copy(b, localIPv4())
	binary.BigEndian.PutUint16(b[4:], uint16(os.Getpid()))
	_, _ = rand.Read(b[6:])
	return b
}()

var uniqSeq atomic.Uint32

// newUniqID is a message unique id (UNIQ_KEY): the process prefix, milliseconds since the start of the
// month, and a counter; 32 upper-case hex digits.
func newUniqID() string {
	now := time.Now()
	month := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, now.Location())
	b := make([]byte, 16)
	copy(b, uniqPrefix)
	binary.BigEndian.PutUint32(b[10:], uint32(now.Sub(month).Milliseconds()))
	binary.BigEndian.PutUint16(b[14:], uint16(uniqSeq.Add(1)))
	return strings.ToUpper(hex.EncodeToString(b))
}

func localIPv4() net.IP {
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
				return n.IP.To4()
			}
		}
	}
	return net.IPv4(127, 0, 0, 1).To4()
}
