package remoting

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// ErrClientClosed is returned by calls on a closed Client.
var ErrClientClosed = errors.New("remoting: client closed")

// ConnectError is a failed dial: the request it was for never left this process.
type ConnectError struct {
	Addr string
	Err  error
}

func (e *ConnectError) Error() string { return "remoting: connect to " + e.Addr + ": " + e.Err.Error() }
func (e *ConnectError) Unwrap() error { return e.Err }

// ClientConfig configures a Client. Zero values take the defaults named on each field.
type ClientConfig struct {
	DialTimeout     time.Duration // default 3 s (also bounded by the call's ctx)
	ConnsPerAddr    int           // connections per address, used round robin; default 1
	MaxFrameSize    int           // largest accepted frame length; default MaxFrameSize (16 MiB)
	IdleTimeout     time.Duration // a connection with nothing read for this long is closed; default 120 s, < 0 never
	WriteTimeout    time.Duration // default 60 s, < 0 never
	MaxQueuedFrames int           // default 65536

	// TLS, when not nil, makes every connection TLS: the handshake runs when the connection is dialled, within
	// the dial timeout. Without ServerName (and with verification on) the dialled host is the expected name.
	// TLSConfig.ClientTLS builds it from config keys.
	TLS *tls.Config
	// Credentials, when set (an AccessKey), sign every request the client sends (SignRequest), for servers
	// with ACL on. Responses to the server's own requests are not signed.
	Credentials Credentials
}

// DefaultDialTimeout is ClientConfig.DialTimeout's default.
const DefaultDialTimeout = 3 * time.Second

// Client calls remoting servers (name servers, brokers). Connections are dialled on first use and shared by
// every call to the address. Safe for concurrent use.
type Client struct {
	cfg      ClientConfig
	cc       connConfig
	logger   *slog.Logger
	nextID   atomic.Uint64
	tr       tracker // connection goroutines, callbacks, handlers
	handlers atomic.Pointer[map[RequestCode]func(*Command) *Command]
	regMu    sync.Mutex

	mu struct {
		sync.Mutex
		addrs  map[string]*addrConns
		closed bool
	}
}

// addrConns holds the connections to one address.
type addrConns struct {
	mu    sync.Mutex // held while dialling, so that concurrent first calls share one dial
	conns []*Conn
	next  atomic.Uint32
}

// NewClient returns a client. A nil logger discards.
func NewClient(cfg ClientConfig, logger *slog.Logger) *Client {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = DefaultDialTimeout
	}
	if cfg.ConnsPerAddr <= 0 {
		cfg.ConnsPerAddr = 1
	}
	c := &Client{cfg: cfg, logger: logger,
		cc: newConnConfig(cfg.MaxFrameSize, cfg.IdleTimeout, cfg.WriteTimeout, cfg.MaxQueuedFrames, 0)}
	c.mu.addrs = make(map[string]*addrConns)
	empty := map[RequestCode]func(*Command) *Command{}
	c.handlers.Store(&empty)
	return c
}

// RegisterHandler handles requests that servers send to this client (NOTIFY_CONSUMER_IDS_CHANGED and the like).
// h runs in its own goroutine; a non-nil result is sent back as the response. A request with no handler is
// answered REQUEST_CODE_NOT_SUPPORTED. Each code has one owner, as on a Server: a second RegisterHandler of a
// code, which would silently take another component's requests, is a programming error and panics (so does a
// nil h).
func (c *Client) RegisterHandler(code RequestCode, h func(req *Command) *Command) {
	if h == nil {
		panic(fmt.Sprintf("remoting: RegisterHandler of request code %d (%s) with a nil handler", code, code))
	}
	c.regMu.Lock()
	defer c.regMu.Unlock()
	old := *c.handlers.Load()
	if _, taken := old[code]; taken {
		panic(fmt.Sprintf("remoting: client handler of request code %d (%s) registered twice", code, code))
	}
	next := make(map[RequestCode]func(*Command) *Command, len(old)+1)
	for k, v := range old {
		next[k] = v
	}
	next[code] = h
	c.handlers.Store(&next)
}

// Invoke sends req to addr and waits for the response; ctx's deadline is the timeout (ErrTimeout).
func (c *Client) Invoke(ctx context.Context, addr string, req *Command) (*Command, error) {
	c.sign(req)
	conn, err := c.conn(ctx, addr)
	if err != nil {
		release(req)
		return nil, err
	}
	return conn.Invoke(ctx, req)
}

// InvokeAsync sends req to addr and returns. When it returns nil, cb is called exactly once, in its own
// goroutine, with the response or the error (ErrTimeout when ctx ends first, ErrConnClosed); when it returns an
// error, cb is never called.
func (c *Client) InvokeAsync(ctx context.Context, addr string, req *Command, cb func(*Command, error)) error {
	c.sign(req)
	conn, err := c.conn(ctx, addr)
	if err != nil {
		release(req)
		return err
	}
	return conn.invokeAsync(ctx, req, cb)
}

// InvokeOneway sends req to addr with the oneway flag set and returns once it is queued for writing.
func (c *Client) InvokeOneway(ctx context.Context, addr string, req *Command) error {
	c.sign(req)
	conn, err := c.conn(ctx, addr)
	if err != nil {
		release(req)
		return err
	}
	return conn.SendOneway(req)
}

// sign adds the ACL signature to req when the client has credentials. It runs before the request is queued,
// after the caller's last change to it.
func (c *Client) sign(req *Command) {
	if c.cfg.Credentials.AccessKey != "" {
		SignRequest(req, c.cfg.Credentials.AccessKey, string(c.cfg.Credentials.SecretKey))
	}
}

// conn returns a live connection to addr, dialling when the address has fewer than ConnsPerAddr.
func (c *Client) conn(ctx context.Context, addr string) (*Conn, error) {
	c.mu.Lock()
	if c.mu.closed {
		c.mu.Unlock()
		return nil, ErrClientClosed
	}
	ac := c.mu.addrs[addr]
	if ac == nil {
		ac = &addrConns{}
		c.mu.addrs[addr] = ac
	}
	c.mu.Unlock()

	ac.mu.Lock()
	defer ac.mu.Unlock()
	live := ac.conns[:0]
	for _, conn := range ac.conns {
		select {
		case <-conn.Closed():
		default:
			live = append(live, conn)
		}
	}
	clear(ac.conns[len(live):])
	ac.conns = live
	if len(ac.conns) >= c.cfg.ConnsPerAddr {
		return ac.conns[int(ac.next.Add(1))%len(ac.conns)], nil
	}
	conn, err := c.dial(ctx, addr)
	if err != nil {
		return nil, err
	}
	ac.conns = append(ac.conns, conn)
	return conn, nil
}

func (c *Client) dial(ctx context.Context, addr string) (*Conn, error) {
	d := net.Dialer{Timeout: c.cfg.DialTimeout}
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, &ConnectError{Addr: addr, Err: err}
	}
	conn := newConn(c.nextID.Add(1), nc, c.cc, c.logger, c.dispatch, &c.tr)
	if c.cfg.TLS != nil {
		hctx, cancel := context.WithTimeout(ctx, c.cfg.DialTimeout)
		tc, err := clientHandshake(hctx, nc, c.cfg.TLS, addr)
		cancel()
		if err != nil {
			_ = nc.Close()
			return nil, fmt.Errorf("remoting: TLS handshake with %s: %w", addr, err)
		}
		conn.useTLS(tc)
	}
	c.mu.Lock()
	closed := c.mu.closed
	c.mu.Unlock()
	if closed || !c.tr.tryGo(conn.serve) {
		_ = nc.Close()
		return nil, ErrClientClosed
	}
	conn.logger.Debug("remoting: connected")
	return conn, nil
}

// dispatch runs on a connection's reader: handlers run in their own goroutines.
func (c *Client) dispatch(conn *Conn, req *Command) {
	h := (*c.handlers.Load())[RequestCode(req.Code)]
	if h == nil {
		conn.logger.Debug("remoting: server request code not supported", "code", req.Code)
		_ = conn.Reply(req, NewResponse(RequestCodeNotSupported, fmt.Sprintf(" request type %d not supported", req.Code)))
		return
	}
	c.tr.Go(func() {
		resp := callSafely(conn.logger, req, func() *Command { return h(req) })
		if resp != nil {
			_ = conn.Reply(req, resp)
		}
	})
}

// CloseAddr closes every connection to addr; the next call dials again.
func (c *Client) CloseAddr(addr string) {
	c.mu.Lock()
	ac := c.mu.addrs[addr]
	delete(c.mu.addrs, addr)
	c.mu.Unlock()
	if ac != nil {
		ac.closeAll("closed by CloseAddr")
	}
}

func (ac *addrConns) closeAll(reason string) {
	ac.mu.Lock()
	conns := ac.conns
	ac.conns = nil
	ac.mu.Unlock()
	for _, conn := range conns {
		conn.closeWith(reason, slog.LevelDebug)
	}
}

// Close closes every connection, fails pending calls with ErrConnClosed and waits for the client's
// goroutines, callbacks included. Calls made afterwards fail with ErrClientClosed.
func (c *Client) Close() error {
	c.mu.Lock()
	c.mu.closed = true
	addrs := c.mu.addrs
	c.mu.addrs = make(map[string]*addrConns)
	c.mu.Unlock()
	for _, ac := range addrs {
		ac.closeAll("client closing")
	}
	c.tr.closeAndWait()
	return nil
}
