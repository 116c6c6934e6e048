package bench

import (
	"sync"
	"sync/atomic"
)

// firstSendGate lets an official producer's first send go alone. The Go client (v2.1.x,
// internal/route.go UpdateTopicRouteInfoWithDefault) stores a topic's publish info in the producer before it
// stores the brokers' addresses in its name server table; a goroutine whose first send falls in between
// picks a queue whose broker has no address yet and fails at once with "topic=... route info not found",
// without the client's retries. The broker table is per client and filled by the first route fetch, so
// once one send has returned, concurrent sends are safe.
type firstSendGate struct {
	mu   sync.Mutex
	done atomic.Bool
}

// do runs send, alone when no send has returned yet.
func (g *firstSendGate) do(send func() bool) bool {
	if g.done.Load() {
		return send()
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.done.Load() {
		return send()
	}
	defer g.done.Store(true)
	return send()
}
