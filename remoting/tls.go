package remoting

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"
)

// TLSMode is how a Server treats TLS, RocketMQ's TlsMode (tls.server.mode).
type TLSMode string

// The server TLS modes. The names are RocketMQ's and appear in config files: never change them.
const (
	// TLSDisabled: plain TCP only. The first byte of a connection is never looked at.
	TLSDisabled TLSMode = "disabled"
	// TLSPermissive: plain and TLS clients on one port, told apart by the first byte of the connection.
	TLSPermissive TLSMode = "permissive"
	// TLSEnforcing: TLS only; a plain connection is closed at its first byte.
	TLSEnforcing TLSMode = "enforcing"
)

// ParseTLSMode reads a mode name, ignoring case and surrounding space; "" is TLSDisabled.
func ParseTLSMode(s string) (TLSMode, error) {
	switch m := TLSMode(strings.ToLower(strings.TrimSpace(s))); m {
	case "", TLSDisabled:
		return TLSDisabled, nil
	case TLSPermissive, TLSEnforcing:
		return m, nil
	}
	return "", fmt.Errorf("%q is not disabled, permissive or enforcing", s)
}

// on reports whether the server looks for TLS at all.
func (m TLSMode) on() bool { return m == TLSPermissive || m == TLSEnforcing }

// tlsRecordHandshake is the first byte of every TLS ClientHello (record type 22, handshake). A remoting frame
// starts with the high byte of its length; 0x16 there would announce a frame of at least 352 MiB (0x16000000
// bytes), far above any frame a server accepts, so the one byte tells the two apart. Never change it.
const tlsRecordHandshake = 0x16

// DefaultTLSHandshakeTimeout is ServerConfig.TLSHandshakeTimeout's default. A client's handshake is bounded by
// ClientConfig.DialTimeout instead.
const DefaultTLSHandshakeTimeout = 10 * time.Second

// tlsWriteBufferSize is the buffer the writer of a TLS connection gathers a batch in: one TLS record holds up
// to 16 KiB, so a batch of small frames goes out as full records rather than one record per vector.
const tlsWriteBufferSize = 16 << 10

// ErrPlainRefused: a plain (non-TLS) connection reached a server in TLSEnforcing mode.
var ErrPlainRefused = errors.New("remoting: plain connection refused: the server enforces TLS (tlsServerMode=enforcing)")

// errHandshake wraps a failed TLS handshake (server side).
var errHandshake = errors.New("remoting: TLS handshake failed")

// acceptTLS runs before the connection's reader and writer start (a server in permissive or enforcing mode):
// it reads the first byte (one read, waiting at most firstByte, <= 0 for ever), then either performs the TLS
// handshake within handshake or, in permissive mode, serves the connection as plain with that byte put back
// in front of the stream. In enforcing mode a plain connection fails with ErrPlainRefused.
func (c *Conn) acceptTLS(mode TLSMode, cfg *tls.Config, firstByte, handshake time.Duration) error {
	if firstByte > 0 {
		_ = c.nc.SetReadDeadline(time.Now().Add(firstByte))
	}
	var first [1]byte
	if _, err := io.ReadFull(c.nc, first[:]); err != nil {
		return err
	}
	_ = c.nc.SetReadDeadline(time.Time{}) // the reader sets its own idle deadlines, or none
	pc := &prefixConn{Conn: c.nc, prefix: first[:]}
	if first[0] != tlsRecordHandshake {
		if mode == TLSEnforcing {
			return ErrPlainRefused
		}
		c.rd = pc // plain: writes still go straight to nc (one writev per batch)
		return nil
	}
	tc := tls.Server(pc, cfg)
	ctx, cancel := context.WithTimeout(c.ctx, handshake)
	defer cancel()
	if err := tc.HandshakeContext(ctx); err != nil {
		return fmt.Errorf("%w: %w", errHandshake, err)
	}
	c.useTLS(tc)
	return nil
}

// useTLS makes the connection read and write through tc. Deadlines and Close still go to the TCP connection
// (closing it never waits to send a close_notify to a peer that does not read).
func (c *Conn) useTLS(tc *tls.Conn) {
	c.rd = tc
	c.tlsw = bufio.NewWriterSize(tc, tlsWriteBufferSize)
	cs := tc.ConnectionState()
	c.tlsState.Store(&cs)
}

// TLSState is the connection's TLS handshake (its peer's certificates: PeerCertificates, and VerifiedChains
// when the server verified them), and false for a plain connection or one whose handshake is not done yet. The
// state is set before the connection's first frame is read and never changes after.
func (c *Conn) TLSState() (tls.ConnectionState, bool) {
	cs := c.tlsState.Load()
	if cs == nil {
		return tls.ConnectionState{}, false
	}
	return *cs, true
}

// clientHandshake performs the client side of a TLS handshake on nc, bounded by ctx. Without a ServerName in cfg
// and with verification on, the host of addr is the name the certificate must carry.
func clientHandshake(ctx context.Context, nc net.Conn, cfg *tls.Config, addr string) (*tls.Conn, error) {
	if cfg.ServerName == "" && !cfg.InsecureSkipVerify {
		if host, _, err := net.SplitHostPort(addr); err == nil {
			cfg = cfg.Clone()
			cfg.ServerName = host
		}
	}
	tc := tls.Client(nc, cfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		return nil, err
	}
	return tc, nil
}

// prefixConn is a net.Conn whose first reads return prefix (the byte the server sniffed) before the stream.
type prefixConn struct {
	net.Conn
	prefix []byte
}

func (p *prefixConn) Read(b []byte) (int, error) {
	if len(p.prefix) > 0 {
		n := copy(b, p.prefix)
		p.prefix = p.prefix[n:]
		return n, nil
	}
	return p.Conn.Read(b)
}
