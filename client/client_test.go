package client_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rocketraft/rocketraft/app/cluster"
	"github.com/rocketraft/rocketraft/client"
	"github.com/rocketraft/rocketraft/internal/testutil"
	"github.com/rocketraft/rocketraft/message"
	"github.com/rocketraft/rocketraft/protocol"
	"github.com/rocketraft/rocketraft/remoting"
)

func newClient(t *testing.T, namesrvs []string) *client.Client {
	t.Helper()
	c := client.New(client.Config{Namesrvs: namesrvs, Timeout: 5 * time.Second, Log: testutil.Logger(t, slog.LevelWarn)})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// deadAddr is a local address nothing listens on.
func deadAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return addr
}

// TestSendPullOffsets goes through a real name server and broker: create a topic, send single and batch
// messages to a write queue, read the queue's offsets, pull the messages back, commit and read a consumer
// offset, and read the broker's runtime info.
func TestSendPullOffsets(t *testing.T) {
	cl := cluster.Start(t, cluster.Options{})
	c := newClient(t, cl.NamesrvAddrs())
	ctx := context.Background()
	const topic = "ClientTopic"
	route, err := c.EnsureTopic(ctx, topic, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	queues := client.RouteQueues(route, topic, "", true)
	if len(queues) != 2 || queues[1].QueueID != 1 || queues[1].Addr != cl.Broker(0).RouteAddr() {
		t.Fatalf("write queues %v", queues)
	}
	q := queues[1]

	uniq := client.NewUniqID()
	props := message.EncodeProperties(map[string]string{message.PropertyUniqKey: uniq, message.PropertyKeys: "k1"})
	res, err := c.SendMessage(ctx, q.Addr, &client.Send{Group: "g", Topic: topic, BrokerName: q.BrokerName,
		QueueID: q.QueueID, Properties: props, Body: []byte("one")})
	if err != nil {
		t.Fatal(err)
	}
	if res.SendStatus != "SEND_OK" || res.MsgID != uniq || res.QueueOffset != 0 || res.QueueID != 1 || res.OffsetMsgID == "" {
		t.Errorf("send result %+v", res)
	}
	var batch []byte
	for _, b := range []string{"two", "three"} {
		p := message.EncodeProperties(map[string]string{message.PropertyUniqKey: client.NewUniqID()})
		batch = client.AppendBatchRecord(batch, []byte(b), []byte(p))
	}
	if res, err = c.SendMessage(ctx, q.Addr, &client.Send{Group: "g", Topic: topic, BrokerName: q.BrokerName,
		QueueID: q.QueueID, Body: batch, Batch: true}); err != nil || res.QueueOffset != 1 {
		t.Fatalf("batch send: %+v, %v", res, err)
	}

	testutil.WaitFor(t, 5*time.Second, "3 messages dispatched", func() bool {
		n, err := c.QueueOffset(ctx, remoting.GetMaxOffset, q, 0)
		return err == nil && n == 3
	})
	if n, err := c.QueueOffset(ctx, remoting.GetMinOffset, q, 0); err != nil || n != 0 {
		t.Errorf("min offset %d, %v", n, err)
	}

	pr, err := c.PullMessage(ctx, q.Addr, &client.Pull{Group: "g", Topic: topic, BrokerName: q.BrokerName,
		QueueID: q.QueueID, Offset: 0, MaxNums: 32})
	if err != nil {
		t.Fatal(err)
	}
	var bodies []string
	for _, m := range pr.Msgs {
		bodies = append(bodies, string(m.Body))
	}
	if pr.Status != client.PullFound || pr.NextBegin != 3 || strings.Join(bodies, ",") != "one,two,three" {
		t.Errorf("pull: %s next %d bodies %v", pr.Status, pr.NextBegin, bodies)
	}
	if got := message.ParseProperties(pr.Msgs[0].Properties)[message.PropertyUniqKey]; got != uniq {
		t.Errorf("first message's UNIQ_KEY %q, want %q", got, uniq)
	}
	if pr, err = c.PullMessage(ctx, q.Addr, &client.Pull{Group: "g", Topic: topic, QueueID: q.QueueID, Offset: 3,
		MaxNums: 32}); err != nil || pr.Status != client.PullNoNewMsg {
		t.Errorf("pull past the end: %+v, %v", pr, err)
	}

	// A group that committed nothing on a queue that starts at 0 is answered 0 (RocketMQ's broker does
	// the same), QUERY_NOT_FOUND only when the queue's first message is gone.
	if off, _, err := c.QueryConsumerOffset(ctx, "g", q); err != nil || off != 0 {
		t.Errorf("offset of a group that committed none: %d, %v", off, err)
	}
	if err := c.UpdateConsumerOffset(ctx, "g", q, 2); err != nil {
		t.Fatal(err)
	}
	if off, found, err := c.QueryConsumerOffset(ctx, "g", q); err != nil || !found || off != 2 {
		t.Errorf("committed offset %d found %t, %v; want 2", off, found, err)
	}

	info, err := c.RuntimeInfo(ctx, q.Addr)
	if err != nil || info["brokerVersionDesc"] == "" {
		t.Errorf("runtime info %v, %v", info, err)
	}
}

// TestNamesrvFailover: a name server that drops the connection is skipped for the next, and the one that
// answered is asked first from then on (the dropping one sees no second connection); with every name server
// unreachable the error names each.
func TestNamesrvFailover(t *testing.T) {
	cl := cluster.Start(t, cluster.Options{})
	dropper, accepts := droppingServer(t)
	c := newClient(t, []string{dropper, cl.NamesrvAddrs()[0]})
	ctx := context.Background()
	ci, err := c.ClusterInfo(ctx)
	if err != nil {
		t.Fatalf("cluster info with the first name server dropping connections: %v", err)
	}
	if len(ci.BrokerAddrTable) != 1 {
		t.Errorf("cluster info %+v", ci)
	}
	if _, err := c.TopicList(ctx); err != nil {
		t.Errorf("topic list: %v", err)
	}
	if n := accepts.Load(); n != 1 {
		t.Errorf("the dropping name server accepted %d connections, want 1: the answering one is asked first", n)
	}

	dead := deadAddr(t)
	c2 := newClient(t, []string{dead, deadAddr(t)})
	_, err = c2.ClusterInfo(ctx)
	if err == nil || !strings.Contains(err.Error(), dead) || strings.Count(err.Error(), "GET_BROKER_CLUSTER_INFO") != 2 {
		t.Errorf("every name server down: %v", err)
	}
	var re *client.ResponseError
	if errors.As(err, &re) {
		t.Errorf("an unreachable name server is not a refusal: %v", re)
	}
	if _, err := newClient(t, nil).Route(ctx, "T"); !errors.Is(err, client.ErrNoNamesrv) {
		t.Errorf("no name server: %v", err)
	}
}

// droppingServer accepts connections and closes each at once, counting them.
func droppingServer(t *testing.T) (string, *atomic.Int32) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int32
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			n.Add(1)
			_ = conn.Close()
		}
	}()
	t.Cleanup(func() { _ = l.Close(); <-done })
	return l.Addr().String(), &n
}

// fakeNamesrv serves GET_ROUTEINFO_BY_TOPIC with h (plain TCP, or TLS with cfg.TLS) and counts the
// requests in n.
func fakeNamesrv(t *testing.T, cfg remoting.ServerConfig, n *atomic.Int32, h func(req *remoting.Command) *remoting.Command) string {
	t.Helper()
	cfg.ListenAddr = "127.0.0.1:0"
	s := remoting.NewServer(cfg, testutil.Logger(t, slog.LevelWarn))
	s.Register(remoting.GetRouteInfoByTopic, remoting.NewPool("ns", 1, 16), func(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
		n.Add(1)
		return h(req)
	})
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s.Addr().String()
}

// refuse answers every request with code.
func refuse(code remoting.ResponseCode) func(*remoting.Command) *remoting.Command {
	return func(req *remoting.Command) *remoting.Command {
		return remoting.NewResponse(code, "no route of "+req.ExtFields["topic"])
	}
}

// routeOK answers with an empty route.
func routeOK(*remoting.Command) *remoting.Command {
	return remoting.NewJSONResponse(protocol.TopicRouteData{})
}

// TestResponseError: a refusal is a *ResponseError with the code, the address and the remark, matched by
// errors.Is and HasCode, and it is final: the next name server is not asked.
func TestResponseError(t *testing.T) {
	var first, second atomic.Int32
	a := fakeNamesrv(t, remoting.ServerConfig{}, &first, refuse(remoting.TopicNotExist))
	b := fakeNamesrv(t, remoting.ServerConfig{}, &second, refuse(remoting.TopicNotExist))
	c := newClient(t, []string{a, b})
	_, err := c.Route(context.Background(), "Missing")
	var re *client.ResponseError
	if !errors.As(err, &re) {
		t.Fatalf("route of a missing topic: %v, want a *ResponseError", err)
	}
	if re.Code != remoting.TopicNotExist || re.Addr != a || re.Request != remoting.GetRouteInfoByTopic || re.Remark != "no route of Missing" {
		t.Errorf("response error %+v", re)
	}
	if !errors.Is(err, &client.ResponseError{Code: remoting.TopicNotExist}) || errors.Is(err, &client.ResponseError{Code: remoting.NoPermission}) {
		t.Errorf("errors.Is by code does not match: %v", err)
	}
	if !client.HasCode(err, remoting.TopicNotExist) || !strings.Contains(err.Error(), "topic Missing does not exist") {
		t.Errorf("error %q", err)
	}
	if first.Load() != 1 || second.Load() != 0 {
		t.Errorf("requests: first name server %d, second %d; a refusal must be final", first.Load(), second.Load())
	}
}

func TestRouteQueues(t *testing.T) {
	r := &protocol.TopicRouteData{
		QueueDatas: []protocol.QueueData{
			{BrokerName: "b", ReadQueueNums: 2, WriteQueueNums: 1, Perm: 6},
			{BrokerName: "a", ReadQueueNums: 1, WriteQueueNums: 2, Perm: 6},
			{BrokerName: "ro", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 4},
			{BrokerName: "nomaster", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6},
		},
		BrokerDatas: []protocol.BrokerData{
			{BrokerName: "a", BrokerAddrs: map[int64]string{0: "A:1"}},
			{BrokerName: "b", BrokerAddrs: map[int64]string{0: "B:1", 1: "B:2"}},
			{BrokerName: "ro", BrokerAddrs: map[int64]string{0: "R:1"}},
			{BrokerName: "nomaster", BrokerAddrs: map[int64]string{1: "N:2"}},
		},
	}
	str := func(qs []client.Queue) string {
		var parts []string
		for _, q := range qs {
			parts = append(parts, q.String()+"@"+q.Addr)
		}
		return strings.Join(parts, " ")
	}
	if got, want := str(client.RouteQueues(r, "T", "", true)), "a/0@A:1 a/1@A:1 b/0@B:1"; got != want {
		t.Errorf("write queues %q, want %q", got, want)
	}
	if got, want := str(client.RouteQueues(r, "T", "", false)), "a/0@A:1 b/0@B:1 b/1@B:1 ro/0@R:1"; got != want {
		t.Errorf("read queues %q, want %q", got, want)
	}
	if got, want := str(client.RouteQueues(r, "T", "b", false)), "b/0@B:1 b/1@B:1"; got != want {
		t.Errorf("read queues of b %q, want %q", got, want)
	}
	if q := client.RouteQueues(r, "T", "a", true)[0]; client.MQString(q.MessageQueue) != "MessageQueue [topic=T, brokerName=a, queueId=0]" {
		t.Errorf("MQString %s", client.MQString(q.MessageQueue))
	}
}

func TestNewUniqID(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		id := client.NewUniqID()
		if len(id) != 32 || strings.ToUpper(id) != id || seen[id] {
			t.Fatalf("id %q: want 32 upper-case hex digits, distinct", id)
		}
		seen[id] = true
	}
}

func TestPullExtFlags(t *testing.T) {
	ext := client.PullExt(&client.Pull{Topic: "T", QueueID: 3, Offset: 7, MaxNums: 4, LongPoll: true,
		Suspend: 1500 * time.Millisecond, Commit: true, CommitOffset: 7, BrokerName: "b"})
	want := remoting.PullFlagSubscription | remoting.PullFlagSuspend | remoting.PullFlagCommitOffset
	if ext["sysFlag"] != strconv.Itoa(want) || ext["suspendTimeoutMillis"] != "1500" || ext["subscription"] != "*" ||
		ext["commitOffset"] != "7" || ext["bname"] != "b" || ext["queueId"] != "3" {
		t.Errorf("long-polling committing pull: %v", ext)
	}
	ext = client.PullExt(&client.Pull{Topic: "T", Subscription: "TagA"})
	if ext["sysFlag"] != strconv.Itoa(remoting.PullFlagSubscription) || ext["subscription"] != "TagA" || ext["bname"] != "" {
		t.Errorf("plain pull: %v", ext)
	}
}

func TestSplitAddrs(t *testing.T) {
	if got := client.SplitAddrs(" a:1; b:2,c:3 ;;"); strings.Join(got, "|") != "a:1|b:2|c:3" {
		t.Errorf("SplitAddrs: %q", got)
	}
}

func TestReadAddr(t *testing.T) {
	for _, tc := range []struct {
		addrs map[int64]string
		want  string
	}{
		{map[int64]string{0: "M", 1: "S1", 2: "S2"}, "M"},
		{map[int64]string{2: "S2", 1: "S1"}, "S1"},
		{map[int64]string{}, ""},
		{nil, ""},
	} {
		if got := client.ReadAddr(tc.addrs); got != tc.want {
			t.Errorf("ReadAddr(%v) = %q, want %q", tc.addrs, got, tc.want)
		}
	}
}

// TestCredentialsSign: with Credentials every request carries a signature the server verifies; without,
// the server's refusal comes back as NO_PERMISSION.
func TestCredentialsSign(t *testing.T) {
	var n atomic.Int32
	var signedBy atomic.Value
	ns := fakeNamesrv(t, remoting.ServerConfig{}, &n, func(req *remoting.Command) *remoting.Command {
		ak, err := remoting.VerifySignature(req, func(ak string) (string, bool) { return "12345678", ak == "rocketmq2" })
		if err != nil {
			return remoting.NewResponse(remoting.NoPermission, err.Error())
		}
		signedBy.Store(ak)
		return routeOK(req)
	})
	ctx := context.Background()
	signed := client.New(client.Config{Namesrvs: []string{ns}, Credentials: remoting.Credentials{AccessKey: "rocketmq2", SecretKey: "12345678"}})
	defer signed.Close()
	if _, err := signed.Route(ctx, "T"); err != nil || signedBy.Load() != "rocketmq2" {
		t.Fatalf("signed route: %v (signed by %v)", err, signedBy.Load())
	}
	if _, err := newClient(t, []string{ns}).Route(ctx, "T"); !client.HasCode(err, remoting.NoPermission) {
		t.Errorf("unsigned route: %v, want NO_PERMISSION", err)
	}
}

// TestTLS: with Config.TLS the client speaks TLS to a server that refuses plain connections; without it
// the same server cannot be reached.
func TestTLS(t *testing.T) {
	certPEM, keyPEM, err := remoting.GenerateSelfSignedCert([]string{"127.0.0.1"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int32
	ns := fakeNamesrv(t, remoting.ServerConfig{TLSMode: remoting.TLSEnforcing,
		TLS: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}}, &n, routeOK)
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(certPEM) {
		t.Fatal("certificate not added")
	}
	ctx := context.Background()
	c := client.New(client.Config{Namesrvs: []string{ns}, TLS: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}})
	defer c.Close()
	if _, err := c.Route(ctx, "T"); err != nil {
		t.Fatalf("route over TLS: %v", err)
	}
	plain := client.New(client.Config{Namesrvs: []string{ns}, Timeout: time.Second})
	defer plain.Close()
	if _, err := plain.Route(ctx, "T"); err == nil || n.Load() != 1 {
		t.Errorf("plain route to a TLS-only server: %v, %d requests served", err, n.Load())
	}
}
