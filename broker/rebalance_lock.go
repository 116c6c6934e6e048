package broker

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/rocketraft/rocketraft/protocol"
	"github.com/rocketraft/rocketraft/remoting"
)

type lockBatchBody struct {
	ConsumerGroup  string                  `json:"consumerGroup"`
	ClientID       string                  `json:"clientId"`
	OnlyThisBroker bool                    `json:"onlyThisBroker"`
	MQSet          []protocol.MessageQueue `json:"mqSet"`
}

type lockEntry struct {
	clientID   string
	lastUpdate time.Time
}

// rebalanceLockManager holds the queue locks of orderly consumers: one client per queue per group, a
// lease renewed by every LOCK_BATCH_MQ and lost after rebalanceLockMaxLiveTime (60 s) without renewal.
type rebalanceLockManager struct {
	lease time.Duration
	mu    sync.Mutex
	table map[string]map[protocol.MessageQueue]*lockEntry // group -> queue -> holder; guarded by mu
}

func newRebalanceLockManager(lease time.Duration) *rebalanceLockManager {
	return &rebalanceLockManager{lease: lease, table: map[string]map[protocol.MessageQueue]*lockEntry{}}
}

// tryLock locks every queue it can for clientID and returns those now held by it.
func (m *rebalanceLockManager) tryLock(group, clientID string, mqs []protocol.MessageQueue) []protocol.MessageQueue {
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	g := m.table[group]
	if g == nil {
		g = map[protocol.MessageQueue]*lockEntry{}
		m.table[group] = g
	}
	locked := make([]protocol.MessageQueue, 0, len(mqs))
	for _, mq := range mqs {
		e := g[mq]
		switch {
		case e == nil || now.Sub(e.lastUpdate) > m.lease:
			g[mq] = &lockEntry{clientID: clientID, lastUpdate: now}
		case e.clientID == clientID:
			e.lastUpdate = now
		default:
			continue
		}
		locked = append(locked, mq)
	}
	return locked
}

// unlock releases the queues clientID holds.
func (m *rebalanceLockManager) unlock(group, clientID string, mqs []protocol.MessageQueue) {
	m.mu.Lock()
	defer m.mu.Unlock()
	g := m.table[group]
	for _, mq := range mqs {
		if e := g[mq]; e != nil && e.clientID == clientID {
			delete(g, mq)
		}
	}
	if len(g) == 0 {
		delete(m.table, group)
	}
}

// releaseClient drops every lock clientID holds and returns how many there were.
func (m *rebalanceLockManager) releaseClient(clientID string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for group, g := range m.table {
		for mq, e := range g {
			if e.clientID == clientID {
				delete(g, mq)
				n++
			}
		}
		if len(g) == 0 {
			delete(m.table, group)
		}
	}
	return n
}

func (b *Broker) processLockBatchMQ(ctx context.Context, conn *remoting.Conn, req *remoting.Command) *remoting.Command {
	var body lockBatchBody
	if err := json.Unmarshal(req.Body, &body); err != nil {
		return errResponse(remoting.SystemError, "bad LOCK_BATCH_MQ body: %v", err)
	}
	locked := b.locks.tryLock(body.ConsumerGroup, body.ClientID, body.MQSet)
	return remoting.NewJSONResponse(struct {
		LockOKMQSet []protocol.MessageQueue `json:"lockOKMQSet"`
	}{locked})
}

func (b *Broker) processUnlockBatchMQ(ctx context.Context, conn *remoting.Conn, req *remoting.Command) *remoting.Command {
	var body lockBatchBody
	if err := json.Unmarshal(req.Body, &body); err != nil {
		return errResponse(remoting.SystemError, "bad UNLOCK_BATCH_MQ body: %v", err)
	}
	b.locks.unlock(body.ConsumerGroup, body.ClientID, body.MQSet)
	return remoting.NewResponse(remoting.Success, "")
}
