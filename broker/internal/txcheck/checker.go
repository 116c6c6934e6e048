package txcheck

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/rocketraft/rocketraft/internal/loop"
	"github.com/rocketraft/rocketraft/message"
	"github.com/rocketraft/rocketraft/protocol"
	"github.com/rocketraft/rocketraft/store"
)

// transGroup is the consumer group whose offsets keep the walks' places in the half and op queues.
const transGroup = "CID_RMQ_SYS_TRANS"

// Checker is RocketMQ's TransactionalMessageCheckService: every transactionCheckInterval it
// walks the half queue from its committed offset; a half message with an op record is done; one younger
// than transactionTimeOut (or its CHECK_IMMUNITY_TIME_IN_SECONDS) stops the walk; one checked
// transactionCheckMax times is given up (kept in TRANS_CHECK_MAX_TIME_TOPIC); any other is put back at the
// end of the half queue with its check count raised and its producer group asked CHECK_TRANSACTION_STATE.
// Start and Close alternate (the broker's master services).
type Checker struct {
	o    Options
	log  *slog.Logger
	stop chan struct{}
	wg   sync.WaitGroup
}

// New returns a stopped Checker.
func New(o Options) *Checker {
	return &Checker{o: o, log: o.Log.With("service", "transaction-check"), stop: make(chan struct{})}
}

// Start starts the periodic walk. Called only while stopped.
func (c *Checker) Start() {
	c.stop = make(chan struct{}) // started again after a close when Raft leadership comes back
	loop.Every(c.stop, &c.wg, c.o.Interval, c.check)
}

// Close stops the walk and waits for it; it has nothing to persist (its places are consumer offsets).
func (c *Checker) Close() error {
	close(c.stop)
	c.wg.Wait()
	return nil
}

func (c *Checker) queueStart(topic string) int64 {
	off := c.o.Offsets.Query(transGroup, topic, 0)
	if min := c.o.Store.MinOffsetInQueue(topic, 0); off < min {
		off = min
	}
	return off
}

// opRecords reads the op queue from its committed offset: half offset -> op queue offset, plus the op
// queue's end.
func (c *Checker) opRecords() (done map[int64]int64, ops []int64, opStart int64) {
	done = map[int64]int64{}
	opStart = c.queueStart(protocol.TopicTransOpHalf)
	end := c.o.Store.MaxOffsetInQueue(protocol.TopicTransOpHalf, 0)
	for off := opStart; off < end; off++ {
		u, err := c.o.Store.ConsumeQueueUnit(protocol.TopicTransOpHalf, 0, off)
		if err != nil {
			break
		}
		m, err := c.o.Store.LookMessageByOffset(u.PhysicalOffset)
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

func (c *Checker) check() {
	if c.o.Store.MaxOffsetInQueue(protocol.TopicTransHalf, 0) == 0 {
		return
	}
	done, ops, opStart := c.opRecords()
	halfEnd := c.o.Store.MaxOffsetInQueue(protocol.TopicTransHalf, 0) // messages put back during this walk wait for the next
	off := c.queueStart(protocol.TopicTransHalf)
	now := c.o.Clock.Now()
	for ; off < halfEnd; off++ {
		select {
		case <-c.stop:
			return
		default:
		}
		if _, ok := done[off]; ok {
			continue
		}
		u, err := c.o.Store.ConsumeQueueUnit(protocol.TopicTransHalf, 0, off)
		if err != nil {
			c.log.Warn("half queue unit unreadable; skipped", "offset", off, "err", err)
			continue
		}
		half, err := c.o.Store.LookMessageByOffset(u.PhysicalOffset)
		if errors.Is(err, store.ErrNotVisibleYet) {
			break // Raft mode: dispatched before it became readable; the next check starts here
		}
		if err != nil {
			c.log.Warn("half message unreadable; skipped", "offset", off, "err", err)
			continue
		}
		props := message.ParseProperties(half.Properties)
		checks, _ := strconv.Atoi(props[message.PropertyTransactionCheckTimes])
		if checks >= c.o.CheckMax {
			c.giveUp(half, checks)
			continue
		}
		immunity := c.o.Timeout
		if s, err := strconv.Atoi(props[message.PropertyCheckImmunityTimeInSeconds]); err == nil && s > 0 {
			immunity = time.Duration(s) * time.Second
		}
		if now.Sub(time.UnixMilli(half.BornTimestamp)) < immunity {
			break // younger ones follow
		}
		if c.o.Producers.Connected(props[message.PropertyProducerGroup]) {
			checks++ // a check counts only when a producer can be asked
		}
		if err := c.putBackAndAsk(half, props, checks); err != nil {
			c.log.Error("transaction check-back failed; will retry", "offset", off, "err", err)
			break
		}
	}
	c.o.Offsets.Commit(transGroup, protocol.TopicTransHalf, 0, off)
	// The op queue moves past records for half messages the walk has passed.
	opOff := opStart
	for _, h := range ops {
		if h >= off {
			break
		}
		opOff++
	}
	c.o.Offsets.Commit(transGroup, protocol.TopicTransOpHalf, 0, opOff)
}

// putBackAndAsk appends a copy of the half message with its check count set to checks, then asks a
// producer of its group, if one is connected, for the transaction's state; the answer (END_TRANSACTION)
// names the copy.
func (c *Checker) putBackAndAsk(half *message.MessageExt, props map[string]string, checks int) error {
	group := props[message.PropertyProducerGroup]
	cp := half.Message
	cp.Properties = message.EditProperties(half.Properties, func(p map[string]string) {
		p[message.PropertyTransactionCheckTimes] = strconv.Itoa(checks)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := c.o.Put(ctx, &cp)
	if err != nil {
		return fmt.Errorf("put the half message back: %w", err)
	}
	noProducer := func() error {
		c.log.Warn("no producer of the group is connected to ask about a transaction", "group", group, "msgId", props[message.PropertyUniqKey])
		return nil
	}
	if !c.o.Producers.Connected(group) {
		return noProducer()
	}
	ext := &message.MessageExt{Message: cp, QueueOffset: res.QueueOffset, PhysicalOffset: res.PhysicalOffset,
		StoreTimestamp: res.StoreTimestamp, StoreHost: c.o.StoreHost}
	ext.Topic = props[message.PropertyRealTopic]
	if q, err := strconv.Atoi(props[message.PropertyRealQueueID]); err == nil {
		ext.QueueID = int32(q)
	}
	record, err := message.EncodeRecord(nil, ext)
	if err != nil {
		return fmt.Errorf("encode the half message for the check: %w", err)
	}
	uniq := props[message.PropertyUniqKey]
	txID := props[message.PropertyTransactionID]
	if txID == "" {
		txID = uniq
	}
	producer, err := c.o.Producers.Ask(Check{Group: group, TranStateTableOffset: res.QueueOffset,
		CommitLogOffset: res.PhysicalOffset, MsgID: uniq, TransactionID: txID, OffsetMsgID: res.MsgID,
		Topic: ext.Topic, Record: record})
	switch {
	case errors.Is(err, ErrNoProducer):
		return noProducer()
	case err != nil:
		c.log.Warn("send CHECK_TRANSACTION_STATE failed", "group", group, "producer", producer, "err", err)
	}
	return nil
}

// giveUp keeps a half message checked too often aside in TRANS_CHECK_MAX_TIME_TOPIC (never delivered).
func (c *Checker) giveUp(half *message.MessageExt, checks int) {
	props := message.ParseProperties(half.Properties)
	c.log.Warn("transaction checked transactionCheckMax times without an answer; giving it up", "checks", checks,
		"msgId", props[message.PropertyUniqKey], "group", props[message.PropertyProducerGroup], "realTopic", props[message.PropertyRealTopic])
	if err := c.o.EnsureTopic(protocol.TopicTransCheckMax, 1, protocol.PermRead); err != nil {
		c.log.Error("create topic for given-up transactions", "err", err)
		return
	}
	cp := half.Message
	cp.Topic, cp.QueueID = protocol.TopicTransCheckMax, 0
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.o.Put(ctx, &cp); err != nil {
		c.log.Error("keep a given-up transaction aside", "err", err)
	}
}
