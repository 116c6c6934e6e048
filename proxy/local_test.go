package proxy_test

import (
	"context"
	"net"
	"strconv"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/rocketraft/rocketraft/app/cluster"
	"github.com/rocketraft/rocketraft/broker"
	"github.com/rocketraft/rocketraft/client"
	"github.com/rocketraft/rocketraft/internal/metrics"
	"github.com/rocketraft/rocketraft/internal/testutil"
	"github.com/rocketraft/rocketraft/proxy/v2pb"
)

// TestLocalModeInTheBroker: with enableProxy a broker serves the gRPC endpoint on grpcServerPort itself,
// offering only its own group's queues; a message sent there is received and acked there, in process: the
// broker's remoting server sees none of the sends, pops, acks and offset calls (rocketmq_rpc_latency counts
// every request it answers).
func TestLocalModeInTheBroker(t *testing.T) {
	metricsPorts := make([]int, 2)
	c := cluster.Start(t, cluster.Options{Brokers: 2, Configure: func(i int, cfg *broker.Config) {
		cfg.Grpc.EnableProxy, cfg.Grpc.GrpcServerPort = true, testutil.FreePort(t)
		metricsPorts[i] = cluster.FreePort(t)
		cfg.MetricsPort = metricsPorts[i]
	}})
	nc := client.New(client.Config{Namesrvs: c.NamesrvAddrs()})
	defer nc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := nc.EnsureTopic(ctx, "TLOCAL", 2, nil); err != nil {
		t.Fatal(err)
	}
	addr := c.Broker(1).GrpcAddr()
	if addr == "" {
		t.Fatal("broker-b serves no gRPC endpoint")
	}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	e := &env{c: c, nc: nc, rpc: v2pb.NewMessagingServiceClient(conn), client: "local@1"}
	r, err := e.rpc.QueryRoute(e.ctx(t), &v2pb.QueryRouteRequest{Topic: res("TLOCAL")})
	if err != nil || r.Status.Code != v2pb.Code_OK || len(r.MessageQueues) != 2 {
		t.Fatalf("route: %v %v", r, err)
	}
	for _, mq := range r.MessageQueues {
		if mq.Broker.Name != "broker-b" {
			t.Fatalf("broker-b's endpoint offers %v", mq)
		}
	}
	id := e.send(t, msg("TLOCAL", "local")).MessageId
	var got []*v2pb.Message
	testutil.WaitFor(t, 15*time.Second, "the message is received", func() bool {
		stream, err := e.rpc.ReceiveMessage(e.ctx(t), &v2pb.ReceiveMessageRequest{Group: res("G_local"),
			MessageQueue: &v2pb.MessageQueue{Topic: res("TLOCAL"), Broker: &v2pb.Broker{Name: "broker-b"}}, BatchSize: 8,
			InvisibleDuration: durationOf(30 * time.Second), LongPollingTimeout: durationOf(time.Second)})
		if err != nil {
			t.Fatal(err)
		}
		for {
			resp, err := stream.Recv()
			if err != nil {
				break
			}
			if m := resp.GetMessage(); m != nil {
				got = append(got, m)
			}
		}
		return len(got) > 0
	})
	if got[0].SystemProperties.MessageId != id {
		t.Fatalf("received %v, sent %s", got, id)
	}
	if st := e.ack(t, "G_local", "TLOCAL", got[0]); st.Code != v2pb.Code_OK {
		t.Fatalf("ack: %v", st)
	}
	if st := e.ack(t, "G_local", "TLOCAL", got[0]); st.Code != v2pb.Code_INVALID_RECEIPT_HANDLE {
		t.Fatalf("second ack of one handle: %v", st)
	}
	mq := &v2pb.MessageQueue{Topic: res("TLOCAL"), Id: got[0].SystemProperties.QueueId, Broker: &v2pb.Broker{Name: "broker-b"}}
	if r, err := e.rpc.UpdateOffset(e.ctx(t), &v2pb.UpdateOffsetRequest{Group: res("G_local_pull"), MessageQueue: mq, Offset: 1}); err != nil || r.Status.Code != v2pb.Code_OK {
		t.Fatalf("update offset: %v %v", r, err)
	}
	if r, err := e.rpc.GetOffset(e.ctx(t), &v2pb.GetOffsetRequest{Group: res("G_local_pull"), MessageQueue: mq}); err != nil || r.Status.Code != v2pb.Code_OK || r.Offset != 1 {
		t.Fatalf("get offset: %v %v", r, err)
	}
	if r, err := e.rpc.QueryOffset(e.ctx(t), &v2pb.QueryOffsetRequest{MessageQueue: mq, QueryOffsetPolicy: v2pb.QueryOffsetPolicy_END}); err != nil || r.Status.Code != v2pb.Code_OK || r.Offset != 1 {
		t.Fatalf("query offset (end): %v %v", r, err)
	}
	f, err := metrics.Scrape(context.Background(), net.JoinHostPort("127.0.0.1", strconv.Itoa(metricsPorts[1])))
	if err != nil {
		t.Fatal(err)
	}
	for _, code := range []string{"send_message_v2", "pop_message", "batch_ack_message", "ack_message",
		"update_consumer_offset", "query_consumer_offset", "get_max_offset"} {
		if n := f.Sum("rocketmq_rpc_latency_milliseconds", "request_code", code); n != 0 {
			t.Errorf("broker-b answered %v %s requests over remoting: local mode goes in process", n, code)
		}
	}
}
