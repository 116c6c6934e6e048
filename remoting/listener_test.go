package remoting

import (
	"context"
	"errors"
	"net"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// TestExtraListenerCloseEndsItsConnections: connections through an extra address are served like the main
// listener's; Close of the extra listener refuses new ones and ends every open one at once (a held request
// fails with ErrConnClosed), while connections through the main listener keep working.
func TestExtraListenerCloseEndsItsConnections(t *testing.T) {
	held := make(chan struct{}, 1)
	pool := NewPool("send", 2, 16)
	s := startServer(t, ServerConfig{}, nil, func(s *Server) {
		s.Register(SendMessage, pool, echo)
		s.Register(PullMessage, pool, func(_ context.Context, _ *Conn, _ *Command) *Command {
			held <- struct{}{}
			return nil // held, as a long-poll pull is: only a closed connection ends it
		})
	})
	port := s.Addr().(*net.TCPAddr).Port
	extra := net.JoinHostPort("127.0.0.100", strconv.Itoa(port))
	l, err := s.Listen(extra)
	if err != nil {
		t.Fatal(err)
	}
	if got := l.Addr().String(); got != extra {
		t.Fatalf("extra listener bound to %s, want %s", got, extra)
	}
	if _, err := s.Listen(extra); !errors.Is(err, syscall.EADDRINUSE) {
		t.Fatalf("second Listen on %s: %v, want EADDRINUSE", extra, err)
	}
	cl := newClient(t, ClientConfig{})
	for _, addr := range []string{s.Addr().String(), extra} {
		resp, err := cl.Invoke(ctxTimeout(t, 10*time.Second), addr, NewRequest(SendMessage, nil, []byte(addr)))
		if err != nil || string(resp.Body) != addr {
			t.Fatalf("send through %s: %v %v", addr, resp, err)
		}
	}
	if n := l.ConnCount(); n != 1 {
		t.Fatalf("%d connections through the extra listener, want 1", n)
	}
	pending := make(chan error, 1)
	go func() {
		_, err := cl.Invoke(ctxTimeout(t, 30*time.Second), extra, NewRequest(PullMessage, nil, nil))
		pending <- err
	}()
	<-held
	closed, err := l.Close()
	if err != nil || closed != 1 {
		t.Fatalf("Close of the extra listener: closed %d connections, err %v; want 1, nil", closed, err)
	}
	select {
	case err := <-pending:
		if !errors.Is(err, ErrConnClosed) {
			t.Fatalf("held request through the closed listener ended with %v, want ErrConnClosed", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("held request through the closed listener still pending 10 s after Close")
	}
	if c, err := net.DialTimeout("tcp", extra, time.Second); err == nil {
		_ = c.Close()
		t.Fatalf("dial %s after Close of its listener succeeded", extra)
	}
	resp, err := cl.Invoke(ctxTimeout(t, 10*time.Second), s.Addr().String(), NewRequest(SendMessage, nil, []byte("main")))
	if err != nil || string(resp.Body) != "main" {
		t.Fatalf("send through the main listener after the extra one closed: %v %v", resp, err)
	}
	if closed, err := l.Close(); closed != 0 || err != nil {
		t.Fatalf("second Close: %d %v", closed, err)
	}
	// The address is free again: a new holder (the next master) can take it.
	l2, err := s.Listen(extra)
	if err != nil {
		t.Fatalf("Listen on %s again: %v", extra, err)
	}
	resp, err = cl.Invoke(ctxTimeout(t, 10*time.Second), extra, NewRequest(SendMessage, nil, []byte("again")))
	if err != nil || string(resp.Body) != "again" {
		t.Fatalf("send through the new extra listener: %v %v", resp, err)
	}
	_ = s.Close()
	if n := l2.ConnCount(); n != 0 {
		t.Fatalf("%d connections through the extra listener after the server closed", n)
	}
	if _, err := s.Listen(extra); err == nil {
		t.Fatal("Listen on a closed server succeeded")
	}
}

// TestListenBeforeStart: an extra listener needs a started server.
func TestListenBeforeStart(t *testing.T) {
	s := NewServer(ServerConfig{ListenAddr: "127.0.0.1:0"}, nil)
	if _, err := s.Listen("127.0.0.1:0"); err == nil {
		t.Fatal("Listen before Start succeeded")
	}
}
