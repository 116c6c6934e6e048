package client

import (
	"context"
	"encoding/binary"
	"fmt"
	"strconv"
	"time"

	"github.com/rocketraft/rocketraft/message"
	"github.com/rocketraft/rocketraft/protocol"
	"github.com/rocketraft/rocketraft/remoting"
)

// Send is one SEND_MESSAGE_V2 (or, with Batch, SEND_BATCH_MESSAGE) to one queue.
type Send struct {
	Group      string // producer group
	Topic      string
	BrokerName string
	QueueID    int32
	Born       time.Time // bornTimestamp; zero: now
	Properties string    // encoded properties (message.EncodeProperties); UNIQ_KEY is the message id
	Body       []byte    // the body, or with Batch the batch body (AppendBatchRecord per message)
	Batch      bool
	SysFlag    int32 // message.SysFlagTransactionPrepared for a transaction's half message; else 0
}

// SendExt is the header of a SEND_MESSAGE_V2 of s: the one-letter keys of RocketMQ's
// SendMessageRequestHeaderV2 (default topic TBW102 with 4 queues, as the clients send).
func SendExt(s *Send) map[string]string {
	born := s.Born
	if born.IsZero() {
		born = time.Now()
	}
	return map[string]string{
		"a": s.Group,                  // producerGroup
		"b": s.Topic,                  // topic
		"c": protocol.TopicAutoCreate, // defaultTopic
		"d": "4",                      // defaultTopicQueueNums
		"e": strconv.Itoa(int(s.QueueID)),
		"f": strconv.Itoa(int(s.SysFlag)),
		"g": strconv.FormatInt(born.UnixMilli(), 10),
		"h": "0", // flag
		"i": s.Properties,
		"j": "0",     // reconsumeTimes
		"k": "false", // unitMode
		"m": strconv.FormatBool(s.Batch),
		"n": s.BrokerName,
	}
}

// SendCommand is the request of s in the client's header encoding, for Invoke, InvokeAsync or
// InvokeOneway.
func (c *Client) SendCommand(s *Send) *remoting.Command {
	code := remoting.SendMessageV2
	if s.Batch {
		code = remoting.SendBatchMessage
	}
	return c.Request(code, SendExt(s), s.Body)
}

// SendResult is a send's outcome, named as RocketMQ's SendResult.
type SendResult struct {
	BrokerName  string `json:"brokerName"`
	QueueID     int32  `json:"queueId"`
	SendStatus  string `json:"sendStatus"`
	MsgID       string `json:"msgId"`
	OffsetMsgID string `json:"offsetMsgId"`
	QueueOffset int64  `json:"queueOffset"`
	// RecallHandle is set for a timed message: RecallMessage with it withdraws the message before its time.
	RecallHandle string `json:"recallHandle,omitempty"`
}

// SendMessage sends s to the broker at addr and waits at most the client's Timeout. Answers that store the
// message but miss the asked durability (FLUSH_DISK_TIMEOUT, FLUSH_SLAVE_TIMEOUT, SLAVE_NOT_AVAILABLE) are
// results with that status, as in RocketMQ; other refusals are *ResponseError.
func (c *Client) SendMessage(ctx context.Context, addr string, s *Send) (*SendResult, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	req := c.SendCommand(s)
	code := remoting.RequestCode(req.Code)
	resp, err := c.rc.Invoke(ctx, addr, req)
	if err != nil {
		return nil, fmt.Errorf("%s to %s: %w", code, addr, err)
	}
	status := "SEND_OK"
	if err := AnswerError(code, addr, resp); err != nil {
		switch rc := remoting.ResponseCode(resp.Code); rc {
		case remoting.FlushDiskTimeout, remoting.FlushSlaveTimeout, remoting.SlaveNotAvailable:
			status = rc.String()
		default:
			return nil, err
		}
	}
	uniq, _ := message.PropertyValue([]byte(s.Properties), message.PropertyUniqKey)
	res := &SendResult{BrokerName: s.BrokerName, QueueID: s.QueueID, SendStatus: status, MsgID: string(uniq),
		OffsetMsgID: resp.OptString("msgId", "")}
	if qid, err := resp.OptInt32("queueId", s.QueueID); err == nil {
		res.QueueID = qid
	}
	res.QueueOffset, _ = resp.OptInt64("queueOffset", -1)
	res.RecallHandle = resp.OptString("recallHandle", "")
	return res, nil
}

// RecallMessage withdraws a timed message of topic before its delivery time (RECALL_MESSAGE to the master
// at addr of the broker the handle names) and returns its message id. group, the producer group, may be "".
func (c *Client) RecallMessage(ctx context.Context, addr, group, topic, handle string) (string, error) {
	h := &protocol.RecallMessageRequestHeader{ProducerGroup: group, Topic: topic, RecallHandle: handle}
	resp, err := c.Call(ctx, addr, remoting.RecallMessage, h.Ext(), nil)
	if err != nil {
		return "", err
	}
	return resp.OptString("msgId", ""), nil
}

// AppendBatchRecord appends one message of a SEND_BATCH_MESSAGE body:
//
//	totalSize int32 | magic int32 (0) | bodyCRC int32 (0) | flag int32 | bodyLen int32 | body | propsLen int16 | props
func AppendBatchRecord(dst, body, props []byte) []byte {
	total := 22 + len(body) + len(props)
	dst = binary.BigEndian.AppendUint32(dst, uint32(total))
	dst = binary.BigEndian.AppendUint32(dst, 0) // magic
	dst = binary.BigEndian.AppendUint32(dst, 0) // body CRC
	dst = binary.BigEndian.AppendUint32(dst, 0) // flag
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(body)))
	dst = append(dst, body...)
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(props)))
	return append(dst, props...)
}
