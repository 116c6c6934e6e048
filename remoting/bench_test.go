package remoting

import (
	"bytes"
	"context"
	"log/slog"
	"testing"
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
