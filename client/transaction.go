package client

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/rocketraft/rocketraft/message"
	"github.com/rocketraft/rocketraft/protocol"
	"github.com/rocketraft/rocketraft/remoting"
)

// EndTransaction is one END_TRANSACTION: the outcome of the half message a transactional send stored.
type EndTransaction struct {
	Group                string // producer group (the half message's PGROUP)
	TranStateTableOffset int64  // the half message's offset in the half queue (the send's queueOffset)
	CommitLogOffset      int64  // the half message's CommitLog offset (in its offset message id)
	Commit, Rollback     bool   // neither: unknown, the broker's check-back asks again later
	FromCheck            bool   // the answer to a CHECK_TRANSACTION_STATE
	MsgID                string // the message's UNIQ_KEY
	TransactionID        string
}

// EndTransaction sends e to the broker at addr and waits for its answer at most the client's Timeout.
func (c *Client) EndTransaction(ctx context.Context, addr string, e *EndTransaction) error {
	state := message.SysFlagTransactionNotType
	switch {
	case e.Commit:
		state = message.SysFlagTransactionCommit
	case e.Rollback:
		state = message.SysFlagTransactionRollback
	}
	_, err := c.Call(ctx, addr, remoting.EndTransaction, map[string]string{
		"producerGroup":        e.Group,
		"tranStateTableOffset": strconv.FormatInt(e.TranStateTableOffset, 10),
		"commitLogOffset":      strconv.FormatInt(e.CommitLogOffset, 10),
		"commitOrRollback":     strconv.Itoa(int(state)),
		"fromTransactionCheck": strconv.FormatBool(e.FromCheck),
		"msgId":                e.MsgID,
		"transactionId":        e.TransactionID,
	}, nil)
	return err
}

// CheckTransaction is a broker's CHECK_TRANSACTION_STATE: the half message whose producer should say how
// its transaction ended (with EndTransaction, FromCheck set).
type CheckTransaction struct {
	TranStateTableOffset int64
	CommitLogOffset      int64
	MsgID                string // UNIQ_KEY
	TransactionID        string
	OffsetMsgID          string
	Msg                  *message.MessageExt // the half message, body included
}

// OnCheckTransaction has h called, on a goroutine of the client, with every CHECK_TRANSACTION_STATE a
// broker sends on one of this client's connections (after a Heartbeat naming a producer group); a request
// that does not decode is logged and dropped. Call it once, before the first Heartbeat: the check-back has one
// owner per client (the gRPC endpoint's, proxy.New), and a second call panics (remoting.Client.RegisterHandler).
func (c *Client) OnCheckTransaction(h func(*CheckTransaction)) {
	c.rc.RegisterHandler(remoting.CheckTransactionState, func(req *remoting.Command) *remoting.Command {
		ct := &CheckTransaction{MsgID: req.OptString("msgId", ""), TransactionID: req.OptString("transactionId", ""),
			OffsetMsgID: req.OptString("offsetMsgId", "")}
		var err error
		if ct.TranStateTableOffset, err = req.ExtInt64("tranStateTableOffset"); err == nil {
			ct.CommitLogOffset, err = req.ExtInt64("commitLogOffset")
		}
		if err == nil {
			ct.Msg, err = message.DecodeMessage(req.Body, true)
		}
		if err != nil {
			c.log.Warn("CHECK_TRANSACTION_STATE dropped: it does not decode", "err", err)
			return nil
		}
		h(ct)
		return nil // one-way
	})
}

// Heartbeat sends HEART_BEAT with hb to the broker at addr: the broker then knows hb's producer groups
// (whose transactions it asks this client about) and consumer groups on this client's connection.
func (c *Client) Heartbeat(ctx context.Context, addr string, hb *protocol.HeartbeatData) error {
	body, err := json.Marshal(hb)
	if err != nil {
		return fmt.Errorf("HEART_BEAT to %s: %w", addr, err)
	}
	_, err = c.Call(ctx, addr, remoting.HeartBeat, nil, body)
	return err
}

// Unregister sends UNREGISTER_CLIENT for clientID's producer group or consumer group ("" for none) to the
// broker at addr.
func (c *Client) Unregister(ctx context.Context, addr, clientID, producerGroup, consumerGroup string) error {
	ext := map[string]string{"clientID": clientID}
	if producerGroup != "" {
		ext["producerGroup"] = producerGroup
	}
	if consumerGroup != "" {
		ext["consumerGroup"] = consumerGroup
	}
	_, err := c.Call(ctx, addr, remoting.UnregisterClient, ext, nil)
	return err
}

// SendBack is one CONSUMER_SEND_MSG_BACK: a consumed message handed back to its broker for a retry, or with
// DelayLevel -1 straight to the group's dead-letter queue %DLQ%<group>.
type SendBack struct {
	Group           string
	CommitLogOffset int64 // the message's CommitLog offset at that broker
	OriginMsgID     string
	OriginTopic     string
	DelayLevel      int32 // -1: the dead-letter queue now
	MaxReconsume    int32 // the group's retry budget as the consumer knows it; -1: the broker's config
}

// SendMessageBack sends b to the broker at addr and waits at most the client's Timeout.
func (c *Client) SendMessageBack(ctx context.Context, addr string, b *SendBack) error {
	req := c.Request(remoting.ConsumerSendMsgBack, map[string]string{
		"group":             b.Group,
		"offset":            strconv.FormatInt(b.CommitLogOffset, 10),
		"delayLevel":        strconv.Itoa(int(b.DelayLevel)),
		"originMsgId":       b.OriginMsgID,
		"originTopic":       b.OriginTopic,
		"unitMode":          "false",
		"maxReconsumeTimes": strconv.Itoa(int(b.MaxReconsume)),
	}, nil)
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	resp, err := c.rc.Invoke(ctx, addr, req)
	if err != nil {
		return fmt.Errorf("%s to %s: %w", remoting.ConsumerSendMsgBack, addr, err)
	}
	return AnswerError(remoting.ConsumerSendMsgBack, addr, resp)
}
