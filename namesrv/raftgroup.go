package namesrv

import (
	"maps"
	"slices"
	"time"

	"github.com/rocketraft/rocketraft/protocol"
)

// Raft groups (a broker name whose brokers run RocketRaft's Raft mode). Their brokers add two header
// fields to REGISTER_BROKER: raftTerm, the node's Raft term (for a master, the term it leads), and
// raftSlaveId, the brokerId it has when it is not master; a master registering at the group's virtual
// address adds raftMasterVip=true. RocketMQ's name server ignores them. This one
// uses them for two rules:
//
//   - Term order. A master registration (brokerId 0) whose term is below the highest master term seen
//     for its broker name comes from a leader that was deposed while paused or cut off and has not seen
//     its role event yet: it is recorded under its raftSlaveId instead, so it never replaces the real
//     master's route (the brokers also confirm leadership with a quorum before registering as master;
//     this holds when that check raced a new election).
//   - A stand-in master. When a Raft group's brokerId 0 entry goes away (its master stepped down and
//     registered with its slave id, unregistered, lost its connection or expired), the routes handed out
//     for the next raftMasterHoldMillis (10 s) still carry a brokerId 0 for the group: the last master's
//     address while it is still registered (it forwards writes to the new master), else the live member
//     with the lowest id (every member forwards writes to the master once one is elected). A client
//     that re-reads its routes during an election therefore keeps a writable queue of the group for its
//     whole route poll interval, instead of none for 30 s. A group whose master registered at its virtual
//     address (header raftMasterVip, broker/raft_vip.go) gets that address as its stand-in, registered or
//     not: the next master listens on it, whereas a member's own address cached by a client for its 30 s
//     stops answering if that member dies in the meantime (the 27.5 s for which the e2e kill suite once
//     saw a client send to a killed master's own address: a stand-in it had cached during the election
//     before, that member then elected and killed; the suite now checks every route read during its
//     kills). The tables themselves hold only what was registered (GET_BROKER_CLUSTER_INFO shows the
//     group without a master); a new master registration ends the stand-in. Past the hold the group
//     is routed as registered: a group that cannot elect a master is not offered for writes.

// raftGroup is what the name server keeps of one Raft group (by broker name).
type raftGroup struct {
	masterTerm uint64    // the highest term of an accepted master registration
	lastMaster string    // the address of that registration
	virtual    bool      // that address is the group's virtual one (raftMasterVip): the next master takes it
	lostAt     time.Time // when the group's brokerId 0 entry went away; zero while it has one
}

// raftDemotion is a master registration of an older term recorded as a slave: logged once the lock is
// released.
type raftDemotion struct {
	masterTerm uint64
	master     string
}

// raftRegistrationLocked applies the term order to a registration of a Raft group's broker and returns the
// brokerId to record it under (and, when it demoted a master registration, why). A change of what the
// group's routes show marks them stale. Lock should be held for writing.
func (m *RouteInfoManager) raftRegistrationLocked(req *RegisterBrokerRequest, bd *brokerEntry) (int64, *raftDemotion) {
	g := m.raft[req.BrokerName]
	if g == nil {
		g = &raftGroup{}
		m.raft[req.BrokerName] = g
	}
	before := *g
	defer func() {
		if *g != before {
			m.brokerChangedLocked(bd)
		}
	}()
	if req.BrokerID != protocol.MasterID {
		if bd.BrokerAddrs[protocol.MasterID] == req.BrokerAddr {
			g.lostAt = m.now() // the master steps down: its id 0 entry is replaced below
		}
		return req.BrokerID, nil
	}
	if req.RaftTerm < g.masterTerm {
		if bd.BrokerAddrs[protocol.MasterID] == req.BrokerAddr {
			g.lostAt = m.now()
		}
		return req.RaftSlaveID, &raftDemotion{masterTerm: g.masterTerm, master: g.lastMaster}
	}
	g.masterTerm, g.lastMaster, g.virtual, g.lostAt = req.RaftTerm, req.BrokerAddr, req.RaftMasterVIP, time.Time{}
	return protocol.MasterID, nil
}

// raftMasterGoneLocked notes that a broker name's brokerId 0 entry was removed. Lock should be held for
// writing.
func (m *RouteInfoManager) raftMasterGoneLocked(bd *brokerEntry) {
	if g := m.raft[bd.BrokerName]; g != nil {
		g.lostAt = m.now()
		m.brokerChangedLocked(bd)
	}
}

// raftStandInLocked adds the stand-in master to a route's copy of a Raft group's broker data (see
// above) and returns when its hold ends (zero when it added none): the route changes then by itself.
// Lock should be held for reading.
func (m *RouteInfoManager) raftStandInLocked(bd *protocol.BrokerData, now time.Time) time.Time {
	g := m.raft[bd.BrokerName]
	if g == nil || m.raftHold <= 0 || len(bd.BrokerAddrs) == 0 {
		return time.Time{}
	}
	if _, ok := bd.BrokerAddrs[protocol.MasterID]; ok || g.lostAt.IsZero() || now.Sub(g.lostAt) > m.raftHold {
		return time.Time{}
	}
	end := g.lostAt.Add(m.raftHold)
	if g.virtual {
		bd.BrokerAddrs[protocol.MasterID] = g.lastMaster
		return end
	}
	ids := slices.Sorted(maps.Keys(bd.BrokerAddrs))
	standIn := bd.BrokerAddrs[ids[0]]
	for _, id := range ids {
		if bd.BrokerAddrs[id] == g.lastMaster {
			standIn = g.lastMaster
		}
	}
	bd.BrokerAddrs[protocol.MasterID] = standIn
	return end
}

// SetRaftMasterHold sets raftMasterHoldMillis: how long a Raft group's routes keep a stand-in master
// after its master entry went away (0: never).
func (m *RouteInfoManager) SetRaftMasterHold(d time.Duration) {
	defer m.unlock(m.lock())
	if m.raftHold != d {
		m.raftHold = d
		m.gen.Add(1) // every Raft group's stand-in may change
	}
}
