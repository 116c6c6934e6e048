package client

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/rocketraft/rocketraft/message"
	"github.com/rocketraft/rocketraft/remoting"
)

// Pull is one PULL_MESSAGE of one queue, with the subscription in the request (no heartbeat needed).
type Pull struct {
	Group      string
	Topic      string
	BrokerName string
	QueueID    int32
	Offset     int64
	MaxNums    int
	// LongPoll asks the broker to hold a pull that finds nothing for Suspend (the suspend flag).
	LongPoll bool
	Suspend  time.Duration
	// Commit asks the broker to store CommitOffset as the group's offset of the queue (the commit flag).
	Commit       bool
	CommitOffset int64
	Subscription string // tag expression; "" is "*"
}

// PullExt is the header of p.
func PullExt(p *Pull) map[string]string {
	sysFlag := remoting.PullFlagSubscription
	if p.LongPoll {
		sysFlag |= remoting.PullFlagSuspend
	}
	if p.Commit {
		sysFlag |= remoting.PullFlagCommitOffset
	}
	sub := p.Subscription
	if sub == "" {
		sub = "*"
	}
	ext := map[string]string{
		"consumerGroup":        p.Group,
		"topic":                p.Topic,
		"queueId":              strconv.Itoa(int(p.QueueID)),
		"queueOffset":          strconv.FormatInt(p.Offset, 10),
		"maxMsgNums":           strconv.Itoa(p.MaxNums),
		"sysFlag":              strconv.Itoa(sysFlag),
		"commitOffset":         strconv.FormatInt(p.CommitOffset, 10),
		"suspendTimeoutMillis": strconv.FormatInt(p.Suspend.Milliseconds(), 10),
		"subscription":         sub,
		"subVersion":           "0",
		"expressionType":       "TAG",
	}
	if p.BrokerName != "" {
		ext["bname"] = p.BrokerName
	}
	return ext
}

// PullCommand is the request of p in the client's header encoding, for Invoke or InvokeAsync (bounded by
// their ctx: give a long poll more than Suspend).
func (c *Client) PullCommand(p *Pull) *remoting.Command {
	return c.Request(remoting.PullMessage, PullExt(p), nil)
}

// PullStatus is a pull's outcome, named as RocketMQ's PullStatus.
type PullStatus string

// The outcomes of a pull.
const (
	PullFound         PullStatus = "FOUND"
	PullNoNewMsg      PullStatus = "NO_NEW_MSG"
	PullNoMatchedMsg  PullStatus = "NO_MATCHED_MSG"
	PullOffsetIllegal PullStatus = "OFFSET_ILLEGAL"
)

// PullResult is a pull's answer decoded.
type PullResult struct {
	Status    PullStatus
	Msgs      []*message.MessageExt // FOUND: the messages, with bodies
	NextBegin int64                 // the offset to pull next; -1 when the answer carried none
}

// ParsePull decodes the answer to a pull sent to addr. SUCCESS, PULL_NOT_FOUND, PULL_RETRY_IMMEDIATELY and
// PULL_OFFSET_MOVED are results (FOUND, NO_NEW_MSG, NO_MATCHED_MSG, OFFSET_ILLEGAL); any other code is a
// *ResponseError. A FOUND answer whose records do not decode returns the result with the messages before
// the bad record, and the error.
func ParsePull(addr string, resp *remoting.Command) (*PullResult, error) {
	next, err := resp.ExtInt64("nextBeginOffset")
	if err != nil {
		next = -1
	}
	res := &PullResult{NextBegin: next}
	switch remoting.ResponseCode(resp.Code) {
	case remoting.Success:
		res.Status = PullFound
		res.Msgs, err = DecodeMessages(resp.Body)
		return res, err
	case remoting.PullNotFound:
		res.Status = PullNoNewMsg
	case remoting.PullRetryImmediately:
		res.Status = PullNoMatchedMsg
	case remoting.PullOffsetMoved:
		res.Status = PullOffsetIllegal
	default:
		return nil, AnswerError(remoting.PullMessage, addr, resp)
	}
	return res, nil
}

// PullMessage sends p to the broker at addr, waits at most the client's Timeout (do not long-poll through
// it), and decodes the answer (ParsePull).
func (c *Client) PullMessage(ctx context.Context, addr string, p *Pull) (*PullResult, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	resp, err := c.rc.Invoke(ctx, addr, c.PullCommand(p))
	if err != nil {
		return nil, fmt.Errorf("%s to %s: %w", remoting.PullMessage, addr, err)
	}
	return ParsePull(addr, resp)
}

// DecodeMessages decodes the stored records of a PULL_MESSAGE, POP_MESSAGE or QUERY_MESSAGE answer,
// bodies included. The answer's body is the remoting layer's own allocation, read once and never
// written again, so the messages' bodies are slices of it rather than copies (message.DecodeRecords).
// On a bad record it returns the messages before it and an error naming its byte offset.
func DecodeMessages(body []byte) ([]*message.MessageExt, error) {
	msgs, err := message.DecodeRecords(body)
	if err != nil {
		return msgs, fmt.Errorf("the answer's %w", err)
	}
	return msgs, nil
}
