package raftlog

import (
	"bufio"
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

// appendClient is the sending side of the append frames, shared by the plain transport
// (append_transport.go) and the TLS one (tls.go): a small pool of connections per peer for
// plain AppendEntries and heartbeats, one connection per pipeline, and the peers that refused
// the handshake, which get msgpack (fallback) instead.
type appendClient struct {
	// dial opens a connection to an address (plain TCP, or TLS checked against the node the
	// address belongs to).
	dial        func(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error)
	fallback    raft.Transport // the NetworkTransport: RPCs to peers without the frames
	timeout     time.Duration
	provider    raft.ServerAddressProvider
	maxInFlight int
	stats       *nodeStats // the times of the appends (stats.go); nil records nothing
	lg          *slog.Logger

	mu     sync.Mutex
	pool   map[raft.ServerAddress][]*appendConn
	open   map[net.Conn]struct{}
	legacy map[raft.ServerAddress]time.Time // peers that refused the handshake, and when
	closed bool
	stop   chan struct{}
}

func newAppendClient(dial func(raft.ServerAddress, time.Duration) (net.Conn, error), fallback raft.Transport,
	tc raft.NetworkTransportConfig, stats *nodeStats, lg *slog.Logger) *appendClient {
	return &appendClient{dial: dial, fallback: fallback, timeout: tc.Timeout, provider: tc.ServerAddressProvider,
		maxInFlight: tc.MaxRPCsInFlight, stats: stats, lg: lg, pool: map[raft.ServerAddress][]*appendConn{},
		open: map[net.Conn]struct{}{}, legacy: map[raft.ServerAddress]time.Time{}, stop: make(chan struct{})}
}

// legacyRetry is how long a peer that refused the handshake gets msgpack before the next try.
const legacyRetry = time.Minute

// errLegacyPeer: the peer answered the handshake as a node without the frames would.
var errLegacyPeer = errors.New("raftlog: peer without append frames")

// close closes every connection and makes later dials fail with ErrTransportShutdown.
func (a *appendClient) close() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return
	}
	a.closed = true
	close(a.stop)
	for c := range a.open {
		_ = c.Close()
	}
	a.open = nil
	a.pool = nil
}

// track registers c to be closed by close; false when close has run (c is closed then).
func (a *appendClient) track(c net.Conn) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		_ = c.Close()
		return false
	}
	a.open[c] = struct{}{}
	return true
}

func (a *appendClient) untrack(c net.Conn) {
	a.mu.Lock()
	delete(a.open, c)
	a.mu.Unlock()
	_ = c.Close()
}

func (a *appendClient) resolve(id raft.ServerID, target raft.ServerAddress) raft.ServerAddress {
	if a.provider != nil {
		if addr, err := a.provider.ServerAddr(id); err == nil {
			return addr
		}
	}
	return target
}

// legacyPeer reports whether target (as dial resolves it) refused the handshake within
// legacyRetry.
func (a *appendClient) legacyPeer(id raft.ServerID, target raft.ServerAddress) bool {
	addr := a.resolve(id, target)
	a.mu.Lock()
	defer a.mu.Unlock()
	at, ok := a.legacy[addr]
	if ok && time.Since(at) > legacyRetry {
		delete(a.legacy, addr)
		return false
	}
	return ok
}

// appendConn is one outgoing connection carrying append frames.
type appendConn struct {
	c   net.Conn
	br  *bufio.Reader
	out []byte
	hdr [4]byte
}

// connect dials target and makes the handshake: the magic byte, answered by the same byte.
// A peer that hangs up instead (a node without the frames reads the byte as an unknown RPC
// type) is remembered, and errLegacyPeer returned.
func (a *appendClient) connect(id raft.ServerID, target raft.ServerAddress) (*appendConn, error) {
	addr := a.resolve(id, target)
	c, err := a.dial(addr, a.timeout)
	if err != nil {
		return nil, err
	}
	if !a.track(c) {
		return nil, raft.ErrTransportShutdown
	}
	_ = c.SetDeadline(time.Now().Add(a.timeout))
	if _, err := c.Write([]byte{appendWireMagic}); err != nil {
		a.untrack(c)
		return nil, err
	}
	var ack [1]byte
	if _, err := io.ReadFull(c, ack[:]); err != nil || ack[0] != appendWireMagic {
		a.untrack(c)
		if err == nil || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) {
			a.mu.Lock()
			if a.legacy != nil {
				a.legacy[addr] = time.Now()
			}
			a.mu.Unlock()
			a.lg.Warn("raft: peer does not take append frames; sending it msgpack for a while", "peer", string(addr), "for", legacyRetry, "err", err)
			return nil, errLegacyPeer
		}
		return nil, err
	}
	_ = c.SetDeadline(time.Time{})
	return &appendConn{c: c, br: bufio.NewReaderSize(c, 64<<10)}, nil
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

// maxAppendResponse bounds a response frame (a few dozen bytes, plus an error's text).
const maxAppendResponse = 1 << 20

// receive reads one response frame into resp; rpcErr is the error the peer answered.
func (fc *appendConn) receive(resp *raft.AppendEntriesResponse, timeout time.Duration) (rpcErr, err error) {
	_ = fc.c.SetReadDeadline(time.Now().Add(timeout))
	if _, err := io.ReadFull(fc.br, fc.hdr[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(fc.hdr[:])
	if n > maxAppendResponse {
		return nil, fmt.Errorf("%w: response of %d bytes, over the limit of %d", errAppendWire, n, maxAppendResponse)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(fc.br, body); err != nil {
		return nil, err
	}
	return decodeAppendResponse(body, resp)
}

// AppendEntries sends one request on a pooled connection (one its peer has not closed:
// getConn) and waits for its answer. When a pooled connection fails with the peer's close
// after the request was written (the peer closed it between the check and the write), the
// request is sent once more on a new connection: an AppendEntries is idempotent (redial.go).
func (a *appendClient) AppendEntries(id raft.ServerID, target raft.ServerAddress, args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) error {
	if a.legacyPeer(id, target) {
		return a.fallback.AppendEntries(id, target, args, resp)
	}
	fc, pooled, err := a.getConn(id, target)
	if errors.Is(err, errLegacyPeer) {
		return a.fallback.AppendEntries(id, target, args, resp)
	}
	if err != nil {
		return err
	}
	start := time.Now()
	a.stats.appendSent(args, start)
	rpcErr, err := a.exchange(fc, args, resp)
	if err != nil && pooled && connClosed(err) {
		fc, err = a.connect(id, target)
		if errors.Is(err, errLegacyPeer) {
			return a.fallback.AppendEntries(id, target, args, resp)
		}
		if err != nil {
			return err
		}
		rpcErr, err = a.exchange(fc, args, resp)
	}
	if err != nil {
		return err
	}
	if rpcErr == nil {
		a.stats.appendAnswered(args, resp, start, time.Now())
	}
	a.putConn(target, fc)
	return rpcErr
}

// exchange sends args on fc and reads the answer; a failure (err) closes fc, an answer the
// peer gave (rpcErr) keeps it.
func (a *appendClient) exchange(fc *appendConn, args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) (rpcErr, err error) {
	if err := fc.send(args, a.timeout); err != nil {
		a.untrack(fc.c)
		return nil, err
	}
	rpcErr, err = fc.receive(resp, a.timeout)
	if err != nil {
		a.untrack(fc.c)
		return nil, err
	}
	return rpcErr, nil
}

// getConn takes a pooled connection to target whose peer has not closed it (peerGone; one
// it closed is dropped), or makes a new one; pooled tells which.
func (a *appendClient) getConn(id raft.ServerID, target raft.ServerAddress) (fc *appendConn, pooled bool, err error) {
	for {
		a.mu.Lock()
		conns := a.pool[target]
		if len(conns) == 0 {
			a.mu.Unlock()
			break
		}
		fc := conns[len(conns)-1]
		a.pool[target] = conns[:len(conns)-1]
		a.mu.Unlock()
		if !peerGone(fc.c) {
			return fc, true, nil
		}
		a.untrack(fc.c)
	}
	fc, err = a.connect(id, target)
	return fc, false, err
}

// putConn keeps fc for the next call (at most three per peer, as NetworkTransport's MaxPool).
func (a *appendClient) putConn(target raft.ServerAddress, fc *appendConn) {
	a.mu.Lock()
	if !a.closed && len(a.pool[target]) < 3 {
		a.pool[target] = append(a.pool[target], fc)
		a.mu.Unlock()
		return
	}
	a.mu.Unlock()
	a.untrack(fc.c)
}

// AppendEntriesPipeline opens a pipeline on a connection of its own.
func (a *appendClient) AppendEntriesPipeline(id raft.ServerID, target raft.ServerAddress) (raft.AppendPipeline, error) {
	if a.maxInFlight < 2 {
		return nil, raft.ErrPipelineReplicationNotSupported
	}
	if a.legacyPeer(id, target) {
		return a.fallback.AppendEntriesPipeline(id, target)
	}
	fc, err := a.connect(id, target)
	if errors.Is(err, errLegacyPeer) {
		return a.fallback.AppendEntriesPipeline(id, target)
	}
	if err != nil {
		return nil, err
	}
	p := &framedPipeline{
		a: a, fc: fc,
		// As NetworkTransport's: one sent beyond the channel's buffer while the reader waits
		// for the one before it, so maxInFlight in all.
		inflight: make(chan *framedFuture, a.maxInFlight-2),
		done:     make(chan raft.AppendFuture, a.maxInFlight-2),
		stop:     make(chan struct{}),
	}
	go p.readResponses()
	return p, nil
}

// framedPipeline sends AppendEntries without waiting for the answers, which a reader goroutine
// takes in order.
type framedPipeline struct {
	a        *appendClient
	fc       *appendConn
	inflight chan *framedFuture
	done     chan raft.AppendFuture
	stop     chan struct{}
	once     sync.Once
}

func (p *framedPipeline) AppendEntries(args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) (raft.AppendFuture, error) {
	f := &framedFuture{start: time.Now(), args: args, resp: resp, errCh: make(chan error, 1)}
	p.a.stats.appendSent(args, f.start)
	if err := p.fc.send(args, p.a.timeout); err != nil {
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
			rpcErr, err := p.fc.receive(f.resp, p.a.timeout)
			if err != nil {
				_ = p.fc.c.Close() // the stream is out of step: every later answer fails too
				rpcErr = err
			} else if rpcErr == nil {
				p.a.stats.appendAnswered(f.args, f.resp, f.start, time.Now())
			}
			f.errCh <- rpcErr
			select {
			case p.done <- f:
			case <-p.stop:
				return
			case <-p.a.stop:
				return
			}
		case <-p.stop:
			return
		case <-p.a.stop:
			return
		}
	}
}

func (p *framedPipeline) Consumer() <-chan raft.AppendFuture { return p.done }

func (p *framedPipeline) Close() error {
	p.once.Do(func() {
		close(p.stop)
		p.a.untrack(p.fc.c)
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
