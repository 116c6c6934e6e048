package broker

import (
	"context"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/rocketraft/rocketraft/broker/internal/txcheck"
	"github.com/rocketraft/rocketraft/message"
	"github.com/rocketraft/rocketraft/protocol"
	"github.com/rocketraft/rocketraft/remoting"
	"github.com/rocketraft/rocketraft/store"
)

// opRemoveTag tags an op record (RocketMQ's): the half message at its body's offset is done.
const opRemoveTag = "d"

// toHalf parks a transaction's half message in RMQ_SYS_TRANS_HALF_TOPIC queue 0, keeping its real topic
// and queue in REAL_TOPIC / REAL_QID. It is stored as a plain message so the half queue is readable;
// consumers of the real topic never see it.
func (b *Broker) toHalf(m *message.Message) error {
	if _, err := b.topics.createIfAbsent(TopicTransHalf, 1, protocol.PermRead|protocol.PermWrite, 0); err != nil {
		return err
	}
	realTopic, realQID := m.Topic, m.QueueID
	m.Properties = message.EditProperties(m.Properties, func(p map[string]string) {
		p[message.PropertyRealTopic] = realTopic
		p[message.PropertyRealQueueID] = strconv.Itoa(int(realQID))
	})
	m.Topic, m.QueueID = TopicTransHalf, 0
	m.SysFlag &^= message.SysFlagTransactionMask
	return nil
}

type endTransactionHeader struct {
	producerGroup        string
	tranStateTableOffset int64
	commitLogOffset      int64
	commitOrRollback     int32
	fromTransactionCheck bool
	msgID                string
}

func parseEndTransactionHeader(req *remoting.Command) (*endTransactionHeader, error) {
	h := &endTransactionHeader{}
	var err error
	if h.producerGroup, err = req.ExtString("producerGroup"); err != nil {
		return nil, err
	}
	if h.tranStateTableOffset, err = req.ExtInt64("tranStateTableOffset"); err != nil {
		return nil, err
	}
	if h.commitLogOffset, err = req.ExtInt64("commitLogOffset"); err != nil {
		return nil, err
	}
	if h.commitOrRollback, err = req.ExtInt32("commitOrRollback"); err != nil {
		return nil, err
	}
	if h.fromTransactionCheck, err = req.OptBool("fromTransactionCheck", false); err != nil {
		return nil, err
	}
	h.msgID = req.OptString("msgId", "")
	return h, nil
}

// processEndTransaction is END_TRANSACTION: commit writes the real message and an op record, rollback
// only the op record; an unknown state leaves the half message to the check-back service.
func (b *Broker) processEndTransaction(ctx context.Context, conn *remoting.Conn, req *remoting.Command) *remoting.Command {
	if !b.role.acceptsWrites() {
		return errResponse(remoting.SlaveNotAvailable, "the broker %s is a slave; end the transaction on its master", b.addr)
	}
	h, err := parseEndTransactionHeader(req)
	if err != nil {
		return errResponse(remoting.InvalidParameter, "bad END_TRANSACTION header: %v", err)
	}
	tran := h.commitOrRollback
	if tran != message.SysFlagTransactionCommit && tran != message.SysFlagTransactionRollback {
		if tran != message.SysFlagTransactionNotType {
			return errResponse(remoting.InvalidParameter, "commitOrRollback %d is not 0, 8 (commit) or 12 (rollback)", tran)
		}
		b.log.Debug("transaction state unknown; the check-back will ask again", "group", h.producerGroup, "msgId", h.msgID, "fromCheck", h.fromTransactionCheck)
		return remoting.NewResponse(remoting.Success, "")
	}
	half, err := b.store.LookMessageByOffset(h.commitLogOffset)
	if err != nil {
		return errResponse(remoting.SystemError, "find prepared transaction message failed: commitLogOffset %d: %v", h.commitLogOffset, err)
	}
	if resp := checkHalf(half, h); resp != nil {
		return resp
	}
	realTopic, _ := message.FindProperty(half.Properties, message.PropertyRealTopic)
	born := time.UnixMilli(half.BornTimestamp)
	if tran == message.SysFlagTransactionRollback {
		if err := b.writeOp(ctx, half.QueueOffset); err != nil {
			return errResponse(remoting.SystemError, "record the rollback: %v", err)
		}
		b.stats.RecordEnd(realTopic, false, born)
		return remoting.NewResponse(remoting.Success, "")
	}
	final := message.RestoreReal(half, message.PropertyRealTopic, message.PropertyRealQueueID, message.PropertyTransactionPrepared)
	final.SysFlag = final.SysFlag&^message.SysFlagTransactionMask | message.SysFlagTransactionCommit
	final.PreparedTransactionOffset = h.commitLogOffset
	if _, err := b.topics.createIfAbsent(TopicTransOpHalf, 1, protocol.PermRead|protocol.PermWrite, 0); err != nil {
		return errResponse(remoting.SystemError, "record the commit: %v", err)
	}
	reply := func(resp *remoting.Command) {
		if err := conn.Reply(req, resp); err != nil {
			b.log.Debug("end transaction reply", "client", conn.RemoteAddr(), "err", err)
		}
	}
	// done runs on the store's flusher (SYNC_FLUSH) or the HA group transfer (SYNC_MASTER) and must not
	// block: the op record is put asynchronously too. A synchronous put here waited for the very goroutine
	// it ran on, stalling every durable send until syncFlushTimeout, or for good on a SYNC_MASTER (make soak).
	b.putAsync(final, func(_ store.PutResult, err error) {
		if err != nil {
			reply(putErrorResponse(err, final.Topic))
			return
		}
		b.stats.RecordEnd(final.Topic, true, born)
		b.putter.PutMessageAsync(b.opMessage(half.QueueOffset), func(_ store.PutResult, err error) {
			if err != nil {
				b.log.Error("committed transaction message stored but its op record failed; it may be checked again", "err", err)
			}
			reply(remoting.NewResponse(remoting.Success, ""))
		})
	})
	return nil
}

// checkHalf verifies that END_TRANSACTION names the half message it points at (RocketMQ's
// checkPrepareMessage).
func checkHalf(half *message.MessageExt, h *endTransactionHeader) *remoting.Command {
	props := message.ParseProperties(half.Properties)
	switch {
	case half.Topic != TopicTransHalf:
		return errResponse(remoting.SystemError, "the message at commitLogOffset %d is in topic %s, not a prepared transaction message", h.commitLogOffset, half.Topic)
	case props[message.PropertyProducerGroup] != h.producerGroup:
		return errResponse(remoting.SystemError, "the producer group wrong: the half message belongs to %q, not %q", props[message.PropertyProducerGroup], h.producerGroup)
	case half.QueueOffset != h.tranStateTableOffset:
		return errResponse(remoting.SystemError, "the transaction state table offset wrong: %d, the half message is at %d", h.tranStateTableOffset, half.QueueOffset)
	}
	return nil
}

// writeOp records in RMQ_SYS_TRANS_OP_HALF_TOPIC that the half message at halfOffset is resolved, waiting for
// the store's durability policy (never from a store callback: see processEndTransaction).
func (b *Broker) writeOp(ctx context.Context, halfOffset int64) error {
	if _, err := b.topics.createIfAbsent(TopicTransOpHalf, 1, protocol.PermRead|protocol.PermWrite, 0); err != nil {
		return err
	}
	_, err := b.putter.PutMessage(ctx, b.opMessage(halfOffset))
	return err
}

// opMessage is the op record of the half message at halfOffset (its topic must exist).
func (b *Broker) opMessage(halfOffset int64) *message.Message {
	return &message.Message{Topic: TopicTransOpHalf, QueueID: 0, Body: []byte(strconv.FormatInt(halfOffset, 10)),
		Properties:    message.EncodeProperties(map[string]string{message.PropertyTags: opRemoveTag}),
		BornTimestamp: time.Now().UnixMilli(), BornHost: b.storeHost}
}

// txProducers is the client table as the transaction check-back (broker/internal/txcheck) reaches
// producers: it asks one with a CHECK_TRANSACTION_STATE request, one way.
type txProducers struct{ m *clientManager }

func (p txProducers) Connected(group string) bool { return len(p.m.producerConns(group)) > 0 }

func (p txProducers) Ask(c txcheck.Check) (string, error) {
	conns := p.m.producerConns(c.Group)
	if len(conns) == 0 {
		return "", txcheck.ErrNoProducer
	}
	req := remoting.NewRequest(remoting.CheckTransactionState, map[string]string{
		"tranStateTableOffset": strconv.FormatInt(c.TranStateTableOffset, 10),
		"commitLogOffset":      strconv.FormatInt(c.CommitLogOffset, 10),
		"msgId":                c.MsgID,
		"transactionId":        c.TransactionID,
		"offsetMsgId":          c.OffsetMsgID,
		"topic":                c.Topic,
	}, c.Record)
	req.MarkOneway()
	conn := conns[rand.IntN(len(conns))]
	return conn.RemoteAddr(), conn.SendOneway(req)
}
