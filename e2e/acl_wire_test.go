package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/rocketraft/rocketraft/app/cluster"
	"github.com/rocketraft/rocketraft/broker"
	"github.com/rocketraft/rocketraft/remoting"
)

// A broker with accessKey/secretKey signs what it sends to name servers: a stand-in name server that checks
// every REGISTER_BROKER's signature sees the broker's account, over TLS when tlsEnable is on.
func TestBrokerSignsNameServerRequests(t *testing.T) {
	files := newTLSFiles(t)
	var tc remoting.TLSConfig
	files.serverTLS(&tc, remoting.TLSEnforcing)
	mode, serverTLS, err := tc.ServerTLS(nil)
	if err != nil {
		t.Fatal(err)
	}
	verified := make(chan string, 16)
	ns := remoting.NewServer(remoting.ServerConfig{ListenAddr: "127.0.0.1:0", TLSMode: mode, TLS: serverTLS},
		cluster.TestLogger(t, 0))
	pool := remoting.NewPool("ns", 1, 16)
	ns.Register(remoting.RegisterBroker, pool, func(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
		ak, err := remoting.VerifySignature(req, func(k string) (string, bool) { return "brokerSecret1", k == "brokerAccount" })
		if err != nil {
			verified <- "refused: " + err.Error()
			return remoting.NewResponse(remoting.NoPermission, err.Error())
		}
		verified <- ak
		return remoting.NewResponse(remoting.Success, "")
	})
	ns.Register(remoting.UnregisterBroker, pool, func(context.Context, *remoting.Conn, *remoting.Command) *remoting.Command {
		return remoting.NewResponse(remoting.Success, "")
	})
	if err := ns.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ns.Close() })

	cfg := cluster.TestBrokerConfig(t, ns.Addr().String(), "broker-signing")
	cfg.ACL.AccessKey, cfg.ACL.SecretKey = "brokerAccount", "brokerSecret1"
	cfg.TLS.Enable = true
	b, err := broker.New(cfg, broker.Options{Logger: cluster.TestLogger(t, 0)})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	select {
	case got := <-verified:
		if got != "brokerAccount" {
			t.Fatalf("registration: %s", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no registration reached the name server")
	}
}

// With ACL on, the broker answers NO_PERMISSION on the wire; the rules follow the file as it changes; the
// broker's config dump (GET_BROKER_CONFIG, as the admin) masks its secret key.
func TestACLWireReloadAndMaskedSecret(t *testing.T) {
	c := startSecureCluster(t, true, remoting.TLSDisabled)
	addr := c.Broker(0).Addr()
	aclPath := c.Broker(0).Config().ACL.AclPath()
	send := func(creds primitive.Credentials) *remoting.Command {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		resp, err := wireClient(t, creds, false).Invoke(ctx, addr, remoting.NewRequest(remoting.SendMessageV2,
			map[string]string{"a": "PG", "b": "WireTopic", "c": "TBW102", "d": "4", "e": "0", "f": "0", "g": "0", "h": "0",
				"i": "", "j": "0", "k": "false", "m": "false"}, []byte("wire")))
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	if resp := send(aclReader); resp.Code != int32(remoting.NoPermission) ||
		resp.Remark != "No permission: account [rocketmqReader] has no PUB on topic [WireTopic]" {
		t.Fatalf("reader send: %v", resp)
	}

	// The reader gets PUB on WireTopic by editing the file (written aside and renamed into place).
	grant := strings.Replace(aclFile, "  - accessKey: rocketmqReader\n    secretKey: readerSecret12\n",
		"  - accessKey: rocketmqReader\n    secretKey: readerSecret12\n    topicPerms: [WireTopic=PUB|SUB]\n", 1)
	tmp := filepath.Join(filepath.Dir(aclPath), "plain_acl.yml.new")
	if err := os.WriteFile(tmp, []byte(grant), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, aclPath); err != nil {
		t.Fatal(err)
	}
	cluster.Eventually(t, 10*time.Second, func() bool { return send(aclReader).Code != int32(remoting.NoPermission) },
		"the reader's new PUB permission in force")

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := wireClient(t, aclAdmin, false).Invoke(ctx, addr, remoting.NewRequest(remoting.GetBrokerConfig, nil, nil))
	if err != nil || resp.Code != int32(remoting.Success) {
		t.Fatalf("GET_BROKER_CONFIG: %v %v", resp, err)
	}
	dump := string(resp.Body)
	for _, want := range []string{"aclEnable=true", "tlsServerMode=disabled", "accessKey=brokerAccount", "secretKey=******"} {
		if !strings.Contains(dump, want) {
			t.Fatalf("config dump without %q:\n%s", want, dump)
		}
	}
	if strings.Contains(dump, "brokerSecret1") {
		t.Fatal("GET_BROKER_CONFIG shows the broker's secret key")
	}
}

func TestBrokerSecurityConfigRefusedByKey(t *testing.T) {
	cfg := cluster.TestBrokerConfig(t, "127.0.0.1:9", "broker-masked")
	cfg.ACL.AccessKey, cfg.ACL.SecretKey = "brokerAccount", "brokerSecret1"
	cfg.ACL.AclEnable = true
	cfg.ACL.AclFile = filepath.Join(t.TempDir(), "missing.yml")
	if _, err := broker.New(cfg, broker.Options{Logger: cluster.TestLogger(t, 0)}); err == nil ||
		!strings.Contains(err.Error(), "config key aclFile") {
		t.Fatalf("missing ACL file: %v", err)
	}
	cfg.ACL.AclEnable = false
	cfg.ACL.SecretKey = ""
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "config key secretKey") {
		t.Fatalf("accessKey without secretKey: %v", err)
	}
	cfg.ACL.SecretKey = "brokerSecret1"
	cfg.TLS.ServerMode = "sometimes"
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "config key tlsServerMode") {
		t.Fatalf("bad TLS mode: %v", err)
	}
}
