package broker_test

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/rocketraft/rocketraft/acl"
	"github.com/rocketraft/rocketraft/app/cluster"
	"github.com/rocketraft/rocketraft/broker"
	"github.com/rocketraft/rocketraft/client"
	"github.com/rocketraft/rocketraft/internal/metrics"
	"github.com/rocketraft/rocketraft/internal/peertls"
	"github.com/rocketraft/rocketraft/internal/peertls/peertlstest"
	"github.com/rocketraft/rocketraft/internal/testutil"
	"github.com/rocketraft/rocketraft/namesrv"
	"github.com/rocketraft/rocketraft/protocol"
	"github.com/rocketraft/rocketraft/proxy/v2pb"
	"github.com/rocketraft/rocketraft/remoting"
)

// guardACL is the plain_acl.yml of the name server and the broker in the guard matrix: brokerAccount is the
// broker's own (admin: it creates topics; at the name server it is in aclBrokerAccessKeys), producer1 may
// publish to and subscribe GuardTopic only.
const guardACL = `accounts:
  - accessKey: brokerAccount
    secretKey: brokerSecret1
    admin: true
  - accessKey: producer1
    secretKey: producerSecret1
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms: [GuardTopic=PUB|SUB]
`

const guardTopic = "GuardTopic"

// guardDialTimeout bounds the test clients' dial and TLS handshake: against a hang only (a handshake under
// -race on a loaded machine can take seconds).
const guardDialTimeout = 20 * time.Second

// guardCombo is one cell of the guard matrix.
type guardCombo struct {
	acl, metrics bool
	tls          remoting.TLSMode
}

func (g guardCombo) String() string {
	onOff := map[bool]string{false: "off", true: "on"}
	return fmt.Sprintf("acl=%s/metrics=%s/tls=%s", onOff[g.acl], onOff[g.metrics], g.tls)
}

// guardEnv is one name server and one broker serving the gRPC endpoint (enableProxy), configured as combo,
// and the cluster CA whose node certificates the name server takes as write credentials (TLS on, ACL on).
type guardEnv struct {
	t     *testing.T // the combination's test: what the env holds lives as long as it
	combo guardCombo
	logs  *testutil.LogLines // the servers' lines, Info and above
	// clients are the remoting clients by credentials and certificate (remoting).
	clients map[string]*remoting.Client
	c       *cluster.Cluster
	ca      *peertlstest.CA
	ns      *namesrv.Server
	b       *broker.Broker
}

// TestGuardsHoldInEveryCombination: for every combination of ACL on/off, metrics on/off and TLS disabled,
// permissive or enforcing, over the real wire to the name server, the broker's remoting port and its gRPC
// endpoint: with ACL on an unsigned write (REGISTER_BROKER, SEND_MESSAGE, UPDATE_AND_CREATE_TOPIC, gRPC
// SendMessage) is refused (NO_PERMISSION, gRPC PermissionDenied) and changes nothing, a write signed by an
// account that may make it passes, route reads at the name server stay open; with ACL off the same
// unsigned writes pass (the test tells the two apart). Under TLS, a node certificate of the cluster CA
// authorises writes at the name server only, and enforcing refuses plain connections. With metrics on, the
// counters see the traffic beside the guard.
func TestGuardsHoldInEveryCombination(t *testing.T) {
	for _, acl := range []bool{false, true} {
		for _, mx := range []bool{false, true} {
			for _, mode := range []remoting.TLSMode{remoting.TLSDisabled, remoting.TLSPermissive, remoting.TLSEnforcing} {
				combo := guardCombo{acl: acl, metrics: mx, tls: mode}
				t.Run(combo.String(), func(t *testing.T) {
					e := startGuardEnv(t, combo)
					t.Run("startLines", e.checkStartLines)
					t.Run("namesrv", e.checkNamesrv)
					t.Run("broker", e.checkBroker)
					t.Run("grpc", e.checkGrpc)
				})
			}
		}
	}
}

func startGuardEnv(t *testing.T, combo guardCombo) *guardEnv {
	t.Helper()
	e := &guardEnv{t: t, combo: combo, ca: peertlstest.NewCA(t, "cluster"), logs: testutil.NewLogLines(t),
		clients: map[string]*remoting.Client{}}
	aclFile := filepath.Join(t.TempDir(), "plain_acl.yml")
	if err := os.WriteFile(aclFile, []byte(guardACL), 0o600); err != nil {
		t.Fatal(err)
	}
	tlsOn := combo.tls != remoting.TLSDisabled
	serverTLS := func(c *remoting.TLSConfig) {
		c.ServerMode = string(combo.tls)
		if tlsOn {
			c.TestModeEnable, c.ServerNeedClientAuth = true, "optional"
		}
	}
	var harnessTLS *tls.Config
	if tlsOn {
		harnessTLS = clientTLS(t, peertls.Config{})
	}
	e.c = cluster.Start(t, cluster.Options{
		ClientTLS: harnessTLS,
		LogLevel:  cluster.LevelInfo,
		Logs:      e.logs,
		ConfigureNamesrv: func(_ int, cfg *namesrv.Config) {
			serverTLS(&cfg.TLS)
			cfg.ACL.AclEnable, cfg.ACL.AclFile, cfg.ACL.AclBrokerAccessKeys = combo.acl, aclFile, "brokerAccount"
			if combo.acl && tlsOn {
				cfg.ACL.PeerTlsTrustCertPath = e.ca.CertPath
			}
			if combo.metrics {
				cfg.MetricsExporterType, cfg.MetricsPromExporterPort = metrics.ExporterProm, 0
			}
		},
		Configure: func(_ int, cfg *broker.Config) {
			serverTLS(&cfg.TLS)
			cfg.TLS.Enable = tlsOn // the broker's own clients (name server, its gRPC endpoint) dial TLS
			cfg.ACL.AclEnable, cfg.ACL.AclFile = combo.acl, aclFile
			cfg.ACL.AccessKey, cfg.ACL.SecretKey = "brokerAccount", "brokerSecret1"
			cfg.Grpc.EnableProxy, cfg.Grpc.GrpcServerPort = true, testutil.FreePort(t)
			if combo.metrics {
				cfg.MetricsExporterType, cfg.MetricsPromExporterPort = metrics.ExporterProm, 0
			}
		},
	})
	e.ns, e.b = e.c.NameServer(0), e.c.Broker(0)
	admin := e.remoting(t, "brokerAccount", "brokerSecret1", peertls.Config{})
	expectCode(t, "create topic by the admin account", e.call(t, admin, e.b.Addr(), remoting.UpdateAndCreateTopic,
		topicHeader(guardTopic), nil), remoting.Success)
	e.c.WaitTopicRoute(guardTopic)
	return e
}

// remoting is the env's remoting client that signs with ak/sk (unsigned when ak is empty) and, when the
// servers have TLS, dials TLS presenting cert (none when it is zero). One per kind, kept for the env's life:
// each new TLS connection is a handshake, the dearest step of a check under -race.
func (e *guardEnv) remoting(t *testing.T, ak, sk string, cert peertls.Config) *remoting.Client {
	t.Helper()
	key := ak + "/" + sk + "/" + cert.CertPath
	if cl := e.clients[key]; cl != nil {
		return cl
	}
	cfg := remoting.ClientConfig{DialTimeout: guardDialTimeout,
		Credentials: remoting.Credentials{AccessKey: ak, SecretKey: remoting.Secret(sk)}}
	if e.combo.tls != remoting.TLSDisabled {
		cfg.TLS = clientTLS(t, cert)
	}
	cl := e.plain(cfg)
	e.clients[key] = cl
	return cl
}

// plain is a new client of cfg, closed with the env.
func (e *guardEnv) plain(cfg remoting.ClientConfig) *remoting.Client {
	cl := remoting.NewClient(cfg, cluster.TestLogger(e.t, 0))
	e.t.Cleanup(func() { _ = cl.Close() })
	return cl
}

// clientTLS is the TLS of a client presenting cert (none when zero), not checking the server's certificate.
// It offers X25519 alone: the default hybrid post-quantum key exchange makes each handshake several times
// dearer under -race, and the key exchange is not what the matrix tests.
func clientTLS(t *testing.T, cert peertls.Config) *tls.Config {
	t.Helper()
	c, err := remoting.TLSConfig{Enable: true, ClientCertPath: cert.CertPath, ClientKeyPath: cert.KeyPath}.ClientTLS()
	if err != nil {
		t.Fatal(err)
	}
	c.CurvePreferences = []tls.CurveID{tls.X25519}
	return c
}

func (e *guardEnv) call(t *testing.T, cl *remoting.Client, addr string, code remoting.RequestCode, ext map[string]string,
	body []byte) *remoting.Command {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // a bound against a hang
	defer cancel()
	resp, err := cl.Invoke(ctx, addr, remoting.NewRequest(code, ext, body))
	if err != nil {
		t.Fatalf("%s to %s: %v", code, addr, err)
	}
	return resp
}

// writeWant is the answer an unsigned write gets: NO_PERMISSION with ACL on, SUCCESS without.
func (e *guardEnv) writeWant() remoting.ResponseCode {
	if e.combo.acl {
		return remoting.NoPermission
	}
	return remoting.Success
}

// refusesPlain checks that under enforcing a plain client's request fails (the connection is closed), and
// that otherwise it is answered.
func (e *guardEnv) refusesPlain(t *testing.T, addr string, code remoting.RequestCode, ext map[string]string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := e.plain(remoting.ClientConfig{DialTimeout: guardDialTimeout}).Invoke(ctx, addr, remoting.NewRequest(code, ext, nil))
	if e.combo.tls == remoting.TLSEnforcing && err == nil {
		t.Errorf("a plain %s to %s was answered under tlsServerMode=enforcing", code, addr)
	}
	if e.combo.tls != remoting.TLSEnforcing && err != nil {
		t.Errorf("a plain %s to %s under tlsServerMode=%s: %v", code, addr, e.combo.tls, err)
	}
}

// registerBrokerRequest is a REGISTER_BROKER of brokerName at brokerAddr routing topic, as a broker sends it.
func registerBrokerRequest(clusterName, brokerName, brokerAddr, topic string) (map[string]string, []byte) {
	body, _ := json.Marshal(protocol.RegisterBrokerBody{FilterServerList: []string{}, TopicConfigSerializeWrapper: protocol.TopicConfigSerializeWrapper{
		TopicConfigTable: map[string]*protocol.TopicConfig{topic: {TopicName: topic, ReadQueueNums: 8, WriteQueueNums: 8, Perm: 6}},
		DataVersion:      protocol.DataVersion{Timestamp: time.Now().UnixMilli(), Counter: 1 << 40}}})
	ext := map[string]string{"brokerName": brokerName, "brokerAddr": brokerAddr, "clusterName": clusterName,
		"haServerAddr": brokerAddr, "brokerId": "0", "compressed": "false",
		"bodyCrc32": strconv.FormatUint(uint64(crc32.ChecksumIEEE(body)&0x7FFFFFFF), 10)}
	return ext, body
}

func topicHeader(topic string) map[string]string {
	return map[string]string{"topic": topic, "readQueueNums": "2", "writeQueueNums": "2", "perm": "6"}
}

// checkStartLines: each port's start-up line names the guards that hold on it (remoting/doc.go, "Interceptors").
func (e *guardEnv) checkStartLines(t *testing.T) {
	guards, certs := "none", "clientCerts=none"
	if e.combo.acl {
		guards = "acl"
	}
	tlsOn := e.combo.tls != remoting.TLSDisabled
	if tlsOn {
		certs = "clientCerts=RequestClientCert" // tlsServerNeedClientAuth=optional
	}
	nsGuards := guards
	if e.combo.acl && tlsOn {
		nsGuards = "acl+certWrites"
	}
	nsObservers, brokerObservers := "none", "none"
	if e.combo.metrics {
		nsObservers, brokerObservers = "namesrv_requests", "rpc_latency"
	}
	grpcTLS := "tls=disabled"
	if tlsOn {
		grpcTLS = "tls=tls-only"
	}
	for _, line := range [][]string{
		{`msg="remoting: listening"`, "addr=" + e.ns.Addr(), "tls=" + string(e.combo.tls), certs, "guards=" + nsGuards + " ",
			"observers=" + nsObservers},
		{`msg="remoting: listening"`, "addr=" + e.b.Addr(), "tls=" + string(e.combo.tls), certs, "guards=" + guards + " ",
			"observers=" + brokerObservers},
		{`msg="gRPC endpoint serving"`, "addr=" + e.b.GrpcAddr(), grpcTLS, certs, "guards=" + guards + " "},
	} {
		if n := e.logs.Count(line...); n != 1 {
			t.Errorf("%d start-up lines with %q, want 1", n, line)
		}
	}
}

func (e *guardEnv) checkNamesrv(t *testing.T) {
	addr := e.ns.Addr()
	clusterName := e.b.Config().BrokerClusterName
	routed := func(topic string) bool {
		t.Helper()
		resp := e.call(t, e.remoting(t, "", "", peertls.Config{}), addr, remoting.GetRouteInfoByTopic, map[string]string{"topic": topic}, nil)
		switch remoting.ResponseCode(resp.Code) {
		case remoting.Success:
			return true
		case remoting.TopicNotExist:
			return false
		}
		t.Fatalf("unsigned route read of %s: %s %q", topic, remoting.ResponseCode(resp.Code), resp.Remark)
		return false
	}
	if !routed(guardTopic) {
		t.Fatal("no route of the broker's topic: its signed registration did not pass")
	}
	unsigned := e.remoting(t, "", "", peertls.Config{})
	ext, body := registerBrokerRequest(clusterName, "broker-forged", "127.0.0.66:10911", "ForgedTopic")
	expectCode(t, "unsigned REGISTER_BROKER", e.call(t, unsigned, addr, remoting.RegisterBroker, ext, body), e.writeWant())
	if routed("ForgedTopic") == e.combo.acl {
		t.Errorf("route of ForgedTopic after the unsigned registration: %v", !e.combo.acl)
	}
	client := e.remoting(t, "producer1", "producerSecret1", peertls.Config{})
	ext, body = registerBrokerRequest(clusterName, "broker-client", "127.0.0.67:10911", "ClientTopic")
	expectCode(t, "REGISTER_BROKER signed by a client account", e.call(t, client, addr, remoting.RegisterBroker, ext, body), e.writeWant())
	signed := e.remoting(t, "brokerAccount", "brokerSecret1", peertls.Config{})
	ext, body = registerBrokerRequest(clusterName, "broker-signed", "127.0.0.68:10911", "SignedTopic")
	expectCode(t, "REGISTER_BROKER signed by the broker account", e.call(t, signed, addr, remoting.RegisterBroker, ext, body), remoting.Success)
	if !routed("SignedTopic") {
		t.Error("no route after the signed registration")
	}
	if e.combo.tls != remoting.TLSDisabled {
		// A node certificate of the cluster CA writes (ACL on: peerTlsTrustCertPath); another CA's does not.
		rogue := e.remoting(t, "", "", peertlstest.NewCA(t, "rogue").Node("broker-a", "0"))
		ext, body = registerBrokerRequest(clusterName, "broker-rogue", "127.0.0.69:10911", "RogueTopic")
		expectCode(t, "REGISTER_BROKER with another CA's certificate", e.call(t, rogue, addr, remoting.RegisterBroker, ext, body), e.writeWant())
		node := e.remoting(t, "", "", e.ca.Node("broker-a", "0"))
		ext, body = registerBrokerRequest(clusterName, "broker-node", "127.0.0.70:10911", "NodeTopic")
		expectCode(t, "REGISTER_BROKER with the cluster CA's node certificate", e.call(t, node, addr, remoting.RegisterBroker, ext, body), remoting.Success)
	}
	expectCode(t, "unsigned DELETE_TOPIC_IN_NAMESRV", e.call(t, unsigned, addr, remoting.DeleteTopicInNamesrv,
		map[string]string{"topic": "SignedTopic"}, nil), e.writeWant())
	e.refusesPlain(t, addr, remoting.GetRouteInfoByTopic, map[string]string{"topic": guardTopic})
	if e.combo.metrics {
		// The request counter runs beside the guard: it counted the route reads.
		f, err := metrics.Scrape(context.Background(), e.ns.MetricsAddr())
		if err != nil {
			t.Fatal(err)
		}
		if n := f.Sum("rocketmq_namesrv_requests_total", "request", "GET_ROUTEINFO_BY_TOPIC"); n < 1 {
			t.Errorf("rocketmq_namesrv_requests_total of GET_ROUTEINFO_BY_TOPIC: %v", n)
		}
	}
}

func (e *guardEnv) checkBroker(t *testing.T) {
	addr := e.b.Addr()
	w := &wire{t: t, client: e.remoting(t, "", "", peertls.Config{}), addr: addr}
	expectCode(t, "unsigned send", w.send(guardTopic, 0, []byte("unsigned"), ""), e.writeWant())
	expectCode(t, "unsigned topic create", w.call(remoting.UpdateAndCreateTopic, topicHeader("ForgedTopic"), nil), e.writeWant())
	admin := e.remoting(t, "brokerAccount", "brokerSecret1", peertls.Config{})
	all := e.call(t, admin, addr, remoting.GetAllTopicConfig, nil, nil)
	expectCode(t, "topic configs read by the admin account", all, remoting.Success)
	if made := strings.Contains(string(all.Body), `"ForgedTopic"`); made == e.combo.acl {
		t.Errorf("ForgedTopic exists after the unsigned create: %v", made)
	}
	pub := &wire{t: t, client: e.remoting(t, "producer1", "producerSecret1", peertls.Config{}), addr: addr}
	expectCode(t, "signed send", pub.send(guardTopic, 0, []byte("signed"), ""), remoting.Success)
	expectCode(t, "topic create by a non-admin account", pub.call(remoting.UpdateAndCreateTopic, topicHeader("ClientTopic"), nil),
		e.writeWant())
	// Reads at the broker want a signature too under ACL (RocketMQ's plain ACL checks every request); an
	// account with SUB reads. The signed send above is pulled once dispatched.
	if e.combo.acl {
		expectCode(t, "unsigned pull", w.pull("G_guard", guardTopic, 0, 0, 0, "*"), remoting.NoPermission)
	}
	cluster.Eventually(t, 10*time.Second, func() bool {
		resp := pub.pull("G_guard", guardTopic, 0, 0, 0, "*")
		if resp.Code == int32(remoting.NoPermission) {
			t.Fatalf("signed pull by an account with SUB: %s %q", remoting.ResponseCode(resp.Code), resp.Remark)
		}
		return resp.Code == int32(remoting.Success)
	}, "a signed pull by an account with SUB finds the message sent")
	if e.combo.tls != remoting.TLSDisabled {
		// A node certificate authorises nothing at the broker: its ACL wants a signature.
		node := &wire{t: t, client: e.remoting(t, "", "", e.ca.Node("broker-a", "0")), addr: addr}
		expectCode(t, "unsigned send with the cluster CA's node certificate", node.send(guardTopic, 0, []byte("cert"), ""), e.writeWant())
	}
	e.refusesPlain(t, addr, remoting.GetBrokerConfig, nil)
	if e.combo.metrics {
		// The rpc latency observer sees every answer, the guard's refusals included.
		want := "success"
		if e.combo.acl {
			want = "no_permission"
		}
		cluster.Eventually(t, 10*time.Second, func() bool {
			f, err := metrics.Scrape(context.Background(), e.b.MetricsAddr())
			return err == nil && f.Sum("rocketmq_rpc_latency_milliseconds", "request_code", "update_and_create_topic",
				"response_code", want) >= 1
		}, "rocketmq_rpc_latency counted the unsigned topic create answered %s", want)
	}
}

func (e *guardEnv) checkGrpc(t *testing.T) {
	addr := e.b.GrpcAddr()
	creds := insecure.NewCredentials()
	if e.combo.tls != remoting.TLSDisabled {
		creds = credentials.NewTLS(clientTLS(t, peertls.Config{}))
	}
	rpc := grpcClient(t, addr, creds)
	ctx := func(ak, sk string) context.Context {
		date := time.Now().UTC().Format("20060102T150405Z")
		md := []string{"x-mq-client-id", "guard-matrix@1", "x-mq-protocol", "v2", "x-mq-date-time", date}
		if ak != "" {
			md = append(md, "authorization", "MQv2-HMAC-SHA1 Credential="+ak+", SignedHeaders=x-mq-date-time, Signature="+
				acl.SignV2(sk, date))
		}
		ctx, cancel := context.WithTimeout(metadata.AppendToOutgoingContext(context.Background(), md...), 30*time.Second)
		t.Cleanup(cancel)
		return ctx
	}
	send := func(ak, sk string, rpc v2pb.MessagingServiceClient) (*v2pb.SendMessageResponse, error) {
		return untilAnswered(t, func() (*v2pb.SendMessageResponse, error) {
			return rpc.SendMessage(ctx(ak, sk), &v2pb.SendMessageRequest{Messages: []*v2pb.Message{{
				Topic: &v2pb.Resource{Name: guardTopic}, Body: []byte("grpc"),
				SystemProperties: &v2pb.SystemProperties{MessageId: client.NewUniqID(), MessageType: v2pb.MessageType_NORMAL}}}})
		})
	}
	r, err := send("", "", rpc)
	if e.combo.acl && status.Code(err) != codes.PermissionDenied {
		t.Errorf("unsigned SendMessage: %v %v, want PermissionDenied", r, err)
	}
	if !e.combo.acl && (err != nil || r.Status.Code != v2pb.Code_OK) {
		t.Errorf("unsigned SendMessage without ACL: %v %v", r, err)
	}
	if r, err := send("producer1", "producerSecret1", rpc); err != nil || r.Status.Code != v2pb.Code_OK {
		t.Errorf("signed SendMessage: %v %v", r, err)
	}
	if r, err := send("producer1", "wrongSecret1", rpc); e.combo.acl && status.Code(err) != codes.PermissionDenied {
		t.Errorf("SendMessage with a wrong signature: %v %v, want PermissionDenied", r, err)
	}
	q, err := untilAnswered(t, func() (*v2pb.QueryRouteResponse, error) {
		return rpc.QueryRoute(ctx("producer1", "producerSecret1"), &v2pb.QueryRouteRequest{Topic: &v2pb.Resource{Name: guardTopic}})
	})
	if err != nil || q.Status.Code != v2pb.Code_OK {
		t.Errorf("signed QueryRoute: %v %v", q, err)
	}
	if e.combo.tls != remoting.TLSDisabled {
		// The gRPC port speaks TLS only in both TLS modes (broker/grpc.go, startGrpc).
		plain := grpcClient(t, addr, insecure.NewCredentials())
		if _, err := send("producer1", "producerSecret1", plain); status.Code(err) != codes.Unavailable {
			t.Errorf("plain SendMessage to the TLS gRPC port: %v, want Unavailable", err)
		}
	}
}

// untilAnswered makes a gRPC call again while it is answered PROXY_TIMEOUT, and returns the first other
// answer. The guard rules before the endpoint forwards anything; PROXY_TIMEOUT only says that the endpoint's
// own hop to the broker or the name server timed out (its client gives them 3 s, which a loaded machine
// under -race can exceed), which tells nothing about the guard. Each call is made anew (a send with a new
// message).
func untilAnswered[R interface{ GetStatus() *v2pb.Status }](t *testing.T, call func() (R, error)) (R, error) {
	t.Helper()
	deadline := time.Now().Add(time.Minute) // a bound against a hang, not a timing
	for {
		r, err := call()
		if err != nil || r.GetStatus().GetCode() != v2pb.Code_PROXY_TIMEOUT || time.Now().After(deadline) {
			return r, err
		}
		t.Logf("answered %v; again", r.GetStatus())
	}
}

func grpcClient(t *testing.T, addr string, creds credentials.TransportCredentials) v2pb.MessagingServiceClient {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return v2pb.NewMessagingServiceClient(conn)
}
