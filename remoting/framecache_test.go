package remoting

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestTransientFramesReused: large requests of a transient route are read into memory the server kept from
// earlier ones, and each handler sees its own body whole; a route that is not transient keeps every body it
// was given, untouched by the frames read after it.
func TestTransientFramesReused(t *testing.T) {
	const codeTransient, codeKept = RequestCode(9001), RequestCode(9002)
	var kept [][]byte // the bodies the kept route's handler held on to (one worker: no race)
	var s *Server
	s = startServer(t, ServerConfig{}, nil, func(srv *Server) {
		srv.RegisterTransient(codeTransient, NewPool("t", 2, 16), func(_ context.Context, _ *Conn, req *Command) *Command {
			sum := sha256.Sum256(req.Body)
			return NewResponse(Success, hex.EncodeToString(sum[:]))
		}, nil)
		srv.Register(codeKept, NewPool("k", 1, 16), func(_ context.Context, _ *Conn, req *Command) *Command {
			kept = append(kept, req.Body)
			return NewResponse(Success, "")
		})
	})
	cl := newClient(t, ClientConfig{})
	body := func(i, size int) []byte {
		return bytes.Repeat([]byte{byte('a' + i%26)}, size)
	}
	var keptWant [][]byte
	for i := range 40 {
		size := 200<<10 + i*1000 // sizes that differ, as brokers' tables do
		b := body(i, size)
		req := NewRequest(codeTransient, nil, b)
		resp, err := cl.Invoke(ctxTimeout(t, 10*time.Second), s.Addr().String(), req)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(b)
		if resp.Remark != hex.EncodeToString(sum[:]) {
			t.Fatalf("request %d: the handler saw another body", i)
		}
		if i%4 == 0 { // now and then a large body the handler keeps
			kb := body(i+13, 100<<10)
			keptWant = append(keptWant, kb)
			if _, err := cl.Invoke(ctxTimeout(t, 10*time.Second), s.Addr().String(), NewRequest(codeKept, nil, kb)); err != nil {
				t.Fatal(err)
			}
		}
	}
	s.frames.mu.Lock()
	hits, held := s.frames.hits, s.frames.bytes
	s.frames.mu.Unlock()
	if hits < 30 {
		t.Fatalf("%d of 40 transient frames were read into kept memory", hits)
	}
	if held > frameCacheMaxDef {
		t.Fatalf("the cache holds %d bytes, more than its bound %d", held, frameCacheMaxDef)
	}
	for i, b := range kept {
		if !bytes.Equal(b, keptWant[i]) {
			t.Fatalf("kept body %d changed after its handler returned", i)
		}
	}
}

// TestFrameCacheBounds: sizes outside 64 KiB to 1 MiB take no part, a buffer is not handed out for a frame of
// less than half its size, and what is kept never exceeds the bound.
func TestFrameCacheBounds(t *testing.T) {
	fc := newFrameCache(1 << 20)
	fc.active.Store(true) // as a server's first RegisterTransient makes it
	if fc.get(largeFrameMin-1) != nil || fc.get(readChunk+1) != nil {
		t.Fatal("a size outside the cache's range got a buffer")
	}
	big := fc.get(600 << 10)
	fc.put(big)
	if b := fc.get(200 << 10); cap(b) == cap(big) {
		t.Fatal("a 600 KiB buffer was handed out for a 200 KiB frame")
	}
	if b := fc.get(500 << 10); cap(b) != cap(big) || len(b) != 500<<10 {
		t.Fatalf("the kept 600 KiB buffer was not used for a 500 KiB frame (cap %d)", cap(b))
	}
	for range 10 {
		fc.put(make([]byte, 0, 300<<10))
	}
	if fc.bytes > 1<<20 || len(fc.bufs) != 3 {
		t.Fatalf("kept %d bytes in %d buffers under a bound of 1 MiB", fc.bytes, len(fc.bufs))
	}
	var nilCache *frameCache
	if nilCache.get(100<<10) != nil {
		t.Fatal("a nil cache handed out a buffer")
	}
	nilCache.put(make([]byte, 100<<10))
}

// TestBodylessFramesShareMemory: requests without a body are read into the same memory one after another;
// what their commands say (code, remark, every ext field, in JSON and in RocketMQ's binary header) stays as it
// was sent while later frames are read, and a request with a body keeps its body.
func TestBodylessFramesShareMemory(t *testing.T) {
	const code, n = RequestCode(9003), 24
	held := make(chan *Command, n)
	release := make(chan struct{})
	s := startServer(t, ServerConfig{}, nil, func(srv *Server) {
		srv.Register(code, NewPool("held", n, n), func(_ context.Context, _ *Conn, req *Command) *Command {
			held <- req
			<-release // every request is read before any is answered
			resp := NewResponse(Success, req.Remark)
			resp.ExtFields = map[string]string{"i": req.ExtFields["i"], "pad": req.ExtFields["pad"]}
			resp.Body = req.Body
			return resp
		})
	})
	cl := newClient(t, ClientConfig{})
	type answer struct {
		resp *Command
		err  error
	}
	answers := make([]chan answer, n)
	for i := range n {
		answers[i] = make(chan answer, 1)
		req := NewRequest(code, map[string]string{"i": fmt.Sprint(i), "pad": strings.Repeat(string(rune('a'+i)), i*7)}, nil)
		req.Remark = "remark-" + fmt.Sprint(i)
		if i%3 == 0 {
			req.SerializeType = SerializeRocketMQ
		}
		if i%5 == 4 {
			req.Body = []byte(fmt.Sprint("body-", i))
		}
		go func() {
			resp, err := cl.Invoke(ctxTimeout(t, 10*time.Second), s.Addr().String(), req)
			answers[i] <- answer{resp, err}
		}()
	}
	for range n {
		<-held
	}
	close(release)
	for i := range n {
		a := <-answers[i]
		if a.err != nil {
			t.Fatal(a.err)
		}
		wantPad := strings.Repeat(string(rune('a'+i)), i*7)
		if a.resp.ExtFields["i"] != fmt.Sprint(i) || a.resp.ExtFields["pad"] != wantPad || a.resp.Remark != "remark-"+fmt.Sprint(i) {
			t.Fatalf("request %d came back as i=%q pad=%q remark=%q", i, a.resp.ExtFields["i"], a.resp.ExtFields["pad"], a.resp.Remark)
		}
		if i%5 == 4 && string(a.resp.Body) != fmt.Sprint("body-", i) {
			t.Fatalf("request %d's body came back as %q", i, a.resp.Body)
		}
	}
}

// TestTransientInlineReusesRequests: a transient route's requests answered inline are decoded into the same
// command one after another, and each answer carries its own request's fields; requests the InlineFunc
// declines go to the pool and are never decoded into again while their handler holds them; pooled
// responses carry their own answers under concurrency.
func TestTransientInlineReusesRequests(t *testing.T) {
	const code = RequestCode(9004)
	var seen sync.Map // *Command -> requests answered inline with it
	held := make(chan *Command, 64)
	release := make(chan struct{})
	var releaseOnce sync.Once
	releaseAll := func() { releaseOnce.Do(func() { close(release) }) }
	s := startServer(t, ServerConfig{}, nil, func(srv *Server) {
		srv.RegisterTransient(code, NewPool("declined", 64, 64), func(_ context.Context, _ *Conn, req *Command) *Command {
			held <- req
			<-release
			resp := NewPooledResponse(Success, "pool "+req.ExtFields["i"])
			resp.Body = []byte(req.ExtFields["i"])
			return resp
		}, func(_ *Conn, req *Command) (*Command, bool) {
			if req.ExtFields["decline"] == "true" {
				return nil, false
			}
			n, _ := seen.LoadOrStore(req, new(atomic.Int64))
			n.(*atomic.Int64).Add(1)
			resp := NewPooledResponse(Success, "inline "+req.ExtFields["i"])
			resp.Body = []byte(req.ExtFields["i"])
			return resp, true
		})
	})
	t.Cleanup(releaseAll) // registered after the server's: runs before its Close, which waits for the handlers
	cl := newClient(t, ClientConfig{})
	call := func(i int, decline bool) (*Command, error) {
		ext := map[string]string{"i": fmt.Sprint(i), "pad": strings.Repeat("x", i%17)}
		if decline {
			ext["decline"] = "true"
		}
		return cl.Invoke(ctxTimeout(t, 10*time.Second), s.Addr().String(), NewRequest(code, ext, nil))
	}
	// One after another on one connection: inline answers, interleaved with declined ones held by the pool.
	for i := range 200 {
		if i%20 == 7 {
			go func() {
				resp, err := call(i, true)
				if err != nil || resp.Remark != fmt.Sprint("pool ", i) || string(resp.Body) != fmt.Sprint(i) {
					t.Errorf("declined request %d: %v %v", i, resp, err)
				}
			}()
			if r := <-held; r.ExtFields["i"] != fmt.Sprint(i) {
				t.Fatalf("the pool got request %s for %d", r.ExtFields["i"], i)
			}
			continue
		}
		resp, err := call(i, false)
		if err != nil || resp.Remark != fmt.Sprint("inline ", i) || string(resp.Body) != fmt.Sprint(i) {
			t.Fatalf("request %d: %v %v", i, resp, err)
		}
	}
	// 190 answered inline, 10 declined: a declined request stays with the pool, so the reader decodes the
	// one after it into a new command, which serves until the next decline.
	commands := 0
	seen.Range(func(_, _ any) bool { commands++; return true })
	if commands > 11 {
		t.Fatalf("190 requests answered inline were decoded into %d commands, want at most 11", commands)
	}
	releaseAll()
	// Concurrent callers, each answer its own.
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g * 1000; i < g*1000+100; i++ {
				resp, err := call(i, false)
				if err != nil || resp.Remark != fmt.Sprint("inline ", i) || string(resp.Body) != fmt.Sprint(i) {
					t.Errorf("concurrent request %d: %v %v", i, resp, err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// largeFrame encodes a request of code with a body of size bytes (filled from seed) as it goes on the wire.
func largeFrame(t *testing.T, code RequestCode, seed, size int) (wire []byte, sum string) {
	t.Helper()
	body := bytes.Repeat([]byte{byte('a' + seed%26)}, size)
	wire, err := EncodeFrame(nil, NewRequest(code, nil, body))
	if err != nil {
		t.Fatal(err)
	}
	s := sha256.Sum256(body)
	return wire, hex.EncodeToString(s[:])
}

// readAnswer reads one response frame from nc and returns its remark.
func readAnswer(t *testing.T, nc net.Conn) string {
	t.Helper()
	_ = nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	frame, err := ReadFrame(nc, 1<<20, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := DecodeFrame(frame)
	if err != nil {
		t.Fatal(err)
	}
	return resp.Remark
}

// waitFor polls cond until it holds, failing the test after 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("still not %s after 10 s", what)
		}
	}
}

// TestLargeFramesTakeTurns: of five large requests of a transient route sent at once, at most frameTurns are
// read and handled at a time; the others wait for a turn, and all five are answered with their own bodies.
// A route that is not transient does not hold a turn while its handler runs.
func TestLargeFramesTakeTurns(t *testing.T) {
	const codeTransient, codeKept = RequestCode(9001), RequestCode(9002)
	gate := make(chan struct{})
	var running, started, keptRunning atomic.Int32
	s := startServer(t, ServerConfig{}, nil, func(srv *Server) {
		srv.RegisterTransient(codeTransient, NewPool("t", 8, 16), func(_ context.Context, _ *Conn, req *Command) *Command {
			started.Add(1)
			running.Add(1)
			defer running.Add(-1)
			<-gate
			sum := sha256.Sum256(req.Body)
			return NewResponse(Success, hex.EncodeToString(sum[:]))
		}, nil)
		srv.Register(codeKept, NewPool("k", 8, 16), func(_ context.Context, _ *Conn, req *Command) *Command {
			keptRunning.Add(1)
			defer keptRunning.Add(-1)
			<-gate
			return NewResponse(Success, "")
		})
	})
	var open sync.Once
	release := func() { open.Do(func() { close(gate) }) }
	t.Cleanup(release) // before the server's Close (cleanups run last first), which waits for the handlers
	// Large requests of the route that is not transient first: each ends its turn when it is dispatched, so
	// three of them run at once although frameTurns is 2.
	var kept []net.Conn
	for i := range 3 {
		nc, err := net.Dial("tcp", s.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = nc.Close() })
		wire, _ := largeFrame(t, codeKept, i, 100<<10)
		if _, err := nc.Write(wire); err != nil {
			t.Fatal(err)
		}
		kept = append(kept, nc)
	}
	waitFor(t, "running the three large requests of the route that is not transient", func() bool { return keptRunning.Load() == 3 })

	const n = 5
	conns := make([]net.Conn, n)
	sums := make([]string, n)
	for i := range n {
		nc, err := net.Dial("tcp", s.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = nc.Close() })
		wire, sum := largeFrame(t, codeTransient, i, 200<<10+i*1000)
		go func() { _, _ = nc.Write(wire) }() // the server may not read it for a while
		conns[i], sums[i] = nc, sum
	}
	waitFor(t, "waiting: two handlers and three readers for a turn", func() bool {
		if r := running.Load(); r > frameTurns {
			t.Fatalf("%d large transient requests handled at once, more than the %d turns", r, frameTurns)
		}
		return running.Load() == frameTurns && s.frames.waiting.Load() == n-frameTurns
	})
	if st := started.Load(); st != frameTurns {
		t.Fatalf("%d handlers started while %d turns were held", st, frameTurns)
	}
	release()
	for i, nc := range conns {
		if got := readAnswer(t, nc); got != sums[i] {
			t.Fatalf("request %d: the handler saw another body", i)
		}
	}
	for _, nc := range kept {
		readAnswer(t, nc)
	}
	waitFor(t, "every turn ended", func() bool { return len(s.frames.turns) == 0 })
}

// TestSlowPeerEndsItsTurn: two peers that send half a large frame and stop do not hold their turns: a third
// peer's large request is answered meanwhile; their frames, finished later, are read whole. Plain and TLS.
func TestSlowPeerEndsItsTurn(t *testing.T) {
	for _, useTLS := range []bool{false, true} {
		t.Run(fmt.Sprintf("tls=%t", useTLS), func(t *testing.T) {
			const code = RequestCode(9001)
			cfg := ServerConfig{IdleTimeout: -1} // no idle deadline: only the turn's slice ends a wait
			var tlsCfg *tls.Config
			if useTLS {
				m, sc, err := TLSConfig{TestModeEnable: true, ServerMode: string(TLSEnforcing)}.ServerTLS(testLogger(t, nil))
				if err != nil {
					t.Fatal(err)
				}
				cfg.TLSMode, cfg.TLS = m, sc
				tlsCfg = &tls.Config{InsecureSkipVerify: true}
			}
			s := startServer(t, cfg, nil, func(srv *Server) {
				srv.RegisterTransient(code, NewPool("t", 4, 16), func(_ context.Context, _ *Conn, req *Command) *Command {
					sum := sha256.Sum256(req.Body)
					return NewResponse(Success, hex.EncodeToString(sum[:]))
				}, nil)
			})
			dial := func() net.Conn {
				nc, err := net.Dial("tcp", s.Addr().String())
				if err != nil {
					t.Fatal(err)
				}
				if tlsCfg != nil {
					nc = tls.Client(nc, tlsCfg)
				}
				t.Cleanup(func() { _ = nc.Close() })
				return nc
			}
			var slow []net.Conn
			var rest [][]byte
			var sums []string
			for i := range frameTurns {
				nc := dial()
				wire, sum := largeFrame(t, code, i, 300<<10)
				if _, err := nc.Write(wire[:len(wire)/2]); err != nil {
					t.Fatal(err)
				}
				slow, rest, sums = append(slow, nc), append(rest, wire[len(wire)/2:]), append(sums, sum)
			}
			// Every turn taken by a slow peer (or ended by its slice already).
			waitFor(t, "taking the slow peers' turns", func() bool { return s.frames.taken.Load() == frameTurns })
			nc := dial()
			wire, sum := largeFrame(t, code, 7, 250<<10)
			if _, err := nc.Write(wire); err != nil {
				t.Fatal(err)
			}
			if got := readAnswer(t, nc); got != sum {
				t.Fatal("the third peer's handler saw another body")
			}
			for i, nc := range slow {
				if _, err := nc.Write(rest[i]); err != nil {
					t.Fatal(err)
				}
				if got := readAnswer(t, nc); got != sums[i] {
					t.Fatalf("slow peer %d: the handler saw another body", i)
				}
			}
			waitFor(t, "every turn ended", func() bool { return len(s.frames.turns) == 0 })
		})
	}
}
