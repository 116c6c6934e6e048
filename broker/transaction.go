package broker

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/rocketraft/rocketraft/message"
	"github.com/rocketraft/rocketraft/protocol"
	"github.com/rocketraft/rocketraft/remoting"
	"github.com/rocketraft/rocketraft/store"
)

// Transaction bookkeeping names, as RocketMQ spells them.
const (
	transGroup         = "CID_RMQ_SYS_TRANS"          // consumer group whose offsets track the half and op queues
	topicTransCheckMax = "TRANS_CHECK_MAX_TIME_TOPIC" // half messages given up after transactionCheckMax checks
	opRemoveTag        = "d"                          // tag of an op record: the half message at its body's offset is done
)

// toHalf parks a transaction's half message in RMQ_SYS_TRANS_HALF_TOPIC queue 0, keeping its real topic
// and queue in REAL_TOPIC / REAL_QID. It is stored as a plain message so the half queue is readable;
// consumers of the real topic never see it.
func (b *Broker) toHalf(m *message.Message) error {
	if _, err := b.topics.createIfAbsent(TopicTransHalf, 1, protocol.PermRead|protocol.PermWrite, 0); err != nil {
		return err
	}
	realTopic, realQID := m.Topic, m.QueueID
	m.Properties = editProperties(m.Properties, func(p map[string]string) {
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
	if b.actsAsSlave() {
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
	realTopic, _ := propValue(half.Properties, message.PropertyRealTopic)
	born := time.UnixMilli(half.BornTimestamp)
	if tran == message.SysFlagTransactionRollback {
		if err := b.writeOp(ctx, half.QueueOffset); err != nil {
			return errResponse(remoting.SystemError, "record the rollback: %v", err)
		}
		b.stats.recordEnd(realTopic, false, born)
		return remoting.NewResponse(remoting.Success, "")
	}
	final := restoreReal(half, message.PropertyRealTopic, message.PropertyRealQueueID, message.PropertyTransactionPrepared)
	final.SysFlag = final.SysFlag&^message.SysFlagTransactionMask | message.SysFlagTransactionCommit
	final.PreparedTransactionOffset = h.commitLogOffset
	b.putAsync(final, func(res store.PutResult, err error) {
		resp := remoting.NewResponse(remoting.Success, "")
		if err != nil {
			resp = putErrorResponse(err, final.Topic)
		} else {
			b.stats.recordEnd(final.Topic, true, born)
			if err := b.writeOp(context.Background(), half.QueueOffset); err != nil {
				b.log.Error("committed transaction message stored but its op record failed; it may be checked again", "err", err)
			}
		}
		if err := conn.Reply(req, resp); err != nil {
			b.log.Debug("end transaction reply", "client", conn.RemoteAddr(), "err", err)
		}
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

// writeOp records in RMQ_SYS_TRANS_OP_HALF_TOPIC that the half message at halfOffset is resolved.
func (b *Broker) writeOp(ctx context.Context, halfOffset int64) error {
	if _, err := b.topics.createIfAbsent(TopicTransOpHalf, 1, protocol.PermRead|protocol.PermWrite, 0); err != nil {
		return err
	}
	m := &message.Message{Topic: TopicTransOpHalf, QueueID: 0, Body: []byte(strconv.FormatInt(halfOffset, 10)),
		Properties:    message.EncodeProperties(map[string]string{message.PropertyTags: opRemoveTag}),
		BornTimestamp: time.Now().UnixMilli(), BornHost: b.storeHost}
	_, err := b.putter.PutMessage(ctx, m)
	return err
}

// transactionChecker is RocketMQ's TransactionalMessageCheckService: every transactionCheckInterval it
// walks the half queue from its committed offset; a half message with an op record is done; one younger
// than transactionTimeOut (or its CHECK_IMMUNITY_TIME_IN_SECONDS) stops the walk; one checked
// transactionCheckMax times is given up (kept in TRANS_CHECK_MAX_TIME_TOPIC); any other is put back at the
// end of the half queue with its check count raised and its producer group asked CHECK_TRANSACTION_STATE.
type transactionChecker struct {
	b    *Broker
	log  *slog.Logger
	stop chan struct{}
	wg   sync.WaitGroup
}

func newTransactionChecker(b *Broker) *transactionChecker {
	return &transactionChecker{b: b, log: b.log.With("service", "transaction-check"), stop: make(chan struct{})}
}

func (c *transactionChecker) start() {
	c.stop = make(chan struct{}) // started again after a close when Raft leadership comes back
	runEvery(c.stop, &c.wg, ms(c.b.cfg.TransactionCheckInterval), c.check)
}

func (c *transactionChecker) close() {
	close(c.stop)
	c.wg.Wait()
}

func (c *transactionChecker) queueStart(topic string) int64 {
	off := c.b.offsets.query(transGroup, topic, 0)
	if min := c.b.store.MinOffsetInQueue(topic, 0); off < min {
		off = min
	}
	return off
}

// opRecords reads the op queue from its committed offset: half offset -> op queue offset, plus the op
// queue's end.
func (c *transactionChecker) opRecords() (done map[int64]int64, ops []int64, opStart int64) {
	done = map[int64]int64{}
	opStart = c.queueStart(TopicTransOpHalf)
	end := c.b.store.MaxOffsetInQueue(TopicTransOpHalf, 0)
	for off := opStart; off < end; off++ {
		u, err := c.b.store.ConsumeQueueUnit(TopicTransOpHalf, 0, off)
		if err != nil {
			break
		}
		m, err := c.b.store.LookMessageByOffset(u.PhysicalOffset)
		if err != nil {
			break
		}
		half, err := strconv.ParseInt(string(m.Body), 10, 64)
		if err != nil {
			c.log.Warn("op record with a body that is not a half offset; ignored", "opOffset", off, "body", string(m.Body))
			half = -1
		}
		done[half] = off
		ops = append(ops, half)
	}
	return done, ops, opStart
}

func (c *transactionChecker) check() {
	b := c.b
	if b.store.MaxOffsetInQueue(TopicTransHalf, 0) == 0 {
		return
	}
	done, ops, opStart := c.opRecords()
	halfEnd := b.store.MaxOffsetInQueue(TopicTransHalf, 0) // messages put back during this walk wait for the next
	off := c.queueStart(TopicTransHalf)
	now := b.clock.Now()
	for ; off < halfEnd; off++ {
		select {
		case <-c.stop:
			return
		default:
		}
		if _, ok := done[off]; ok {
			continue
		}
		u, err := b.store.ConsumeQueueUnit(TopicTransHalf, 0, off)
		if err != nil {
			c.log.Warn("half queue unit unreadable; skipped", "offset", off, "err", err)
			continue
		}
		half, err := b.store.LookMessageByOffset(u.PhysicalOffset)
		if err != nil {
			c.log.Warn("half message unreadable; skipped", "offset", off, "err", err)
			continue
		}
		props := message.ParseProperties(half.Properties)
		checks, _ := strconv.Atoi(props[message.PropertyTransactionCheckTimes])
		if checks >= b.cfg.TransactionCheckMax {
			c.giveUp(half, checks)
			continue
		}
		immunity := ms(b.cfg.TransactionTimeOut)
		if s, err := strconv.Atoi(props[message.PropertyCheckImmunityTimeInSeconds]); err == nil && s > 0 {
			immunity = time.Duration(s) * time.Second
		}
		if now.Sub(time.UnixMilli(half.BornTimestamp)) < immunity {
			break // younger ones follow
		}
		if len(b.clients.producerConns(props[message.PropertyProducerGroup])) > 0 {
			checks++ // a check counts only when a producer can be asked
		}
		if err := c.putBackAndAsk(half, props, checks); err != nil {
			c.log.Error("transaction check-back failed; will retry", "offset", off, "err", err)
			break
		}
	}
	b.offsets.commit(transGroup, TopicTransHalf, 0, off)
	// The op queue moves past records for half messages the walk has passed.
	opOff := opStart
	for _, h := range ops {
		if h >= off {
			break
		}
		opOff++
	}
	b.offsets.commit(transGroup, TopicTransOpHalf, 0, opOff)
}

// putBackAndAsk appends a copy of the half message with its check count set to checks, then asks a
// producer of its group, if one is connected, for the transaction's state; the answer (END_TRANSACTION)
// names the copy.
func (c *transactionChecker) putBackAndAsk(half *message.MessageExt, props map[string]string, checks int) error {
	b := c.b
	group := props[message.PropertyProducerGroup]
	cp := half.Message
	cp.Properties = editProperties(half.Properties, func(p map[string]string) {
		p[message.PropertyTransactionCheckTimes] = strconv.Itoa(checks)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := b.putter.PutMessage(ctx, &cp)
	if err != nil {
		return fmt.Errorf("put the half message back: %w", err)
	}
	conns := b.clients.producerConns(group)
	if len(conns) == 0 {
		c.log.Warn("no producer of the group is connected to ask about a transaction", "group", group, "msgId", props[message.PropertyUniqKey])
		return nil
	}
	ext := &message.MessageExt{Message: cp, QueueOffset: res.QueueOffset, PhysicalOffset: res.PhysicalOffset,
		StoreTimestamp: res.StoreTimestamp, StoreHost: b.storeHost}
	ext.Topic = props[message.PropertyRealTopic]
	if q, err := strconv.Atoi(props[message.PropertyRealQueueID]); err == nil {
		ext.QueueID = int32(q)
	}
	body, err := message.EncodeRecord(nil, ext)
	if err != nil {
		return fmt.Errorf("encode the half message for the check: %w", err)
	}
	uniq := props[message.PropertyUniqKey]
	txID := props[message.PropertyTransactionID]
	if txID == "" {
		txID = uniq
	}
	req := remoting.NewRequest(remoting.CheckTransactionState, map[string]string{
		"tranStateTableOffset": strconv.FormatInt(res.QueueOffset, 10),
		"commitLogOffset":      strconv.FormatInt(res.PhysicalOffset, 10),
		"msgId":                uniq,
		"transactionId":        txID,
		"offsetMsgId":          res.MsgID,
		"topic":                ext.Topic,
	}, body)
	req.MarkOneway()
	conn := conns[rand.IntN(len(conns))]
	if err := conn.SendOneway(req); err != nil {
		c.log.Warn("send CHECK_TRANSACTION_STATE failed", "group", group, "producer", conn.RemoteAddr(), "err", err)
	}
	return nil
}

// giveUp keeps a half message checked too often aside in TRANS_CHECK_MAX_TIME_TOPIC (never delivered).
func (c *transactionChecker) giveUp(half *message.MessageExt, checks int) {
	b := c.b
	props := message.ParseProperties(half.Properties)
	c.log.Warn("transaction checked transactionCheckMax times without an answer; giving it up", "checks", checks,
		"msgId", props[message.PropertyUniqKey], "group", props[message.PropertyProducerGroup], "realTopic", props[message.PropertyRealTopic])
	if _, err := b.topics.createIfAbsent(topicTransCheckMax, 1, protocol.PermRead, 0); err != nil {
		c.log.Error("create topic for given-up transactions", "err", err)
		return
	}
	cp := half.Message
	cp.Topic, cp.QueueID = topicTransCheckMax, 0
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := b.putter.PutMessage(ctx, &cp); err != nil {
		c.log.Error("keep a given-up transaction aside", "err", err)
	}
}
