package namesrv

import "github.com/rocketraft/rocketraft/protocol"

// Registration rounds. A Java broker with enableSplitRegistration (RocketMQ 5) sends its topic table in
// chunks of splitRegistrationSize (800) topics, each a REGISTER_BROKER of its own carrying the broker's one
// data version, back to back, then the rest (possibly none); every 30 s it sends them all again. The name
// server cannot tell a chunk from a whole table, so it follows each master address's rounds:
//
//   - A registration with another data version than the address's round (or the address's first) starts
//     a fresh round: its topics are applied whole (added, or their queue counts replaced).
//   - One with the round's version whose topics are all new to the round is the next chunk of it: applied
//     whole in a fresh round, else (a periodic round) only its topics the broker name lacks.
//   - One with the round's version that repeats a topic of the round starts the next (periodic) round:
//     the one before was complete. Its topics the broker name lacks are added (as Java's
//     isTopicConfigChanged re-adds a topic deleted from the name server while the broker still has it).
//
// Every chunk is thus applied, as a whole table would be. With deleteTopicWithBrokerRegistration the
// topics the broker name holds that a completed fresh round did not list (nor the next round's first
// registration) are removed when the next round starts, one period after the version change: removing
// what one chunk does not list, as RocketMQ does, would drop every other chunk's topics until they come
// again.

// roundState is a master address's registration round. Guarded by RouteInfoManager.mu.
type roundState struct {
	dv     protocol.DataVersion
	fresh  bool                // started by a new data version: chunks are applied whole
	topics map[string]struct{} // the topics registered in this round
	on     bool                // a round was started
}

// applyRoundLocked applies a master's registration of table at the address whose round is r, and reports
// which topics the table changed. first is a registration the name server treats as new (the broker
// name, or the address at this id). Lock should be held for writing.
func (m *RouteInfoManager) applyRoundLocked(r *roundState, brokerName string, table *regTable, first bool, lg *regLog) {
	switch {
	case first || !r.on || r.dv != table.dv:
		*r = roundState{dv: table.dv, fresh: true, topics: make(map[string]struct{}, len(table.topics)), on: true}
	case r.continues(table):
	default: // the next round: the last one was complete
		if r.fresh && m.deleteMissing {
			m.deleteUnlistedLocked(brokerName, r.topics, table, lg)
		}
		*r = roundState{dv: table.dv, topics: make(map[string]struct{}, len(table.topics)), on: true}
	}
	for _, t := range table.topics {
		r.topics[t.name] = struct{}{}
	}
	m.applyTopicTableLocked(brokerName, table.topics, r.fresh, lg)
}

// continues reports whether table is the next chunk of the round: none of its topics is in the round yet.
// An empty table continues a round that has topics (Java's empty last chunk) and starts the next one of a
// round that has none.
func (r *roundState) continues(table *regTable) bool {
	if len(table.topics) == 0 {
		return len(r.topics) > 0
	}
	for _, t := range table.topics {
		if _, ok := r.topics[t.name]; ok {
			return false
		}
	}
	return true
}

// deleteUnlistedLocked removes the broker name's queue data of every topic neither the completed round
// listed nor the next one's first table lists (a round of one incremental registration, which carries
// only the topics that changed, is followed by the whole table: nothing of it goes). Lock should be held
// for writing.
func (m *RouteInfoManager) deleteUnlistedLocked(brokerName string, listed map[string]struct{}, next *regTable,
	lg *regLog) {
	var inNext map[string]struct{}
	for topic := range m.brokerTopics[brokerName] {
		if _, ok := listed[topic]; ok {
			continue
		}
		if inNext == nil {
			inNext = make(map[string]struct{}, len(next.topics))
			for _, t := range next.topics {
				inNext[t.name] = struct{}{}
			}
		}
		if _, ok := inNext[topic]; !ok {
			m.removeQueueDataLocked(topic, brokerName)
			lg.removedTopics = append(lg.removedTopics, topic)
		}
	}
}
