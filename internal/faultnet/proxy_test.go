package faultnet

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"testing"
	"time"
)

// echoServer echoes every connection until the test ends.
func echoServer(t *testing.T) string {
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
				_, _ = io.Copy(c, c)
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
