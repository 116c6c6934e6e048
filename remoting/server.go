package remoting

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
)

// HandlerFunc handles one request. It returns the response (the server sets its opaque, response flag and
// serialize type) or nil: then nothing is sent now, either because the request is oneway or because the handler
// kept req and answers later with conn.Reply from another goroutine (long-poll pulls and SYNC_FLUSH sends do
// this, so that a worker never blocks on disk or on new messages). ctx is cancelled when the connection closes.
// A panic is recovered, logged and answered SYSTEM_ERROR.
type HandlerFunc func(ctx context.Context, conn *Conn, req *Command) *Command

// InlineFunc answers a request on the connection's reader, before the pool: the cheap common case of a request
// family whose handler otherwise runs on a worker (a send to an existing topic, stored asynchronously). It must
// not block: no disk or network wait, no lock held across one. done false hands the request to the route's pool
// and handler as if there were no InlineFunc, so it must decline before it has done anything for the request.
// With done true, resp is the answer, or nil when the request is answered later (conn.Reply) or is oneway. The
// guards and request observers (intercept.go) run before it, and a panic is answered SYSTEM_ERROR, as for a
// HandlerFunc.
type InlineFunc func(conn *Conn, req *Command) (resp *Command, done bool)

// ServerConfig configures a Server. Zero values take the defaults named on each field.
type ServerConfig struct {
	ListenAddr      string        // host:port; ":0" picks a free port
	MaxFrameSize    int           // largest accepted frame length; default MaxFrameSize (16 MiB)
	IdleTimeout     time.Duration // a connection with nothing read for this long is closed; default 120 s, < 0 never
	WriteTimeout    time.Duration // a batch not written within this closes the connection; default 60 s, < 0 never
	MaxQueuedFrames int           // frames waiting for a connection's writer before it is closed; default 65536
	ReadBufferSize  int           // the most a connection's read buffer grows to (readbuf.go); default 64 KiB

	// TLSMode: "" or TLSDisabled serves plain TCP and never looks at the first byte; TLSPermissive and
	// TLSEnforcing need TLS (tls.go). TLSConfig (with TLSConfig.ServerTLS) builds both from config keys.
	TLSMode             TLSMode
	TLS                 *tls.Config
	TLSHandshakeTimeout time.Duration // a TLS handshake not done within this closes the connection; default 10 s
}

// Defaults of ServerConfig and ClientConfig.
const (
	DefaultIdleTimeout     = 120 * time.Second
	DefaultWriteTimeout    = 60 * time.Second
	DefaultMaxQueuedFrames = 1 << 16
	DefaultReadBufferSize  = 64 << 10
)

// Remarks of the answers the server gives by itself, as RocketMQ words them.
const (
	remarkBusy = "[REJECTREQUEST]system busy, start flow control for a while"
	// remarkStopping answers a request that reached a pool already drained by a shutdown.
	remarkStopping = "[REJECTREQUEST]the server is shutting down: send to another broker"
)

func (cfg ServerConfig) connConfig() connConfig {
	return newConnConfig(cfg.MaxFrameSize, cfg.IdleTimeout, cfg.WriteTimeout, cfg.MaxQueuedFrames, cfg.ReadBufferSize)
}

func newConnConfig(maxFrame int, idle, write time.Duration, maxQueued, readBuf int) connConfig {
	cc := connConfig{maxFrameSize: maxFrame, idleTimeout: idle, writeTimeout: write, maxQueuedFrames: maxQueued,
		readBufferSize: readBuf}
	if cc.maxFrameSize <= 0 {
		cc.maxFrameSize = MaxFrameSize
	}
	if cc.idleTimeout == 0 {
		cc.idleTimeout = DefaultIdleTimeout
	}
	if cc.writeTimeout == 0 {
		cc.writeTimeout = DefaultWriteTimeout
	}
	if cc.maxQueuedFrames <= 0 {
		cc.maxQueuedFrames = DefaultMaxQueuedFrames
	}
	if cc.readBufferSize <= 0 {
		cc.readBufferSize = DefaultReadBufferSize
	}
	return cc
}

type route struct {
	pool    *Pool
	handler HandlerFunc
	inline  InlineFunc // nil: always on the pool
	// transient: the handler keeps nothing of a request's body after it returns (RegisterTransient), so
	// a large frame's memory goes back to the server's frameCache once it has answered.
	transient bool
}

// Server accepts remoting connections and runs each request's handler on the pool registered for its code.
type Server struct {
	cfg    ServerConfig
	cc     connConfig
	frames *frameCache // large frames of transient routes (framecache.go)
	logger *slog.Logger
	nextID atomic.Uint64
	tr     tracker // connection goroutines and async callbacks
	routes atomic.Pointer[map[RequestCode]route]
	// chain is nil until a guard or observer is added (intercept.go): one atomic load per request when none is.
	chain atomic.Pointer[chain]
	// replies is the chain's reply observers as one function (intercept.go), nil while there are none; each
	// connection loads it (connConfig.replies).
	replies atomic.Pointer[ReplyObserver]

	// regMu serializes Register, OnConnClose and the chain's changes. Lock order: regMu before mu (Register
	// records its pool).
	regMu      sync.Mutex
	onClose    atomic.Pointer[[]func(*Conn)]
	acceptDone chan struct{} // closed when the accept loop returns
	stopAccept chan struct{} // closed by StopAccepting
	stopOnce   sync.Once

	mu struct {
		sync.Mutex
		ln        net.Listener
		listeners map[*Listener]struct{} // extra listeners (listener.go) not closed yet
		conns     map[uint64]*Conn
		pools     map[*Pool]struct{}
		closing   bool
	}
}

// NewServer returns a server; Register handlers, then Start it. A nil logger discards.
func NewServer(cfg ServerConfig, logger *slog.Logger) *Server {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{cfg: cfg, cc: cfg.connConfig(), frames: newFrameCache(frameCacheMaxDef), logger: logger, acceptDone: make(chan struct{}),
		stopAccept: make(chan struct{})}
	s.cc.replies = &s.replies
	s.cc.frames = s.frames
	s.mu.conns = make(map[uint64]*Conn)
	s.mu.listeners = make(map[*Listener]struct{})
	s.mu.pools = make(map[*Pool]struct{})
	empty := map[RequestCode]route{}
	s.routes.Store(&empty)
	s.onClose.Store(new([]func(*Conn)))
	return s
}

// Register routes requests with code to h on pool. It may be called at any time, also after Start. Each code
// has one owner: a second Register of a code, which would silently take another component's requests, is a
// programming error and panics, as a nil pool or handler does. Close closes every registered pool.
func (s *Server) Register(code RequestCode, pool *Pool, h HandlerFunc) {
	s.RegisterInline(code, pool, h, nil)
}

// RegisterInline is Register with an InlineFunc that answers what it can on the connection's reader; what it
// declines goes to h on pool. A worker hand-off per request (a closure, a queue, a goroutine woken) was about
// a sixth of one broker's CPU per message under 16 producers, where the send itself is a non-blocking append.
// What is answered inline does not pass through the pool: its queue length and head wait do not count it.
func (s *Server) RegisterInline(code RequestCode, pool *Pool, h HandlerFunc, inline InlineFunc) {
	s.register(code, route{pool: pool, handler: h, inline: inline})
}

// RegisterTransient is RegisterInline (inline may be nil) for a handler and an InlineFunc that keep nothing
// of a request after they return: not the command, not its ExtFields map, not its body nor anything sliced
// from it, no goroutine that reads them later, no response that refers to them (strings taken from its
// fields may be kept: decoding copies them). A large request frame (64 KiB to 1 MiB) of its code is then read
// into memory kept by the server for the next one (framecache.go) instead of memory left to the garbage
// collector, and a request answered inline is the command its connection decodes the next request into. A
// name server's REGISTER_BROKER (a fleet's brokers send their whole topic tables at the same moment) and its
// route queries (tens of thousands a second, each of whose command and fields' map were a third of the
// bytes it allocated) are the cases.
func (s *Server) RegisterTransient(code RequestCode, pool *Pool, h HandlerFunc, inline InlineFunc) {
	s.register(code, route{pool: pool, handler: h, inline: inline, transient: true})
}

func (s *Server) register(code RequestCode, r route) {
	if r.pool == nil || r.handler == nil {
		panic(fmt.Sprintf("remoting: Register of request code %d without a pool or a handler", code))
	}
	s.regMu.Lock()
	defer s.regMu.Unlock()
	old := *s.routes.Load()
	if _, taken := old[code]; taken {
		panic(fmt.Sprintf("remoting: request code %d (%s) registered twice", code, code))
	}
	next := make(map[RequestCode]route, len(old)+1)
	for k, v := range old {
		next[k] = v
	}
	next[code] = r
	if r.transient {
		s.frames.active.Store(true)
	}
	s.routes.Store(&next)
	s.mu.Lock()
	s.mu.pools[r.pool] = struct{}{}
	s.mu.Unlock()
}

// OnConnClose registers f to be called once for every connection that closes, after its reader and writer
// stopped, in the connection's goroutine.
func (s *Server) OnConnClose(f func(*Conn)) {
	s.regMu.Lock()
	defer s.regMu.Unlock()
	next := append(append([]func(*Conn){}, *s.onClose.Load()...), f)
	s.onClose.Store(&next)
}

// SetInterner gives the server the strings its requests' JSON headers repeat (intern.go): a header whose
// kept strings are all common or interned is decoded without a copy. Call it before Start.
func (s *Server) SetInterner(f Interner) { s.cc.intern = f }

// Start listens on cfg.ListenAddr and accepts connections in the background.
func (s *Server) Start() error {
	mode, err := ParseTLSMode(string(s.cfg.TLSMode))
	if err != nil {
		return fmt.Errorf("remoting: TLS mode: %w", err)
	}
	if mode.on() && s.cfg.TLS == nil {
		return fmt.Errorf("remoting: TLS mode %s without a TLS configuration (certificate and key)", mode)
	}
	s.cfg.TLSMode = mode
	if s.cfg.TLSHandshakeTimeout <= 0 {
		s.cfg.TLSHandshakeTimeout = DefaultTLSHandshakeTimeout
	}
	ln, err := net.Listen("tcp", s.cfg.ListenAddr)
	if err != nil {
		return fmt.Errorf("remoting: listen on %q: %w", s.cfg.ListenAddr, err)
	}
	s.mu.Lock()
	if s.mu.closing || s.mu.ln != nil {
		s.mu.Unlock()
		_ = ln.Close()
		return errors.New("remoting: server already started or closed")
	}
	s.mu.ln = ln
	s.mu.Unlock()
	s.logger.Info("remoting: listening", append([]any{"addr", ln.Addr().String()}, s.guardAttrs()...)...)
	s.tr.Go(func() {
		defer close(s.acceptDone)
		s.acceptLoop(ln, nil, s.stopAccept)
	})
	return nil
}

// Addr returns the listening address, or nil before Start.
func (s *Server) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.ln == nil {
		return nil
	}
	return s.mu.ln.Addr()
}

// acceptLoop accepts on ln (the main listener when via is nil, else the extra listener via) until ln closes;
// stop ends the wait after a failed accept.
func (s *Server) acceptLoop(ln net.Listener, via *Listener, stop <-chan struct{}) {
	backoff := 5 * time.Millisecond
	for {
		nc, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of file descriptors and the like: wait a little and try again, as net/http does.
			s.logger.Warn("remoting: accept failed", "err", err, "retry_in", backoff)
			t := time.NewTimer(backoff)
			select {
			case <-t.C:
			case <-stop:
				t.Stop()
				return
			}
			backoff = min(2*backoff, time.Second)
			continue
		}
		backoff = 5 * time.Millisecond
		s.serveConn(nc, via)
	}
}

// serveConn serves a connection accepted through via (nil: the main listener), unless the server or via is
// closed by now.
func (s *Server) serveConn(nc net.Conn, via *Listener) {
	c := newConn(s.nextID.Add(1), nc, s.cc, s.logger, s.dispatch, &s.tr)
	c.via = via
	s.mu.Lock()
	if s.mu.closing || (via != nil && via.closed) {
		s.mu.Unlock()
		_ = nc.Close()
		return
	}
	s.mu.conns[c.id] = c
	s.mu.Unlock()
	c.logger.Debug("remoting: connection accepted")
	s.tr.Go(func() {
		defer s.connDone(c)
		if s.cfg.TLSMode.on() {
			if err := c.acceptTLS(s.cfg.TLSMode, s.cfg.TLS, s.cc.idleTimeout, s.cfg.TLSHandshakeTimeout); err != nil {
				s.tlsFailed(c, err)
				return
			}
		}
		c.serve()
	})
}

// connDone forgets a connection whose goroutines stopped and runs the OnConnClose functions.
func (s *Server) connDone(c *Conn) {
	s.mu.Lock()
	delete(s.mu.conns, c.id)
	s.mu.Unlock()
	for _, f := range *s.onClose.Load() {
		f(c)
	}
}

// tlsFailed closes a connection that failed before it was served: refused as plain, a failed handshake, or
// silence before the first byte.
func (s *Server) tlsFailed(c *Conn, err error) {
	switch {
	case errors.Is(err, ErrPlainRefused), errors.Is(err, errHandshake):
		c.closeWith(err.Error(), slog.LevelWarn)
	case errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed):
		c.closeWith("closed by peer before the first byte", slog.LevelDebug)
	case errors.Is(err, os.ErrDeadlineExceeded):
		c.closeWith(fmt.Sprintf("nothing read for %s (idle timeout)", s.cc.idleTimeout), slog.LevelInfo)
	default:
		c.closeWith(err.Error(), slog.LevelWarn)
	}
}

// dispatch runs on the connection's reader: it must not block.
func (s *Server) dispatch(c *Conn, req *Command) {
	r, ok := (*s.routes.Load())[RequestCode(req.Code)]
	if !r.transient {
		s.endTurn(req) // its handler may keep the frame: the turn ends here (framecache.go)
	}
	if !ok {
		c.logger.Debug("remoting: request code not supported", "code", req.Code)
		_ = c.Reply(req, NewResponse(RequestCodeNotSupported, fmt.Sprintf(" request type %d not supported", req.Code)))
		return
	}
	checked := false
	if r.inline != nil {
		resp, done := s.handleInline(r.inline, c, req)
		if done {
			if resp != nil {
				_ = c.Reply(req, resp) // fails only when the connection is gone
			}
			s.recycle(r, req)
			req.reusable = r.transient // (the reader's command again: set last)
			return
		}
		checked = true // the guards let it through
	}
	if !r.pool.Submit(func() { s.handle(r, c, req, checked) }) {
		defer s.recycle(r, req)
		if r.pool.Stopped() {
			// The server is shutting down (its owner drained the pool before closing the
			// connections): SERVICE_NOT_AVAILABLE, which the official producers send again
			// elsewhere, where SYSTEM_BUSY ends the send (a rolling restart under load failed
			// 36 sends with it, make deploy-local-raft).
			_ = c.Reply(req, NewResponse(ServiceNotAvailable, remarkStopping))
			return
		}
		if r.pool.logRefusal(time.Now()) {
			c.logger.Warn("remoting: pool full, request refused (logged at most once a second per pool)",
				"pool", r.pool.Name(), "code", req.Code, "refusedInAll", r.pool.Rejected())
		}
		_ = c.Reply(req, NewResponse(SystemBusy, remarkBusy))
	}
}

// handleInline runs the guards and observers (intercept.go) and an InlineFunc on the reader. A panic is answered (done).
func (s *Server) handleInline(f InlineFunc, c *Conn, req *Command) (resp *Command, done bool) {
	done = true
	resp = callSafely(c.logger, req, func() *Command {
		if refused := s.intercept(c, req); refused != nil {
			return refused
		}
		r, d := f(c, req)
		done = d
		return r
	})
	return resp, done
}

// handle runs a handler on a pool worker and sends its response; checked: the guards and observers ran
// already (on the reader, before an InlineFunc that declined).
func (s *Server) handle(r route, c *Conn, req *Command, checked bool) {
	resp := callSafely(c.logger, req, func() *Command {
		if !checked {
			if refused := s.intercept(c, req); refused != nil {
				return refused
			}
		}
		return r.handler(c.Context(), c, req)
	})
	if resp != nil {
		_ = c.Reply(req, resp) // fails only when the connection is gone
	}
	s.recycle(r, req)
}

// recycle gives a transient route's request frame back to the frame cache once its answer is queued, and
// ends its turn; the request's Body is nil from then on.
func (s *Server) recycle(r route, req *Command) {
	if !r.transient || req.frame == nil {
		return
	}
	b := req.frame
	req.Body = nil
	s.endTurn(req)
	s.frames.put(b)
}

// endTurn ends the frame cache's turn a request holds (framecache.go; Command.frame), once.
func (s *Server) endTurn(req *Command) {
	if req.frame != nil {
		req.frame = nil
		s.frames.endTurn()
	}
}

// callSafely runs a handler; a panic is logged with its stack and turned into a SYSTEM_ERROR response whose
// remark does not carry the panic.
func callSafely(logger *slog.Logger, req *Command, f func() *Command) (resp *Command) {
	defer func() {
		if p := recover(); p != nil {
			logger.Error("remoting: handler panicked", "code", req.Code, "opaque", req.Opaque, "panic", p,
				"stack", string(debug.Stack()))
			resp = NewResponse(SystemError, fmt.Sprintf("system error while handling request code %d", req.Code))
		}
	}()
	return f()
}

// ConnCount returns the number of open connections.
func (s *Server) ConnCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.mu.conns)
}

// StopAccepting closes the listener and every extra listener (Listen) and waits for their accept loops; open
// connections keep working (for an ordered shutdown). It returns nil when the server was not listening.
func (s *Server) StopAccepting() error {
	s.mu.Lock()
	ln := s.mu.ln
	extra := make([]*Listener, 0, len(s.mu.listeners))
	for l := range s.mu.listeners {
		extra = append(extra, l)
	}
	s.mu.Unlock()
	var errs []error
	for _, l := range extra {
		errs = append(errs, l.stopAccepting())
	}
	if ln == nil {
		return errors.Join(errs...)
	}
	s.stopOnce.Do(func() { close(s.stopAccept) })
	err := ln.Close()
	<-s.acceptDone
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return errors.Join(append(errs, err)...)
}

// Shutdown stops gracefully: it stops accepting, runs the requests already queued on the registered pools
// (their answers are queued for writing), waits until every connection has written what it holds or ctx
// is done, then closes as Close does. Answers a handler sends later (from another goroutine) are dropped.
func (s *Server) Shutdown(ctx context.Context) error {
	err := s.StopAccepting()
	s.mu.Lock()
	pools := make([]*Pool, 0, len(s.mu.pools))
	for p := range s.mu.pools {
		pools = append(pools, p)
	}
	s.mu.Unlock()
	for _, p := range pools {
		p.Drain()
	}
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for !s.writesIdle() {
		select {
		case <-ctx.Done():
			s.logger.Warn("remoting: shutdown: closing connections with frames still unwritten", "err", ctx.Err())
			return errors.Join(err, s.Close())
		case <-tick.C:
		}
	}
	return errors.Join(err, s.Close())
}

// queuedTasks is the number of requests waiting in the registered pools.
func (s *Server) queuedTasks() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for p := range s.mu.pools {
		n += p.Queued()
	}
	return n
}

// writesIdle reports whether no connection has a frame queued or being written.
func (s *Server) writesIdle() bool {
	s.mu.Lock()
	conns := make([]*Conn, 0, len(s.mu.conns))
	for _, c := range s.mu.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	for _, c := range conns {
		c.mu.Lock()
		busy := !c.mu.closed && (len(c.mu.queue) > 0 || c.mu.writing)
		c.mu.Unlock()
		if busy {
			return false
		}
	}
	return true
}

// Close stops accepting (on every listener), closes every connection, closes the registered pools and waits for every goroutine
// the server started. It may be called more than once.
func (s *Server) Close() error {
	err := s.StopAccepting()
	s.mu.Lock()
	s.mu.closing = true
	conns := make([]*Conn, 0, len(s.mu.conns))
	for _, c := range s.mu.conns {
		conns = append(conns, c)
	}
	pools := make([]*Pool, 0, len(s.mu.pools))
	for p := range s.mu.pools {
		pools = append(pools, p)
	}
	s.mu.Unlock()
	for _, c := range conns {
		c.closeWith("server closing", slog.LevelDebug)
	}
	for _, p := range pools {
		p.Close()
	}
	s.tr.closeAndWait()
	return err
}
