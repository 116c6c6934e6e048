package remoting

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestInterceptorRunsBeforeHandler(t *testing.T) {
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
		t.Fatalf("without an interceptor: %v", resp)
	}
	s.SetInterceptor(func(c *Conn, req *Command) *Command {
		seenRemote.Store(c.RemoteAddr())
		if RequestCode(req.Code) == SendMessage {
			return NewResponse(NoPermission, "refused by the interceptor")
		}
		return nil
	})
	if resp := call(SendMessage); resp.Code != int32(NoPermission) || resp.Remark != "refused by the interceptor" {
		t.Fatalf("refused request: %v", resp)
	}
	if handled.Load() != 1 {
		t.Fatal("the handler ran for a refused request")
	}
	if resp := call(PullMessage); resp.Code != int32(Success) {
		t.Fatalf("passed request: %v", resp)
	}
	if r, _ := seenRemote.Load().(string); !strings.HasPrefix(r, "127.0.0.1:") {
		t.Fatalf("interceptor saw remote %q", r)
	}
	s.SetInterceptor(nil)
	if resp := call(SendMessage); resp.Code != int32(Success) || handled.Load() != 2 {
		t.Fatalf("after removing the interceptor: %v", resp)
	}
}

func TestInterceptorPanicAnswersSystemError(t *testing.T) {
	pool := NewPool("p", 1, 4)
	s := startServer(t, ServerConfig{}, nil, func(s *Server) { s.Register(SendMessage, pool, echo) })
	s.SetInterceptor(func(*Conn, *Command) *Command { panic("interceptor bug") })
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
