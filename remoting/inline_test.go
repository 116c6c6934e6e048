package remoting

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// TestInlineAnswersOnTheReader: what the InlineFunc takes is answered while the route's only worker is held
// (so not on the pool), what it declines reaches the handler on the pool, the interceptor runs once for either
// and its refusal stops both, and a panic in the InlineFunc is answered SYSTEM_ERROR.
func TestInlineAnswersOnTheReader(t *testing.T) {
	pool := NewPool("p", 1, 16)
	hold := make(chan struct{})
	var handled, intercepted atomic.Int32
	s := startServer(t, ServerConfig{}, nil, func(s *Server) {
		s.RegisterInline(SendMessage, pool, func(ctx context.Context, c *Conn, req *Command) *Command {
			handled.Add(1)
			return NewResponse(Success, "pool")
		}, func(c *Conn, req *Command) (*Command, bool) {
			switch req.Remark {
			case "inline":
				return NewResponse(Success, "inline"), true
			case "later":
				go func() { _ = c.Reply(req, NewResponse(Success, "inline later")) }()
				return nil, true
			case "panic":
				panic("inline bug")
			}
			return nil, false
		})
		s.Register(PullMessage, pool, func(context.Context, *Conn, *Command) *Command {
			<-hold
			return NewResponse(Success, "held")
		})
	})
	s.AddGuard("test", func(c *Conn, req *Command) *Command {
		intercepted.Add(1)
		if req.Remark == "refuse" {
			return NewResponse(NoPermission, "refused")
		}
		return nil
	})
	cl := newClient(t, ClientConfig{})
	addr := s.Addr().String()
	call := func(remark string) *Command {
		t.Helper()
		req := NewRequest(SendMessage, nil, nil)
		req.Remark = remark
		resp, err := cl.Invoke(ctxTimeout(t, 10*time.Second), addr, req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	// Hold the pool's only worker.
	held := make(chan *Command, 1)
	go func() {
		resp, _ := cl.Invoke(ctxTimeout(t, 10*time.Second), addr, NewRequest(PullMessage, nil, nil))
		held <- resp
	}()
	waitUntil(t, "the worker to be held", func() bool { return intercepted.Load() == 1 && pool.Queued() == 0 })
	if resp := call("inline"); resp.Remark != "inline" {
		t.Fatalf("inline: %v", resp)
	}
	if resp := call("later"); resp.Remark != "inline later" {
		t.Fatalf("answered later: %v", resp)
	}
	if resp := call("panic"); resp.Code != int32(SystemError) {
		t.Fatalf("panic: %v", resp)
	}
	if resp := call("refuse"); resp.Code != int32(NoPermission) {
		t.Fatalf("refused: %v", resp)
	}
	if handled.Load() != 0 {
		t.Fatalf("the pool's handler ran %d times while its worker was held", handled.Load())
	}
	close(hold)
	if resp := <-held; resp == nil || resp.Remark != "held" {
		t.Fatalf("held request: %v", resp)
	}
	before := intercepted.Load()
	if resp := call("declined"); resp.Remark != "pool" || handled.Load() != 1 {
		t.Fatalf("declined: %v, handled %d", resp, handled.Load())
	}
	if n := intercepted.Load() - before; n != 1 {
		t.Fatalf("the interceptor ran %d times for a declined request, want 1", n)
	}
}

// waitUntil polls cond until it holds; the test fails after a minute.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}
