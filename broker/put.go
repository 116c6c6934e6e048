package broker

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/rocketraft/rocketraft/message"
	"github.com/rocketraft/rocketraft/store"
)

// Delivery-time properties besides DELAY (RocketMQ 5.x timer messages and the older start-deliver time).
const (
	propTimerDeliverMs   = message.PropertyTimerDeliverMs // absolute ms
	propTimerDelaySec    = message.PropertyTimerDelaySec  // relative seconds
	propTimerDelayMs     = "TIMER_DELAY_MS"               // relative ms
	propStartDeliverTime = "__STARTDELIVERTIME"           // absolute ms
	propTimerOutMs       = "TIMER_OUT_MS"                 // set by the broker: when a timer message is due
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
	if v, ok := propValue(m.Properties, message.PropertyDelayLevel); ok {
		level, err := strconv.Atoi(v)
		if err != nil {
			return &putError{fmt.Sprintf("property DELAY=%q is not a delay level (1..%d)", v, len(b.delayLevels))}
		}
		if level > 0 {
			level = min(level, len(b.delayLevels))
			realTopic, realQID := m.Topic, m.QueueID
			m.Properties = editProperties(m.Properties, func(p map[string]string) {
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
	m.Properties = editProperties(m.Properties, func(p map[string]string) {
		p[message.PropertyRealTopic] = realTopic
		p[message.PropertyRealQueueID] = strconv.Itoa(int(realQID))
		p[propTimerOutMs] = strconv.FormatInt(due, 10)
	})
	m.Topic, m.QueueID = TopicTimer, 0
	return nil
}

// timerPrecisionMs: a message due within this is stored for delivery at once.
const timerPrecisionMs = 1000

// deliveryTime reads a message's delivery time (ms) from the timer properties, if it has one.
func deliveryTime(props string, now time.Time) (int64, bool, error) {
	parse := func(key string) (int64, bool, error) {
		v, ok := propValue(props, key)
		if !ok {
			return 0, false, nil
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return 0, false, &putError{fmt.Sprintf("property %s=%q is not a non-negative number", key, v)}
		}
		return n, true, nil
	}
	for _, abs := range []string{propTimerDeliverMs, propStartDeliverTime} {
		if n, ok, err := parse(abs); ok || err != nil {
			return n, ok, err
		}
	}
	if n, ok, err := parse(propTimerDelayMs); ok || err != nil {
		return now.UnixMilli() + n, ok, err
	}
	if n, ok, err := parse(propTimerDelaySec); ok || err != nil {
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

// scheduleTagsCode is the store's TagsCode hook: a SCHEDULE_TOPIC_XXXX unit holds its delivery time, and
// so does a timer-topic unit, as RocketMQ's ConsumeQueue does for delayed messages.
func (b *Broker) scheduleTagsCode(topic string, props []byte, storeTimestamp int64) (int64, bool) {
	switch topic {
	case TopicSchedule:
		v, _ := message.PropertyValue(props, message.PropertyDelayLevel)
		level, err := strconv.Atoi(string(v))
		if err != nil || level < 1 {
			return storeTimestamp, true
		}
		level = min(level, len(b.delayLevels))
		return storeTimestamp + b.delayLevels[level-1].Milliseconds(), true
	case TopicTimer:
		v, _ := message.PropertyValue(props, propTimerOutMs)
		due, err := strconv.ParseInt(string(v), 10, 64)
		if err != nil {
			return storeTimestamp, true
		}
		return due, true
	}
	return 0, false
}
