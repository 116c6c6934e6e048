package broker

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/rocketraft/rocketraft/message"
	"github.com/rocketraft/rocketraft/store"
)

// putError is a message the broker refuses before it reaches the store.
type putError struct{ msg string }

func (e *putError) Error() string { return e.msg }

// prepare rewrites m the way RocketMQ's CommitLog does before appending: a message with a delay level
// goes to SCHEDULE_TOPIC_XXXX queue level-1, and one with a delivery time to the timer topic, each with its
// real topic and queue kept in REAL_TOPIC / REAL_QID. Half and rolled-back transaction messages are
// never delayed.
func (b *Broker) prepare(m *message.Message, now time.Time) error {
	if tran := m.SysFlag & message.SysFlagTransactionMask; tran == message.SysFlagTransactionPrepared || tran == message.SysFlagTransactionRollback {
		return nil
	}
	if m.Topic == TopicSchedule || m.Topic == TopicTimer {
		return nil
	}
	if v, ok := message.FindProperty(m.Properties, message.PropertyDelayLevel); ok {
		level, err := strconv.Atoi(v)
		if err != nil {
			return &putError{fmt.Sprintf("property DELAY=%q is not a delay level (1..%d)", v, len(b.delayLevels))}
		}
		if level > 0 {
			level = min(level, len(b.delayLevels))
			realTopic, realQID := m.Topic, m.QueueID
			m.Properties = message.EditProperties(m.Properties, func(p map[string]string) {
				p[message.PropertyDelayLevel] = strconv.Itoa(level)
				p[message.PropertyRealTopic] = realTopic
				p[message.PropertyRealQueueID] = strconv.Itoa(int(realQID))
			})
			m.Topic, m.QueueID = TopicSchedule, int32(level-1)
			return nil
		}
	}
	due, ok, err := deliveryTime(m.Properties, now)
	if err != nil || !ok {
		return err
	}
	if ahead := due - now.UnixMilli(); ahead > b.cfg.TimerMaxDelaySec*1000 {
		return &putError{fmt.Sprintf("the delivery time is %d s ahead, more than timerMaxDelaySec (%d s)", ahead/1000, b.cfg.TimerMaxDelaySec)}
	}
	if due <= now.UnixMilli()+timerPrecisionMs {
		return nil // due now: store it as it is
	}
	realTopic, realQID := m.Topic, m.QueueID
	m.Properties = message.EditProperties(m.Properties, func(p map[string]string) {
		p[message.PropertyRealTopic] = realTopic
		p[message.PropertyRealQueueID] = strconv.Itoa(int(realQID))
		p[message.PropertyTimerOutMs] = strconv.FormatInt(due, 10)
	})
	m.Topic, m.QueueID = TopicTimer, 0
	return nil
}

// timerPrecisionMs: a message due within this is stored for delivery at once.
const timerPrecisionMs = 1000

// deliveryTime reads a message's delivery time (ms) from the timer properties, if it has one.
func deliveryTime(props string, now time.Time) (int64, bool, error) {
	parse := func(key string) (int64, bool, error) {
		v, ok := message.FindProperty(props, key)
		if !ok {
			return 0, false, nil
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return 0, false, &putError{fmt.Sprintf("property %s=%q is not a non-negative number", key, v)}
		}
		return n, true, nil
	}
	for _, abs := range []string{message.PropertyTimerDeliverMs, message.PropertyStartDeliverTime} {
		if n, ok, err := parse(abs); ok || err != nil {
			return n, ok, err
		}
	}
	if n, ok, err := parse(message.PropertyTimerDelayMs); ok || err != nil {
		return now.UnixMilli() + n, ok, err
	}
	if n, ok, err := parse(message.PropertyTimerDelaySec); ok || err != nil {
		return now.UnixMilli() + n*1000, ok, err
	}
	return 0, false, nil
}

// putAsync prepares and stores m; done runs once (maybe on the store's flusher: it must not block).
func (b *Broker) putAsync(m *message.Message, done func(store.PutResult, error)) {
	if err := b.prepare(m, b.clock.Now()); err != nil {
		done(store.PutResult{}, err)
		return
	}
	b.putter.PutMessageAsync(m, done)
}

// put prepares and stores m, waiting for the store's durability policy.
func (b *Broker) put(ctx context.Context, m *message.Message) (store.PutResult, error) {
	if err := b.prepare(m, b.clock.Now()); err != nil {
		return store.PutResult{}, err
	}
	return b.putter.PutMessage(ctx, m)
}

// putRaw stores m as it is (no delay or timer rewriting), waiting for the store's durability policy.
func (b *Broker) putRaw(ctx context.Context, m *message.Message) (store.PutResult, error) {
	return b.putter.PutMessage(ctx, m)
}
