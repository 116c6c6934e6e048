package remoting

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestGuardRunsBeforeHandler(t *testing.T) {
	var handled atomic.Int32
	var seenRemote atomic.Value
	pool := NewPool("p", 2, 16)
	s := startServer(t, ServerConfig{}, nil, func(s *Server) {
		s.Register(SendMessage, pool, func(ctx context.Context, c *Conn, req *Command) *Command {
			handled.Add(1)
			return echo(ctx, c, req)
		})
		s.Register(PullMessage, pool, echo)
	})
	cl := newClient(t, ClientConfig{})
	call := func(code RequestCode) *Command {
		t.Helper()
		resp, err := cl.Invoke(ctxTimeout(t, 5*time.Second), s.Addr().String(), NewRequest(code, nil, nil))
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	if resp := call(SendMessage); resp.Code != int32(Success) || handled.Load() != 1 {
		t.Fatalf("without a guard: %v", resp)
	}
	s.AddGuard("test", func(c *Conn, req *Command) *Command {
		seenRemote.Store(c.RemoteAddr())
		if RequestCode(req.Code) == SendMessage {
			return NewResponse(NoPermission, "refused by the guard")
		}
		return nil
	})
	if resp := call(SendMessage); resp.Code != int32(NoPermission) || resp.Remark != "refused by the guard" {
		t.Fatalf("refused request: %v", resp)
	}
	if handled.Load() != 1 {
		t.Fatal("the handler ran for a refused request")
	}
	if resp := call(PullMessage); resp.Code != int32(Success) {
		t.Fatalf("passed request: %v", resp)
	}
	if r, _ := seenRemote.Load().(string); !strings.HasPrefix(r, "127.0.0.1:") {
		t.Fatalf("guard saw remote %q", r)
	}
}

// TestChainOrder: every guard runs in the order added, then every request observer, then the handler, then
// every reply observer; the first refusal ends the chain (no later guard, no request observer, no handler)
// and is seen by the reply observers. An observer added after a guard leaves the guard in place (issue 37:
// the name server's request counter replaced its ACL check), on the pool and on the inline path alike.
func TestChainOrder(t *testing.T) {
	var mu sync.Mutex
	var trail []string
	note := func(s string) {
		mu.Lock()
		trail = append(trail, s)
		mu.Unlock()
	}
	taken := func() string {
		mu.Lock()
		defer mu.Unlock()
		out := strings.Join(trail, " ")
		trail = nil
		return out
	}
	guard := func(name string) Interceptor {
		return func(_ *Conn, req *Command) *Command {
			note(name)
			if req.Remark == "refuse at "+name {
				return NewResponse(NoPermission, "refused by "+name)
			}
			return nil
		}
	}
	pool := NewPool("p", 1, 16)
	s := startServer(t, ServerConfig{}, nil, func(s *Server) {
		handler := func(ctx context.Context, c *Conn, req *Command) *Command {
			note("handler")
			return echo(ctx, c, req)
		}
		s.Register(SendMessage, pool, handler)
		s.RegisterInline(PullMessage, pool, handler, func(_ *Conn, req *Command) (*Command, bool) {
			note("inline")
			return NewResponse(Success, "inline"), true
		})
		s.AddGuard("g1", guard("g1"))
		s.AddRequestObserver("o1", func(*Conn, *Command) { note("o1") })
		s.AddReplyObserver("r1", func(_ *Command, code int32, _ ReplyResult) { note("r1:" + ResponseCode(code).String()) })
		s.AddGuard("g2", guard("g2"))
		s.AddRequestObserver("o2", func(*Conn, *Command) { note("o2") })
		s.AddReplyObserver("r2", func(_ *Command, code int32, _ ReplyResult) { note("r2:" + ResponseCode(code).String()) })
	})
	cl := newClient(t, ClientConfig{})
	for _, c := range []struct {
		code   RequestCode
		remark string
		want   ResponseCode
		trail  string
	}{
		{SendMessage, "", Success, "g1 g2 o1 o2 handler r1:SUCCESS r2:SUCCESS"},
		{SendMessage, "refuse at g1", NoPermission, "g1 r1:NO_PERMISSION r2:NO_PERMISSION"},
		{SendMessage, "refuse at g2", NoPermission, "g1 g2 r1:NO_PERMISSION r2:NO_PERMISSION"},
		{PullMessage, "", Success, "g1 g2 o1 o2 inline r1:SUCCESS r2:SUCCESS"},
		{PullMessage, "refuse at g2", NoPermission, "g1 g2 r1:NO_PERMISSION r2:NO_PERMISSION"},
	} {
		req := NewRequest(c.code, nil, nil)
		req.Remark = c.remark
		resp, err := cl.Invoke(ctxTimeout(t, 5*time.Second), s.Addr().String(), req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.Code != int32(c.want) {
			t.Errorf("%s %q: answered %s %q", c.code, c.remark, ResponseCode(resp.Code), resp.Remark)
		}
		// The reply observers run as the answer is queued, so the client may have it a moment before.
		waitUntil(t, "the reply observers", func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(trail) > 0 && strings.HasPrefix(trail[len(trail)-1], "r2:")
		})
		if got := taken(); got != c.trail {
			t.Errorf("%s %q: ran %q, want %q", c.code, c.remark, got, c.trail)
		}
	}
	if got := strings.Join(s.Guards(), ","); got != "g1,g2" {
		t.Errorf("Guards() = %q", got)
	}
}

// TestChainRefusesBadAdditions: a nil function, an empty name or a name already taken panics, and leaves
// the chain as it was.
func TestChainRefusesBadAdditions(t *testing.T) {
	s := NewServer(ServerConfig{}, nil)
	pass := func(*Conn, *Command) *Command { return nil }
	s.AddGuard("acl", pass)
	for name, add := range map[string]func(){
		"nil guard":             func() { s.AddGuard("x", nil) },
		"nil request observer":  func() { s.AddRequestObserver("x", nil) },
		"nil reply observer":    func() { s.AddReplyObserver("x", nil) },
		"empty name":            func() { s.AddGuard(" ", pass) },
		"guard name taken":      func() { s.AddGuard("acl", pass) },
		"observer of the guard": func() { s.AddRequestObserver("acl", func(*Conn, *Command) {}) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			add()
		}()
	}
	if got := strings.Join(s.Guards(), ","); got != "acl" {
		t.Fatalf("guards after the refused additions: %q", got)
	}
}

// TestStartLineNamesGuards: the start-up line of every port says the TLS mode, the client certificate policy
// and the guards and observers its connections run.
func TestStartLineNamesGuards(t *testing.T) {
	logs := &syncBuffer{}
	pass := func(*Conn, *Command) *Command { return nil }
	s := startServer(t, ServerConfig{}, logs, func(s *Server) {
		s.AddGuard("acl", pass)
		s.AddReplyObserver("rpc_latency", func(*Command, int32, ReplyResult) {})
	})
	if _, err := s.Listen("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	bare := &syncBuffer{}
	startServer(t, ServerConfig{}, bare, nil)
	for _, c := range []struct {
		logs *syncBuffer
		msg  string
		want string
	}{
		{logs, `msg="remoting: listening"`, "tls=disabled clientCerts=none guards=acl observers=rpc_latency"},
		{logs, `msg="remoting: listening (extra address)"`, "tls=disabled clientCerts=none guards=acl observers=rpc_latency"},
		{bare, `msg="remoting: listening"`, "tls=disabled clientCerts=none guards=none observers=none"},
	} {
		found := false
		for _, line := range strings.Split(c.logs.String(), "\n") {
			if strings.Contains(line, c.msg+" ") && strings.Contains(line, c.want) {
				found = true
			}
		}
		if !found {
			t.Errorf("no line %s ... %s in:\n%s", c.msg, c.want, c.logs.String())
		}
	}
}

func TestGuardPanicAnswersSystemError(t *testing.T) {
	pool := NewPool("p", 1, 4)
	s := startServer(t, ServerConfig{}, nil, func(s *Server) { s.Register(SendMessage, pool, echo) })
	s.AddGuard("buggy", func(*Conn, *Command) *Command { panic("guard bug") })
	resp, err := newClient(t, ClientConfig{}).Invoke(ctxTimeout(t, 5*time.Second), s.Addr().String(),
		NewRequest(SendMessage, nil, nil))
	if err != nil || resp.Code != int32(SystemError) {
		t.Fatalf("response %v, err %v", resp, err)
	}
}

func TestClientCredentialsSignEveryRequest(t *testing.T) {
	const ak, sk = "rocketmq2", "12345678"
	lookup := func(k string) (string, bool) { return sk, k == ak }
	verified := make(chan error, 3)
	pool := NewPool("p", 1, 4)
	s := startServer(t, ServerConfig{}, nil, func(s *Server) {
		s.Register(SendMessage, pool, func(ctx context.Context, c *Conn, req *Command) *Command {
			_, err := VerifySignature(req, lookup)
			verified <- err
			return echo(ctx, c, req)
		})
	})
	cl := newClient(t, ClientConfig{Credentials: Credentials{AccessKey: ak, SecretKey: sk}})
	addr := s.Addr().String()
	if _, err := cl.Invoke(ctxTimeout(t, 5*time.Second), addr, NewRequest(SendMessage, map[string]string{"topic": "T"}, []byte("b"))); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	if err := cl.InvokeAsync(ctxTimeout(t, 5*time.Second), addr, NewRequest(SendMessage, nil, []byte("async")),
		func(_ *Command, err error) { done <- err }); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := cl.InvokeOneway(ctxTimeout(t, 5*time.Second), addr, NewRequest(SendMessage, nil, nil)); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := <-verified; err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
	}
}

func TestSecretNeverPrinted(t *testing.T) {
	c := ClientConfig{Credentials: Credentials{AccessKey: "rocketmq2", SecretKey: "s3cr3t-value"}}
	var logged strings.Builder
	slog.New(slog.NewTextHandler(&logged, nil)).Info("x", "secret", c.Credentials.SecretKey, "creds", c.Credentials)
	for _, out := range []string{fmt.Sprint(c), fmt.Sprintf("%+v", c), fmt.Sprintf("%#v", c), logged.String()} {
		if strings.Contains(out, "s3cr3t") {
			t.Fatalf("secret printed: %s", out)
		}
	}
	if Secret("").String() != "" || Secret("x").String() != "******" {
		t.Fatal("mask")
	}
}

// TestRegisterTwicePanics: a request code has one handler; a second Register of it panics and leaves the
// first in place.
func TestRegisterTwicePanics(t *testing.T) {
	pool := NewPool("p", 1, 4)
	s := startServer(t, ServerConfig{}, nil, func(s *Server) { s.Register(SendMessage, pool, echo) })
	func() {
		defer func() {
			if p := recover(); p == nil || !strings.Contains(fmt.Sprint(p), "registered twice") {
				t.Errorf("second Register: recovered %v", p)
			}
		}()
		s.Register(SendMessage, pool, func(context.Context, *Conn, *Command) *Command { return NewResponse(SystemError, "") })
	}()
	resp, err := newClient(t, ClientConfig{}).Invoke(ctxTimeout(t, 5*time.Second), s.Addr().String(), NewRequest(SendMessage, nil, nil))
	if err != nil || resp.Code != int32(Success) || resp.Remark != "echo" {
		t.Fatalf("after the refused Register: %v %v", resp, err)
	}
}
