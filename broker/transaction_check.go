package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/rocketraft/rocketraft/internal/loop"
	"github.com/rocketraft/rocketraft/message"
	"github.com/rocketraft/rocketraft/protocol"
	"github.com/rocketraft/rocketraft/remoting"
	"github.com/rocketraft/rocketraft/store"
)

// transactionChecker is RocketMQ's TransactionalMessageCheckService: every transactionCheckInterval it
// walks the half queue from its committed offset; a half message with an op record is done; one younger
// than transactionTimeOut (or its CHECK_IMMUNITY_TIME_IN_SECONDS) stops the walk; one checked
// transactionCheckMax times is given up (kept in TRANS_CHECK_MAX_TIME_TOPIC); any other is put back at the
// end of the half queue with its check count raised and its producer group asked CHECK_TRANSACTION_STATE.
type transactionChecker struct {
	transactionCheckOptions
	log  *slog.Logger
	stop chan struct{}
	wg   sync.WaitGroup
}

// transactionCheckOptions is what the check-back service is built with.
type transactionCheckOptions struct {
	store     store.QueueReader // reads the half and op queues and their records
	put       putFunc           // appends as it is (no delay rewriting): a half message put back, one given up
	offsets   txOffsets         // the consumer offsets: where the walks of the half and op queues resume
	topics    txTopics          // creates TRANS_CHECK_MAX_TIME_TOPIC
	producers txProducers       // the producers to ask
	clock     Clock             // the steady clock (clock.go)
	log       *slog.Logger      // tagged service=transaction-check here
	storeHost netip.AddrPort    // the storeHost of the records sent with a check
	interval  time.Duration     // transactionCheckInterval
	timeout   time.Duration     // transactionTimeOut: a half message younger than this is not checked
	checkMax  int               // transactionCheckMax
}

// txOffsets is the offset table the check-back service keeps its place in (group transGroup).
type txOffsets interface {
	// query returns the committed offset, or -1 when the group never committed one for the queue.
	query(group, topic string, queueID int32) int64
	// commit stores offset for group on topic/queue (the last commit wins).
	commit(group, topic string, queueID int32, offset int64)
}

// txTopics creates the topics the check-back service writes to.
type txTopics interface {
	// createIfAbsent creates a system topic with the given queues and perm unless it exists, and returns
	// the topic now there.
	createIfAbsent(topic string, queues int32, perm int32, topicSysFlag int32) (*protocol.TopicConfig, error)
}

// txProducers finds the producers to ask about a transaction.
type txProducers interface {
	// producerConns lists the connections of the producers of group now (possibly none); the caller owns
	// the slice.
	producerConns(group string) []*remoting.Conn
}

var (
	_ txOffsets   = (*consumerOffsetManager)(nil)
	_ txTopics    = (*topicConfigManager)(nil)
	_ txProducers = (*clientManager)(nil)
)

func newTransactionChecker(o transactionCheckOptions) *transactionChecker {
	return &transactionChecker{transactionCheckOptions: o, log: o.log.With("service", "transaction-check"), stop: make(chan struct{})}
}

func (c *transactionChecker) Start() {
	c.stop = make(chan struct{}) // started again after a close when Raft leadership comes back
	loop.Every(c.stop, &c.wg, c.interval, c.check)
}

func (c *transactionChecker) Close() error {
	close(c.stop)
	c.wg.Wait()
	return nil
}

func (c *transactionChecker) queueStart(topic string) int64 {
	off := c.offsets.query(transGroup, topic, 0)
	if min := c.store.MinOffsetInQueue(topic, 0); off < min {
		off = min
	}
	return off
}

// opRecords reads the op queue from its committed offset: half offset -> op queue offset, plus the op
// queue's end.
func (c *transactionChecker) opRecords() (done map[int64]int64, ops []int64, opStart int64) {
	done = map[int64]int64{}
	opStart = c.queueStart(TopicTransOpHalf)
	end := c.store.MaxOffsetInQueue(TopicTransOpHalf, 0)
	for off := opStart; off < end; off++ {
		u, err := c.store.ConsumeQueueUnit(TopicTransOpHalf, 0, off)
		if err != nil {
			break
		}
		m, err := c.store.LookMessageByOffset(u.PhysicalOffset)
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
	if c.store.MaxOffsetInQueue(TopicTransHalf, 0) == 0 {
		return
	}
	done, ops, opStart := c.opRecords()
	halfEnd := c.store.MaxOffsetInQueue(TopicTransHalf, 0) // messages put back during this walk wait for the next
	off := c.queueStart(TopicTransHalf)
	now := c.clock.Now()
	for ; off < halfEnd; off++ {
		select {
		case <-c.stop:
			return
		default:
		}
		if _, ok := done[off]; ok {
			continue
		}
		u, err := c.store.ConsumeQueueUnit(TopicTransHalf, 0, off)
		if err != nil {
			c.log.Warn("half queue unit unreadable; skipped", "offset", off, "err", err)
			continue
		}
		half, err := c.store.LookMessageByOffset(u.PhysicalOffset)
		if errors.Is(err, store.ErrNotVisibleYet) {
			break // Raft mode: dispatched before it became readable; the next check starts here
		}
		if err != nil {
			c.log.Warn("half message unreadable; skipped", "offset", off, "err", err)
			continue
		}
		props := message.ParseProperties(half.Properties)
		checks, _ := strconv.Atoi(props[message.PropertyTransactionCheckTimes])
		if checks >= c.checkMax {
			c.giveUp(half, checks)
			continue
		}
		immunity := c.timeout
		if s, err := strconv.Atoi(props[message.PropertyCheckImmunityTimeInSeconds]); err == nil && s > 0 {
			immunity = time.Duration(s) * time.Second
		}
		if now.Sub(time.UnixMilli(half.BornTimestamp)) < immunity {
			break // younger ones follow
		}
		if len(c.producers.producerConns(props[message.PropertyProducerGroup])) > 0 {
			checks++ // a check counts only when a producer can be asked
		}
		if err := c.putBackAndAsk(half, props, checks); err != nil {
			c.log.Error("transaction check-back failed; will retry", "offset", off, "err", err)
			break
		}
	}
	c.offsets.commit(transGroup, TopicTransHalf, 0, off)
	// The op queue moves past records for half messages the walk has passed.
	opOff := opStart
	for _, h := range ops {
		if h >= off {
			break
		}
		opOff++
	}
	c.offsets.commit(transGroup, TopicTransOpHalf, 0, opOff)
}

// putBackAndAsk appends a copy of the half message with its check count set to checks, then asks a
// producer of its group, if one is connected, for the transaction's state; the answer (END_TRANSACTION)
// names the copy.
func (c *transactionChecker) putBackAndAsk(half *message.MessageExt, props map[string]string, checks int) error {
	group := props[message.PropertyProducerGroup]
	cp := half.Message
	cp.Properties = message.EditProperties(half.Properties, func(p map[string]string) {
		p[message.PropertyTransactionCheckTimes] = strconv.Itoa(checks)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := c.put(ctx, &cp)
	if err != nil {
		return fmt.Errorf("put the half message back: %w", err)
	}
	conns := c.producers.producerConns(group)
	if len(conns) == 0 {
		c.log.Warn("no producer of the group is connected to ask about a transaction", "group", group, "msgId", props[message.PropertyUniqKey])
		return nil
	}
	ext := &message.MessageExt{Message: cp, QueueOffset: res.QueueOffset, PhysicalOffset: res.PhysicalOffset,
		StoreTimestamp: res.StoreTimestamp, StoreHost: c.storeHost}
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
	props := message.ParseProperties(half.Properties)
	c.log.Warn("transaction checked transactionCheckMax times without an answer; giving it up", "checks", checks,
		"msgId", props[message.PropertyUniqKey], "group", props[message.PropertyProducerGroup], "realTopic", props[message.PropertyRealTopic])
	if _, err := c.topics.createIfAbsent(topicTransCheckMax, 1, protocol.PermRead, 0); err != nil {
		c.log.Error("create topic for given-up transactions", "err", err)
		return
	}
	cp := half.Message
	cp.Topic, cp.QueueID = topicTransCheckMax, 0
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.put(ctx, &cp); err != nil {
		c.log.Error("keep a given-up transaction aside", "err", err)
	}
}
