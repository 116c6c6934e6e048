package remoting

import (
	"bytes"
	"context"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// benchServer starts an echo server for SEND_MESSAGE with logs discarded.
func benchServer(b *testing.B) (*Server, *Client) {
	s := NewServer(ServerConfig{ListenAddr: "127.0.0.1:0"}, slog.New(slog.DiscardHandler))
	s.Register(SendMessage, NewPool("send", 4, 1<<16), func(_ context.Context, _ *Conn, req *Command) *Command {
		resp := NewResponse(Success, "")
		resp.SetExt("msgId", "0A00000500002A9F00000000000004D2").SetExt("queueId", "1").SetExt("queueOffset", "42")
		return resp
	})
	if err := s.Start(); err != nil {
		b.Fatal(err)
	}
	cl := NewClient(ClientConfig{}, slog.New(slog.DiscardHandler))
	b.Cleanup(func() {
		_ = cl.Close()
		_ = s.Close()
	})
	return s, cl
}

// benchSetup starts the server and returns what a SEND_MESSAGE-like call needs (1 KiB body).
func benchSetup(b *testing.B) (cl *Client, addr string, ext map[string]string, body []byte) {
	s, cl := benchServer(b)
	body = bytes.Repeat([]byte("m"), 1024)
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	return cl, s.Addr().String(), sendLikeRequest().ExtFields, body
}

// BenchmarkInvokeSequential: one caller, one request in flight (latency bound).
func BenchmarkInvokeSequential(b *testing.B) {
	cl, addr, ext, body := benchSetup(b)
	for b.Loop() {
		if _, err := cl.Invoke(context.Background(), addr, NewRequest(SendMessage, ext, body)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkInvokeParallel: many callers sharing one connection (the writer batches their frames).
func BenchmarkInvokeParallel(b *testing.B) {
	cl, addr, ext, body := benchSetup(b)
	b.SetParallelism(32)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := cl.Invoke(context.Background(), addr, NewRequest(SendMessage, ext, body)); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkInvokeParallelObserved is BenchmarkInvokeParallel with a reply observer that does what the
// broker's does (a map lookup and atomic adds per reply): compare the two in one run for its cost.
func BenchmarkInvokeParallelObserved(b *testing.B) {
	s, cl := benchServer(b)
	var counts sync.Map // code -> *[2]atomic.Int64
	s.AddReplyObserver("bench", func(req *Command, code int32, _ ReplyResult) {
		v, ok := counts.Load(code)
		if !ok {
			v, _ = counts.LoadOrStore(code, new([2]atomic.Int64))
		}
		c := v.(*[2]atomic.Int64)
		c[0].Add(1)
		c[1].Add(time.Since(req.Received()).Milliseconds())
	})
	body := bytes.Repeat([]byte("m"), 1024)
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	addr, ext := s.Addr().String(), sendLikeRequest().ExtFields
	b.SetParallelism(32)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := cl.Invoke(context.Background(), addr, NewRequest(SendMessage, ext, body)); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkPoolSubmit: tasks submitted from many goroutines to a pool of 4 workers (the enqueue-time
// bookkeeping behind HeadWait included); BenchmarkChanSubmit is the same traffic on a bare channel, the
// baseline to compare with in one run.
func BenchmarkPoolSubmit(b *testing.B) {
	p := NewPool("bench", 4, 1<<16)
	defer p.Close()
	var done sync.WaitGroup
	task := func() { done.Done() }
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			done.Add(1)
			for !p.Submit(task) {
				runtime.Gosched()
			}
		}
	})
	done.Wait()
}

func BenchmarkChanSubmit(b *testing.B) {
	tasks := make(chan func(), 1<<16)
	var workers sync.WaitGroup
	for range 4 {
		workers.Add(1)
		go func() {
			defer workers.Done()
			for t := range tasks {
				t()
			}
		}()
	}
	var done sync.WaitGroup
	task := func() { done.Done() }
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			done.Add(1)
			tasks <- task
		}
	})
	done.Wait()
	close(tasks)
	workers.Wait()
}

// BenchmarkIntercept is the chain's cost per request (intercept.go): nothing added (one atomic load), one
// guard, and a guard with a request observer; none allocates.
func BenchmarkIntercept(b *testing.B) {
	req := sendLikeRequest()
	var seen atomic.Int64
	guard := func(_ *Conn, r *Command) *Command {
		if r.Code < 0 {
			return NewResponse(NoPermission, "")
		}
		return nil
	}
	for _, c := range []struct {
		name string
		add  func(s *Server)
	}{
		{"none", func(*Server) {}},
		{"guard", func(s *Server) { s.AddGuard("g", guard) }},
		{"guard+observer", func(s *Server) {
			s.AddGuard("g", guard)
			s.AddRequestObserver("o", func(*Conn, *Command) { seen.Add(1) })
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			s := NewServer(ServerConfig{}, nil)
			c.add(s)
			b.ReportAllocs()
			for b.Loop() {
				if s.intercept(nil, req) != nil {
					b.Fatal("refused")
				}
			}
		})
	}
}
