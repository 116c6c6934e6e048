package remoting

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rocketraft/rocketraft/internal/testutil"
)

// testLogger writes to t.Log and, when buf is not nil, to buf too.
func testLogger(t *testing.T, buf *syncBuffer) *slog.Logger {
	var w io.Writer = tWriter{t}
	if buf != nil {
		w = io.MultiWriter(w, buf)
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type tWriter struct{ t *testing.T }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// startServer starts a server on a free local port with the handlers that register adds; Close at cleanup.
func startServer(t *testing.T, cfg ServerConfig, logs *syncBuffer, register func(s *Server)) *Server {
	t.Helper()
	cfg.ListenAddr = "127.0.0.1:0"
	s := NewServer(cfg, testLogger(t, logs))
	if register != nil {
		register(s)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func newClient(t *testing.T, cfg ClientConfig) *Client {
	t.Helper()
	c := NewClient(cfg, testLogger(t, nil))
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func ctxTimeout(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// echo answers with the request's ext fields and body.
func echo(_ context.Context, _ *Conn, req *Command) *Command {
	resp := NewResponse(Success, "echo")
	resp.ExtFields = req.ExtFields
	resp.Body = req.Body
	return resp
}

func TestServerClientRoundTrip(t *testing.T) {
	pool := NewPool("send", 2, 16)
	s := startServer(t, ServerConfig{}, nil, func(s *Server) { s.Register(SendMessage, pool, echo) })
	cl := newClient(t, ClientConfig{})
	for _, serType := range []byte{SerializeJSON, SerializeRocketMQ} {
		req := NewRequest(SendMessage, map[string]string{"topic": "T", "queueId": "2"}, []byte("payload"))
		req.SerializeType = serType
		resp, err := cl.Invoke(ctxTimeout(t, 10*time.Second), s.Addr().String(), req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.Code != int32(Success) || resp.Opaque != req.Opaque || !resp.IsResponse() || resp.Remark != "echo" ||
			resp.ExtFields["queueId"] != "2" || string(resp.Body) != "payload" || resp.SerializeType != serType {
			t.Fatalf("serialize type %d: response %v (type %d)", serType, resp, resp.SerializeType)
		}
	}
}

func TestUnknownCodeAnswered(t *testing.T) {
	s := startServer(t, ServerConfig{}, nil, nil)
	resp, err := newClient(t, ClientConfig{}).Invoke(ctxTimeout(t, 10*time.Second), s.Addr().String(),
		NewRequest(9999, nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Code != int32(RequestCodeNotSupported) || resp.Remark != " request type 9999 not supported" {
		t.Fatalf("response %v", resp)
	}
}

func TestFullPoolAnswersSystemBusy(t *testing.T) {
	started := make(chan struct{}, 4)
	unblock := make(chan struct{})
	pool := NewPool("slow", 1, 1)
	s := startServer(t, ServerConfig{}, nil, func(s *Server) {
		s.Register(PullMessage, pool, func(ctx context.Context, c *Conn, req *Command) *Command {
			started <- struct{}{}
			<-unblock
			return NewResponse(Success, "")
		})
	})
	cl := newClient(t, ClientConfig{})
	addr := s.Addr().String()
	results := make(chan *Command, 3)
	call := func() {
		err := cl.InvokeAsync(ctxTimeout(t, 10*time.Second), addr, NewRequest(PullMessage, nil, nil),
			func(resp *Command, err error) {
				if err != nil {
					t.Error(err)
				}
				results <- resp
			})
		if err != nil {
			t.Fatal(err)
		}
	}
	call()
	<-started // the worker is busy
	call()    // queued
	testutil.WaitFor(t, 10*time.Second, "the second request to be queued", func() bool { return pool.Queued() == 1 })
	call() // refused
	busy := <-results
	if busy.Code != int32(SystemBusy) || !strings.HasPrefix(busy.Remark, "[REJECTREQUEST]") || pool.Rejected() != 1 {
		t.Fatalf("third request: %v, rejected %d", busy, pool.Rejected())
	}
	close(unblock)
	for range 2 {
		if resp := <-results; resp.Code != int32(Success) {
			t.Fatalf("queued request: %v", resp)
		}
	}
}

// TestFullPoolLogsRefusalsOnceASecond: a full pool answers every request SYSTEM_BUSY but logs the first
// refusal only (then at most one a second, with the pool's count): a line per refusal cost a saturated
// name server 8% of its CPU.
func TestFullPoolLogsRefusalsOnceASecond(t *testing.T) {
	started := make(chan struct{}, 1)
	unblock := make(chan struct{})
	pool := NewPool("slow", 1, 0)
	var logs syncBuffer
	s := startServer(t, ServerConfig{}, &logs, func(s *Server) {
		s.Register(PullMessage, pool, func(ctx context.Context, c *Conn, req *Command) *Command {
			started <- struct{}{}
			<-unblock
			return NewResponse(Success, "")
		})
	})
	defer close(unblock)
	cl := newClient(t, ClientConfig{})
	addr := s.Addr().String()
	go func() { _, _ = cl.Invoke(ctxTimeout(t, 10*time.Second), addr, NewRequest(PullMessage, nil, nil)) }()
	<-started // the only worker is busy, the queue holds nothing
	start := time.Now()
	const refused = 50
	for range refused {
		resp, err := cl.Invoke(ctxTimeout(t, 10*time.Second), addr, NewRequest(PullMessage, nil, nil))
		if err != nil || resp.Code != int32(SystemBusy) {
			t.Fatalf("request to the full pool: %v %v", resp, err)
		}
	}
	lines := strings.Count(logs.String(), "pool full, request refused")
	// One a second at most, the first included.
	if most := 1 + int(time.Since(start)/time.Second); lines < 1 || lines > most || pool.Rejected() != refused {
		t.Fatalf("%d refusals (pool counts %d) in %v logged %d times, want 1 to %d:\n%s", refused, pool.Rejected(),
			time.Since(start), lines, most, logs.String())
	}
}

func TestHandlerPanicAnswersSystemError(t *testing.T) {
	logs := &syncBuffer{}
	s := startServer(t, ServerConfig{}, logs, func(s *Server) {
		s.Register(HeartBeat, NewPool("hb", 1, 4), func(context.Context, *Conn, *Command) *Command {
			panic("secret detail")
		})
	})
	resp, err := newClient(t, ClientConfig{}).Invoke(ctxTimeout(t, 10*time.Second), s.Addr().String(),
		NewRequest(HeartBeat, nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Code != int32(SystemError) || strings.Contains(resp.Remark, "secret") {
		t.Fatalf("response %v", resp)
	}
	if !strings.Contains(logs.String(), "secret detail") {
		t.Fatal("the panic is not logged")
	}
}

func TestReplyFromAnotherGoroutineAndTimeout(t *testing.T) {
	held := make(chan [2]any, 4)
	s := startServer(t, ServerConfig{}, nil, func(s *Server) {
		s.Register(PullMessage, NewPool("pull", 1, 8), func(_ context.Context, c *Conn, req *Command) *Command {
			held <- [2]any{c, req}
			return nil // answered later
		})
	})
	cl := newClient(t, ClientConfig{})
	addr := s.Addr().String()

	// A held request answered from another goroutine.
	done := make(chan *Command, 1)
	go func() {
		resp, err := cl.Invoke(ctxTimeout(t, 10*time.Second), addr, NewRequest(PullMessage, nil, nil))
		if err != nil {
			t.Error(err)
		}
		done <- resp
	}()
	h := <-held
	go func() { _ = h[0].(*Conn).Reply(h[1].(*Command), NewResponse(PullNotFound, "later")) }()
	if resp := <-done; resp == nil || resp.Code != int32(PullNotFound) || resp.Remark != "later" {
		t.Fatalf("held request answered %v", resp)
	}

	// A request nobody answers times out; its late answer is dropped and the connection stays usable.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := cl.Invoke(ctx, addr, NewRequest(PullMessage, nil, nil))
	if !errors.Is(err, ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("unanswered request: %v", err)
	}
	h = <-held
	if err := h[0].(*Conn).Reply(h[1].(*Command), NewResponse(Success, "too late")); err != nil {
		t.Fatal(err)
	}
	go func() {
		h := <-held
		_ = h[0].(*Conn).Reply(h[1].(*Command), NewResponse(Success, "third"))
	}()
	resp, err := cl.Invoke(ctxTimeout(t, 10*time.Second), addr, NewRequest(PullMessage, nil, nil))
	if err != nil || resp.Remark != "third" {
		t.Fatalf("after a timeout: %v, %v", resp, err)
	}
}

func TestIdleConnectionClosed(t *testing.T) {
	logs := &syncBuffer{}
	s := startServer(t, ServerConfig{IdleTimeout: 50 * time.Millisecond}, logs, nil)
	nc, err := net.Dial("tcp", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	_ = nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := nc.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("read on an idle connection: %v, want EOF", err)
	}
	testutil.WaitFor(t, 10*time.Second, "the idle log line", func() bool { return strings.Contains(logs.String(), "idle timeout") })
}

func TestOversizeAndBadFramesClose(t *testing.T) {
	for _, tc := range []struct {
		name   string
		frame  []byte
		reason string
	}{
		{"oversize", binary.BigEndian.AppendUint32(nil, 2048), "frame length 2048 exceeds the limit of 1024 bytes"},
		{"negative", binary.BigEndian.AppendUint32(nil, 0xFFFFFFF0), "frame length -16 is below"},
		{"bad header length", append(binary.BigEndian.AppendUint32(nil, 6), 0, 0, 0, 9, '{', '}'),
			"header length 9 exceeds"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			logs := &syncBuffer{}
			s := startServer(t, ServerConfig{MaxFrameSize: 1024}, logs, nil)
			nc, err := net.Dial("tcp", s.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			if _, err := nc.Write(tc.frame); err != nil {
				t.Fatal(err)
			}
			_ = nc.SetReadDeadline(time.Now().Add(10 * time.Second))
			if _, err := nc.Read(make([]byte, 1)); err != io.EOF {
				t.Fatalf("read after a bad frame: %v, want EOF", err)
			}
			testutil.WaitFor(t, 10*time.Second, "the reason in the log", func() bool { return strings.Contains(logs.String(), tc.reason) })
		})
	}
}

func TestOnewayAndServerToClientRequests(t *testing.T) {
	conns := make(chan *Conn, 1)
	var onewaySeen atomic.Bool
	s := startServer(t, ServerConfig{}, nil, func(s *Server) {
		pool := NewPool("client", 2, 8)
		s.Register(HeartBeat, pool, func(_ context.Context, c *Conn, req *Command) *Command {
			conns <- c
			return NewResponse(Success, "")
		})
		s.Register(UnregisterClient, pool, func(_ context.Context, c *Conn, req *Command) *Command {
			onewaySeen.Store(req.IsOneway())
			return NewResponse(Success, "never sent")
		})
	})
	cl := newClient(t, ClientConfig{})
	notified := make(chan string, 1)
	cl.RegisterHandler(NotifyConsumerIDsChanged, func(req *Command) *Command {
		notified <- req.ExtFields["consumerGroup"]
		return nil
	})
	cl.RegisterHandler(GetConsumerRunningInfo, func(req *Command) *Command {
		resp := NewResponse(Success, "")
		resp.Body = []byte(`{"running":true}`)
		return resp
	})
	// A code has one handler: a second RegisterHandler panics and the first stays (asserted below).
	func() {
		defer func() {
			if p := recover(); p == nil || !strings.Contains(fmt.Sprint(p), "registered twice") {
				t.Errorf("second RegisterHandler: recovered %v", p)
			}
		}()
		cl.RegisterHandler(GetConsumerRunningInfo, func(*Command) *Command { return NewResponse(SystemError, "second") })
	}()
	addr := s.Addr().String()
	if err := cl.InvokeOneway(ctxTimeout(t, 10*time.Second), addr, NewRequest(UnregisterClient, nil, nil)); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Invoke(ctxTimeout(t, 10*time.Second), addr, NewRequest(HeartBeat, nil, nil)); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 10*time.Second, "the oneway request", onewaySeen.Load)
	sc := <-conns
	if err := sc.SendOneway(NewRequest(NotifyConsumerIDsChanged, map[string]string{"consumerGroup": "CG"}, nil)); err != nil {
		t.Fatal(err)
	}
	if g := <-notified; g != "CG" {
		t.Fatalf("notified group %q", g)
	}
	resp, err := sc.Invoke(ctxTimeout(t, 10*time.Second), NewRequest(GetConsumerRunningInfo, nil, nil))
	if err != nil || string(resp.Body) != `{"running":true}` {
		t.Fatalf("server->client invoke: %v, %v", resp, err)
	}
	resp, err = sc.Invoke(ctxTimeout(t, 10*time.Second), NewRequest(ConsumeMessageDirectly, nil, nil))
	if err != nil || resp.Code != int32(RequestCodeNotSupported) {
		t.Fatalf("server->client invoke of an unhandled code: %v, %v", resp, err)
	}
}

func TestOnConnCloseAndPendingFail(t *testing.T) {
	var closedConns atomic.Int32
	held := make(chan *Conn, 1)
	s := startServer(t, ServerConfig{}, nil, func(s *Server) {
		s.Register(PullMessage, NewPool("pull", 1, 4), func(_ context.Context, c *Conn, _ *Command) *Command {
			held <- c
			return nil
		})
		s.OnConnClose(func(*Conn) { closedConns.Add(1) })
	})
	cl := newClient(t, ClientConfig{})
	errs := make(chan error, 1)
	go func() {
		_, err := cl.Invoke(ctxTimeout(t, 10*time.Second), s.Addr().String(), NewRequest(PullMessage, nil, nil))
		errs <- err
	}()
	sc := <-held
	_ = sc.Close()
	if err := <-errs; !errors.Is(err, ErrConnClosed) {
		t.Fatalf("pending call on a closed connection: %v", err)
	}
	testutil.WaitFor(t, 10*time.Second, "OnConnClose", func() bool { return closedConns.Load() == 1 && s.ConnCount() == 0 })
	if err := sc.Reply(NewRequest(PullMessage, nil, nil), NewResponse(Success, "")); !errors.Is(err, ErrConnClosed) {
		t.Fatalf("reply on a closed connection: %v", err)
	}
}

func TestBodyPartsAndRelease(t *testing.T) {
	var released atomic.Int32
	s := startServer(t, ServerConfig{}, nil, func(s *Server) {
		s.Register(PullMessage, NewPool("pull", 1, 4), func(context.Context, *Conn, *Command) *Command {
			resp := NewResponse(Success, "")
			resp.Body = []byte("head|")
			resp.BodyParts = [][]byte{bytes.Repeat([]byte("a"), 10000), []byte("|tail")}
			resp.Release = func() { released.Add(1) }
			return resp
		})
	})
	resp, err := newClient(t, ClientConfig{}).Invoke(ctxTimeout(t, 10*time.Second), s.Addr().String(),
		NewRequest(PullMessage, nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	want := "head|" + strings.Repeat("a", 10000) + "|tail"
	if string(resp.Body) != want {
		t.Fatalf("body of %d bytes, want %d", len(resp.Body), len(want))
	}
	testutil.WaitFor(t, 10*time.Second, "Release", func() bool { return released.Load() == 1 })
}

// Many concurrent calls over a few connections: every response reaches its caller.
func TestPipelinedCalls(t *testing.T) {
	s := startServer(t, ServerConfig{}, nil, func(s *Server) { s.Register(SendMessage, NewPool("send", 4, 4096), echo) })
	cl := newClient(t, ClientConfig{ConnsPerAddr: 2})
	addr := s.Addr().String()
	var wg sync.WaitGroup
	for i := range 2000 {
		wg.Add(1)
		body := []byte(fmt.Sprint(i))
		err := cl.InvokeAsync(ctxTimeout(t, 20*time.Second), addr, NewRequest(SendMessage, nil, body),
			func(resp *Command, err error) {
				defer wg.Done()
				if err != nil || !bytes.Equal(resp.Body, body) {
					t.Errorf("call %d: %v %v", i, resp, err)
				}
			})
		if err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
}

func TestAsyncTimeoutAndClientClose(t *testing.T) {
	s := startServer(t, ServerConfig{}, nil, func(s *Server) {
		s.Register(PullMessage, NewPool("pull", 1, 4), func(context.Context, *Conn, *Command) *Command { return nil })
		s.Register(SendMessage, NewPool("send", 1, 4), echo)
	})
	cl := NewClient(ClientConfig{}, testLogger(t, nil))
	addr := s.Addr().String()
	// The connection first, so the 20 ms below times the unanswered call, not the dial (which
	// took longer under load and failed the test with a dial timeout).
	if _, err := cl.Invoke(ctxTimeout(t, 10*time.Second), addr, NewRequest(SendMessage, nil, nil)); err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := cl.InvokeAsync(ctx, addr, NewRequest(PullMessage, nil, nil), func(_ *Command, err error) { got <- err }); err != nil {
		t.Fatal(err)
	}
	if err := <-got; !errors.Is(err, ErrTimeout) {
		t.Fatalf("async timeout: %v", err)
	}
	if err := cl.InvokeAsync(context.Background(), addr, NewRequest(PullMessage, nil, nil),
		func(_ *Command, err error) { got <- err }); err != nil {
		t.Fatal(err)
	}
	_ = cl.Close()
	if err := <-got; !errors.Is(err, ErrConnClosed) {
		t.Fatalf("pending async call at Close: %v", err)
	}
	if _, err := cl.Invoke(context.Background(), addr, NewRequest(PullMessage, nil, nil)); !errors.Is(err, ErrClientClosed) {
		t.Fatalf("call after Close: %v", err)
	}
}

func TestStopAcceptingKeepsConnections(t *testing.T) {
	s := startServer(t, ServerConfig{}, nil, func(s *Server) { s.Register(SendMessage, NewPool("send", 1, 4), echo) })
	addr := s.Addr().String()
	cl := newClient(t, ClientConfig{})
	if _, err := cl.Invoke(ctxTimeout(t, 10*time.Second), addr, NewRequest(SendMessage, nil, nil)); err != nil {
		t.Fatal(err)
	}
	if err := s.StopAccepting(); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Invoke(ctxTimeout(t, 10*time.Second), addr, NewRequest(SendMessage, nil, nil)); err != nil {
		t.Fatalf("existing connection after StopAccepting: %v", err)
	}
	if _, err := net.DialTimeout("tcp", addr, 5*time.Second); err == nil {
		t.Fatal("a new connection was accepted after StopAccepting")
	}
}

func TestPool(t *testing.T) {
	p := NewPool("p", 1, 1)
	block := make(chan struct{})
	running := make(chan struct{})
	if !p.Submit(func() { close(running); <-block }) {
		t.Fatal("first task refused")
	}
	<-running
	if !p.Submit(func() {}) || p.Submit(func() {}) {
		t.Fatal("queue of one: second accepted, third refused")
	}
	close(block)
	p.Close()
	if p.Submit(func() {}) {
		t.Fatal("task accepted after Close")
	}
}

// A peer that stops reading: frames pile up in the writer's queue until MaxQueuedFrames, then the connection is
// closed; every frame's Release runs once, written or dropped.
func TestStuckPeerOverflowsWriteQueue(t *testing.T) {
	conns := make(chan *Conn, 1)
	s := startServer(t, ServerConfig{MaxQueuedFrames: 4, WriteTimeout: -1}, nil, func(s *Server) {
		s.Register(HeartBeat, NewPool("hb", 1, 4), func(_ context.Context, c *Conn, _ *Command) *Command {
			conns <- c
			return nil
		})
	})
	nc, err := net.Dial("tcp", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	frame, _ := EncodeFrame(nil, NewRequest(HeartBeat, nil, nil))
	if _, err := nc.Write(frame); err != nil {
		t.Fatal(err)
	}
	sc := <-conns
	var sent, released atomic.Int32
	part := make([]byte, 1<<20)
	var sendErr error
	for i := 0; i < 1000 && sendErr == nil; i++ { // the socket buffers take some MiB first
		cmd := NewRequest(NotifyConsumerIDsChanged, nil, nil)
		cmd.BodyParts = [][]byte{part}
		cmd.Release = func() { released.Add(1) }
		sent.Add(1)
		sendErr = sc.SendOneway(cmd)
	}
	if !errors.Is(sendErr, ErrWriteQueueFull) {
		t.Fatalf("after %d frames to a peer that does not read: %v", sent.Load(), sendErr)
	}
	<-sc.Closed()
	testutil.WaitFor(t, 10*time.Second, "every Release", func() bool { return released.Load() == sent.Load() })
}

// TestShutdownAnswersQueuedRequests: a graceful shutdown runs the requests already queued and writes their
// answers before it closes the connections.
func TestShutdownAnswersQueuedRequests(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{}, 1)
	var s *Server
	s = startServer(t, ServerConfig{}, nil, func(srv *Server) {
		pool := NewPool("one", 1, 16)
		srv.Register(RequestCode(500), pool, func(ctx context.Context, c *Conn, req *Command) *Command {
			select {
			case started <- struct{}{}:
				<-release // the first request holds the only worker while the others queue
			default:
			}
			return NewResponse(Success, "done "+req.ExtFields["n"])
		})
	})
	c := newClient(t, ClientConfig{})
	const n = 5
	type result struct {
		resp *Command
		err  error
	}
	results := make(chan result, n)
	for i := 0; i < n; i++ {
		req := NewRequest(RequestCode(500), map[string]string{"n": fmt.Sprint(i)}, nil)
		if err := c.InvokeAsync(ctxTimeout(t, 10*time.Second), s.Addr().String(), req, func(r *Command, err error) {
			results <- result{r, err}
		}); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			<-started
		}
	}
	// The four later requests are read and queued before shutdown starts.
	deadline := time.Now().Add(10 * time.Second)
	for s.queuedTasks() < n-1 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	done := make(chan error, 1)
	go func() { done <- s.Shutdown(ctxTimeout(t, 10*time.Second)) }()
	close(release)
	for i := 0; i < n; i++ {
		r := <-results
		if r.err != nil || r.resp.Code != int32(Success) {
			t.Fatalf("request answered %v, %v during graceful shutdown", r.resp, r.err)
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestStoppedPoolAnswersServiceNotAvailable: a request that reaches a pool its owner drained for a shutdown
// (the connection still open) is answered SERVICE_NOT_AVAILABLE, which the official producers send again
// elsewhere; a full pool of a running server still answers SYSTEM_BUSY.
func TestStoppedPoolAnswersServiceNotAvailable(t *testing.T) {
	block := make(chan struct{})
	var blockOnce sync.Once
	unblock := func() { blockOnce.Do(func() { close(block) }) }
	t.Cleanup(unblock)
	running := make(chan struct{}, 1)
	send := NewPool("send", 1, 0)
	pull := NewPool("pull", 1, 4)
	s := startServer(t, ServerConfig{}, nil, func(s *Server) {
		s.Register(SendMessage, send, func(context.Context, *Conn, *Command) *Command {
			running <- struct{}{}
			<-block
			return NewResponse(Success, "")
		})
		s.Register(PullMessage, pull, echo)
	})
	cl := newClient(t, ClientConfig{})
	addr := s.Addr().String()
	if _, err := cl.Invoke(ctxTimeout(t, 10*time.Second), addr, NewRequest(PullMessage, nil, nil)); err != nil {
		t.Fatal(err)
	}
	first := make(chan error, 1)
	if err := cl.InvokeAsync(ctxTimeout(t, 10*time.Second), addr, NewRequest(SendMessage, nil, nil),
		func(_ *Command, err error) { first <- err }); err != nil {
		t.Fatal(err)
	}
	<-running // the one worker is busy and the queue holds nothing: the next send is refused
	resp, err := cl.Invoke(ctxTimeout(t, 10*time.Second), addr, NewRequest(SendMessage, nil, nil))
	if err != nil || ResponseCode(resp.Code) != SystemBusy {
		t.Fatalf("a full pool: %v %v, want SYSTEM_BUSY", resp, err)
	}
	unblock()
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	pull.Drain() // as a shutdown does before it closes the connections
	resp, err = cl.Invoke(ctxTimeout(t, 10*time.Second), addr, NewRequest(PullMessage, nil, nil))
	if err != nil || ResponseCode(resp.Code) != ServiceNotAvailable || !strings.Contains(resp.Remark, "shutting down") {
		t.Fatalf("a drained pool: %v %v, want SERVICE_NOT_AVAILABLE naming the shutdown", resp, err)
	}
}
