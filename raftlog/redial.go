package raftlog

import (
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hashicorp/raft"
)

// Connections a restarted peer closed (doc.go has why each retry is safe).
//
// Every transport of the node keeps outgoing connections between RPCs: hashicorp/raft's
// NetworkTransport up to MaxPool per peer, the append frames' client (append_client.go) up to
// three. A peer that restarts closes its end of all of them, and until this node writes on one
// it does not notice: the first RPC on it went out and failed at once (issue 37: "failed to
// make TimeoutNow RPC to n1: EOF" when leadership was handed to a follower restarted seconds
// before). So a kept connection is checked before a request goes out on it (peerGone: the
// socket's TCP state, one getsockopt, no byte read), and one the peer closed is dropped, the
// request then going out on another or on a new dial; and an RPC whose connection failed
// with the peer's close once the request was written is sent once more where that is safe.

// errStaleConn: a kept connection was found closed by its peer as a request was about to be
// written on it; nothing of the request was written.
var errStaleConn = errors.New("raftlog: a kept connection was closed by the peer; nothing was sent on it")

// checkedConn is an outgoing connection of a NetworkTransport: its stream layer's Dial wraps
// each one. NetworkTransport gives no way to look at a pooled connection before it uses one,
// so checkedConn looks at the start of each request instead: the first Write after a Read
// (the answer to an earlier request was read: the connection is being used again) fails with
// errStaleConn, writing nothing, when the peer has closed the connection.
type checkedConn struct {
	net.Conn
	read atomic.Bool // a Read returned bytes since the last Write
}

func (c *checkedConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 {
		c.read.Store(true)
	}
	return n, err
}

func (c *checkedConn) Write(b []byte) (int, error) {
	if c.read.Swap(false) && peerGone(c.Conn) {
		return 0, errStaleConn
	}
	return c.Conn.Write(b)
}

// NetConn is the connection under it (peerGone unwraps through it).
func (c *checkedConn) NetConn() net.Conn { return c.Conn }

// tcpConnOf finds the TCP connection under c (through TLS and this package's wrappers), nil
// when there is none.
func tcpConnOf(c net.Conn) *net.TCPConn {
	for range 8 {
		switch v := c.(type) {
		case *net.TCPConn:
			return v
		case interface{ NetConn() net.Conn }:
			c = v.NetConn()
		default:
			return nil
		}
	}
	return nil
}

// checkedStream makes a NetworkTransport's dials checkedConns.
type checkedStream struct{ raft.StreamLayer }

func (s checkedStream) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	c, err := s.StreamLayer.Dial(address, timeout)
	if err != nil {
		return nil, err
	}
	return &checkedConn{Conn: c}, nil
}

// tcpStream is the stream layer of the msgpack-only plain transport (Config.FramedAppends
// false), as hashicorp/raft's TCPStreamLayer with the listener made by the caller and the
// connections it accepted closed by its Close.
type tcpStream struct {
	ln       net.Listener
	accepted *acceptedConns
}

func (s tcpStream) Accept() (net.Conn, error) {
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return nil, err
		}
		if ac, ok := s.accepted.add(c); ok {
			return ac, nil
		}
	}
}

func (s tcpStream) Close() error {
	err := s.ln.Close()
	s.accepted.closeAll()
	return err
}

func (s tcpStream) Addr() net.Addr { return s.ln.Addr() }

func (s tcpStream) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	return net.DialTimeout("tcp", string(address), timeout)
}

// acceptedConns are the connections a transport accepted and handed to a NetworkTransport,
// closed when the transport closes. NetworkTransport's Close leaves an idle incoming
// connection open (its goroutine waits for the next request, then answers it with a shutdown
// error and hangs up), so a node closed within a running process would keep its peers' kept
// connections open, where a process that exits closes them all and its peers see the close
// at once (peerGone).
type acceptedConns struct {
	mu     sync.Mutex
	conns  map[*acceptedConn]struct{}
	closed bool
}

func newAcceptedConns() *acceptedConns {
	return &acceptedConns{conns: map[*acceptedConn]struct{}{}}
}

// add tracks c; false (c closed) once closeAll has run.
func (s *acceptedConns) add(c net.Conn) (*acceptedConn, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		_ = c.Close()
		return nil, false
	}
	ac := &acceptedConn{Conn: c, s: s}
	s.conns[ac] = struct{}{}
	return ac, true
}

// closeAll closes every tracked connection and those added later.
func (s *acceptedConns) closeAll() {
	s.mu.Lock()
	s.closed = true
	conns := make([]*acceptedConn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	for _, c := range conns {
		_ = c.Close()
	}
}

// acceptedConn reads as ended (io.EOF, which NetworkTransport takes quietly for a peer that
// hung up) once closed by this side.
type acceptedConn struct {
	net.Conn
	s      *acceptedConns
	closed atomic.Bool
}

func (c *acceptedConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if err != nil && c.closed.Load() {
		return n, io.EOF
	}
	return n, err
}

func (c *acceptedConn) Close() error {
	c.closed.Store(true)
	c.s.mu.Lock()
	delete(c.s.conns, c)
	c.s.mu.Unlock()
	return c.Conn.Close()
}

// listenTCP listens on bind, refusing an address other nodes cannot dial (as hashicorp/raft's
// TCP transport refuses an unspecified IP).
func listenTCP(bind string) (net.Listener, error) {
	ln, err := net.Listen("tcp", bind)
	if err != nil {
		return nil, err
	}
	if a, ok := ln.Addr().(*net.TCPAddr); ok && a.IP.IsUnspecified() {
		_ = ln.Close()
		return nil, errors.New(bind + " is not an address other nodes can dial (as hashicorp/raft's TCP transport, an unspecified IP is refused)")
	}
	return ln, nil
}

// connClosed reports whether err is the peer's close or reset of the connection (not a
// timeout, not this side's close). hashicorp/raft's msgpack codec hands io.EOF on as it is
// and wraps other read errors in a type with Cause, followed here.
func connClosed(err error) bool {
	for range 8 {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
			errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) {
			return true
		}
		c, ok := err.(interface{ Cause() error })
		if !ok {
			return false
		}
		if err = c.Cause(); err == nil {
			return false
		}
	}
	return false
}

// redialTransport is hashicorp/raft's NetworkTransport (over a checkedStream) with its RPCs
// sent again where a connection the peer had closed failed them: an attempt that found its
// kept connection closed (errStaleConn: nothing sent) is made again, up to once per kept
// connection and one more (each such attempt drops one; the last dials), for every kind; and
// the idempotent kinds (AppendEntries, RequestVote, RequestPreVote, TimeoutNow) are sent once
// more after a failure with the peer's close once written. InstallSnapshot is sent again only
// in the first case (its data stream is read only after the request's first write).
// Pipelines are not retried here: a failed pipelined append makes Raft close the pipeline and
// go on with plain AppendEntries from the follower's next index.
type redialTransport struct {
	*raft.NetworkTransport
	maxStale int
}

func newRedialTransport(tc raft.NetworkTransportConfig) *redialTransport {
	tc.Stream = checkedStream{tc.Stream}
	return &redialTransport{NetworkTransport: raft.NewNetworkTransportWithConfig(&tc), maxStale: max(tc.MaxPool, 0) + 1}
}

// redial runs rpc until it succeeds, fails otherwise, or has been retried as allowed:
// maxStale times after errStaleConn, and, with resend, once after a connection the peer closed.
func redial(maxStale int, resend bool, rpc func() error) error {
	stale, resent := 0, false
	for {
		err := rpc()
		switch {
		case err == nil:
			return nil
		case errors.Is(err, errStaleConn) && stale < maxStale:
			stale++
		case resend && !resent && !errors.Is(err, errStaleConn) && connClosed(err):
			resent = true
		default:
			return err
		}
	}
}

func (t *redialTransport) AppendEntries(id raft.ServerID, target raft.ServerAddress, args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) error {
	return redial(t.maxStale, true, func() error { return t.NetworkTransport.AppendEntries(id, target, args, resp) })
}

func (t *redialTransport) RequestVote(id raft.ServerID, target raft.ServerAddress, args *raft.RequestVoteRequest, resp *raft.RequestVoteResponse) error {
	return redial(t.maxStale, true, func() error { return t.NetworkTransport.RequestVote(id, target, args, resp) })
}

func (t *redialTransport) RequestPreVote(id raft.ServerID, target raft.ServerAddress, args *raft.RequestPreVoteRequest, resp *raft.RequestPreVoteResponse) error {
	return redial(t.maxStale, true, func() error { return t.NetworkTransport.RequestPreVote(id, target, args, resp) })
}

func (t *redialTransport) TimeoutNow(id raft.ServerID, target raft.ServerAddress, args *raft.TimeoutNowRequest, resp *raft.TimeoutNowResponse) error {
	return redial(t.maxStale, true, func() error { return t.NetworkTransport.TimeoutNow(id, target, args, resp) })
}

func (t *redialTransport) InstallSnapshot(id raft.ServerID, target raft.ServerAddress, args *raft.InstallSnapshotRequest, resp *raft.InstallSnapshotResponse, data io.Reader) error {
	return redial(t.maxStale, false, func() error { return t.NetworkTransport.InstallSnapshot(id, target, args, resp, data) })
}
