package e2e

import (
	"context"
	"crypto/tls"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/admin"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/rocketraft/rocketraft/app/cluster"
	"github.com/rocketraft/rocketraft/broker"
	"github.com/rocketraft/rocketraft/namesrv"
	"github.com/rocketraft/rocketraft/remoting"
)

// The accounts of the ACL tests: an admin, a producer that may publish and subscribe anywhere, and a reader
// that may only subscribe.
var (
	aclAdmin    = primitive.Credentials{AccessKey: "rocketmqAdmin", SecretKey: "adminSecret123"}
	aclProducer = primitive.Credentials{AccessKey: "rocketmqProducer", SecretKey: "producerSecret1"}
	aclReader   = primitive.Credentials{AccessKey: "rocketmqReader", SecretKey: "readerSecret12"}
)

const aclFile = `accounts:
  - accessKey: rocketmqAdmin
    secretKey: adminSecret123
    admin: true
  - accessKey: rocketmqProducer
    secretKey: producerSecret1
    defaultTopicPerm: PUB|SUB
    defaultGroupPerm: SUB
  - accessKey: rocketmqReader
    secretKey: readerSecret12
    defaultTopicPerm: SUB
    defaultGroupPerm: SUB
`

// tlsFiles is a self-signed certificate for 127.0.0.1, made for the test and written to its temp folder.
type tlsFiles struct{ cert, key string }

func newTLSFiles(t *testing.T) tlsFiles {
	t.Helper()
	certPEM, keyPEM, err := remoting.GenerateSelfSignedCert([]string{"127.0.0.1", "localhost"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	f := tlsFiles{cert: filepath.Join(dir, "server.crt"), key: filepath.Join(dir, "server.key")}
	if err := os.WriteFile(f.cert, certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f.key, keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

// serverTLS sets a server's tls* keys to mode with the certificate.
func (f tlsFiles) serverTLS(c *remoting.TLSConfig, mode remoting.TLSMode) {
	c.ServerMode, c.ServerCertPath, c.ServerKeyPath = string(mode), f.cert, f.key
}

// anyCert is how the official Go client dials TLS: it accepts any certificate.
var anyCert = &tls.Config{InsecureSkipVerify: true} // the test's own self-signed certificate

// startSecureCluster starts one name server and one broker with ACL on (when acl) and both servers in the TLS
// mode (with the broker's name server client on TLS when the mode is enforcing).
func startSecureCluster(t *testing.T, acl bool, mode remoting.TLSMode) *cluster.Cluster {
	t.Helper()
	var files tlsFiles
	opts := cluster.Options{}
	if mode != remoting.TLSDisabled {
		files = newTLSFiles(t)
		opts.ConfigureNamesrv = func(_ int, c *namesrv.Config) { files.serverTLS(&c.TLS, mode) }
		if mode == remoting.TLSEnforcing {
			opts.ClientTLS = anyCert
		}
	}
	aclPath := filepath.Join(t.TempDir(), "plain_acl.yml")
	if err := os.WriteFile(aclPath, []byte(aclFile), 0o600); err != nil {
		t.Fatal(err)
	}
	opts.Configure = func(_ int, c *broker.Config) {
		c.ACL.AclEnable, c.ACL.AclFile = acl, aclPath
		c.ACL.AccessKey, c.ACL.SecretKey = "brokerAccount", "brokerSecret1" // signs what it sends to name servers
		if mode != remoting.TLSDisabled {
			files.serverTLS(&c.TLS, mode)
			c.TLS.Enable = mode == remoting.TLSEnforcing
		}
	}
	return cluster.Start(t, opts)
}

// wireClient is our own remoting client with the account's credentials, dialling TLS when secure.
func wireClient(t *testing.T, creds primitive.Credentials, secure bool) *remoting.Client {
	cfg := remoting.ClientConfig{DialTimeout: 3 * time.Second,
		Credentials: remoting.Credentials{AccessKey: creds.AccessKey, SecretKey: remoting.Secret(creds.SecretKey)}}
	if secure {
		cfg.TLS = anyCert
	}
	c := remoting.NewClient(cfg, cluster.TestLogger(t, 0))
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// brokerHasTopic asks the broker (as the admin) whether topic is in its topic table.
func brokerHasTopic(t *testing.T, c *cluster.Cluster, topic string, secure bool) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := wireClient(t, aclAdmin, secure).Invoke(ctx, c.Broker(0).Addr(),
		remoting.NewRequest(remoting.GetAllTopicConfig, nil, nil))
	if err != nil || resp.Code != int32(remoting.Success) {
		t.Fatalf("GET_ALL_TOPIC_CONFIG as admin: %v %v", resp, err)
	}
	return strings.Contains(string(resp.Body), `"`+topic+`"`)
}

// sendErr sends body with a fresh producer built from opts and returns the send's error.
func sendErr(t *testing.T, c *cluster.Cluster, topic, body string, opts ...producer.Option) error {
	t.Helper()
	p := newProducer(t, c, append(opts, producer.WithRetry(1))...)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := p.SendSync(ctx, primitive.NewMessage(topic, []byte(body)))
	if err == nil && res.Status != primitive.SendOK {
		err = errors.New("send status " + res.String())
	}
	return err
}

func TestACLOfficialClient(t *testing.T) {
	runACLScenario(t, startSecureCluster(t, true, remoting.TLSDisabled), false)
}

// The same with TLS enforced on the name server and the broker, and the clients on WithTls(true).
func TestACLOfficialClientOverTLS(t *testing.T) {
	plainClientsAfter(t)
	c := startSecureCluster(t, true, remoting.TLSEnforcing)
	runACLScenario(t, c, true)

	// A plain connection to either server is closed at once.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, addr := range []string{c.Broker(0).Addr(), c.NamesrvAddrs()[0]} {
		_, err := wireClient(t, aclAdmin, false).Invoke(ctx, addr, remoting.NewRequest(remoting.GetBrokerClusterInfo, nil, nil))
		if !errors.Is(err, remoting.ErrConnClosed) {
			t.Fatalf("plain call to %s under tlsServerMode=enforcing: %v, want the connection closed", addr, err)
		}
	}
}

func runACLScenario(t *testing.T, c *cluster.Cluster, secure bool) {
	withTLS := func(opts ...producer.Option) []producer.Option {
		if secure {
			opts = append(opts, producer.WithTls(true))
		}
		return opts
	}
	const topic = "AclTopic"

	// An admin account creates a topic; a producer account may not.
	newAdmin := func(creds primitive.Credentials) admin.Admin {
		adm, err := admin.NewAdmin(admin.WithResolver(primitive.NewPassthroughResolver(c.NamesrvAddrs())),
			admin.WithCredentials(creds), admin.WithTls(secure))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = adm.Close() })
		// The official admin client installs its signing interceptor only inside GetAllSubscriptionGroup (its
		// CreateTopic alone sends unsigned requests), and installs another on every call: call it exactly once.
		if _, err := adm.GetAllSubscriptionGroup(context.Background(), c.Broker(0).Addr(), 5*time.Second); err != nil {
			t.Fatalf("%s: get subscription groups: %v", creds.AccessKey, err)
		}
		return adm
	}
	create := func(adm admin.Admin, name string) {
		if err := adm.CreateTopic(context.Background(), admin.WithTopicCreate(name),
			admin.WithBrokerAddrCreate(c.Broker(0).Addr()), admin.WithReadQueueNums(2), admin.WithWriteQueueNums(2)); err != nil {
			t.Fatalf("create topic %s: %v", name, err)
		}
	}
	create(newAdmin(aclAdmin), topic)
	c.WaitTopicRoute(topic)
	create(newAdmin(aclProducer), "AclTopicByProducer") // the official admin client drops the answer's code
	if brokerHasTopic(t, c, "AclTopicByProducer", secure) {
		t.Fatal("a non-admin account created a topic")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := wireClient(t, aclProducer, secure).Invoke(ctx, c.Broker(0).Addr(), remotingTopicCreate("AclTopicByProducer"))
	if err != nil || resp.Code != int32(remoting.NoPermission) ||
		resp.Remark != "No permission: account [rocketmqProducer] is not admin; UPDATE_AND_CREATE_TOPIC needs an admin account" {
		t.Fatalf("topic creation by a non-admin: %v %v", resp, err)
	}

	// Refusals, each answered NO_PERMISSION with a remark naming the account and what it lacks.
	for _, tc := range []struct {
		name  string
		opts  []producer.Option
		wants []string
	}{
		{"no credentials", nil,
			[]string{"CODE: 16", "No permission: the request (SEND_MESSAGE) carries no AccessKey"}},
		{"wrong secret", []producer.Option{producer.WithCredentials(primitive.Credentials{AccessKey: aclProducer.AccessKey,
			SecretKey: "notTheSecret"})}, []string{"CODE: 16", "signature check failed for account [rocketmqProducer]"}},
		{"read-only account", []producer.Option{producer.WithCredentials(aclReader)},
			[]string{"CODE: 16", "No permission: account [rocketmqReader] has no PUB on topic [" + topic + "]"}},
	} {
		err := sendErr(t, c, topic, "refused", withTLS(tc.opts...)...)
		for _, want := range tc.wants {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("%s: send error %v, want it to contain %q", tc.name, err, want)
			}
		}
		for _, secret := range []string{aclAdmin.SecretKey, aclProducer.SecretKey, aclReader.SecretKey, "notTheSecret"} {
			if strings.Contains(err.Error(), secret) {
				t.Fatalf("%s: the remark shows a secret: %v", tc.name, err)
			}
		}
	}

	// The producer account sends; the read-only account consumes what it sent.
	if err := sendErr(t, c, topic, "sent by the producer account", withTLS(producer.WithCredentials(aclProducer))...); err != nil {
		t.Fatalf("send with the producer account: %v", err)
	}
	got := newReceived()
	copts := []consumer.Option{consumer.WithCredentials(aclReader), consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset)}
	if secure {
		copts = append(copts, consumer.WithTls(true))
	}
	startConsumer(t, c, "AclReaderGroup", topic, consumer.MessageSelector{}, got, copts...)
	got.waitDistinct(t, 1, 30*time.Second)
}

// A permissive broker and name server serve plain and TLS clients on the same ports.
func TestTLSPermissiveServesPlainAndTLSClients(t *testing.T) {
	plainClientsAfter(t)
	c := startSecureCluster(t, false, remoting.TLSPermissive)
	const topic = "PermissiveTopic"
	createTopic(t, c, topic, 2) // a plain admin client
	if err := sendErr(t, c, topic, "over plain TCP"); err != nil {
		t.Fatalf("plain producer: %v", err)
	}
	if err := sendErr(t, c, topic, "over TLS", producer.WithTls(true)); err != nil {
		t.Fatalf("TLS producer: %v", err)
	}
	got := newReceived()
	startConsumer(t, c, "PermissiveGroup", topic, consumer.MessageSelector{}, got, consumer.WithTls(true),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset))
	got.waitDistinct(t, 2, 30*time.Second)
	if !got.has("over plain TCP") || !got.has("over TLS") {
		t.Fatalf("received %d messages, not the two sent", len(got.snapshot()))
	}
}
