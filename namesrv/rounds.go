package namesrv

import (
	"hash/maphash"
	"strconv"

	"github.com/rocketraft/rocketraft/protocol"
)

// Registration rounds. A Java broker with enableSplitRegistration (RocketMQ 5) sends its topic table in
// chunks of splitRegistrationSize (800) topics, each a REGISTER_BROKER of its own carrying the broker's one
// data version, back to back, then the rest (possibly none); every 30 s it sends them all again. The name
// server cannot tell a chunk from a whole table, so it follows each master address's rounds, a round being
// the tables (bodies, by their bodyKey) registered since it began:
//
//   - A registration with another data version than the address's round (or the address's first) starts
//     a fresh round: its topics are applied whole (added, or their queue counts replaced).
//   - One with the round's version whose table is not in the round yet, and lists no topic of the round,
//     is the next chunk of it: applied whole in a fresh round, else only its topics the broker name lacks.
//     A table applied in an earlier round at this version is such a chunk without its topics being looked
//     at (a periodic round of a split table costs O(1) per chunk too).
//   - One with the round's version that repeats a table of the round (or a topic of it) starts the next
//     (periodic) round:
//     the one before was complete. Its topics the broker name lacks are added (as Java's
//     isTopicConfigChanged re-adds a topic deleted from the name server while the broker still has it);
//     when no topic of the broker name was removed since the table was last applied, none can lack, and
//     the table is not looked through at all: a periodic registration costs O(1) under the write lock.
//
// Every chunk is thus applied, as a whole table would be. With deleteTopicWithBrokerRegistration the
// topics the broker name holds that a completed fresh round did not list (nor the next round's first
// registration) are removed when the next round starts, one period after the version change: removing
// what one chunk does not list, as RocketMQ does, would drop every other chunk's topics until they come
// again.

// roundState is a master address's registration round. Guarded by RouteInfoManager.mu.
type roundState struct {
	dv     protocol.DataVersion
	on     bool        // a round was started
	fresh  bool        // started by a new data version: its chunks are applied whole
	tables []*regTable // the round's tables, in order
	// applied is, for each table of dv applied, the broker name's removal count when it was: while it has
	// not moved, every topic of the table is still there.
	applied map[bodyKey]uint64
}

func (r *roundState) has(key bodyKey) bool {
	for _, t := range r.tables {
		if t.key == key {
			return true
		}
	}
	return false
}

// chunkBefore reports whether a table of key was applied in an earlier round at the round's data version:
// it is a chunk of the same split table, sent again, and lists no topic of the others (no need to look).
func (r *roundState) chunkBefore(key bodyKey) bool {
	_, ok := r.applied[key]
	return ok
}

// overlaps reports whether table lists a topic a table of the round listed (a new body at the same data
// version that is no further chunk; looked at only for a body not seen in the round). An empty table
// overlaps a round with no topic (Java's empty last chunk continues a round that has some).
func (r *roundState) overlaps(table *regTable) bool {
	seen := make(map[string]struct{})
	for _, t := range r.tables {
		for _, x := range t.topics {
			seen[x.name] = struct{}{}
		}
	}
	if len(table.topics) == 0 {
		return len(seen) == 0
	}
	for _, x := range table.topics {
		if _, ok := seen[x.name]; ok {
			return true
		}
	}
	return false
}

// applyRoundLocked applies a master's registration of table at the address whose round is r. first is a
// registration the name server treats as new (the broker name, or the address at this id). Lock should be
// held for writing.
func (m *RouteInfoManager) applyRoundLocked(r *roundState, brokerName string, table *regTable, first bool, diff *tableDiff, lg *regLog) {
	switch {
	case first || !r.on || r.dv != table.dv:
		*r = roundState{dv: table.dv, on: true, fresh: true, applied: make(map[bodyKey]uint64)}
	case !r.has(table.key) && (r.chunkBefore(table.key) || !r.overlaps(table)): // the next chunk of the round
	default: // the next round: the last one was complete
		if r.fresh && m.deleteMissing {
			m.deleteUnlistedLocked(brokerName, r.tables, table, lg)
		}
		r.fresh = false
		clear(r.tables)
		r.tables = r.tables[:0]
	}
	r.tables = append(r.tables, table)
	if !r.fresh {
		if n, ok := r.applied[table.key]; ok && n == m.removals[brokerName] {
			return // every topic of it is there still
		}
	}
	m.applyTopicTableLocked(brokerName, table, r.fresh, diff, lg)
	r.applied[table.key] = m.removals[brokerName]
}

// deleteUnlistedLocked removes the broker name's queue data of every topic neither the completed round's
// tables list nor the next one's first table (a round of one incremental registration, which carries only
// the topics that changed, is followed by the whole table: nothing of it goes). Lock should be held for
// writing.
func (m *RouteInfoManager) deleteUnlistedLocked(brokerName string, round []*regTable, next *regTable, lg *regLog) {
	listed := make(map[string]struct{})
	for _, t := range append(round, next) {
		for _, r := range t.topics {
			listed[r.name] = struct{}{}
		}
	}
	for topic := range m.brokerTopics[brokerName] {
		if _, ok := listed[topic]; !ok {
			m.removeQueueDataLocked(topic, brokerName)
			lg.removedTopics = append(lg.removedTopics, topic)
		}
	}
}

// contentKey is a key for a table that came decoded (RegisterBroker called with a Body, not by the
// processor): a hash of its topics (sorted by tableOf), so that the same table gets the same key.
func contentKey(seed maphash.Seed, t *regTable) bodyKey {
	var h maphash.Hash
	h.SetSeed(seed)
	var num []byte
	for _, r := range t.topics {
		h.WriteString(r.name)
		num = num[:0]
		for _, v := range []int32{r.read, r.write, r.perm, r.sysFlag} {
			num = strconv.AppendInt(append(num, ' '), int64(v), 10)
		}
		h.Write(append(num, '\n'))
	}
	return bodyKey{size: -1 - len(t.topics), sum: h.Sum64()}
}
