package broker

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rocketraft/rocketraft/remoting"
	"github.com/rocketraft/rocketraft/store"
)

// replicationRole is what the broker's replication mode decides: how a put is written, replicated and
// answered, whether writes are taken, what a registration reports, how metadata reaches the other
// brokers of the group, and where replication starts and stops in the broker's life. New picks one from
// the config (newReplicationRole) and the broker keeps it until Close:
//
//   - classicMaster (role_classic.go): brokerRole ASYNC_MASTER or SYNC_MASTER. Puts go to the store;
//     on a SYNC_MASTER the store waits for a slave's acknowledgement through the HA service (package ha)
//     before it answers. Takes writes, registers as brokerId 0, runs the master services from start.
//   - classicSlave (role_classic.go): brokerRole SLAVE. The HA client copies the master's CommitLog, the
//     metadata sync (ha_sync.go) its tables. Refuses writes, registers with its brokerId, runs no master
//     service.
//   - raftRole (raft_role.go): enableDLegerCommitLog. Puts and metadata changes are Raft entries; the
//     node is master, takes writes and runs the master services while it leads (its own role changes
//     with leadership, inside the one value), and forwards writes to the master otherwise.
//
// Unless a method says otherwise it may be called from any goroutine once New returned.
type replicationRole interface {
	// storeOptions sets the store options this role needs (the SYNC_MASTER replication hook, the Raft
	// framing). New calls it once, before the store opens and before open.
	storeOptions(o *store.Options)
	// open builds the role's replication pieces over the open store and registers its own request
	// handlers; nothing runs until start. New calls it once, after the processors are registered; on an
	// error New closes the store and fails.
	open() error
	// putter is where every put of the broker goes (the store, or the Raft proposer). Valid after open;
	// the same value every call.
	putter() messagePutter
	// start starts replication (the store's services and the client listener run already) and, on a
	// role that is master from the start, the master services (Broker.services). Start calls it once;
	// an error fails Start, which then closes the broker.
	start() error
	// beforeClose is Close's first step, while the listener and the pools still run: a Raft master stops
	// the master services for good, proposes its last offsets and hands leadership over. Called once,
	// also after a failed start (Start closes the broker); never when open failed (New closes the store).
	beforeClose()
	// close stops replication, after the pools drained and the store flushed and before the connections
	// close: a master's HA service answers the puts still waiting for a slave. Called once; the error
	// is Close's.
	close() error
	// afterClose closes what the role kept for the last answers to its clients (the Raft mode's
	// forwarding client), after the client connections closed. Called once; the error is Close's.
	afterClose() error

	// acceptsWrites reports whether this broker takes writes now: sends, transaction ends, offset
	// commits piggybacked on pulls.
	acceptsWrites() bool
	// refuseWrite is the answer to a send this broker does not take now (SERVICE_NOT_AVAILABLE naming
	// what to do instead), or nil when it takes it.
	refuseWrite() *remoting.Command
	// masterServed wraps the handler of a request only the master serves. The Raft role forwards such a
	// request to the master while this node is not master; the classic roles return h unchanged. Called
	// in New, once per request code.
	masterServed(h remoting.HandlerFunc) remoting.HandlerFunc
	// forwardRefusedPut is given a send whose put failed with err and reports whether the role took the
	// answer over (the Raft role forwards a put that the node refused as not leader, nothing proposed);
	// false means the caller answers. Runs in the put's completion callback: it must not block.
	forwardRefusedPut(conn *remoting.Conn, req *remoting.Command, err error) bool
	// clientAddr is the address of the client that sent req, for bornHost only (never for a check): the
	// connection's peer, or the client address another node of a Raft group put in a forwarded request.
	clientAddr(conn *remoting.Conn, req *remoting.Command) string

	// brokerID is the brokerId this broker stands for now (runtime info, metrics, unregistration).
	brokerID() int64
	// name is brokerRole as reported now: ASYNC_MASTER, SYNC_MASTER or SLAVE.
	name() string
	// routeAddr is the brokerAddr a registration as brokerID carries now.
	routeAddr() string
	// registration is what the next registration carries: its brokerId, its brokerAddr and extra header
	// fields (nil for none; the caller copies them). The register loop calls it; a Raft master may block
	// on a quorum round to confirm its leadership.
	registration() (id int64, addr string, ext map[string]string)
	// registered takes a registration that succeeded (res.id at res.addr) and what the name servers
	// answered; masterChanged is set when the master's address they named changed since the last answer.
	// The register loop calls it; ctx bounds what it sends.
	registered(ctx context.Context, res registerResult, masterChanged bool)

	// collect sends the role's own metrics series (classic replication's; the Raft series are
	// registered by open). Scrape goroutine.
	collect(ch chan<- prometheus.Metric)
}

// newReplicationRole is the role the config names (validated): Raft with enableDLegerCommitLog, else the
// classic master or slave of brokerRole. It only builds the value; nothing is opened.
func newReplicationRole(b *Broker) replicationRole {
	switch {
	case b.cfg.raftMode():
		r := &raftRole{b: b}
		b.raft = r
		return r
	case b.cfg.BrokerRole == RoleSlave:
		return &classicSlave{classicRole: classicRole{b}}
	default:
		return &classicMaster{classicRole: classicRole{b}}
	}
}
