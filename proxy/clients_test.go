package proxy_test

import (
	"context"
	"crypto/tls"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/rocketraft/rocketraft/acl"
	"github.com/rocketraft/rocketraft/app/cluster"
	"github.com/rocketraft/rocketraft/proxy"
	"github.com/rocketraft/rocketraft/proxy/v2pb"
	"github.com/rocketraft/rocketraft/remoting"
)

// TestHeartbeatAndTermination: heartbeats need a client id and a known client type (and a group for
// consumers); NotifyClientTermination is answered OK.
func TestHeartbeatAndTermination(t *testing.T) {
	e := start(t, envOptions{})
	r, err := e.rpc.Heartbeat(e.ctx(t), &v2pb.HeartbeatRequest{ClientType: v2pb.ClientType_PRODUCER})
	if err != nil || r.Status.Code != v2pb.Code_OK {
		t.Fatalf("producer heartbeat: %v %v", r, err)
	}
	r, err = e.rpc.Heartbeat(e.ctx(t), &v2pb.HeartbeatRequest{ClientType: v2pb.ClientType_SIMPLE_CONSUMER})
	if err != nil || r.Status.Code != v2pb.Code_ILLEGAL_CONSUMER_GROUP {
		t.Fatalf("consumer heartbeat without a group: %v %v", r, err)
	}
	r, err = e.rpc.Heartbeat(e.ctx(t), &v2pb.HeartbeatRequest{ClientType: v2pb.ClientType_SIMPLE_CONSUMER, Group: res("G")})
	if err != nil || r.Status.Code != v2pb.Code_OK {
		t.Fatalf("consumer heartbeat: %v %v", r, err)
	}
	r, err = e.rpc.Heartbeat(e.ctx(t), &v2pb.HeartbeatRequest{ClientType: v2pb.ClientType_CLIENT_TYPE_UNSPECIFIED})
	if err != nil || r.Status.Code != v2pb.Code_UNRECOGNIZED_CLIENT_TYPE {
		t.Fatalf("unknown client type: %v %v", r, err)
	}
	noID := metadata.AppendToOutgoingContext(context.Background(), "x-mq-protocol", "v2")
	r, err = e.rpc.Heartbeat(noID, &v2pb.HeartbeatRequest{ClientType: v2pb.ClientType_PRODUCER})
	if err != nil || r.Status.Code != v2pb.Code_CLIENT_ID_REQUIRED {
		t.Fatalf("no client id: %v %v", r, err)
	}
	n, err := e.rpc.NotifyClientTermination(e.ctx(t), &v2pb.NotifyClientTerminationRequest{Group: res("G")})
	if err != nil || n.Status.Code != v2pb.Code_OK {
		t.Fatalf("termination: %v %v", n, err)
	}
}

// TestTelemetryCommands: a consumer's settings are answered with the subscription's batch size and long
// polling time; the server's thread-stack and verify-message commands reach the client, whose answers come
// back to the caller by nonce.
func TestTelemetryCommands(t *testing.T) {
	e := start(t, envOptions{})
	tel, err := e.rpc.Telemetry(e.ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	typ := v2pb.ClientType_SIMPLE_CONSUMER
	if err := tel.Send(&v2pb.TelemetryCommand{Command: &v2pb.TelemetryCommand_Settings{Settings: &v2pb.Settings{ClientType: &typ,
		PubSub: &v2pb.Settings_Subscription{Subscription: &v2pb.Subscription{Group: res("G"),
			Subscriptions: []*v2pb.SubscriptionEntry{{Topic: res("T"), Expression: &v2pb.FilterExpression{Type: v2pb.FilterType_TAG, Expression: "*"}}}}}}}}); err != nil {
		t.Fatal(err)
	}
	first, err := tel.Recv()
	sub := first.GetSettings().GetSubscription()
	if err != nil || sub.GetReceiveBatchSize() != 32 || sub.GetLongPollingTimeout().AsDuration() != 20*time.Second ||
		sub.GetGroup().GetName() != "G" || len(sub.GetSubscriptions()) != 1 {
		t.Fatalf("settings answer: %v %v", first, err)
	}
	// The client side: answer every command by its nonce.
	go func() {
		for {
			cmd, err := tel.Recv()
			if err != nil {
				return
			}
			switch c := cmd.Command.(type) {
			case *v2pb.TelemetryCommand_PrintThreadStackTraceCommand:
				stack := "goroutine 1 [running]"
				_ = tel.Send(&v2pb.TelemetryCommand{Status: &v2pb.Status{Code: v2pb.Code_OK}, Command: &v2pb.TelemetryCommand_ThreadStackTrace{
					ThreadStackTrace: &v2pb.ThreadStackTrace{Nonce: c.PrintThreadStackTraceCommand.Nonce, ThreadStackTrace: &stack}}})
			case *v2pb.TelemetryCommand_VerifyMessageCommand:
				_ = tel.Send(&v2pb.TelemetryCommand{Status: &v2pb.Status{Code: v2pb.Code_OK}, Command: &v2pb.TelemetryCommand_VerifyMessageResult{
					VerifyMessageResult: &v2pb.VerifyMessageResult{Nonce: c.VerifyMessageCommand.Nonce}}})
			}
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	stack, err := e.px.ThreadStack(ctx, e.client)
	if err != nil || stack != "goroutine 1 [running]" {
		t.Fatalf("thread stack: %q %v", stack, err)
	}
	if err := e.px.VerifyMessage(ctx, e.client, msg("T", "verify")); err != nil {
		t.Fatalf("verify: %v", err)
	}
	if _, err := e.px.ThreadStack(ctx, "nobody"); err == nil {
		t.Fatal("a thread stack of a client without a stream")
	}
}

// TestOffsets: UpdateOffset stores a pull consumer's offset, GetOffset reads it back (0 before), QueryOffset answers a queue's beginning, end and the offset at a time.
func TestOffsets(t *testing.T) {
	e := start(t, envOptions{})
	e.topic(t, "TO", 1)
	for range 3 {
		e.send(t, msg("TO", "x"))
	}
	e.waitPull(t, "TO", "broker-a", 0, 3)
	mq := &v2pb.MessageQueue{Topic: res("TO"), Id: 0, Broker: &v2pb.Broker{Name: "broker-a"}}
	g, err := e.rpc.GetOffset(e.ctx(t), &v2pb.GetOffsetRequest{Group: res("G_off"), MessageQueue: mq})
	// The broker answers 0 for a group without an offset while the queue still starts at 0, as RocketMQ.
	if err != nil || g.Status.Code != v2pb.Code_OK || g.Offset != 0 {
		t.Fatalf("offset before any: %v %v", g, err)
	}
	u, err := e.rpc.UpdateOffset(e.ctx(t), &v2pb.UpdateOffsetRequest{Group: res("G_off"), MessageQueue: mq, Offset: 2})
	if err != nil || u.Status.Code != v2pb.Code_OK {
		t.Fatalf("update: %v %v", u, err)
	}
	g, err = e.rpc.GetOffset(e.ctx(t), &v2pb.GetOffsetRequest{Group: res("G_off"), MessageQueue: mq})
	if err != nil || g.Status.Code != v2pb.Code_OK || g.Offset != 2 {
		t.Fatalf("offset: %v %v", g, err)
	}
	for policy, want := range map[v2pb.QueryOffsetPolicy]int64{v2pb.QueryOffsetPolicy_BEGINNING: 0, v2pb.QueryOffsetPolicy_END: 3} {
		q, err := e.rpc.QueryOffset(e.ctx(t), &v2pb.QueryOffsetRequest{MessageQueue: mq, QueryOffsetPolicy: policy})
		if err != nil || q.Status.Code != v2pb.Code_OK || q.Offset != want {
			t.Errorf("%s: %v %v, want %d", policy, q, err, want)
		}
	}
	q, err := e.rpc.QueryOffset(e.ctx(t), &v2pb.QueryOffsetRequest{MessageQueue: mq, QueryOffsetPolicy: v2pb.QueryOffsetPolicy_TIMESTAMP})
	if err != nil || q.Status.Code != v2pb.Code_BAD_REQUEST {
		t.Errorf("TIMESTAMP without a time: %v %v", q, err)
	}
	bad := &v2pb.MessageQueue{Topic: res("TO"), Id: 0, Broker: &v2pb.Broker{Name: "broker-z"}}
	q, err = e.rpc.QueryOffset(e.ctx(t), &v2pb.QueryOffsetRequest{MessageQueue: bad})
	if err != nil || q.Status.Code != v2pb.Code_NOT_FOUND {
		t.Errorf("unknown broker: %v %v", q, err)
	}
}

// TestACLSignedCalls: with an ACL, an unsigned call and a call with a wrong signature are refused
// (PermissionDenied), a signed call passes, and a send needs PUB on its topic.
func TestACLSignedCalls(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "plain_acl.yml")
	if err := os.WriteFile(file, []byte(`accounts:
  - accessKey: rocketmq2
    secretKey: 12345678
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms: [TA=PUB|SUB]
`), 0o600); err != nil {
		t.Fatal(err)
	}
	v, err := acl.New(file, cluster.TestLogger(t, 0))
	if err != nil {
		t.Fatal(err)
	}
	e := start(t, envOptions{proxy: func(o *proxy.Options) { o.Auth = v }})
	e.topic(t, "TA", 1)
	e.topic(t, "TB", 1)
	signed := func(secret string) context.Context {
		date := time.Now().UTC().Format("20060102T150405Z")
		ctx := metadata.AppendToOutgoingContext(context.Background(), "x-mq-client-id", e.client, "x-mq-date-time", date,
			"authorization", "MQv2-HMAC-SHA1 Credential=rocketmq2, SignedHeaders=x-mq-date-time, Signature="+acl.SignV2(secret, date))
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		t.Cleanup(cancel)
		return ctx
	}
	send := func(ctx context.Context, topic string) (*v2pb.SendMessageResponse, error) {
		return e.rpc.SendMessage(ctx, &v2pb.SendMessageRequest{Messages: []*v2pb.Message{msg(topic, "x")}})
	}
	if _, err := send(e.ctx(t), "TA"); status.Code(err) != codes.PermissionDenied {
		t.Errorf("unsigned send: %v", err)
	}
	if _, err := send(signed("wrong-secret"), "TA"); status.Code(err) != codes.PermissionDenied {
		t.Errorf("wrongly signed send: %v", err)
	}
	if r, err := send(signed("12345678"), "TA"); err != nil || r.Status.Code != v2pb.Code_OK {
		t.Errorf("signed send: %v %v", r, err)
	}
	if _, err := send(signed("12345678"), "TB"); status.Code(err) != codes.PermissionDenied {
		t.Errorf("send without PUB on TB: %v", err)
	}
	// A server stream is checked on its request too.
	stream, err := e.rpc.PullMessage(signed("wrong"), &v2pb.PullMessageRequest{Group: res("G"),
		MessageQueue: &v2pb.MessageQueue{Topic: res("TA"), Broker: &v2pb.Broker{Name: "broker-a"}}})
	if err == nil {
		_, err = stream.Recv()
	}
	if status.Code(err) != codes.PermissionDenied {
		t.Errorf("wrongly signed pull: %v", err)
	}
}

// TestTLS: with Options.TLS the endpoint speaks TLS only; a TLS client's calls are served.
func TestTLS(t *testing.T) {
	certPEM, keyPEM, err := remoting.GenerateSelfSignedCert([]string{"127.0.0.1"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	e := start(t, envOptions{proxy: func(o *proxy.Options) { o.TLS = &tls.Config{Certificates: []tls.Certificate{cert}} },
		dial: []grpc.DialOption{grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{InsecureSkipVerify: true}))}})
	e.topic(t, "TLS", 1)
	r, err := e.rpc.QueryRoute(e.ctx(t), &v2pb.QueryRouteRequest{Topic: res("TLS")})
	if err != nil || r.Status.Code != v2pb.Code_OK {
		t.Fatalf("route over TLS: %v %v", r, err)
	}
}
