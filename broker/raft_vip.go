package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/rocketraft/rocketraft/raftlog"
	"github.com/rocketraft/rocketraft/remoting"
)

// The master's virtual address (masterVipAddress): an address that follows leadership, so that clients
// which cache routes (the official clients re-read them every 30 s) reach each new master at once.
//
//   - The node that becomes master (RoleLeader: leader, barrier of its term applied) adds the address to
//     masterVipInterface (netlink, then a gratuitous ARP; nothing on loopback, where Linux answers every
//     127.x), listens on it at listenPort (a second listener of the client server) and registers it with
//     the name servers as brokerId 0's address. If the port is still held (the old master on the same
//     host has not let go yet) it retries every vipRetryInterval until it holds it or steps down.
//   - A node that steps down (RoleFollower, also after a lost lease) closes that listener and every
//     connection accepted through it, so their clients reconnect (to the next holder), removes the
//     address from its interface, and only then turns slave. Shutdown does the same before Raft hands
//     leadership over, and a starting node removes an address left on its interface by a crash.
//   - Every node binds its own brokerIP1 (not all interfaces: the address must stay free for the
//     master's listener) and registers it with its slave id. The master's own address is not registered:
//     after a registration as brokerId 0 it unregisters its slave entry, which would otherwise expire at
//     the name server and take the master's registration (same connection) with it.
//   - The name servers keep brokerId 0 at the virtual address across a change of master: the old master
//     never unregisters it, the new one registers it again. A name server does drop it when the
//     connection it was registered on closes (a killed master's) until the new master registers it; in
//     that window (election + barrier, 1.5-5 s) it still routes the virtual address as the group's
//     stand-in master, because the registration said it was one (header raftMasterVip;
//     namesrv/raftgroup.go). Before, the stand-in was a member's own address, which a client refreshing
//     its routes in the window kept for its next 30 s: when that member was elected and killed within
//     them, the client sent to a dead address until its next refresh (the e2e kill suite saw 27.5 s once
//     in twenty kills).
//   - Closing the connections drops the answers still on their way on them: the official Go client
//     waits out its sendMsgTimeout for those sends, then retries at the address (the next holder).
//
// Lock order: raftVIP.mu is taken by the role handler, the register loop and Close, and is held across
// the listener's Close and the netlink calls (each a few system calls), never across a Raft or name
// server call. It is taken after nothing and before remoting.Server's own lock.

// vipRetryInterval is how often a new master tries again to bind the address while another socket
// holds it.
const vipRetryInterval = 25 * time.Millisecond

// vipRetryLogEvery is how often a master still waiting for the address logs it again.
const vipRetryLogEvery = 30 * time.Second

// vipAnnounceAfter are the delays after taking the address at which a gratuitous ARP goes out (three, as
// a lost one leaves a peer's ARP cache on the old holder).
var vipAnnounceAfter = []time.Duration{0, 250 * time.Millisecond, time.Second}

// vipInterface adds and removes the virtual address on a network interface. Its methods are called with
// raftVIP.mu held, never concurrently.
type vipInterface interface {
	// Add puts ip as a /32 on the interface; nil when it is there already. A missing capability is
	// errVIPPermission.
	Add(ip netip.Addr) error
	// Remove takes ip off the interface; it reports whether it was there.
	Remove(ip netip.Addr) (bool, error)
	// Announce sends a gratuitous ARP for ip from the interface's hardware address.
	Announce(ip netip.Addr) error
}

// errVIPPermission: the process may not change the interface's addresses or send raw frames.
var errVIPPermission = errors.New("broker: missing CAP_NET_ADMIN or CAP_NET_RAW")

// raftVIP holds the master's virtual address for a Raft node (nil when masterVipAddress is unset).
type raftVIP struct {
	ip     netip.Addr
	addr   string // masterVipAddress:listenPort
	iface  string // masterVipInterface ("" on loopback)
	link   vipInterface
	server *remoting.Server
	log    *slog.Logger
	// slaveEntry: the name servers may hold this node's own address under its slave id (registered as a
	// slave, or unknown, as at start); a registration as master through the address removes it.
	slaveEntry atomic.Bool
	wg         sync.WaitGroup // retry and announce goroutines
	stop       chan struct{}  // closed by close

	mu struct {
		sync.Mutex
		want   bool               // this node is master: it should hold the address
		ln     *remoting.Listener // the listener on the address, while held
		failed error              // why the address cannot be taken (not retried): registrations carry brokerIP1
		gen    uint64             // bumped by every release: retries and announcements of an older holding stop
		closed bool
	}
}

// validateVIP checks masterVipAddress and masterVipInterface, naming the bad key.
func (c Config) validateVIP() error {
	r := c.Raft
	if r.MasterVipAddress == "" {
		if r.MasterVipInterface != "" {
			return fmt.Errorf("config key masterVipInterface: %q is set without masterVipAddress", r.MasterVipInterface)
		}
		return nil
	}
	var errs []error
	bad := func(key string, format string, args ...any) {
		errs = append(errs, fmt.Errorf("config key %s: %s", key, fmt.Sprintf(format, args...)))
	}
	if !r.EnableDLegerCommitLog {
		bad("masterVipAddress", "only the Raft mode (enableDLegerCommitLog=true) has a master that moves: leave it unset")
	}
	ip, err := netip.ParseAddr(r.MasterVipAddress)
	switch {
	case err != nil:
		bad("masterVipAddress", "%q is not an IP address", r.MasterVipAddress)
	case !ip.Unmap().Is4():
		bad("masterVipAddress", "%s is not an IPv4 address (the gratuitous ARP is IPv4 only)", ip)
	case ip.IsUnspecified() || ip.IsMulticast() || ip.Unmap() == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
		bad("masterVipAddress", "%s is not a unicast address", ip)
	case ip.Unmap().IsLoopback() && r.MasterVipInterface != "":
		bad("masterVipInterface", "%q is set, but masterVipAddress %s is a loopback address, which Linux answers without adding it: leave masterVipInterface empty", r.MasterVipInterface, ip)
	case !ip.Unmap().IsLoopback() && r.MasterVipInterface == "":
		bad("masterVipAddress", "%s is not a loopback address: set masterVipInterface to the network interface the master adds it to", ip)
	}
	if n := r.MasterVipInterface; n != "" && (len(n) > 15 || strings.ContainsAny(n, "/ \t\n:")) {
		bad("masterVipInterface", "%q is not a network interface name (at most 15 characters, no '/', ':' or spaces)", n)
	}
	if peers, err := raftlog.ParsePeers(r.DLegerPeers); err == nil && ip.IsValid() {
		for _, p := range peers {
			if host, _, err := net.SplitHostPort(p.Addr); err == nil && host == ip.Unmap().String() {
				bad("masterVipAddress", "%s is node %s's address in dLegerPeers: the virtual address must not be a node's own", ip, p.ID)
			}
		}
	}
	if c.BrokerIP1 == "" {
		bad("brokerIP1", "must be set with masterVipAddress: it is this node's own address, which it binds and registers as a slave (a detected address could be the virtual one)")
	} else if own, err := netip.ParseAddr(c.BrokerIP1); err == nil && ip.IsValid() && own.Unmap() == ip.Unmap() {
		bad("masterVipAddress", "%s is also brokerIP1: the virtual address must not be a node's own", ip)
	}
	return errors.Join(errs...)
}

// clientListenHost is the host the client port binds: brokerIP1 alone when masterVipAddress is set (the
// master binds the virtual address on the same port), else as listenHost.
func clientListenHost(cfg Config) string {
	if cfg.Raft.MasterVipAddress != "" {
		return cfg.BrokerIP1
	}
	return listenHost(cfg.BrokerIP1)
}

// newRaftVIP prepares the virtual address of cfg (nil when unset): on a real interface it checks the
// interface and the capabilities, so that a node which could never take the address does not start.
func newRaftVIP(cfg Config, server *remoting.Server, log *slog.Logger) (*raftVIP, error) {
	if cfg.Raft.MasterVipAddress == "" {
		return nil, nil
	}
	ip := netip.MustParseAddr(cfg.Raft.MasterVipAddress).Unmap() // validated
	v := &raftVIP{ip: ip, addr: net.JoinHostPort(ip.String(), strconv.Itoa(cfg.ListenPort)), iface: cfg.Raft.MasterVipInterface,
		server: server, log: log.With("masterVipAddress", ip.String()), stop: make(chan struct{})}
	v.slaveEntry.Store(true)
	if v.iface != "" {
		link, err := openVIPInterface(v.iface)
		if err != nil {
			return nil, v.keyError(err)
		}
		v.link = link
	}
	return v, nil
}

// keyError words a failure to manage the address on its interface, naming the keys.
func (v *raftVIP) keyError(err error) error {
	if errors.Is(err, errVIPPermission) {
		return fmt.Errorf("config key masterVipInterface: adding masterVipAddress %s to %s needs CAP_NET_ADMIN (and CAP_NET_RAW for the gratuitous ARP), which this process lacks: run it as root or grant them (systemd AmbientCapabilities=CAP_NET_ADMIN CAP_NET_RAW; the Ansible role does when masterVipInterface is set): %w",
			v.ip, v.iface, err)
	}
	return fmt.Errorf("config key masterVipInterface: masterVipAddress %s on %s: %w", v.ip, v.iface, err)
}

// clearStale removes the address from the interface when it is there (left by a crash of this node: a
// starting node is a slave). Called before the Raft node starts.
func (v *raftVIP) clearStale() error {
	if v == nil || v.link == nil {
		return nil
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	had, err := v.link.Remove(v.ip)
	if err != nil {
		return v.keyError(err)
	}
	if had {
		v.log.Warn("raft: removed the master's virtual address left on the interface (a crash?); this node starts as a slave", "interface", v.iface)
	}
	return nil
}

// take makes this node hold the address (RoleLeader): at once when it can, else from a goroutine that
// retries until it holds it, steps down or closes.
func (v *raftVIP) take() {
	if v == nil {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.mu.closed || v.mu.want {
		return
	}
	v.mu.want = true
	v.mu.failed = nil
	if v.tryLocked(true) {
		return
	}
	gen := v.mu.gen
	v.wg.Add(1)
	go v.retry(gen)
}

// retry tries to take the address every vipRetryInterval while holding generation gen is still wanted.
func (v *raftVIP) retry(gen uint64) {
	defer v.wg.Done()
	t := time.NewTicker(vipRetryInterval)
	defer t.Stop()
	start, logged := time.Now(), time.Now()
	for {
		select {
		case <-v.stop:
			return
		case <-t.C:
		}
		v.mu.Lock()
		if v.mu.closed || !v.mu.want || v.mu.gen != gen {
			v.mu.Unlock()
			return
		}
		again := time.Since(logged) >= vipRetryLogEvery // say so again now and then
		if again {
			logged = time.Now()
		}
		done := v.tryLocked(again)
		held := v.mu.ln != nil
		v.mu.Unlock()
		if done {
			if held {
				v.log.Info("raft: took the master's virtual address after waiting for it", "waited", time.Since(start).Round(time.Millisecond))
			}
			return
		}
	}
}

// tryLocked tries once to add the address and listen on it. It reports whether trying is over: held, or
// failed for good (mu.failed set). A transient failure is logged when first is set.
// Lock should be held.
func (v *raftVIP) tryLocked(first bool) bool {
	if v.link != nil {
		if err := v.link.Add(v.ip); err != nil {
			return v.failLocked(v.keyError(err), errors.Is(err, errVIPPermission), first)
		}
	}
	ln, err := v.server.Listen(v.addr)
	if err != nil {
		// EADDRINUSE: the old master (same host) still listens; EADDRNOTAVAIL: the address is not usable on
		// the interface yet. Anything else (EACCES) does not pass by waiting.
		transient := errors.Is(err, syscall.EADDRINUSE) || errors.Is(err, syscall.EADDRNOTAVAIL)
		return v.failLocked(fmt.Errorf("config key masterVipAddress: listen on %s: %w", v.addr, err), !transient, first)
	}
	v.mu.ln = ln
	v.log.Info("raft: master: listening on the master's virtual address", "addr", v.addr, "interface", v.iface)
	if v.link != nil {
		gen := v.mu.gen
		v.wg.Add(1)
		go v.announce(gen)
	}
	return true
}

// failLocked records a failed take: for good (fatal) or to be retried. Lock should be held.
func (v *raftVIP) failLocked(err error, fatal, first bool) bool {
	if fatal {
		v.mu.failed = err
		v.log.Error("raft: master cannot take its virtual address; registering brokerIP1 as brokerId 0 instead (clients find it at their next route refresh)", "err", err)
		return true
	}
	if first {
		v.log.Warn("raft: master's virtual address not free yet; retrying", "err", err, "every", vipRetryInterval)
	}
	return false
}

// announce sends the gratuitous ARPs of holding generation gen, unless it was released meanwhile.
func (v *raftVIP) announce(gen uint64) {
	defer v.wg.Done()
	start := time.Now()
	for _, after := range vipAnnounceAfter {
		if wait := time.Until(start.Add(after)); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-v.stop:
				t.Stop()
				return
			case <-t.C:
			}
		}
		v.mu.Lock()
		if v.mu.gen != gen || v.mu.ln == nil {
			v.mu.Unlock()
			return
		}
		err := v.link.Announce(v.ip)
		v.mu.Unlock()
		if err != nil {
			v.log.Warn("raft: gratuitous ARP for the master's virtual address failed", "interface", v.iface, "err", v.keyError(err))
		}
	}
}

// release gives the address up (RoleFollower, shutdown): no more connections through it, every open one
// closed at once, the address off the interface. why is logged.
func (v *raftVIP) release(why string) {
	if v == nil {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	v.releaseLocked(why)
}

// releaseLocked is release. Lock should be held.
func (v *raftVIP) releaseLocked(why string) {
	if !v.mu.want {
		return
	}
	v.mu.want = false
	v.mu.failed = nil
	v.mu.gen++
	closed := 0
	if ln := v.mu.ln; ln != nil {
		n, err := ln.Close()
		closed = n
		if err != nil {
			v.log.Warn("raft: closing the listener on the master's virtual address", "err", err)
		}
		v.mu.ln = nil
	}
	if v.link != nil {
		if _, err := v.link.Remove(v.ip); err != nil {
			v.log.Error("raft: could not remove the master's virtual address from its interface", "interface", v.iface, "err", v.keyError(err))
		}
	}
	v.log.Info("raft: released the master's virtual address", "why", why, "connsClosed", closed)
}

// close releases the address for good (shutdown) and waits for the goroutines; no take after it.
func (v *raftVIP) close() {
	if v == nil {
		return
	}
	v.mu.Lock()
	v.releaseLocked("shutdown")
	if !v.mu.closed {
		v.mu.closed = true
		close(v.stop)
	}
	v.mu.Unlock()
	v.wg.Wait()
}

// held reports whether the node listens on the address now.
func (v *raftVIP) held() bool {
	if v == nil {
		return false
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.mu.ln != nil
}

// heldAddr is the address with listenPort while the node listens on it, else "".
func (v *raftVIP) heldAddr() string {
	if !v.held() {
		return ""
	}
	return v.addr
}

// routeAddr is the address a registration as brokerId 0 carries: the virtual one while this master
// wants it (also while it waits for the port) unless taking it failed for good, else own.
func (v *raftVIP) routeAddr(own string) string {
	if v == nil {
		return own
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.mu.want && v.mu.failed == nil {
		return v.addr
	}
	return own
}

// registrationAddr is the brokerAddr a registration with brokerId id carries (register.go).
func (r *raftRole) registrationAddr(id int64) string {
	if id != 0 {
		return r.b.addr
	}
	return r.vip.routeAddr(r.b.addr)
}

// registered runs after a registration succeeded (register loop). A master registered through the
// virtual address unregisters its own address's slave entry once: left there, it would expire at the name
// servers and take the master's registration with it (they close the connection of an expired broker, and
// drop every registration made on it).
func (r *raftRole) registered(ctx context.Context, res registerResult, _ bool) {
	b, v, id, addr := r.b, r.vip, res.id, res.addr
	if v == nil {
		return
	}
	if id != 0 {
		v.slaveEntry.Store(true)
		return
	}
	if addr != v.addr || !v.slaveEntry.Load() {
		return
	}
	ext := map[string]string{"brokerName": b.cfg.BrokerName, "brokerAddr": b.addr,
		"clusterName": b.cfg.BrokerClusterName, "brokerId": itoa(r.slaveID)}
	ok := true
	for _, ns := range b.cfg.NamesrvAddrs() {
		cctx, cancel := context.WithTimeout(ctx, ms(b.cfg.RegisterBrokerTimeoutMills))
		resp, err := b.nsClient.Invoke(cctx, ns, remoting.NewRequest(remoting.UnregisterBroker, copyMap(ext), nil))
		cancel()
		if err == nil && resp.Code != int32(remoting.Success) {
			err = &remoteError{code: resp.Code, remark: resp.Remark}
		}
		if err != nil {
			ok = false
			b.log.Warn("raft: unregistering this master's slave entry failed; retried after the next registration", "namesrv", ns, "err", err)
		}
	}
	if ok {
		v.slaveEntry.Store(false)
	}
}

// RouteAddr is the address this broker registers with the name servers: the master's virtual address on
// a Raft master that holds masterVipAddress (or waits for it), else Addr.
func (b *Broker) RouteAddr() string { return b.role.routeAddr() }

// MasterVipHeld reports whether this node listens on masterVipAddress now (false when it is unset).
func (b *Broker) MasterVipHeld() bool { return b.raft != nil && b.raft.vip.held() }
