package broker

import (
	"sync"

	"github.com/rocketraft/rocketraft/protocol"
)

// sqlCache keeps compiled subscriptions that arrive with each pull (the pull consumer sends its
// expression every time), so an expression is compiled once, not once per pull.
type sqlCache struct {
	mu sync.Mutex
	m  map[sqlKey]*subscriptionInfo // guarded by mu
}

type sqlKey struct{ topic, typ, expr string }

// sqlCacheMax bounds the cache; past it the cache starts over (expressions are few in practice).
const sqlCacheMax = 4096

func (c *sqlCache) compile(sd *protocol.SubscriptionData) *subscriptionInfo {
	k := sqlKey{sd.Topic, sd.ExpressionType, sd.SubString}
	c.mu.Lock()
	defer c.mu.Unlock()
	if si, ok := c.m[k]; ok {
		return si
	}
	if c.m == nil || len(c.m) >= sqlCacheMax {
		c.m = map[sqlKey]*subscriptionInfo{}
	}
	si := compileSubscription(sd)
	c.m[k] = si
	return si
}
