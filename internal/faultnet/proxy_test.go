package faultnet

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"testing"
	"time"
)

// echoServer echoes every connection until the test ends.
func echoServer(t *testing.T) string {
	t.Helper()
	return serve(t, func(c net.Conn) { _, _ = io.Copy(c, c) })
}

// serve runs handle on every connection to a new listener (closing the connection after) until the test
// ends, and returns the listener's address.
func serve(t *testing.T, handle func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				handle(c)
			}()
		}
	}()
	t.Cleanup(func() { ln.Close(); <-done })
	return ln.Addr().String()
}

func startProxy(t *testing.T) (*Proxy, net.Conn) {
	t.Helper()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	p, err := Listen("test", echoServer(t), log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Error(err)
		}
	})
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return p, c
}

func roundTrip(t *testing.T, c net.Conn, msg string, wait time.Duration) error {
	t.Helper()
	if _, err := c.Write([]byte(msg)); err != nil {
		return err
	}
	_ = c.SetReadDeadline(time.Now().Add(wait))
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(c, got); err != nil {
		return err
	}
	if !bytes.Equal(got, []byte(msg)) {
		t.Fatalf("echo %q, want %q", got, msg)
	}
	return nil
}

func TestPassAndBlackholeHoldsThenDelivers(t *testing.T) {
	p, c := startProxy(t)
	if err := roundTrip(t, c, "hello", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	p.Blackhole()
	if m, _ := p.Mode(); m != Blackhole {
		t.Fatalf("mode %v", m)
	}
	err := roundTrip(t, c, "held", 200*time.Millisecond)
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("through a blackhole: %v, want a read timeout", err)
	}
	p.Heal()
	// The bytes held by the blackhole arrive after the heal, in order.
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	got := make([]byte, 4)
	if _, err := io.ReadFull(c, got); err != nil || string(got) != "held" {
		t.Fatalf("after heal: %q %v, want the held bytes", got, err)
	}
}

func TestBlackholeHoldsNewConnections(t *testing.T) {
	p, _ := startProxy(t)
	p.Blackhole()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var ne net.Error
	if err := roundTrip(t, c, "x", 200*time.Millisecond); !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("new connection through a blackhole: %v, want a timeout", err)
	}
	p.Heal()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	b := make([]byte, 1)
	if _, err := io.ReadFull(c, b); err != nil || b[0] != 'x' {
		t.Fatalf("after heal: %q %v", b, err)
	}
}

// TestDelay: a delayed link takes at least the delay each way (a lower bound, not a timing threshold).
func TestDelay(t *testing.T) {
	p, c := startProxy(t)
	const d = 30 * time.Millisecond
	p.SetDelay(d)
	start := time.Now()
	if err := roundTrip(t, c, "slow", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if rt := time.Since(start); rt < 2*d {
		t.Fatalf("round trip %v through a %v delay each way", rt, d)
	}
	p.Heal()
	if err := roundTrip(t, c, "fast", 10*time.Second); err != nil {
		t.Fatal(err)
	}
}

func TestCut(t *testing.T) {
	p, c := startProxy(t)
	if err := roundTrip(t, c, "a", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if n := p.Cut(); n != 1 {
		t.Fatalf("cut %d connections, want 1", n)
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Fatal("a cut connection still reads")
	}
	// New connections work.
	c2, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if err := roundTrip(t, c2, "b", 10*time.Second); err != nil {
		t.Fatal(err)
	}
}

// sinkServer answers every chunk it reads with "ack" and hands what it read to got.
func sinkServer(t *testing.T) (addr string, got <-chan string) {
	t.Helper()
	ch := make(chan string, 16)
	return serve(t, func(c net.Conn) {
		b := make([]byte, 64)
		for {
			n, err := c.Read(b)
			if err != nil {
				return
			}
			ch <- string(b[:n])
			if _, err := c.Write([]byte("ack")); err != nil {
				return
			}
		}
	}), ch
}

// TestOneWay: with the way back blackholed the target still receives, its answers are held until Heal; with
// the way forward blackholed the target receives nothing until Heal.
func TestOneWay(t *testing.T) {
	addr, got := sinkServer(t)
	p, err := Listen("oneway", addr, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ack := func(wait time.Duration) error {
		_ = c.SetReadDeadline(time.Now().Add(wait))
		b := make([]byte, 3)
		_, err := io.ReadFull(c, b)
		return err
	}
	var ne net.Error
	recv := func(want string) {
		t.Helper()
		select {
		case s := <-got:
			if s != want {
				t.Fatalf("target read %q, want %q", s, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("target did not read %q", want)
		}
	}
	// The connection is through to the target before the fault: a new connection waits at a one-way
	// blackhole like at a blackhole (a handshake needs both ways).
	if _, err := c.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	recv("hello")
	if err := ack(10 * time.Second); err != nil {
		t.Fatal(err)
	}

	p.BlackholeOneWay(Back)
	if m, _ := p.Mode(); m != OneWay {
		t.Fatalf("mode %v", m)
	}
	if _, err := c.Write([]byte("to-target")); err != nil {
		t.Fatal(err)
	}
	recv("to-target")
	if err := ack(200 * time.Millisecond); !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("answer through a blackholed way back: %v, want a read timeout", err)
	}
	p.Heal()
	if err := ack(10 * time.Second); err != nil {
		t.Fatalf("held answer after heal: %v", err)
	}

	p.BlackholeOneWay(Forward)
	if _, err := c.Write([]byte("held")); err != nil {
		t.Fatal(err)
	}
	select {
	case s := <-got:
		t.Fatalf("target read %q through a blackholed way forward", s)
	case <-time.After(200 * time.Millisecond):
	}
	p.Heal()
	recv("held")
	if err := ack(10 * time.Second); err != nil {
		t.Fatal(err)
	}
}

// TestLossyKeepsOrderThenResets: stalls and jitter never reorder or drop bytes of a stream (TCP's promise);
// a reset draw closes the connection and is counted.
func TestLossyKeepsOrderThenResets(t *testing.T) {
	p, c := startProxy(t)
	if err := p.SetLoss(LossConfig{Seed: 1, Stall: 0.3, StallMin: time.Millisecond, StallMax: 5 * time.Millisecond,
		Jitter: 2 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	for i := range 300 {
		msg := []byte{byte(i), byte(i >> 8), 'x'}
		want.Write(msg)
		if _, err := c.Write(msg); err != nil {
			t.Fatal(err)
		}
	}
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	got := make([]byte, want.Len())
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want.Bytes()) {
		t.Fatal("a lossy link changed the byte stream")
	}
	if p.Resets() != 0 {
		t.Fatalf("%d resets with reset probability 0", p.Resets())
	}
	if err := p.SetLoss(LossConfig{Seed: 1, Reset: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write([]byte("r")); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read after a reset draw: %v, want the connection closed", err)
	}
	if p.Resets() != 1 {
		t.Fatalf("resets %d, want 1", p.Resets())
	}
}

func TestLossConfigValidate(t *testing.T) {
	for _, c := range []LossConfig{{Stall: 1.5}, {Reset: -1}, {StallMin: 2, StallMax: 1}, {Jitter: -1}} {
		if err := c.Validate(); err == nil {
			t.Errorf("%+v: no error", c)
		}
	}
	p, _ := startProxy(t)
	if err := p.SetLoss(LossConfig{Stall: 2}); err == nil || !strings.Contains(err.Error(), "stall") {
		t.Fatalf("SetLoss of a bad config: %v", err)
	}
}
