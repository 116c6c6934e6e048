package proxy_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/metadata"

	"github.com/rocketraft/rocketraft/client"
	"github.com/rocketraft/rocketraft/internal/testutil"
	"github.com/rocketraft/rocketraft/message"
	"github.com/rocketraft/rocketraft/proxy/v2pb"
	"github.com/rocketraft/rocketraft/remoting"
)

// BenchmarkProduce sends 1 KiB messages to one broker (ASYNC_FLUSH, in this process) through the gRPC endpoint
// and straight over remoting with the native client, in one run, with as many senders as GOMAXPROCS x 8
// (b.SetParallelism): msgs/s of each, to compare (make the ratio, not the absolute figures, the claim).
//
//	go test ./proxy -run '^$' -bench Produce -benchtime 5s
func BenchmarkProduce(b *testing.B) {
	e := startBench(b)
	body := make([]byte, 1024)
	b.Run("remoting", func(b *testing.B) {
		qs := e.queues(b)
		var n atomic.Uint64
		b.SetParallelism(8)
		b.ResetTimer()
		began := time.Now()
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
		b.ReportMetric(float64(b.N)/time.Since(began).Seconds(), "msgs/s")
	})
	b.Run("grpc", func(b *testing.B) {
		b.SetParallelism(8)
		b.ResetTimer()
		began := time.Now()
		b.RunParallel(func(pb *testing.PB) {
			ctx := metadata.AppendToOutgoingContext(context.Background(), "x-mq-client-id", e.client)
			for pb.Next() {
				m := &v2pb.Message{Topic: res("TBENCH"), Body: body,
					SystemProperties: &v2pb.SystemProperties{MessageId: client.NewUniqID(), MessageType: v2pb.MessageType_NORMAL}}
				r, err := e.rpc.SendMessage(ctx, &v2pb.SendMessageRequest{Messages: []*v2pb.Message{m}})
				if err != nil || r.Status.Code != v2pb.Code_OK {
					b.Errorf("send: %v %v", r, err)
					return
				}
			}
		})
		b.ReportMetric(float64(b.N)/time.Since(began).Seconds(), "msgs/s")
	})
}

func startBench(b *testing.B) *env {
	b.Helper()
	e := start(b, envOptions{})
	e.topic(b, "TBENCH", 8)
	return e
}

func (e *env) queues(b *testing.B) []client.Queue {
	r, err := e.nc.Route(context.Background(), "TBENCH")
	if err != nil {
		b.Fatal(err)
	}
	return client.RouteQueues(r, "TBENCH", "", true)
}

// BenchmarkConsume consumes b.N stored 1 KiB messages, one consumer each way in one run: PULL_MESSAGE over
// remoting with the native client (32 a pull, queue by queue), and ReceiveMessage (32 a receive, the broker's
// pop) plus one AckMessage for the batch through the gRPC endpoint. msgs/s of each.
func BenchmarkConsume(b *testing.B) {
	e := startBench(b)
	body := make([]byte, 1024)
	fill := func(b *testing.B, topic string) []client.Queue {
		b.StopTimer()
		e.topic(b, topic, 4)
		r, err := e.nc.Route(context.Background(), topic)
		if err != nil {
			b.Fatal(err)
		}
		qs := client.RouteQueues(r, topic, "", true)
		for i := range b.N {
			q := qs[i%len(qs)]
			props := message.EncodeProperties(map[string]string{message.PropertyUniqKey: client.NewUniqID()})
			if _, err := e.nc.SendMessage(context.Background(), q.Addr, &client.Send{Group: "PG_bench", Topic: topic,
				BrokerName: q.BrokerName, QueueID: q.QueueID, Properties: props, Body: body}); err != nil {
				b.Fatal(err)
			}
		}
		for _, q := range qs { // the last message dispatched to its queue
			testutil.WaitFor(b, 10*time.Second, "the messages in their queues", func() bool {
				n, err := e.nc.QueueOffset(context.Background(), remoting.GetMaxOffset, q, 0)
				return err == nil && n >= int64(b.N/len(qs))
			})
		}
		b.StartTimer()
		return qs
	}
	var round atomic.Int64
	b.Run("remoting", func(b *testing.B) {
		topic := "TCONS_R" + strconv.FormatInt(round.Add(1), 10)
		qs := fill(b, topic)
		began, got := time.Now(), 0
		for _, q := range qs {
			for off := int64(0); ; {
				r, err := e.nc.PullMessage(context.Background(), q.Addr, &client.Pull{Group: "G_bench", Topic: topic,
					BrokerName: q.BrokerName, QueueID: q.QueueID, Offset: off, MaxNums: 32})
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
		b.ReportMetric(float64(b.N)/time.Since(began).Seconds(), "msgs/s")
	})
	b.Run("grpc", func(b *testing.B) {
		topic := "TCONS_G" + strconv.FormatInt(round.Add(1), 10)
		fill(b, topic)
		ctx := metadata.AppendToOutgoingContext(context.Background(), "x-mq-client-id", e.client)
		began, got := time.Now(), 0
		for got < b.N {
			stream, err := e.rpc.ReceiveMessage(ctx, &v2pb.ReceiveMessageRequest{Group: res("G_bench"),
				MessageQueue: &v2pb.MessageQueue{Topic: res(topic), Broker: &v2pb.Broker{Name: "broker-a"}}, BatchSize: 32,
				InvisibleDuration: durationOf(time.Minute), LongPollingTimeout: durationOf(time.Second)})
			if err != nil {
				b.Fatal(err)
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
				continue
			}
			got += len(ack.Entries)
			if r, err := e.rpc.AckMessage(ctx, ack); err != nil || r.Status.Code != v2pb.Code_OK {
				b.Fatalf("ack: %v %v", r, err)
			}
		}
		b.ReportMetric(float64(b.N)/time.Since(began).Seconds(), "msgs/s")
	})
}
