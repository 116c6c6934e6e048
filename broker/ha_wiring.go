package broker

import (
	"errors"
	"net"
	"strconv"

	"github.com/rocketraft/rocketraft/ha"
	"github.com/rocketraft/rocketraft/remoting"
	"github.com/rocketraft/rocketraft/store"
)

// haState is the broker's classic replication (package ha): masters run the HA service, which
// streams the CommitLog to slaves and, on a SYNC_MASTER, answers puts once a slave acknowledged
// them (the store's replication hook); slaves run the HA client, the metadata sync (ha_sync.go) and
// the tail check (ha_check.go).
type haState struct {
	cl     ha.CommitLog
	svc    *ha.Service // masters
	client *ha.Client  // slaves

	remote   *remoting.Client // slaves: requests to the master's remoting port (the name server client)
	syncWake chan struct{}    // slaves: sync now (the master's address changed)
	// synced are the consumer offsets as last taken from the master; only the sync goroutine
	// touches it after newHA (ha_offsets.go).
	synced map[string]map[int32]int64
}

// newHA builds the role's replication pieces over the open store. Nothing runs until startHA.
func (b *Broker) newHA() error {
	cfg := b.cfg
	if cfg.raftMode() {
		return b.newRaft() // raft_role.go: no classic replication
	}
	b.ha.cl = b.store
	peerTLS, err := cfg.peerTLSMaterial(cfg.BrokerName, b.log)
	if err != nil {
		return err
	}
	pool := remoting.NewPool("ha", 2, 1_000)
	b.pools = append(b.pools, pool)
	b.server.Register(remoting.RequestCode(ha.CheckRequestCode), pool, b.processTailCheck)
	if cfg.BrokerRole != RoleSlave {
		addr := net.JoinHostPort(listenHost(cfg.BrokerIP1), strconv.Itoa(cfg.haListenPort()))
		svc, err := ha.NewService(cfg.Replication.Config, b.ha.cl, ha.ServiceOptions{Logger: b.log, ListenAddr: addr, FileSize: cfg.MappedFileSizeCommitLog,
			PeerTLS: peerTLS})
		if err != nil {
			return err
		}
		b.ha.svc = svc
		return nil
	}
	b.ha.remote = b.nsClient // RocketMQ's BrokerOuterAPI also talks to name servers and the master on one client
	client, err := ha.NewClient(cfg.Replication.Config, b.ha.cl, ha.ClientOptions{Logger: b.log, FileSize: cfg.MappedFileSizeCommitLog,
		Checker: masterTailChecker{b}, PeerTLS: peerTLS})
	if err != nil {
		return err
	}
	b.ha.client = client
	b.ha.syncWake = make(chan struct{}, 1)
	b.ha.synced = b.offsets.snapshot().OffsetTable
	return nil
}

// startHA starts the HA service (masters: listening on haListenPort) or the HA client and the
// metadata sync (slaves).
func (b *Broker) startHA() error {
	if b.cfg.raftMode() {
		return b.startRaft()
	}
	if b.ha.svc != nil {
		return b.ha.svc.Start()
	}
	if err := b.ha.client.Start(); err != nil {
		return err
	}
	b.wg.Add(1)
	go b.slaveSyncLoop()
	return nil
}

// closeHA stops replication. On a master it answers the puts still waiting for a slave (PUT_OK when
// acknowledged by then, else FLUSH_SLAVE_TIMEOUT), so it runs after the last puts reached the store
// and before the connections close.
func (b *Broker) closeHA() error {
	var errs []error
	if b.cfg.raftMode() {
		errs = append(errs, b.closeRaft())
	}
	if b.ha.svc != nil {
		errs = append(errs, b.ha.svc.Close())
	}
	if b.ha.client != nil {
		errs = append(errs, b.ha.client.Close())
	}
	return errors.Join(errs...)
}

// haRegistered takes what the name servers answered a registration: a slave learns its master's HA
// address (unless haMasterAddress fixes it) and remoting address, and syncs when the latter changed.
func (b *Broker) haRegistered(res registerResult, masterChanged bool) {
	if b.ha.client == nil {
		return
	}
	if b.cfg.Replication.HAMasterAddress == "" && res.haServerAddr != "" {
		b.ha.client.SetMasterAddress(res.haServerAddr)
	}
	if masterChanged && res.masterAddr != "" {
		wake(b.ha.syncWake)
	}
}

// HAService is the master's HA service (nil on a slave), for tests and tools in this module.
func (b *Broker) HAService() *ha.Service { return b.ha.svc }

// HAClient is the slave's HA client (nil on a master), for tests and tools in this module.
func (b *Broker) HAClient() *ha.Client { return b.ha.client }

// replicator is the store's replication hook on a SYNC_MASTER (nil otherwise): after a put's local
// durability step the store calls Wait, which answers once a slave acknowledged the put. It forwards
// to the HA service, which newHA builds once the store is open (before any put).
func (b *Broker) replicator() store.Replicator {
	if b.cfg.BrokerRole != RoleSyncMaster || b.cfg.raftMode() {
		return nil
	}
	return haReplicator{b}
}

type haReplicator struct{ b *Broker }

func (r haReplicator) Wait(end int64, done func(store.PutStatus)) { r.b.ha.svc.Wait(end, done) }
