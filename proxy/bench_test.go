package proxy_test

import (
	"context"
	"net"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/rocketraft/rocketraft/app/cluster"
	"github.com/rocketraft/rocketraft/broker"
	"github.com/rocketraft/rocketraft/client"
	"github.com/rocketraft/rocketraft/internal/testutil"
	"github.com/rocketraft/rocketraft/message"
	"github.com/rocketraft/rocketraft/proxy"
	"github.com/rocketraft/rocketraft/proxy/v2pb"
	"github.com/rocketraft/rocketraft/remoting"
)

// The gRPC endpoint against the 4.x path, in one run, one broker (ASYNC_FLUSH, in this process): straight
// over remoting with the native client; through a proxy in cluster mode (a proxy.Server of its own, reaching
// the broker over remoting: mqproxy); through the broker's own endpoint in local mode (enableProxy: in
// process). Each reports msgs/s and the process's CPU time per message (cpu-us/op, getrusage: client,
// proxy and broker together, since all run here). Make the ratios, not the absolute figures, the claim.
//
//	go test ./proxy -run '^$' -bench 'Produce|Consume' -benchtime 5000x

// cpuNow is the process's CPU time (user + system).
func cpuNow() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// measure reports msgs/s and cpu-us/op of n messages since began and cpu0.
func measure(b *testing.B, n int, began time.Time, cpu0 time.Duration) {
	b.ReportMetric(float64(n)/time.Since(began).Seconds(), "msgs/s")
	b.ReportMetric(float64((cpuNow()-cpu0).Microseconds())/float64(max(n, 1)), "cpu-us/op")
}

// BenchmarkProduce sends 1 KiB messages, with as many senders as GOMAXPROCS x 8 (b.SetParallelism).
func BenchmarkProduce(b *testing.B) {
	e := startBench(b)
	body := make([]byte, 1024)
	b.Run("remoting", func(b *testing.B) {
		qs := e.queues(b, "TBENCH")
		var n atomic.Uint64
		b.SetParallelism(8)
		b.ResetTimer()
		began, cpu0 := time.Now(), cpuNow()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				q := qs[n.Add(1)%uint64(len(qs))]
				props := message.EncodeProperties(map[string]string{message.PropertyUniqKey: client.NewUniqID()})
				if _, err := e.nc.SendMessage(context.Background(), q.Addr, &client.Send{Group: "PG_bench", Topic: "TBENCH",
					BrokerName: q.BrokerName, QueueID: q.QueueID, Properties: props, Body: body}); err != nil {
					b.Error(err)
					return
				}
			}
		})
		measure(b, b.N, began, cpu0)
	})
	for _, mode := range []struct {
		name string
		rpc  func(e *benchEnv) v2pb.MessagingServiceClient
	}{{"grpc-cluster", (*benchEnv).clusterRPC}, {"grpc-local", (*benchEnv).localRPC}} {
		b.Run(mode.name, func(b *testing.B) {
			sendGRPC(b, mode.rpc(e), e.client, body)
		})
	}
}

// sendGRPC sends b.N messages of body to TBENCH with SendMessage, one a request, from GOMAXPROCS x 8
// goroutines as client id, and reports msgs/s and cpu-us/op.
func sendGRPC(b *testing.B, rpc v2pb.MessagingServiceClient, id string, body []byte) {
	b.SetParallelism(8)
	b.ResetTimer()
	began, cpu0 := time.Now(), cpuNow()
	b.RunParallel(func(pb *testing.PB) {
		ctx := metadata.AppendToOutgoingContext(context.Background(), "x-mq-client-id", id)
		for pb.Next() {
			m := &v2pb.Message{Topic: res("TBENCH"), Body: body,
				SystemProperties: &v2pb.SystemProperties{MessageId: client.NewUniqID(), MessageType: v2pb.MessageType_NORMAL}}
			r, err := rpc.SendMessage(ctx, &v2pb.SendMessageRequest{Messages: []*v2pb.Message{m}})
			if err != nil || r.Status.Code != v2pb.Code_OK {
				b.Errorf("send: %v %v", r, err)
				return
			}
		}
	})
	measure(b, b.N, began, cpu0)
}

// benchEnv is one broker (broker-a, serving its own gRPC endpoint: local mode), a proxy in cluster mode in
// front of it, and clients of both.
type benchEnv struct {
	*env
	local v2pb.MessagingServiceClient
}

func (e *benchEnv) clusterRPC() v2pb.MessagingServiceClient { return e.rpc }
func (e *benchEnv) localRPC() v2pb.MessagingServiceClient   { return e.local }

func startBench(b *testing.B) *benchEnv {
	b.Helper()
	e := start(b, envOptions{cluster: cluster.Options{Configure: func(_ int, cfg *broker.Config) {
		cfg.Grpc.EnableProxy, cfg.Grpc.GrpcServerPort = true, testutil.FreePort(b)
	}}})
	conn, err := grpc.NewClient(e.c.Broker(0).GrpcAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { conn.Close() })
	e.topic(b, "TBENCH", 8)
	return &benchEnv{env: e, local: v2pb.NewMessagingServiceClient(conn)}
}

func (e *benchEnv) queues(b *testing.B, topic string) []client.Queue {
	r, err := e.nc.Route(context.Background(), topic)
	if err != nil {
		b.Fatal(err)
	}
	return client.RouteQueues(r, topic, "", true)
}

// fill stores n 1 KiB messages over the 4 queues of a new topic and waits until they are dispatched.
func (e *benchEnv) fill(b *testing.B, topic string, n int) []client.Queue {
	b.Helper()
	b.StopTimer()
	defer b.StartTimer()
	e.topic(b, topic, 4)
	qs := e.queues(b, topic)
	body := make([]byte, 1024)
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < n; i += 8 {
				q := qs[i%len(qs)]
				props := message.EncodeProperties(map[string]string{message.PropertyUniqKey: client.NewUniqID()})
				if _, err := e.nc.SendMessage(context.Background(), q.Addr, &client.Send{Group: "PG_bench", Topic: topic,
					BrokerName: q.BrokerName, QueueID: q.QueueID, Properties: props, Body: body}); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	for i, q := range qs { // the last message dispatched to its queue
		want := int64(n / len(qs))
		if i < n%len(qs) {
			want++
		}
		testutil.WaitFor(b, 30*time.Second, "the messages in their queues", func() bool {
			off, err := e.nc.QueueOffset(context.Background(), remoting.GetMaxOffset, q, 0)
			return err == nil && off >= want
		})
	}
	return qs
}

// BenchmarkConsume consumes b.N stored 1 KiB messages: PULL_MESSAGE over remoting with the native client (32
// a pull, queue by queue, the offset committed with the next pull's), one consumer; and ReceiveMessage (32 a
// receive, the broker's pop) plus one AckMessage of the batch through the gRPC endpoint, in cluster and in
// local mode, by 4 consumers of one group side by side.
func BenchmarkConsume(b *testing.B) {
	e := startBench(b)
	var round atomic.Int64
	b.Run("remoting", func(b *testing.B) {
		topic := "TCONS_R" + strconv.FormatInt(round.Add(1), 10)
		qs := e.fill(b, topic, b.N)
		began, cpu0, got := time.Now(), cpuNow(), 0
		for _, q := range qs {
			for off := int64(0); ; {
				r, err := e.nc.PullMessage(context.Background(), q.Addr, &client.Pull{Group: "G_bench", Topic: topic,
					BrokerName: q.BrokerName, QueueID: q.QueueID, Offset: off, MaxNums: 32, Commit: off > 0, CommitOffset: off})
				if err != nil {
					b.Fatal(err)
				}
				if r.Status != client.PullFound {
					break
				}
				got += len(r.Msgs)
				off = r.NextBegin
			}
		}
		if got != b.N {
			b.Fatalf("pulled %d of %d", got, b.N)
		}
		measure(b, b.N, began, cpu0)
	})
	for _, mode := range []struct {
		name string
		rpc  func(e *benchEnv) v2pb.MessagingServiceClient
	}{{"grpc-cluster", (*benchEnv).clusterRPC}, {"grpc-local", (*benchEnv).localRPC}} {
		b.Run(mode.name, func(b *testing.B) {
			topic := "TCONS_G" + strconv.FormatInt(round.Add(1), 10)
			e.fill(b, topic, b.N)
			rpc := mode.rpc(e)
			ctx, cancel := context.WithCancel(metadata.AppendToOutgoingContext(context.Background(), "x-mq-client-id", e.client))
			defer cancel()
			var got atomic.Int64
			began, cpu0 := time.Now(), cpuNow()
			var wg sync.WaitGroup
			for range 4 {
				wg.Go(func() {
					for ctx.Err() == nil {
						n, err := receiveAndAck(ctx, rpc, topic)
						if err != nil && ctx.Err() == nil {
							b.Error(err)
							return
						}
						if got.Add(int64(n)) >= int64(b.N) {
							cancel() // the others' receives held for messages that will not come
						}
					}
				})
			}
			wg.Wait()
			measure(b, b.N, began, cpu0)
		})
	}
}

// receiveAndAck receives up to 32 messages of topic for G_bench (waiting up to 1 s) and acks them in one
// AckMessage; it returns how many.
func receiveAndAck(ctx context.Context, rpc v2pb.MessagingServiceClient, topic string) (int, error) {
	stream, err := rpc.ReceiveMessage(ctx, &v2pb.ReceiveMessageRequest{Group: res("G_bench"),
		MessageQueue: &v2pb.MessageQueue{Topic: res(topic), Broker: &v2pb.Broker{Name: "broker-a"}}, BatchSize: 32,
		InvisibleDuration: durationOf(time.Minute), LongPollingTimeout: durationOf(time.Second)})
	if err != nil {
		return 0, err
	}
	ack := &v2pb.AckMessageRequest{Group: res("G_bench"), Topic: res(topic)}
	for {
		r, err := stream.Recv()
		if err != nil {
			break
		}
		if m := r.GetMessage(); m != nil {
			ack.Entries = append(ack.Entries, &v2pb.AckMessageEntry{MessageId: m.SystemProperties.MessageId,
				ReceiptHandle: m.SystemProperties.GetReceiptHandle()})
		}
	}
	if len(ack.Entries) == 0 {
		return 0, nil
	}
	r, err := rpc.AckMessage(ctx, ack)
	if err != nil {
		return 0, err
	}
	if r.Status.Code != v2pb.Code_OK {
		return 0, &statusErr{r.Status}
	}
	return len(ack.Entries), nil
}

type statusErr struct{ s *v2pb.Status }

func (e *statusErr) Error() string { return e.s.String() }

// BenchmarkProduceFloor is what the two protocols cost with nothing behind them: the same clients and
// messages as BenchmarkProduce, against a server that answers every send SEND_OK at once and stores
// nothing. remoting-floor is a remoting.Server answering SEND_MESSAGE_V2 on the connection's reader (as the
// broker's inline send path does); grpc-floor is a grpc.Server with the endpoint's options answering
// SendMessage. Their cpu-us/op is each protocol's own price per message, client and server together: what
// BenchmarkProduce's grpc-local pays beyond its remoting row comes from here unless the gRPC path does more
// work than the remoting one. With both sides on one machine's cores, msgs/s of grpc-local against remoting
// cannot pass (remoting) / (remoting - remoting-floor + grpc-floor) in cpu-us/op.
func BenchmarkProduceFloor(b *testing.B) {
	body := make([]byte, 1024)
	b.Run("remoting-floor", func(b *testing.B) {
		srv := remoting.NewServer(remoting.ServerConfig{ListenAddr: "127.0.0.1:0"}, nil)
		answer := func(_ *remoting.Conn, req *remoting.Command) (*remoting.Command, bool) {
			resp := remoting.NewResponse(remoting.Success, "")
			resp.ExtFields = map[string]string{"msgId": "0", "queueId": "0", "queueOffset": "0"}
			return resp, true
		}
		pool := remoting.NewPool("floor", 1, 16)
		srv.RegisterInline(remoting.SendMessageV2, pool, func(context.Context, *remoting.Conn, *remoting.Command) *remoting.Command {
			return remoting.NewResponse(remoting.SystemError, "not inline")
		}, answer)
		if err := srv.Start(); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { srv.Close() })
		nc := client.New(client.Config{})
		b.Cleanup(func() { nc.Close() })
		var n atomic.Uint64
		b.SetParallelism(8)
		b.ResetTimer()
		began, cpu0 := time.Now(), cpuNow()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				props := message.EncodeProperties(map[string]string{message.PropertyUniqKey: client.NewUniqID()})
				if _, err := nc.SendMessage(context.Background(), srv.Addr().String(), &client.Send{Group: "PG_bench", Topic: "TBENCH",
					BrokerName: "floor", QueueID: int32(n.Add(1) % 8), Properties: props, Body: body}); err != nil {
					b.Error(err)
					return
				}
			}
		})
		measure(b, b.N, began, cpu0)
	})
	b.Run("grpc-floor", func(b *testing.B) {
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		// The endpoint's stream workers (proxy.Options.StreamWorkers' default); its guards are off here.
		srv := grpc.NewServer(grpc.NumStreamWorkers(uint32(proxy.DefaultStreamWorkers * runtime.GOMAXPROCS(0))))
		v2pb.RegisterMessagingServiceServer(srv, floorService{})
		go srv.Serve(lis)
		b.Cleanup(srv.Stop)
		conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { conn.Close() })
		sendGRPC(b, v2pb.NewMessagingServiceClient(conn), "floor", body)
	})
}

// floorService answers every SendMessage OK, one entry per message, and stores nothing.
type floorService struct {
	v2pb.UnimplementedMessagingServiceServer
}

func (floorService) SendMessage(_ context.Context, req *v2pb.SendMessageRequest) (*v2pb.SendMessageResponse, error) {
	ok := &v2pb.Status{Code: v2pb.Code_OK, Message: "OK"}
	out := &v2pb.SendMessageResponse{Status: ok}
	for _, m := range req.Messages {
		out.Entries = append(out.Entries, &v2pb.SendResultEntry{Status: ok, MessageId: m.GetSystemProperties().GetMessageId()})
	}
	return out, nil
}
