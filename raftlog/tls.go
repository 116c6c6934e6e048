package raftlog

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
	"github.com/rocketraft/rocketraft/internal/peertls"
)

// The Raft transport under peer TLS (peerTlsMode=enforcing; peertls/doc.go has the trust model).
//
// hashicorp/raft's NetworkTransport reads RPCs off a connection and hands them to Raft without
// saying which connection they came from, and every RPC carries the id and address its sender
// claims (RPCHeader.ID and .Addr: a vote is granted to, and a leader recorded as, that id). So the
// certified identity of a connection must travel with its RPCs. tlsTransport does it this way:
//
//   - Outgoing RPCs use one NetworkTransport whose stream layer (tlsDialer) dials TLS and checks
//     that the server's certificate names the node the address belongs to (dLegerPeers, the
//     dial overrides, or any node of the group for an address it cannot place).
//   - Incoming connections are accepted here: TLS handshake with a client certificate required
//     (chain to the cluster CA, a node name of this group). Each authenticated connection gets
//     its own NetworkTransport over a one-connection stream layer, so every RPC that comes out
//     of it is known to come from that certified id. A forwarding goroutine checks the RPC's
//     claimed id (and address, for a member of dLegerPeers) against the certified one before
//     passing it to Raft's channel; a mismatch is answered with an error, logged once, and the
//     connection closed. Heartbeats (NetworkTransport's fast path) go through the same check.
//
// Cost: one TLS handshake per pooled connection, the record layer's encryption, and one more
// channel hand-off per incoming RPC.
//
// Append frames (Config.FramedAppends; append_client.go) dial through the same tlsDialer, and an
// incoming connection whose first byte after the handshake is appendWireMagic is read by
// serveFrames instead of a NetworkTransport, every request through the same check (deliver).

// tlsTransport is a raft.Transport over mutual TLS that binds each incoming RPC to the id its
// connection's certificate names.
type tlsTransport struct {
	*redialTransport // outgoing RPCs (NetworkTransport, sent again after a peer's close); its stream accepts nothing
	// frames sends AppendEntries as append frames over TLS dials (Config.FramedAppends); nil:
	// msgpack, and an incoming connection that opens with the frames' magic byte is read as
	// NetworkTransport's, which hangs up on it (as an older version would).
	frames *appendClient

	m     *peertls.Material
	ln    net.Listener
	lg    *slog.Logger
	addrs map[string]string // id -> address in dLegerPeers (the address a member must claim)
	tc    raft.NetworkTransportConfig

	consume   chan raft.RPC
	heartbeat atomic.Pointer[func(raft.RPC)]
	shutdown  chan struct{}
	closeOnce sync.Once
	wg        sync.WaitGroup

	mu struct {
		sync.Mutex
		conns       map[*inConn]struct{}
		handshaking map[net.Conn]struct{} // closed by Close, so it need not wait for a handshake's deadline
	}
}

var (
	_ raft.Transport   = (*tlsTransport)(nil)
	_ raft.WithClose   = (*tlsTransport)(nil)
	_ raft.WithPreVote = (*tlsTransport)(nil)
)

// newTLSTransport listens on bind (this node's address in dLegerPeers, also what it advertises)
// and dials through tc.ServerAddressProvider when set. dialedID tells which node an address
// belongs to, "" when unknown.
func newTLSTransport(bind string, peers []Peer, m *peertls.Material, tc raft.NetworkTransportConfig, dialedID func(addr string) string, framed bool, stats *nodeStats, lg *slog.Logger) (*tlsTransport, error) {
	ln, err := net.Listen("tcp", bind)
	if err != nil {
		return nil, err
	}
	t := &tlsTransport{m: m, ln: ln, lg: lg, addrs: map[string]string{}, tc: tc,
		consume: make(chan raft.RPC), shutdown: make(chan struct{})}
	t.mu.conns = map[*inConn]struct{}{}
	t.mu.handshaking = map[net.Conn]struct{}{}
	for _, p := range peers {
		t.addrs[p.ID] = p.Addr
	}
	d := &tlsDialer{m: m, advertise: advertiseAddr(bind), closed: make(chan struct{}), dialedID: dialedID}
	out := tc
	out.Stream = d
	t.redialTransport = newRedialTransport(out)
	if framed {
		t.frames = newAppendClient(d.Dial, t.redialTransport, tc, stats, lg)
	}
	t.wg.Add(1)
	go t.acceptLoop()
	return t, nil
}

// AppendEntries sends args as append frames, or as msgpack when frames are off or the peer
// lacks them.
func (t *tlsTransport) AppendEntries(id raft.ServerID, target raft.ServerAddress, args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) error {
	if t.frames != nil {
		return t.frames.AppendEntries(id, target, args, resp)
	}
	return t.redialTransport.AppendEntries(id, target, args, resp)
}

// AppendEntriesPipeline is AppendEntries' pipelined form.
func (t *tlsTransport) AppendEntriesPipeline(id raft.ServerID, target raft.ServerAddress) (raft.AppendPipeline, error) {
	if t.frames != nil {
		return t.frames.AppendEntriesPipeline(id, target)
	}
	return t.redialTransport.AppendEntriesPipeline(id, target)
}

// Consumer is the channel of the RPCs that passed the identity check.
func (t *tlsTransport) Consumer() <-chan raft.RPC { return t.consume }

// SetHeartbeatHandler sets Raft's fast path for heartbeats (called on checked RPCs only).
func (t *tlsTransport) SetHeartbeatHandler(cb func(raft.RPC)) {
	if cb == nil {
		t.heartbeat.Store(nil)
		return
	}
	t.heartbeat.Store(&cb)
}

// Close stops accepting, closes every incoming connection and the outgoing transport, and waits
// for the goroutines of the incoming side.
func (t *tlsTransport) Close() error {
	var err error
	t.closeOnce.Do(func() {
		close(t.shutdown)
		_ = t.ln.Close()
		t.mu.Lock()
		conns := make([]*inConn, 0, len(t.mu.conns))
		for c := range t.mu.conns {
			conns = append(conns, c)
		}
		for c := range t.mu.handshaking {
			_ = c.Close()
		}
		t.mu.Unlock()
		if t.frames != nil {
			t.frames.close()
		}
		for _, c := range conns {
			c.close()
		}
		err = t.NetworkTransport.Close()
		t.wg.Wait()
	})
	return err
}

func (t *tlsTransport) acceptLoop() {
	defer t.wg.Done()
	delay := 5 * time.Millisecond
	for {
		c, err := t.ln.Accept()
		if err != nil {
			select {
			case <-t.shutdown:
				return
			case <-time.After(delay):
			}
			delay = min(2*delay, time.Second)
			continue
		}
		delay = 5 * time.Millisecond
		t.wg.Add(1)
		go t.serve(c)
	}
}

// refused logs a refused connection once, with the peer's address.
func (t *tlsTransport) refused(remote net.Addr, what string, err error) {
	t.lg.Warn("raft: refused a peer connection", "remote", remote.String(), "stage", what, "err", err)
}

// serve authenticates one incoming connection and runs its RPCs through the identity check.
func (t *tlsTransport) serve(raw net.Conn) {
	defer t.wg.Done()
	t.mu.Lock()
	select {
	case <-t.shutdown:
		t.mu.Unlock()
		_ = raw.Close()
		return
	default:
	}
	t.mu.handshaking[raw] = struct{}{}
	t.mu.Unlock()
	tc := tls.Server(raw, t.m.ServerConfig())
	timeout := t.tc.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	_ = tc.SetDeadline(time.Now().Add(timeout))
	err := tc.Handshake()
	t.mu.Lock()
	delete(t.mu.handshaking, raw)
	t.mu.Unlock()
	if err != nil {
		select {
		case <-t.shutdown:
		default:
			t.refused(raw.RemoteAddr(), "tls handshake", err)
		}
		_ = raw.Close()
		return
	}
	_ = tc.SetDeadline(time.Time{})
	id, err := t.m.PeerID(tc.ConnectionState())
	if err != nil { // the handshake's check passed: cannot happen short of a reload race
		t.refused(raw.RemoteAddr(), "certificate", err)
		_ = tc.Close()
		return
	}
	c := &inConn{t: t, id: id, remote: raw.RemoteAddr(), done: make(chan struct{})}
	pc := &prefixConn{Conn: tc}
	c.conn = &notifyConn{Conn: pc, c: c}
	t.mu.Lock()
	select {
	case <-t.shutdown:
		t.mu.Unlock()
		_ = tc.Close()
		return
	default:
	}
	t.mu.conns[c] = struct{}{}
	t.mu.Unlock()
	// The first byte tells append frames (append_transport.go) from NetworkTransport's RPCs.
	first, err := readFirstByte(tc, timeout)
	if err != nil {
		c.close()
		t.forget(c)
		return
	}
	if first == appendWireMagic && t.frames != nil {
		serveFrames(tc, timeout, c.done, t.frames.stats, t.lg, func(rpc raft.RPC, heartbeat bool) bool {
			c.deliver(rpc, heartbeat)
			return !c.poisoned.Load()
		})
		c.close()
		t.forget(c)
		return
	}
	pc.first, pc.has = first, true
	cfg := t.tc
	cfg.Stream = &oneConnStream{conn: c.conn, addr: t.ln.Addr(), closed: make(chan struct{})}
	cfg.ServerAddressProvider = nil
	cfg.Logger = NewHCLogger(t.lg.With("peer", id, "remote", c.remote.String()))
	c.sub = raft.NewNetworkTransportWithConfig(&cfg)
	c.sub.SetHeartbeatHandler(func(rpc raft.RPC) { c.deliver(rpc, true) })
	c.forward()
}

// forget drops a closed incoming connection from the set Close closes.
func (t *tlsTransport) forget(c *inConn) {
	t.mu.Lock()
	delete(t.mu.conns, c)
	t.mu.Unlock()
}

// inConn is one authenticated incoming connection and the NetworkTransport (or, for append
// frames, serveFrames) reading it.
type inConn struct {
	t         *tlsTransport
	id        string
	remote    net.Addr
	conn      net.Conn
	sub       *raft.NetworkTransport
	done      chan struct{}
	closeOnce sync.Once
	warned    atomic.Bool
	poisoned  atomic.Bool // an RPC failed the check: no more reads
}

// forward passes the connection's checked RPCs to Raft until the connection closes.
func (c *inConn) forward() {
	defer func() {
		_ = c.sub.Close()
		c.t.forget(c)
	}()
	for {
		select {
		case rpc := <-c.sub.Consumer():
			c.deliver(rpc, false)
		case <-c.done:
			return
		}
	}
}

// deliver checks one RPC and hands it to Raft (a heartbeat to its fast path when set).
func (c *inConn) deliver(rpc raft.RPC, heartbeat bool) {
	if err := c.t.checkClaim(c.id, rpc.Command); err != nil {
		// The answer is the error; the connection then reads as ended (notifyConn), so
		// NetworkTransport flushes the answer, stops and closes it.
		c.poisoned.Store(true)
		rpc.Respond(nil, err)
		if !c.warned.Swap(true) {
			c.t.lg.Warn("raft: refused an RPC whose claimed sender is not its certificate's; closing the connection",
				"remote", c.remote.String(), "certified", c.id, "err", err)
		}
		return
	}
	if heartbeat {
		if fn := c.t.heartbeat.Load(); fn != nil {
			(*fn)(rpc)
			return
		}
	}
	select {
	case c.t.consume <- rpc:
	case <-c.t.shutdown:
		rpc.Respond(nil, raft.ErrTransportShutdown)
	case <-c.done:
		rpc.Respond(nil, raft.ErrTransportShutdown)
	}
}

func (c *inConn) close() {
	c.closeOnce.Do(func() {
		close(c.done)
		_ = c.conn.(*notifyConn).Conn.Close()
	})
}

// errClaim is the answer to an RPC whose claimed sender is not the connection's certified id.
var errClaim = errors.New("raftlog: the RPC's sender is not the node its connection's certificate names")

// checkClaim checks that the id an RPC claims is certID and, when certID is a member of
// dLegerPeers, that every address it claims is certID's address there.
func (t *tlsTransport) checkClaim(certID string, cmd any) error {
	h, ok := cmd.(raft.WithRPCHeader)
	if !ok {
		return fmt.Errorf("%w: an RPC of type %T has no header", errClaim, cmd)
	}
	hdr := h.GetRPCHeader()
	if string(hdr.ID) != certID {
		return fmt.Errorf("%w: it claims id %q, the certificate names %q", errClaim, hdr.ID, certID)
	}
	want, member := t.addrs[certID]
	if !member {
		return nil
	}
	claimed := [][]byte{hdr.Addr}
	switch r := cmd.(type) {
	case *raft.AppendEntriesRequest:
		claimed = append(claimed, r.Leader) //nolint:staticcheck // deprecated, still read by Raft
	case *raft.RequestVoteRequest:
		claimed = append(claimed, r.Candidate) //nolint:staticcheck // deprecated, still read by Raft
	case *raft.InstallSnapshotRequest:
		claimed = append(claimed, r.Leader) //nolint:staticcheck // deprecated, still read by Raft
	}
	for _, a := range claimed {
		if len(a) > 0 && string(a) != want {
			return fmt.Errorf("%w: node %q claims address %q, its address in dLegerPeers is %q", errClaim, certID, a, want)
		}
	}
	return nil
}

// notifyConn tells its inConn when NetworkTransport closes it, and reads as ended (io.EOF, which
// NetworkTransport takes for a peer that hung up, quietly) once the connection is refused or
// closed by this side.
type notifyConn struct {
	net.Conn
	c *inConn
}

func (n *notifyConn) Read(b []byte) (int, error) {
	if n.c.poisoned.Load() {
		return 0, io.EOF
	}
	k, err := n.Conn.Read(b)
	if err != nil {
		select {
		case <-n.c.done:
			return k, io.EOF
		default:
		}
	}
	return k, err
}

func (n *notifyConn) Close() error { n.c.close(); return nil }

// oneConnStream is the stream layer of an incoming connection's NetworkTransport: Accept yields
// the connection once, then waits until the transport is closed. It dials nothing; the inConn
// owns the connection.
type oneConnStream struct {
	conn      net.Conn
	addr      net.Addr
	closed    chan struct{}
	closeOnce sync.Once
	taken     atomic.Bool
}

func (s *oneConnStream) Accept() (net.Conn, error) {
	if !s.taken.Swap(true) {
		return s.conn, nil
	}
	<-s.closed
	return nil, net.ErrClosed
}

func (s *oneConnStream) Close() error {
	s.closeOnce.Do(func() { close(s.closed) })
	return nil
}

func (s *oneConnStream) Addr() net.Addr { return s.addr }
func (s *oneConnStream) Dial(raft.ServerAddress, time.Duration) (net.Conn, error) {
	return nil, errors.New("raftlog: an incoming connection's transport dials nothing")
}

// tlsDialer is the stream layer of the outgoing transport: TLS dials whose server must be the
// node the address belongs to. Its Accept yields nothing (tlsTransport accepts).
type tlsDialer struct {
	m         *peertls.Material
	advertise net.Addr
	closed    chan struct{}
	closeOnce sync.Once
	dialedID  func(addr string) string
}

func (d *tlsDialer) Accept() (net.Conn, error) {
	<-d.closed
	return nil, net.ErrClosed
}

func (d *tlsDialer) Close() error {
	d.closeOnce.Do(func() { close(d.closed) })
	return nil
}

func (d *tlsDialer) Addr() net.Addr { return d.advertise }

func (d *tlsDialer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	want := ""
	if d.dialedID != nil {
		want = d.dialedID(string(address))
	}
	dialer := &net.Dialer{Timeout: timeout}
	raw, err := dialer.Dial("tcp", string(address))
	if err != nil {
		return nil, err
	}
	c := tls.Client(raw, d.m.ClientConfig(want))
	if timeout > 0 {
		_ = c.SetDeadline(time.Now().Add(timeout))
	}
	if err := c.Handshake(); err != nil {
		_ = raw.Close()
		return nil, fmt.Errorf("raftlog: TLS to %s (node %q): %w", address, want, err)
	}
	_ = c.SetDeadline(time.Time{})
	return c, nil
}

// advertiseAddr is the address a node advertises (its dLegerPeers address, as given).
type advertiseAddr string

func (a advertiseAddr) Network() string { return "tcp" }
func (a advertiseAddr) String() string  { return string(a) }

// dialedID is the member of dLegerPeers whose address (or dial override) is addr, "" for an
// address it cannot place (a node added later, whose certificate is then only checked to be
// of the group).
func (n *Node) dialedID(addr string) string {
	for _, p := range n.cfg.Peers {
		if n.opts.AddressOf != nil {
			if a := n.opts.AddressOf(p.ID); a != "" {
				if a == addr {
					return p.ID
				}
				continue
			}
		}
		if p.Addr == addr {
			return p.ID
		}
	}
	return ""
}
