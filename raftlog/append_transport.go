package raftlog

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"net"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
)

// appendWireMagic opens a connection of append frames, and the receiving side answers it with
// the same byte; NetworkTransport opens each of its connections with an RPC type (0 to 4).
const appendWireMagic byte = 0xF7

// appendTransport is the node's plain TCP transport (Config.FramedAppends, no PeerTLS): a
// NetworkTransport for votes, snapshots and TimeoutNow, and append frames (appendClient,
// serveFrames) for AppendEntries, pipelined or not, heartbeats included, on connections of
// their own on the same listener. The accept loop reads each connection's first byte and keeps
// those that open with appendWireMagic, handing the others to the NetworkTransport.
type appendTransport struct {
	*redialTransport // NetworkTransport, its RPCs sent again after a peer's close (redial.go)
	*appendClient
	ln        net.Listener
	accepted  chan net.Conn
	conns     *acceptedConns // the connections handed to the NetworkTransport (redial.go)
	consumeCh chan raft.RPC
	heartbeat atomic.Pointer[func(raft.RPC)] // Raft's fast path for heartbeats, as tls.go keeps it
}

var (
	_ raft.Transport   = (*appendTransport)(nil)
	_ raft.WithClose   = (*appendTransport)(nil)
	_ raft.WithPreVote = (*appendTransport)(nil)
)

func newAppendTransport(bind string, tc raft.NetworkTransportConfig, stats *nodeStats, lg *slog.Logger) (*appendTransport, error) {
	ln, err := listenTCP(bind)
	if err != nil {
		return nil, err
	}
	t := &appendTransport{ln: ln, accepted: make(chan net.Conn), conns: newAcceptedConns(), consumeCh: make(chan raft.RPC)}
	dial := func(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
		return net.DialTimeout("tcp", string(addr), timeout)
	}
	// The client first: the NetworkTransport's accept goroutine, started by its constructor,
	// waits on the client's stop channel. Its fallback is set before Raft has the transport.
	t.appendClient = newAppendClient(dial, nil, tc, stats, lg)
	tc.Stream = muxStream{t}
	t.redialTransport = newRedialTransport(tc)
	t.appendClient.fallback = t.redialTransport
	go t.acceptLoop()
	go t.forward()
	return t, nil
}

// The methods both embedded types have: the frames' side for AppendEntries.

func (t *appendTransport) AppendEntries(id raft.ServerID, target raft.ServerAddress, args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) error {
	return t.appendClient.AppendEntries(id, target, args, resp)
}

func (t *appendTransport) AppendEntriesPipeline(id raft.ServerID, target raft.ServerAddress) (raft.AppendPipeline, error) {
	return t.appendClient.AppendEntriesPipeline(id, target)
}

func (t *appendTransport) Consumer() <-chan raft.RPC { return t.consumeCh }

// Close closes the NetworkTransport, which closes muxStream: the listener and every append
// connection.
func (t *appendTransport) Close() error { return t.NetworkTransport.Close() }

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
	if cb == nil {
		t.heartbeat.Store(nil)
	} else {
		t.heartbeat.Store(&cb)
	}
	t.NetworkTransport.SetHeartbeatHandler(cb)
}

// deliver hands a request read from frames to Raft.
func (t *appendTransport) deliver(rpc raft.RPC, heartbeat bool) bool {
	if heartbeat {
		if fn := t.heartbeat.Load(); fn != nil {
			(*fn)(rpc)
			return true
		}
	}
	select {
	case t.consumeCh <- rpc:
	case <-t.stop:
		rpc.Respond(nil, raft.ErrTransportShutdown)
	}
	return true
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
	first, err := readFirstByte(c, t.timeout)
	if err != nil {
		_ = c.Close()
		return
	}
	if first == appendWireMagic {
		if t.track(c) {
			defer t.untrack(c)
			serveFrames(c, t.timeout, t.stop, t.stats, t.lg, t.deliver)
		}
		return
	}
	ac, ok := t.conns.add(&prefixConn{Conn: c, first: first, has: true})
	if !ok {
		return
	}
	select {
	case t.accepted <- ac:
	case <-t.stop:
		_ = ac.Close()
	}
}

// readFirstByte reads the byte that tells a connection's kind, waiting at most timeout (every
// kind of connection is opened to send at once).
func readFirstByte(c net.Conn, timeout time.Duration) (byte, error) {
	var first [1]byte
	_ = c.SetReadDeadline(time.Now().Add(timeout))
	if _, err := io.ReadFull(c, first[:]); err != nil {
		return 0, err
	}
	_ = c.SetReadDeadline(time.Time{})
	return first[0], nil
}

// serveFrames answers the handshake on c (its magic byte read), then the frames on it one at
// a time, in order, until c fails, a frame does not parse or is over maxAppendWireFrame, stop
// closes, or deliver refuses a request (its answer is still written). deliver hands a request
// to Raft: to the heartbeat handler (heartbeat true: as NetworkTransport tells them) or to the
// consumer channel; the answer comes on the RPC's channel.
func serveFrames(c net.Conn, timeout time.Duration, stop <-chan struct{}, stats *nodeStats, lg *slog.Logger, deliver func(rpc raft.RPC, heartbeat bool) bool) {
	_ = c.SetWriteDeadline(time.Now().Add(timeout))
	if _, err := c.Write([]byte{appendWireMagic}); err != nil {
		return
	}
	br := bufio.NewReaderSize(c, 256<<10)
	var out []byte
	var hdr [4]byte
	for {
		if _, err := io.ReadFull(br, hdr[:]); err != nil {
			return
		}
		n := binary.BigEndian.Uint32(hdr[:])
		if n > maxAppendWireFrame {
			lg.Warn("raft: append frame over the limit; connection dropped", "len", n, "limit", maxAppendWireFrame, "remote", c.RemoteAddr().String())
			return
		}
		body, err := readFrameBody(br, n)
		if err != nil {
			return
		}
		read := time.Now()
		req, err := decodeAppendRequest(body)
		if err != nil {
			lg.Warn("raft: append frame does not parse; connection dropped", "err", err, "remote", c.RemoteAddr().String())
			return
		}
		respCh := make(chan raft.RPCResponse, 1)
		leader := req.Addr
		if len(leader) == 0 {
			leader = req.Leader //nolint:staticcheck // deprecated, still sent by Raft
		}
		heartbeat := req.Term != 0 && leader != nil && req.PrevLogEntry == 0 && req.PrevLogTerm == 0 &&
			len(req.Entries) == 0 && req.LeaderCommitIndex == 0
		keep := deliver(raft.RPC{Command: req, RespChan: respCh}, heartbeat)
		var resp raft.RPCResponse
		select {
		case resp = <-respCh:
		case <-stop:
			return
		}
		ar, _ := resp.Response.(*raft.AppendEntriesResponse)
		out = encodeAppendResponse(out[:0], ar, resp.Error)
		stats.appendServed(req, read) // before the write, so a leader that has the answer sees it counted
		_ = c.SetWriteDeadline(time.Now().Add(timeout))
		if _, err := c.Write(out); err != nil || !keep {
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

// muxStream is the NetworkTransport's stream layer: it accepts what demux hands on and dials
// plain TCP. Closing it closes the listener and the append client.
type muxStream struct{ t *appendTransport }

func (s muxStream) Accept() (net.Conn, error) {
	select {
	case c := <-s.t.accepted:
		return c, nil
	case <-s.t.stop:
		return nil, net.ErrClosed
	}
}

func (s muxStream) Close() error {
	err := s.t.ln.Close()
	s.t.appendClient.close()
	s.t.conns.closeAll()
	return err
}

func (s muxStream) Addr() net.Addr { return s.t.ln.Addr() }

func (s muxStream) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	return net.DialTimeout("tcp", string(address), timeout)
}

// prefixConn gives back the byte demux read before the rest of the connection. remoting/tls.go
// sniffs its connections' first byte the same way with a type of its own: remoting is a leaf
// package (it may import nothing of ours, internal/ included), and raftlog importing the client
// protocol's package for these lines would couple more than it saves.
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
