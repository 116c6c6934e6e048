package proxy_test

import (
	"context"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/rocketraft/rocketraft/app/cluster"
	"github.com/rocketraft/rocketraft/client"
	"github.com/rocketraft/rocketraft/internal/testutil"
	"github.com/rocketraft/rocketraft/proxy"
	"github.com/rocketraft/rocketraft/proxy/v2pb"
)

// env is a cluster, the proxy in front of it and a gRPC client of the proxy (the generated stubs) over the
// real port.
type env struct {
	c      *cluster.Cluster
	nc     *client.Client
	px     *proxy.Server
	rpc    v2pb.MessagingServiceClient
	conn   *grpc.ClientConn
	client string // the x-mq-client-id the calls carry
}

type envOptions struct {
	cluster cluster.Options
	local   string // local mode: the proxy serves broker-a only
	proxy   func(*proxy.Options)
	dial    []grpc.DialOption
}

func start(t testing.TB, o envOptions) *env {
	t.Helper()
	c := cluster.Start(t, o.cluster)
	// The endpoint's hop to the brokers: 3 s answered PROXY_TIMEOUT in race runs at load 30
	// (TestReceiveAckAndRedelivery, TestTransactionCommitAndRollback); no test here times it.
	nc := client.New(client.Config{Namesrvs: c.NamesrvAddrs(), Timeout: 15 * time.Second})
	t.Cleanup(func() { nc.Close() })
	opts := proxy.Options{Client: nc, BrokerName: o.local, Log: cluster.TestLogger(t, o.cluster.LogLevel),
		HeartbeatInterval: time.Second}
	if o.proxy != nil {
		o.proxy(&opts)
	}
	px, err := proxy.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	px.Serve(lis)
	t.Cleanup(func() { px.Close() })
	dial := o.dial
	if dial == nil {
		dial = []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
	}
	conn, err := grpc.NewClient(px.Addr(), dial...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return &env{c: c, nc: nc, px: px, rpc: v2pb.NewMessagingServiceClient(conn), conn: conn, client: "test-client@1"}
}

// ctx is a call context with the client's headers, bounded to 10 s.
func (e *env) ctx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return metadata.AppendToOutgoingContext(ctx, "x-mq-client-id", e.client, "x-mq-protocol", "v2",
		"x-mq-date-time", time.Now().UTC().Format("20060102T150405Z"))
}

// topic creates topic with queues queues on every broker.
func (e *env) topic(t testing.TB, topic string, queues int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := e.nc.EnsureTopic(ctx, topic, queues, nil); err != nil {
		t.Fatal(err)
	}
}

func res(name string) *v2pb.Resource { return &v2pb.Resource{Name: name} }

// msg is a v2 message of topic with body and a fresh id.
func msg(topic, body string) *v2pb.Message {
	return &v2pb.Message{Topic: res(topic), Body: []byte(body), UserProperties: map[string]string{"k": "v"},
		SystemProperties: &v2pb.SystemProperties{MessageId: client.NewUniqID(), MessageType: v2pb.MessageType_NORMAL}}
}

// send sends m and fails the test unless it is OK.
func (e *env) send(t *testing.T, m *v2pb.Message) *v2pb.SendResultEntry {
	t.Helper()
	r, err := e.rpc.SendMessage(e.ctx(t), &v2pb.SendMessageRequest{Messages: []*v2pb.Message{m}})
	if err != nil {
		t.Fatal(err)
	}
	if r.Status.Code != v2pb.Code_OK || len(r.Entries) != 1 {
		t.Fatalf("send: %v", r)
	}
	return r.Entries[0]
}

// pull pulls queue q of broker from offset and returns the status, messages and next offset.
func (e *env) pull(t *testing.T, topic, broker string, q int32, offset int64, hold time.Duration) (*v2pb.Status, []*v2pb.Message, int64) {
	t.Helper()
	stream, err := e.rpc.PullMessage(e.ctx(t), &v2pb.PullMessageRequest{Group: res("G_pull"),
		MessageQueue: &v2pb.MessageQueue{Topic: res(topic), Id: q, Broker: &v2pb.Broker{Name: broker}}, Offset: offset,
		BatchSize: 32, LongPollingTimeout: durationOf(hold)})
	if err != nil {
		t.Fatal(err)
	}
	var st *v2pb.Status
	var msgs []*v2pb.Message
	next := int64(-1)
	for {
		r, err := stream.Recv()
		if err != nil {
			break
		}
		switch c := r.Content.(type) {
		case *v2pb.PullMessageResponse_Status:
			st = c.Status
		case *v2pb.PullMessageResponse_Message:
			msgs = append(msgs, c.Message)
		case *v2pb.PullMessageResponse_NextOffset:
			next = c.NextOffset
		}
	}
	if st == nil {
		t.Fatal("the pull answered no status")
	}
	return st, msgs, next
}

// waitPull pulls queue q of broker from offset 0 until it holds at least n messages (the broker dispatches
// a stored message to its queue after answering the send).
func (e *env) waitPull(t *testing.T, topic, broker string, q int32, n int) []*v2pb.Message {
	t.Helper()
	var msgs []*v2pb.Message
	testutil.WaitFor(t, 10*time.Second, "messages in the queue", func() bool {
		_, msgs, _ = e.pull(t, topic, broker, q, 0, 0)
		return len(msgs) >= n
	})
	return msgs
}
