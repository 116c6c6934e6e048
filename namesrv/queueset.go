package namesrv

import (
	"slices"
	"strings"

	"github.com/rocketraft/rocketraft/protocol"
)

// queueSet is a topic's queue data, one per broker name, sorted by broker name. It was a map per topic:
// a fleet's 50,000 topics held 25 MB of small maps (a swiss-table group of eight slots for one or two
// entries), a quarter of the name server's live heap and most of what the collector had to scan, and every
// route built sorted its keys. A topic is on a few broker names (a hundred for the widest), so a sorted
// slice is found by binary search and changed by a copy. Guarded by RouteInfoManager.mu.
type queueSet []protocol.QueueData

// find returns where brokerName's queue data is, or would be inserted, and whether it is there.
func (q queueSet) find(brokerName string) (int, bool) {
	return slices.BinarySearchFunc(q, brokerName, func(qd protocol.QueueData, name string) int {
		return strings.Compare(qd.BrokerName, name)
	})
}

// get returns brokerName's queue data.
func (q queueSet) get(brokerName string) (protocol.QueueData, bool) {
	if i, ok := q.find(brokerName); ok {
		return q[i], true
	}
	return protocol.QueueData{}, false
}

// set puts qd in place of its broker name's queue data, or adds it; added reports the latter.
func (q *queueSet) set(qd protocol.QueueData) (added bool) {
	i, ok := q.find(qd.BrokerName)
	if ok {
		(*q)[i] = qd
		return false
	}
	*q = slices.Insert(*q, i, qd)
	return true
}

// remove drops brokerName's queue data; false when there was none.
func (q *queueSet) remove(brokerName string) bool {
	i, ok := q.find(brokerName)
	if !ok {
		return false
	}
	*q = slices.Delete(*q, i, i+1)
	if len(*q) == 0 {
		*q = nil // a topic left without queues goes; its memory need not stay
	}
	return true
}

// has reports whether qd is its broker name's queue data, as it is.
func (q queueSet) has(qd protocol.QueueData) bool {
	old, ok := q.get(qd.BrokerName)
	return ok && old == qd
}
