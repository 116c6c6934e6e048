package raftlog

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/raft"
)

// appendWireMagic opens a connection of the append wire; NetworkTransport opens each of its
// connections with an RPC type (0 to 4), never this.
const appendWireMagic byte = 0xF7

// appendTransport is a NetworkTransport whose AppendEntries (pipelined or not, heartbeats
// included) travel as the binary frames of append_wire.go on connections of their own, on the
// same listener: the accept loop reads each connection's first byte and keeps those that open
// with appendWireMagic, handing the others (votes, snapshots, TimeoutNow) to the NetworkTransport.
type appendTransport struct {
	*raft.NetworkTransport
	ln          net.Listener
	accepted    chan net.Conn
	consumeCh   chan raft.RPC
	timeout     time.Duration
	provider    raft.ServerAddressProvider
	maxInFlight int
	lg          *slog.Logger

	hbMu sync.Mutex
	hb   func(raft.RPC)

	mu     sync.Mutex
	pool   map[raft.ServerAddress][]*appendConn
	open   map[net.Conn]struct{}
	legacy map[raft.ServerAddress]time.Time // peers that refused the handshake, and when
	closed bool
	stop   chan struct{}
}

func newAppendTransport(bind string, tc raft.NetworkTransportConfig, lg *slog.Logger) (*appendTransport, error) {
	ln, err := net.Listen("tcp", bind)
	if err != nil {
		return nil, err
	}
	if a, ok := ln.Addr().(*net.TCPAddr); ok && a.IP.IsUnspecified() {
		_ = ln.Close()
		return nil, fmt.Errorf("%s is not an address other nodes can dial (as hashicorp/raft's TCP transport, an unspecified IP is refused)", bind)
	}
	t := &appendTransport{
		ln: ln, accepted: make(chan net.Conn), consumeCh: make(chan raft.RPC),
		timeout: tc.Timeout, provider: tc.ServerAddressProvider, maxInFlight: tc.MaxRPCsInFlight, lg: lg,
		pool: map[raft.ServerAddress][]*appendConn{}, open: map[net.Conn]struct{}{}, legacy: map[raft.ServerAddress]time.Time{}, stop: make(chan struct{}),
	}
	tc.Stream = muxStream{t}
	t.NetworkTransport = raft.NewNetworkTransportWithConfig(&tc)
	go t.acceptLoop()
	go t.forward()
	return t, nil
}

func (t *appendTransport) Consumer() <-chan raft.RPC { return t.consumeCh }

// forward hands on the RPCs of the NetworkTransport's connections.
func (t *appendTransport) forward() {
	in := t.NetworkTransport.Consumer()
	for {
		select {
		case rpc := <-in:
			select {
			case t.consumeCh <- rpc:
			case <-t.stop:
				rpc.Respond(nil, raft.ErrTransportShutdown)
				return
			}
		case <-t.stop:
			return
		}
	}
}

func (t *appendTransport) SetHeartbeatHandler(cb func(rpc raft.RPC)) {
	t.hbMu.Lock()
	t.hb = cb
	t.hbMu.Unlock()
	t.NetworkTransport.SetHeartbeatHandler(cb)
}

// track registers c to be closed by Close; false when Close has run (c is closed then).
func (t *appendTransport) track(c net.Conn) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		_ = c.Close()
		return false
	}
	t.open[c] = struct{}{}
	return true
}

func (t *appendTransport) untrack(c net.Conn) {
	t.mu.Lock()
	delete(t.open, c)
	t.mu.Unlock()
	_ = c.Close()
}

func (t *appendTransport) Close() error { return t.NetworkTransport.Close() } // it closes muxStream

// shutdown closes the listener and every append connection, and makes track refuse new ones.
func (t *appendTransport) shutdown() error {
	err := t.ln.Close()
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.closed {
		t.closed = true
		close(t.stop)
		for c := range t.open {
			_ = c.Close()
		}
		t.open = nil
		t.pool = nil
	}
	return err
}

func (t *appendTransport) acceptLoop() {
	var backoff time.Duration
	for {
		c, err := t.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of file descriptors and the like: wait a little longer each time (as
			// net/http's server does) rather than spin.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			t.lg.Warn("raft transport: accept failed", "err", err, "retry in", backoff)
			select {
			case <-t.stop:
				return
			case <-time.After(backoff):
			}
			continue
		}
		backoff = 0
		go t.demux(c)
	}
}

// demux routes an accepted connection by its first byte.
func (t *appendTransport) demux(c net.Conn) {
	var first [1]byte
	_ = c.SetReadDeadline(time.Now().Add(t.timeout))
	if _, err := io.ReadFull(c, first[:]); err != nil {
		_ = c.Close()
		return
	}
	_ = c.SetReadDeadline(time.Time{})
	if first[0] == appendWireMagic {
		if !t.track(c) {
			return
		}
		_ = c.SetWriteDeadline(time.Now().Add(t.timeout))
		if _, err := c.Write([]byte{appendWireMagic}); err != nil { // the handshake's answer
			t.untrack(c)
			return
		}
		t.serve(c)
		return
	}
	select {
	case t.accepted <- &prefixConn{Conn: c, first: first[0], has: true}:
	case <-t.stop:
		_ = c.Close()
	}
}

// serve answers the AppendEntries of one append connection, one at a time, in order.
func (t *appendTransport) serve(c net.Conn) {
	defer t.untrack(c)
	br := bufio.NewReaderSize(c, 256<<10)
	var out []byte
	var hdr [4]byte
	for {
		if _, err := io.ReadFull(br, hdr[:]); err != nil {
			return
		}
		n := binary.BigEndian.Uint32(hdr[:])
		if n > maxAppendWireFrame {
			t.lg.Warn("raft append transport: frame too long, connection dropped", "len", n, "limit", maxAppendWireFrame, "peer", c.RemoteAddr().String())
			return
		}
		body, err := readFrameBody(br, n)
		if err != nil {
			return
		}
		req, err := decodeAppendRequest(body)
		if err != nil {
			t.lg.Warn("raft append transport: connection dropped", "err", err, "peer", c.RemoteAddr().String())
			return
		}
		respCh := make(chan raft.RPCResponse, 1)
		rpc := raft.RPC{Command: req, RespChan: respCh}
		leader := req.Addr
		if len(leader) == 0 {
			leader = req.Leader
		}
		heartbeat := req.Term != 0 && leader != nil && req.PrevLogEntry == 0 && req.PrevLogTerm == 0 &&
			len(req.Entries) == 0 && req.LeaderCommitIndex == 0
		var hb func(raft.RPC)
		if heartbeat {
			t.hbMu.Lock()
			hb = t.hb
			t.hbMu.Unlock()
		}
		if hb != nil {
			hb(rpc)
		} else {
			select {
			case t.consumeCh <- rpc:
			case <-t.stop:
				return
			}
		}
		var resp raft.RPCResponse
		select {
		case resp = <-respCh:
		case <-t.stop:
			return
		}
		ar, _ := resp.Response.(*raft.AppendEntriesResponse)
		out = encodeAppendResponse(out[:0], ar, resp.Error)
		_ = c.SetWriteDeadline(time.Now().Add(t.timeout))
		if _, err := c.Write(out); err != nil {
			return
		}
	}
}

// readFrameBody reads a body of n bytes; past 1 MiB it grows the buffer as the bytes come, so
// a length that lies costs only the bytes really sent.
func readFrameBody(r io.Reader, n uint32) ([]byte, error) {
	if n <= 1<<20 {
		body := make([]byte, n)
		_, err := io.ReadFull(r, body)
		return body, err
	}
	var buf bytes.Buffer
	buf.Grow(1 << 20)
	if _, err := io.CopyN(&buf, r, int64(n)); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// appendConn is one outgoing append connection.
type appendConn struct {
	c   net.Conn
	br  *bufio.Reader
	out []byte
	hdr [4]byte
}

func (t *appendTransport) dial(id raft.ServerID, target raft.ServerAddress) (*appendConn, error) {
	addr := t.resolve(id, target)
	c, err := net.DialTimeout("tcp", string(addr), t.timeout)
	if err != nil {
		return nil, err
	}
	if !t.track(c) {
		return nil, raft.ErrTransportShutdown
	}
	_ = c.SetDeadline(time.Now().Add(t.timeout))
	if _, err := c.Write([]byte{appendWireMagic}); err != nil {
		t.untrack(c)
		return nil, err
	}
	var ack [1]byte
	if _, err := io.ReadFull(c, ack[:]); err != nil || ack[0] != appendWireMagic {
		t.untrack(c)
		if err == nil || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) {
			// A node without the frames (an older version) reads the magic as an unknown RPC
			// type and hangs up: it gets hashicorp/raft's encoding for a while.
			t.mu.Lock()
			if t.legacy != nil {
				t.legacy[addr] = time.Now()
			}
			t.mu.Unlock()
			t.lg.Warn("raft peer does not take append frames; using msgpack for it for a minute", "peer", string(addr), "err", err)
			return nil, errLegacyPeer
		}
		return nil, err
	}
	_ = c.SetDeadline(time.Time{})
	return &appendConn{c: c, br: bufio.NewReaderSize(c, 64<<10)}, nil
}

// errLegacyPeer: the peer answered the handshake as a node without the frames would.
var errLegacyPeer = errors.New("raftlog: peer without append frames")

// legacyPeer reports whether target (as dial resolves it) recently refused the handshake.
func (t *appendTransport) legacyPeer(id raft.ServerID, target raft.ServerAddress) bool {
	addr := t.resolve(id, target)
	t.mu.Lock()
	defer t.mu.Unlock()
	at, ok := t.legacy[addr]
	if ok && time.Since(at) > legacyRetry {
		delete(t.legacy, addr)
		return false
	}
	return ok
}

// legacyRetry is how long a peer that refused the handshake gets msgpack before the next try.
const legacyRetry = time.Minute

func (t *appendTransport) resolve(id raft.ServerID, target raft.ServerAddress) raft.ServerAddress {
	if t.provider != nil {
		if a, err := t.provider.ServerAddr(id); err == nil {
			return a
		}
	}
	return target
}

// send writes args's frame.
func (fc *appendConn) send(args *raft.AppendEntriesRequest, timeout time.Duration) error {
	fc.out = encodeAppendRequest(fc.out[:0], args)
	if cap(fc.out) > 4<<20 {
		defer func() { fc.out = nil }() // a rare huge frame's buffer is not kept
	}
	_ = fc.c.SetWriteDeadline(time.Now().Add(timeout))
	_, err := fc.c.Write(fc.out)
	return err
}

// receive reads one response frame into resp; rpcErr is the error the peer answered.
func (fc *appendConn) receive(resp *raft.AppendEntriesResponse, timeout time.Duration) (rpcErr, err error) {
	_ = fc.c.SetReadDeadline(time.Now().Add(timeout))
	if _, err := io.ReadFull(fc.br, fc.hdr[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(fc.hdr[:])
	if n > 1<<20 {
		return nil, fmt.Errorf("%w: response of %d bytes", errAppendWire, n)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(fc.br, body); err != nil {
		return nil, err
	}
	return decodeAppendResponse(body, resp)
}

func (t *appendTransport) AppendEntries(id raft.ServerID, target raft.ServerAddress, args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) error {
	if t.legacyPeer(id, target) {
		return t.NetworkTransport.AppendEntries(id, target, args, resp)
	}
	fc, err := t.getConn(id, target)
	if errors.Is(err, errLegacyPeer) {
		return t.NetworkTransport.AppendEntries(id, target, args, resp)
	}
	if err != nil {
		return err
	}
	if err := fc.send(args, t.timeout); err != nil {
		t.untrack(fc.c)
		return err
	}
	rpcErr, err := fc.receive(resp, t.timeout)
	if err != nil {
		t.untrack(fc.c)
		return err
	}
	t.putConn(target, fc)
	return rpcErr
}

func (t *appendTransport) getConn(id raft.ServerID, target raft.ServerAddress) (*appendConn, error) {
	t.mu.Lock()
	if conns := t.pool[target]; len(conns) > 0 {
		fc := conns[len(conns)-1]
		t.pool[target] = conns[:len(conns)-1]
		t.mu.Unlock()
		return fc, nil
	}
	t.mu.Unlock()
	return t.dial(id, target)
}

func (t *appendTransport) putConn(target raft.ServerAddress, fc *appendConn) {
	t.mu.Lock()
	if !t.closed && len(t.pool[target]) < 3 {
		t.pool[target] = append(t.pool[target], fc)
		t.mu.Unlock()
		return
	}
	t.mu.Unlock()
	t.untrack(fc.c)
}

func (t *appendTransport) AppendEntriesPipeline(id raft.ServerID, target raft.ServerAddress) (raft.AppendPipeline, error) {
	if t.maxInFlight < 2 {
		return nil, raft.ErrPipelineReplicationNotSupported
	}
	if t.legacyPeer(id, target) {
		return t.NetworkTransport.AppendEntriesPipeline(id, target)
	}
	fc, err := t.dial(id, target)
	if errors.Is(err, errLegacyPeer) {
		return t.NetworkTransport.AppendEntriesPipeline(id, target)
	}
	if err != nil {
		return nil, err
	}
	p := &framedPipeline{
		t: t, fc: fc,
		// As NetworkTransport's: one sent beyond the channel's buffer while the reader waits
		// for the one before it.
		inflight: make(chan *framedFuture, t.maxInFlight-2),
		done:     make(chan raft.AppendFuture, t.maxInFlight-2),
		stop:     make(chan struct{}),
	}
	go p.readResponses()
	return p, nil
}

// framedPipeline sends AppendEntries without waiting for the answers, which a reader goroutine
// takes in order.
type framedPipeline struct {
	t        *appendTransport
	fc       *appendConn
	inflight chan *framedFuture
	done     chan raft.AppendFuture
	stop     chan struct{}
	once     sync.Once
}

func (p *framedPipeline) AppendEntries(args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) (raft.AppendFuture, error) {
	f := &framedFuture{start: time.Now(), args: args, resp: resp, errCh: make(chan error, 1)}
	if err := p.fc.send(args, p.t.timeout); err != nil {
		return nil, err
	}
	select {
	case p.inflight <- f:
		return f, nil
	case <-p.stop:
		return nil, raft.ErrPipelineShutdown
	}
}

func (p *framedPipeline) readResponses() {
	for {
		select {
		case f := <-p.inflight:
			rpcErr, err := p.fc.receive(f.resp, p.t.timeout)
			if err != nil {
				_ = p.fc.c.Close() // the stream is out of step: every later answer fails too
				rpcErr = err
			}
			f.errCh <- rpcErr
			select {
			case p.done <- f:
			case <-p.stop:
				return
			case <-p.t.stop:
				return
			}
		case <-p.stop:
			return
		case <-p.t.stop:
			return
		}
	}
}

func (p *framedPipeline) Consumer() <-chan raft.AppendFuture { return p.done }

func (p *framedPipeline) Close() error {
	p.once.Do(func() {
		close(p.stop)
		p.t.untrack(p.fc.c)
	})
	return nil
}

// framedFuture is one pipelined AppendEntries; its reader answers it once.
type framedFuture struct {
	start time.Time
	args  *raft.AppendEntriesRequest
	resp  *raft.AppendEntriesResponse
	errCh chan error
	once  sync.Once
	err   error
}

func (f *framedFuture) Error() error {
	f.once.Do(func() { f.err = <-f.errCh })
	return f.err
}
func (f *framedFuture) Start() time.Time                      { return f.start }
func (f *framedFuture) Request() *raft.AppendEntriesRequest   { return f.args }
func (f *framedFuture) Response() *raft.AppendEntriesResponse { return f.resp }

// muxStream is the NetworkTransport's stream layer: it accepts what demux hands on and dials
// plain TCP.
type muxStream struct{ t *appendTransport }

func (s muxStream) Accept() (net.Conn, error) {
	select {
	case c := <-s.t.accepted:
		return c, nil
	case <-s.t.stop:
		return nil, net.ErrClosed
	}
}

func (s muxStream) Close() error { return s.t.shutdown() }

func (s muxStream) Addr() net.Addr { return s.t.ln.Addr() }

func (s muxStream) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	return net.DialTimeout("tcp", string(address), timeout)
}

// prefixConn gives back the byte demux read before the rest of the connection.
type prefixConn struct {
	net.Conn
	first byte
	has   bool
}

func (c *prefixConn) Read(p []byte) (int, error) {
	if c.has && len(p) > 0 {
		p[0] = c.first
		c.has = false
		return 1, nil
	}
	return c.Conn.Read(p)
}
