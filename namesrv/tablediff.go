package namesrv

import "github.com/rocketraft/rocketraft/protocol"

// A master's registration that starts a fresh round (a new data version: a topic created or changed; or a
// new master address: a master change) applies its whole table, looking every topic up under the write
// lock: about 150 us for 1,000 topics, and in a fleet whose topics span 100 broker groups one topic created
// brings 100 such registrations at once, and a master change one, while queries that miss the route cache
// and every other registration wait (write lock p99 <= 1 ms with the churn, docs/bench/namesrv.md).
//
// So the looking happens before, with the lock held for reading (route queries answered from the cache
// take no lock, and other readers share it): prepareTable lists the topics of the table whose queue data
// differs from what the broker name holds, with the broker name's queue generation (queueGen: bumped by
// every change of its queue data, under the write lock). Under the write lock, applyTopicTableLocked takes
// that list instead of the whole table when the generation has not moved: every topic left out was, and
// still is, exactly what the table says, so the whole loop would have skipped it. When it has moved (another
// registration of the name, a deletion, a permission change came in between), the whole table is applied
// as before. Only the registrations predicted to be applied whole are prepared: a fresh round's first
// table and its further chunks (the prediction is read with the same lock: a wrong one costs the look-up,
// or leaves the whole loop, never a different result).

// minDiffTopics is the smallest table prepared: below it the whole loop is as cheap as the preparation.
// A variable so that tests prepare the small tables of their random churn too.
var minDiffTopics = 32

// tableDiff is the part of a table that differs from the broker name's queue data at queue generation gen.
type tableDiff struct {
	table   *regTable
	gen     uint64
	changed []topicRec // the topics of table whose queue data differed, in the table's order
}

// prepareTable fills in req.table (from req.Body when it came decoded) and, for a master registration that
// will apply its table whole, returns how that table differs from the queue data now; else nil.
func (m *RouteInfoManager) prepareTable(req *RegisterBrokerRequest) *tableDiff {
	if req.table == nil {
		t := tableOf(&req.Body, true)
		t.key = contentKey(m.bodies.seed, t)
		req.table = t
	}
	table := req.table
	if req.BrokerID != protocol.MasterID || !table.kept || len(table.topics) < minDiffTopics {
		return nil
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	li := m.live[req.BrokerAddr]
	bd := m.brokerAddr[req.BrokerName]
	// As applyRoundLocked will decide it (rounds.go): a new round, or the next chunk of a fresh one (a split
	// table's chunks after the first; one that starts the next round instead only costs the look-ups).
	fresh := li == nil || !li.round.on || li.round.dv != table.dv || li.round.fresh || bd == nil ||
		bd.BrokerAddrs[protocol.MasterID] != req.BrokerAddr
	if !fresh {
		return nil
	}
	d := &tableDiff{table: table, gen: m.queueGen[req.BrokerName]}
	if len(m.brokerTopics[req.BrokerName]) == 0 {
		// The broker name holds no queue data (its first registration, the round after a restart): every
		// topic differs, no need to look them up.
		d.changed = table.topics
		return d
	}
	for _, r := range table.topics {
		if e := m.topicQueue[r.name]; e == nil || !e.queues.has(r.queueData(req.BrokerName)) {
			d.changed = append(d.changed, r)
		}
	}
	return d
}

// current reports whether d was prepared for table and the broker name's queue data is as it was then.
// Lock should be held.
func (d *tableDiff) current(m *RouteInfoManager, brokerName string, table *regTable) bool {
	return d != nil && d.table == table && d.gen == m.queueGen[brokerName]
}
