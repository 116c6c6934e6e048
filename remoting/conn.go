package remoting

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// Connection errors.
var (
	// ErrConnClosed: the connection is closed; a pending call on it fails with this error.
	ErrConnClosed = errors.New("remoting: connection closed")
	// ErrTimeout: a call's context ended before its response arrived. The error also wraps the context's error.
	ErrTimeout = errors.New("remoting: request timed out")
	// ErrWriteQueueFull: the peer does not read; the connection is closed.
	ErrWriteQueueFull = errors.New("remoting: write queue full")
)

// connConfig is what a Conn needs from its Server or Client config.
type connConfig struct {
	maxFrameSize    int
	idleTimeout     time.Duration // <= 0: none
	writeTimeout    time.Duration // <= 0: none
	maxQueuedFrames int
	readBufferSize  int
	// replies is the server's reply observer (nil pointer on the client side).
	replies *atomic.Pointer[ReplyObserver]
	// frames keeps large request frames' memory for the next (the server's; nil on the client side).
	frames *frameCache
	// intern gives the strings of JSON headers decoded in place (Server.SetInterner; nil: none).
	intern Interner
}

// Thresholds of the writer. A Body up to inlineBodyMax bytes is copied into the batch buffer next to its
// header; a larger one, and every BodyParts slice, is handed to writev as it is.
const inlineBodyMax = 4 << 10

// scratchFrameMax bounds the frame memory a connection's reader keeps for the next frame (readLoop).
const scratchFrameMax = 1 << 10

// Conn is one TCP connection speaking the remoting protocol, on the server or the client side. One reader
// goroutine decodes frames: responses complete the pending call with their opaque, requests go to the owner's
// dispatch. One writer goroutine sends every queued frame of a wake-up in one writev. All methods are safe for
// concurrent use.
type Conn struct {
	id       uint64
	nc       net.Conn                            // the TCP connection: deadlines and Close always go here, plain writes too
	rd       io.Reader                           // what the reader decodes: nc, the TLS connection, or nc behind the sniffed first byte
	tlsw     *bufio.Writer                       // TLS only: gathers a batch into full records (tls.go); nil for plain connections
	tlsState atomic.Pointer[tls.ConnectionState] // TLS only: the completed handshake, set once before the reader starts
	remote   string
	local    string
	cfg      connConfig
	logger   *slog.Logger
	dispatch func(*Conn, *Command) // incoming requests; runs on the reader goroutine and must not block
	goer     *tracker              // runs async callbacks
	via      *Listener             // server side: the extra listener that accepted it (nil: the main one, or a client)

	// The reader's own: the read deadline it set last (zero: none), and whether the frame it is reading holds
	// a turn of the frame cache (readLarge).
	readDeadline time.Time
	turn         bool

	ctx    context.Context // cancelled when the connection closes
	cancel context.CancelFunc
	closed chan struct{}
	once   sync.Once
	wake   chan struct{} // capacity 1: the writer has work

	mu struct {
		sync.Mutex
		closed  bool
		queue   []*Command      // frames waiting for the writer
		writing bool            // the writer holds a batch it has not finished writing
		pending map[int32]*call // requests of ours awaiting their response, by opaque
		reason  string          // why the connection closed, for logs
		values  map[string]any  // owner-defined attachments
	}
}

// call is a request of ours waiting for its response: sync (done) or async (cb).
type call struct {
	code int32
	done chan callResult // capacity 1
	cb   func(*Command, error)
	stop func() bool // stops the context.AfterFunc of an async call; guarded by Conn.mu
}

type callResult struct {
	resp *Command
	err  error
}

func newConn(id uint64, nc net.Conn, cfg connConfig, logger *slog.Logger, dispatch func(*Conn, *Command),
	goer *tracker) *Conn {
	c := &Conn{
		id:       id,
		nc:       nc,
		rd:       nc,
		remote:   nc.RemoteAddr().String(),
		local:    nc.LocalAddr().String(),
		cfg:      cfg,
		dispatch: dispatch,
		goer:     goer,
		closed:   make(chan struct{}),
		wake:     make(chan struct{}, 1),
	}
	c.logger = logger.With("conn", id, "remote", c.remote)
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.mu.pending = make(map[int32]*call)
	return c
}

// ID returns the connection's number, unique within its Server or Client.
func (c *Conn) ID() uint64 { return c.id }

// RemoteAddr returns the peer's address, ip:port.
func (c *Conn) RemoteAddr() string { return c.remote }

// LocalAddr returns our end's address, ip:port.
func (c *Conn) LocalAddr() string { return c.local }

// Closed returns a channel closed when the connection closes.
func (c *Conn) Closed() <-chan struct{} { return c.closed }

// Context returns a context cancelled when the connection closes.
func (c *Conn) Context() context.Context { return c.ctx }

// SetValue attaches a value to the connection under key (for example the client id a heartbeat announced).
func (c *Conn) SetValue(key string, v any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.values == nil {
		c.mu.values = make(map[string]any)
	}
	c.mu.values[key] = v
}

// Value returns what SetValue attached under key, or nil.
func (c *Conn) Value(key string) any {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mu.values[key]
}

// Close closes the connection: queued frames are dropped (their Release called), pending calls fail with
// ErrConnClosed. It returns nil, also when called again.
func (c *Conn) Close() error {
	c.closeWith("closed locally", slog.LevelDebug)
	return nil
}

// closeWith closes once and logs why at the given level.
func (c *Conn) closeWith(reason string, level slog.Level) {
	c.once.Do(func() {
		c.mu.Lock()
		c.mu.closed = true
		c.mu.reason = reason
		pending := c.mu.pending
		c.mu.pending = make(map[int32]*call)
		stops := make([]func() bool, 0, len(pending))
		for _, cl := range pending {
			if cl.stop != nil {
				stops = append(stops, cl.stop)
			}
		}
		c.mu.Unlock()
		c.logger.Log(context.Background(), level, "remoting: connection closed", "reason", reason)
		close(c.closed)
		c.cancel()
		_ = c.nc.Close()
		for _, stop := range stops {
			stop()
		}
		for _, cl := range pending {
			c.finish(cl, nil, fmt.Errorf("%w (%s): request code %d to %s", ErrConnClosed, reason, cl.code, c.remote))
		}
	})
}

// serve runs the reader in the calling goroutine and the writer in another, until the connection closes; it
// returns once both have stopped.
func (c *Conn) serve() {
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		c.writeLoop()
	}()
	c.readLoop()
	<-writerDone
}

func (c *Conn) readLoop() {
	br := newReadBuffer(c.rd, c.cfg.readBufferSize) // readbuf.go: small until the traffic needs more
	var lenBuf [lengthFieldSize]byte
	// scratch takes the next small frame. Decoding copies the header's strings, so a frame whose command
	// has no body is referenced by nothing once decoded, and its memory serves the next: a name server's
	// route queries (no body) then read into the same bytes, where each cost an allocation.
	var scratch []byte
	var spare *Command // a request the server is done with (Command.reusable), decoded into again
	var large largeReader
	if c.cfg.frames != nil {
		large = c.readLarge
	}
	for {
		if c.cfg.idleTimeout > 0 && !br.frameBuffered() { // (a buffered frame is read without waiting)
			c.readDeadline = time.Now().Add(c.cfg.idleTimeout)
			_ = c.nc.SetReadDeadline(c.readDeadline)
		}
		frame, err := readFrame(br, c.cfg.maxFrameSize, &lenBuf, scratch, large)
		if err != nil {
			c.endTurn()
			c.readFailed(err)
			return
		}
		cmd, err := decodeFrameInto(spare, frame, c.cfg.intern)
		spare = nil
		if err != nil {
			c.endTurn()
			c.closeWith(err.Error(), slog.LevelWarn)
			return
		}
		switch {
		case cmd.Body != nil:
			scratch = nil // the body is the frame's memory, and the command's now
		case cap(frame) <= scratchFrameMax:
			scratch = frame[:0]
		}
		if cmd.IsResponse() {
			c.endTurn()
			c.deliver(cmd)
			continue
		}
		if c.turn {
			cmd.frame = frame // read in a turn, which the request holds from now on (Server.endTurn)
			c.turn = false
		}
		if c.cfg.replies != nil && c.cfg.replies.Load() != nil { // only when someone looks at the times
			cmd.received = time.Now().UnixNano()
		}
		c.dispatch(c, cmd)
		if cmd.reusable {
			spare = cmd
		}
	}
}

// readLarge reads a frame of size bytes into the server's frame cache in a turn (framecache.go), when the
// cache takes it. A turn waits turnSlice at most for the peer's bytes (or until the idle deadline, when that
// comes first): a peer slower than that ends its turn and its frame is read outside the turns.
func (c *Conn) readLarge(r io.Reader, size int) ([]byte, bool, error) {
	fc := c.cfg.frames
	if !fc.takesPart(size) {
		return nil, false, nil
	}
	if !fc.takeTurn(c.closed) {
		return nil, true, net.ErrClosed
	}
	c.turn = true
	buf := fc.get(size)
	sliceEnd := time.Now().Add(turnSlice)
	sliced := c.readDeadline.IsZero() || sliceEnd.Before(c.readDeadline)
	if sliced {
		_ = c.nc.SetReadDeadline(sliceEnd)
	}
	n, err := io.ReadFull(r, buf)
	if sliced {
		_ = c.nc.SetReadDeadline(c.readDeadline) // the idle deadline again (zero: none)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			c.endTurn() // a slow peer: the rest outside the turns
			var m int
			m, err = io.ReadFull(r, buf[n:])
			n += m
		}
	}
	if err != nil {
		return nil, true, err // (readFrame reports an io.EOF inside the frame as io.ErrUnexpectedEOF)
	}
	return buf, true, nil
}

// endTurn ends the turn of the frame being read, if it has one.
func (c *Conn) endTurn() {
	if c.turn {
		c.turn = false
		c.cfg.frames.endTurn()
	}
}

// readFailed closes the connection with a reason that says why reading stopped.
func (c *Conn) readFailed(err error) {
	switch {
	case errors.Is(err, ErrFrameTooLarge), errors.Is(err, ErrBadFrame):
		c.closeWith(err.Error(), slog.LevelWarn)
	case errors.Is(err, os.ErrDeadlineExceeded):
		c.closeWith(fmt.Sprintf("nothing read for %s (idle timeout)", c.cfg.idleTimeout), slog.LevelInfo)
	case errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed):
		c.closeWith("closed by peer", slog.LevelDebug)
	default:
		c.closeWith("read: "+err.Error(), slog.LevelInfo)
	}
}

// deliver completes the pending call of a response; a response nobody waits for is dropped.
func (c *Conn) deliver(resp *Command) {
	cl := c.takePending(resp.Opaque, nil)
	if cl == nil {
		c.logger.Debug("remoting: dropped a response nobody waits for", "opaque", resp.Opaque, "code", resp.Code)
		return
	}
	c.finish(cl, resp, nil)
}

// takePending removes and returns the call with opaque; when want is not nil, only if it is that call.
func (c *Conn) takePending(opaque int32, want *call) *call {
	c.mu.Lock()
	cl := c.mu.pending[opaque]
	if cl == nil || (want != nil && cl != want) {
		c.mu.Unlock()
		return nil
	}
	delete(c.mu.pending, opaque)
	stop := cl.stop
	c.mu.Unlock()
	if stop != nil {
		stop()
	}
	return cl
}

// finish completes a call taken out of the pending table; only its taker calls it, so it runs once.
func (c *Conn) finish(cl *call, resp *Command, err error) {
	if cl.done != nil {
		cl.done <- callResult{resp, err}
		return
	}
	c.goer.Go(func() { cl.cb(resp, err) })
}

func (c *Conn) addPending(opaque int32, cl *call) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.closed {
		return fmt.Errorf("%w (%s): request code %d to %s", ErrConnClosed, c.mu.reason, cl.code, c.remote)
	}
	if _, dup := c.mu.pending[opaque]; dup {
		return fmt.Errorf("remoting: a request with opaque %d is already pending on the connection to %s", opaque,
			c.remote)
	}
	c.mu.pending[opaque] = cl
	return nil
}

func (c *Conn) timeoutErr(ctx context.Context, cmd *Command) error {
	return fmt.Errorf("%w: request code %d opaque %d to %s: %w", ErrTimeout, cmd.Code, cmd.Opaque, c.remote,
		context.Cause(ctx))
}

// Invoke sends a request and waits for its response until ctx ends (ErrTimeout) or the connection closes
// (ErrConnClosed). The request's opaque must not be pending on this connection already.
func (c *Conn) Invoke(ctx context.Context, cmd *Command) (*Command, error) {
	cl := &call{code: cmd.Code, done: make(chan callResult, 1)}
	if err := c.addPending(cmd.Opaque, cl); err != nil {
		release(cmd)
		return nil, err
	}
	if err := c.enqueue(cmd); err != nil {
		c.takePending(cmd.Opaque, cl)
		return nil, err
	}
	select {
	case r := <-cl.done:
		return r.resp, r.err
	case <-ctx.Done():
		if c.takePending(cmd.Opaque, cl) != nil {
			return nil, c.timeoutErr(ctx, cmd)
		}
		r := <-cl.done // completed meanwhile
		return r.resp, r.err
	}
}

// invokeAsync sends a request; cb is called exactly once, in its own goroutine, with the response or the error
// (ErrTimeout when ctx ends first, ErrConnClosed), unless invokeAsync itself returns an error.
func (c *Conn) invokeAsync(ctx context.Context, cmd *Command, cb func(*Command, error)) error {
	cl := &call{code: cmd.Code, cb: cb}
	if err := c.addPending(cmd.Opaque, cl); err != nil {
		release(cmd)
		return err
	}
	stop := context.AfterFunc(ctx, func() {
		if c.takePending(cmd.Opaque, cl) != nil {
			c.finish(cl, nil, c.timeoutErr(ctx, cmd))
		}
	})
	c.mu.Lock()
	if c.mu.pending[cmd.Opaque] == cl {
		cl.stop = stop
	} else {
		defer stop() // already completed
	}
	c.mu.Unlock()
	if err := c.enqueue(cmd); err != nil {
		if c.takePending(cmd.Opaque, cl) != nil {
			return err
		}
	}
	return nil
}

// SendOneway sends a request with the oneway flag set; no response is expected.
func (c *Conn) SendOneway(cmd *Command) error {
	cmd.MarkOneway()
	return c.enqueue(cmd)
}

// Reply sends resp as the response to req: it takes req's opaque and serialize type and sets the response
// flag. A oneway request gets no response (resp is released and dropped). Reply may be called from any
// goroutine, also long after the handler returned.
func (c *Conn) Reply(req, resp *Command) error {
	var observe ReplyObserver
	if c.cfg.replies != nil {
		if o := c.cfg.replies.Load(); o != nil {
			observe = *o
		}
	}
	if req.IsOneway() {
		if observe != nil {
			observe(req, resp.Code, ReplyOneway)
		}
		release(resp)
		return nil
	}
	resp.Opaque = req.Opaque
	resp.MarkResponse()
	resp.SerializeType = req.SerializeType
	code := resp.Code // resp may be written and released once queued
	err := c.enqueue(resp)
	if observe != nil {
		result := ReplyQueued
		if err != nil {
			result = ReplyWriteFailed
		}
		observe(req, code, result)
	}
	return err
}

// ReplyObserver sees every answer a server's handlers give: the request (Received and Suspended tell when
// it came and whether it was held), the response code, and what became of the answer. It runs on the
// replying goroutine and must not block.
type ReplyObserver func(req *Command, respCode int32, result ReplyResult)

// ReplyResult is what became of an answer, in RocketMQ's words for its rpc latency metric.
type ReplyResult string

// The results of an answer.
const (
	ReplyQueued      ReplyResult = "success"              // queued for the writer
	ReplyOneway      ReplyResult = "oneway"               // a oneway request: nothing is sent
	ReplyWriteFailed ReplyResult = "write_channel_failed" // the connection was gone or stuck
)

// release calls cmd's Release once; it takes it off cmd first, as the Release of a pooled command gives the
// command to its next user.
func release(cmd *Command) {
	if f := cmd.Release; f != nil {
		cmd.Release = nil
		f()
	}
}

// enqueue hands a frame to the writer. On failure the frame's Release has been called.
func (c *Conn) enqueue(cmd *Command) error {
	c.mu.Lock()
	if c.mu.closed {
		reason := c.mu.reason
		c.mu.Unlock()
		release(cmd)
		return fmt.Errorf("%w (%s): %s", ErrConnClosed, reason, c.remote)
	}
	if len(c.mu.queue) >= c.cfg.maxQueuedFrames {
		c.mu.Unlock()
		release(cmd)
		reason := fmt.Sprintf("%d frames wait to be written: the peer does not read", c.cfg.maxQueuedFrames)
		c.closeWith(reason, slog.LevelWarn)
		return fmt.Errorf("%w: %s: %s", ErrWriteQueueFull, c.remote, reason)
	}
	c.mu.queue = append(c.mu.queue, cmd)
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
	return nil
}
