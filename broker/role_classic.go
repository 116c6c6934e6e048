package broker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rocketraft/rocketraft/ha"
	"github.com/rocketraft/rocketraft/internal/loop"
	"github.com/rocketraft/rocketraft/internal/metrics"
	"github.com/rocketraft/rocketraft/internal/peertls"
	"github.com/rocketraft/rocketraft/remoting"
	"github.com/rocketraft/rocketraft/store"
)

// Classic replication (package ha), RocketMQ 4.x's master/slave: a master runs the HA service, which
// streams the CommitLog to slaves and, on a SYNC_MASTER, answers puts once a slave acknowledged them
// (the store's replication hook), and writes its metadata changes into the CommitLog (ha_meta.go); a
// slave runs the HA client, applies those records as it dispatches them (ha_meta_apply.go), runs the
// periodic metadata copy (ha_sync.go, with the consumer-offset merge of ha_offsets.go) and the tail
// check (ha_check.go). The role is fixed by brokerRole for the broker's life.

// classicRole is what both classic roles do alike: puts go to the store, the broker stands for its
// configured brokerId and brokerRole, registers with its own address, forwards nothing.
type classicRole struct{ b *Broker }

func (c classicRole) putter() messagePutter                                           { return c.b.store }
func (c classicRole) beforeClose()                                                    {}
func (c classicRole) afterClose() error                                               { return nil }
func (c classicRole) masterServed(h remoting.HandlerFunc) remoting.HandlerFunc        { return h }
func (c classicRole) forwardRefusedPut(*remoting.Conn, *remoting.Command, error) bool { return false }
func (c classicRole) brokerID() int64                                                 { return c.b.cfg.BrokerID }
func (c classicRole) name() string                                                    { return c.b.cfg.BrokerRole }
func (c classicRole) routeAddr() string                                               { return c.b.addr }

func (c classicRole) clientAddr(conn *remoting.Conn, _ *remoting.Command) string {
	return conn.RemoteAddr()
}

func (c classicRole) registration() (int64, string, map[string]string) {
	return c.b.cfg.BrokerID, c.b.addr, nil
}

// classicMaster is the replicationRole of brokerRole ASYNC_MASTER and SYNC_MASTER.
type classicMaster struct {
	classicRole
	svc  *ha.Service // built by open
	meta *haMetaLog  // built by open: the metadata records
}

// classicSlave is the replicationRole of brokerRole SLAVE.
type classicSlave struct {
	classicRole
	client *ha.Client // built by open

	remote   *remoting.Client // requests to the master's remoting port (the name server client)
	syncWake chan struct{}    // sync now (the master's address changed)
	meta     *slaveMeta       // built by open: applies the master's metadata records, merges with the copy
	// retry is the wait before the next registration round while no answer names a master
	// (registered; only the register goroutine touches it); retrying says one is scheduled.
	retry    time.Duration
	retrying atomic.Bool
}

var (
	_ replicationRole = (*classicMaster)(nil)
	_ replicationRole = (*classicSlave)(nil)
)

// storeOptions sets the replication hook on a SYNC_MASTER: after a put's local durability step the
// store calls Wait, which answers once a slave acknowledged the put. It forwards to the HA service,
// which open builds once the store is open (before any put).
func (m *classicMaster) storeOptions(o *store.Options) {
	if m.b.cfg.BrokerRole == RoleSyncMaster {
		o.Replicator = haReplicator{m}
	}
}

func (s *classicSlave) storeOptions(*store.Options) {}

type haReplicator struct{ m *classicMaster }

func (r haReplicator) Wait(end int64, done func(store.PutStatus)) { r.m.svc.Wait(end, done) }

// openHA registers h for the tail check request (ha_check.go) on a pool of its own and returns the TLS
// material of the HA connections (nil without TLS).
func (c classicRole) openHA(h remoting.HandlerFunc) (*peertls.Material, error) {
	b := c.b
	peerTLS, err := b.cfg.peerTLSMaterial(b.cfg.BrokerName, b.log)
	if err != nil {
		return nil, err
	}
	pool := remoting.NewPool("ha", 2, 1_000)
	b.pools = append(b.pools, pool)
	b.server.Register(remoting.RequestCode(ha.CheckRequestCode), pool, h)
	return peerTLS, nil
}

func (m *classicMaster) open() error {
	b := m.b
	peerTLS, err := m.openHA(m.processTailCheck)
	if err != nil {
		return err
	}
	addr := net.JoinHostPort(listenHost(b.cfg.BrokerIP1), strconv.Itoa(b.cfg.haListenPort()))
	m.svc, err = ha.NewService(b.cfg.Replication.Config, b.store, ha.ServiceOptions{Logger: b.log, ListenAddr: addr,
		FileSize: b.cfg.MappedFileSizeCommitLog, PeerTLS: peerTLS})
	if err != nil {
		return err
	}
	m.meta = &haMetaLog{store: b.store, host: b.storeHost, maxBody: b.cfg.MaxMessageSize, offsets: b.offsets,
		schedule: b.schedule, slaves: func() bool { return m.svc.SlavesReporting() > 0 }, log: b.log}
	b.topics.proposeThrough(loggedTopics{l: m.meta, m: b.topics})
	b.groups.proposeThrough(loggedGroups{l: m.meta, m: b.groups})
	return nil
}

func (s *classicSlave) open() error {
	b := s.b
	peerTLS, err := s.openHA(s.refuseTailCheck)
	if err != nil {
		return err
	}
	s.remote = b.nsClient // RocketMQ's BrokerOuterAPI also talks to name servers and the master on one client
	s.client, err = ha.NewClient(b.cfg.Replication.Config, b.store, ha.ClientOptions{Logger: b.log, FileSize: b.cfg.MappedFileSizeCommitLog,
		Checker: masterTailChecker{s}, PeerTLS: peerTLS})
	if err != nil {
		return err
	}
	s.syncWake = make(chan struct{}, 1)
	s.meta = newSlaveMeta(b.store, b)
	if err := s.meta.open(); err != nil {
		return fmt.Errorf("broker: the master's metadata records: %w", err)
	}
	b.slaveMeta = s.meta
	return nil
}

// start listens on haListenPort, starts the master services and the offsets records.
func (m *classicMaster) start() error {
	if err := m.svc.Start(); err != nil {
		return err
	}
	m.b.services.start()
	loop.Every(m.b.stop, &m.b.wg, ms(m.b.cfg.Replication.HAOffsetSyncInterval), m.meta.syncOffsets)
	return nil
}

// start starts the HA client, the metadata sync and the checkpoint of the records applied.
func (s *classicSlave) start() error {
	if err := s.client.Start(); err != nil {
		return err
	}
	s.b.wg.Add(1)
	go s.syncLoop()
	loop.Every(s.b.stop, &s.b.wg, ms(s.b.cfg.FlushConsumerOffsetInterval), func() {
		if err := s.meta.checkpoint(); err != nil {
			s.b.log.Error("checkpoint of the master's metadata records applied", "err", err)
		}
	})
	return nil
}

// close writes the offsets that changed since the last offsets records and gives a slave up to
// slaveTimeout to take them, then stops the HA service, answering the puts still waiting for a slave
// (PUT_OK when acknowledged by then, else FLUSH_SLAVE_TIMEOUT).
func (m *classicMaster) close() error {
	m.meta.syncOffsets()
	if m.svc.SlavesReporting() > 0 {
		done := make(chan store.PutStatus, 1)
		m.svc.Wait(m.b.store.MaxPhyOffset(), func(st store.PutStatus) { done <- st })
		if st := <-done; st != store.PutOK {
			m.b.log.Warn("the last offsets records were not acknowledged by a slave before the HA service closed", "status", st)
		}
	}
	return m.svc.Close()
}

// close stops the HA client and saves the position of the metadata records applied.
func (s *classicSlave) close() error {
	err := s.client.Close()
	if cerr := s.meta.checkpoint(); cerr != nil {
		err = errors.Join(err, fmt.Errorf("checkpoint of the master's metadata records applied: %w", cerr))
	}
	return err
}

func (m *classicMaster) acceptsWrites() bool { return true }
func (s *classicSlave) acceptsWrites() bool  { return false }

func (m *classicMaster) refuseWrite() *remoting.Command { return nil }

func (s *classicSlave) refuseWrite() *remoting.Command {
	return errResponse(remoting.ServiceNotAvailable, "broker %s is a slave (brokerId %d) and does not accept messages; send to its master",
		s.b.addr, s.b.cfg.BrokerID)
}

func (m *classicMaster) registered(context.Context, registerResult, bool) {}

// registered takes what the name servers answered: the slave learns its master's HA address (unless
// haMasterAddress fixes it) and remoting address, and syncs when the latter changed.
func (s *classicSlave) registered(_ context.Context, res registerResult, masterChanged bool) {
	if s.b.cfg.Replication.HAMasterAddress == "" && res.haServerAddr != "" {
		s.client.SetMasterAddress(res.haServerAddr)
	}
	if masterChanged && res.masterAddr != "" {
		loop.Wake(s.syncWake)
	}
	s.retryUntilMasterKnown(res.masterAddr != "")
}

// Registration rounds while no answer names the master: the slave learns its master's addresses (HA,
// and remoting for the tail check and the metadata sync) only from them, so a slave started while its
// master was down (both restarted after a power loss, say) would wait for the next
// registerNameServerPeriod (30 s) before it replicated again, and a SYNC_MASTER's sends for it. Until a
// master is named it registers again after 1 s, doubling to 8 s.
const (
	slaveRegisterRetryMin = time.Second
	slaveRegisterRetryMax = 8 * time.Second
)

// retryUntilMasterKnown asks for a registration round after the current wait when known is false, and
// resets the wait when it is true. On the register goroutine (registered).
func (s *classicSlave) retryUntilMasterKnown(known bool) {
	if known {
		s.retry = 0
		return
	}
	if !s.retrying.CompareAndSwap(false, true) {
		return // a round asked for meanwhile (a topic change) does not start a second chain
	}
	s.retry = min(max(2*s.retry, slaveRegisterRetryMin), slaveRegisterRetryMax)
	b := s.b
	time.AfterFunc(s.retry, func() {
		s.retrying.Store(false)
		select {
		case <-b.stop:
		default:
			b.triggerRegister()
		}
	})
}

// collect sends the master's slaves and their lag (metrics_ha.go). The HA service is built in New and
// never replaced, so reading it here is safe.
func (m *classicMaster) collect(ch chan<- prometheus.Metric) {
	collectSlaves(ch, m.svc, m.b.store.MaxPhyOffset())
}

// collect sends whether the slave's HA client is connected.
func (s *classicSlave) collect(ch chan<- prometheus.Metric) {
	ch <- metrics.Gauge(haMasterConnectedDesc, metrics.Bool(s.client.Connected()))
}

// HAService is the master's HA service (nil on a slave and in the Raft mode), for tests and tools in this
// module.
func (b *Broker) HAService() *ha.Service {
	if m, ok := b.role.(*classicMaster); ok {
		return m.svc
	}
	return nil
}

// HAClient is the slave's HA client (nil on a master and in the Raft mode), for tests and tools in this
// module.
func (b *Broker) HAClient() *ha.Client {
	if s, ok := b.role.(*classicSlave); ok {
		return s.client
	}
	return nil
}
