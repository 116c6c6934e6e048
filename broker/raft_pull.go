package broker

import (
	"encoding/binary"

	"github.com/rocketraft/rocketraft/store"
)

// In the Raft mode the state machine dispatches an entry's records one by one: each record's
// ConsumeQueue unit becomes visible (and wakes held pulls) before the store's read limit moves past the
// entry, which happens once its last record is dispatched. A pull in that window finds units whose
// records it cannot read yet; the store skips them and answers a next offset past them, so the consumer
// would never see those messages. The pull path therefore notes the dispatched position before it reads
// (raftReadLimit) and cuts the answer back to the first unit past it that it did not return
// (raftTrimPull): the consumer asks again from there. (A fix belongs in store.DispatchMessages: raise
// the read limit to the entry's records before their units appear.)

// recordQueueOffset is where a stored record keeps its queue offset (store/doc.go's layout).
const recordQueueOffset = 20

// raftReadLimit is the dispatched position before a pull reads, -1 in classic mode (no trimming).
func (b *Broker) raftReadLimit() int64 {
	if !b.cfg.raftMode() {
		return -1
	}
	return b.store.DispatchedOffset()
}

// raftTrimPull moves res.NextBeginOffset back to the first unit after the records returned whose record
// ends past lim (it may have been unreadable when res was read), answering PULL_RETRY_IMMEDIATELY when
// nothing is left to return.
func (b *Broker) raftTrimPull(topic string, queueID int32, offset, lim int64, res *store.GetResult) {
	if lim < 0 || res == nil || res.NextBeginOffset <= offset {
		return
	}
	from := offset
	if n := len(res.Records); n > 0 && len(res.Records[n-1]) >= recordQueueOffset+8 {
		from = int64(binary.BigEndian.Uint64(res.Records[n-1][recordQueueOffset:])) + 1
	}
	for o := from; o < res.NextBeginOffset; o++ {
		u, err := b.store.ConsumeQueueUnit(topic, queueID, o)
		if err == nil && u.PhysicalOffset+int64(u.Size) <= lim {
			continue
		}
		res.NextBeginOffset = o
		if len(res.Records) == 0 {
			res.Status = store.NoMatchedMessage
		}
		return
	}
}
