package namesrv

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rocketraft/rocketraft/internal/peertls"
	"github.com/rocketraft/rocketraft/internal/peertls/peertlstest"
	"github.com/rocketraft/rocketraft/remoting"
)

// certACLFixture is aclFixture with the port in permissive TLS asking for client certificates, and the
// cluster CA ca as peerTlsTrustCertPath.
func certACLFixture(t *testing.T, ca *peertlstest.CA) *fixture {
	t.Helper()
	certPEM, keyPEM, err := remoting.GenerateSelfSignedCert([]string{"127.0.0.1"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certPath, keyPath := filepath.Join(dir, "ns.crt"), filepath.Join(dir, "ns.key")
	for path, data := range map[string][]byte{certPath: certPEM, keyPath: keyPEM} {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	f := aclFixture(t)
	_ = f.ns.Close() // aclFixture wrote the ACL file; start again with TLS on the same home
	cfg := f.ns.cfg
	cfg.TLS.ServerMode, cfg.TLS.ServerCertPath, cfg.TLS.ServerKeyPath = string(remoting.TLSPermissive), certPath, keyPath
	cfg.TLS.ServerNeedClientAuth = "optional"
	cfg.ACL.PeerTlsTrustCertPath = ca.CertPath
	f.ns = startNamesrv(t, cfg)
	f.addr = f.ns.Addr()
	return f
}

// tlsClientWith dials TLS presenting the certificate of c (none when c is zero), signing with ak/sk when set.
func tlsClientWith(t *testing.T, c peertls.Config, ak, sk string) *remoting.Client {
	t.Helper()
	tc := remoting.TLSConfig{Enable: true, ClientCertPath: c.CertPath, ClientKeyPath: c.KeyPath}
	cfg, err := tc.ClientTLS()
	if err != nil {
		t.Fatal(err)
	}
	cl := remoting.NewClient(remoting.ClientConfig{TLS: cfg, DialTimeout: 5 * time.Second,
		Credentials: remoting.Credentials{AccessKey: ak, SecretKey: remoting.Secret(sk)}}, testLogger(t))
	t.Cleanup(func() { _ = cl.Close() })
	return cl
}

// TestACLClientCertificateAuthorisesWrites: under aclEnable with peerTlsTrustCertPath, a node certificate
// of the cluster CA registers a broker and deletes a topic without a signature, and with one; a certificate
// of another CA, a certificate of the CA that names no node, TLS without a certificate and a plain
// connection are refused unless signed, and change nothing.
func TestACLClientCertificateAuthorisesWrites(t *testing.T) {
	ca := peertlstest.NewCA(t, "cluster")
	f := certACLFixture(t, ca)
	node := ca.Node("broker-a", "0")
	f.register(tlsClientWith(t, node, "", ""), brokerA) // unsigned, by certificate
	_, before, ok := f.route("TopicTest")
	if !ok {
		t.Fatal("no route after the certificate's registration")
	}

	forged := brokerA
	forged.addr, forged.version, forged.topics = "6.6.6.6:10911", 99, topicsOf("TopicTest", "Evil")
	ext, body := registerCmd(t, forged)
	del := map[string]string{"topic": "TopicTest"}
	for name, cl := range map[string]*remoting.Client{
		"another CA's node":        tlsClientWith(t, peertlstest.NewCA(t, "rogue").Node("broker-a", "0"), "", ""),
		"the CA's, naming no node": tlsClientWith(t, ca.Issue("app", nil), "", ""),
		"TLS without certificate":  tlsClientWith(t, peertls.Config{}, "", ""),
		"plain":                    f.cl,
	} {
		for code, req := range map[remoting.RequestCode][2]any{
			remoting.RegisterBroker:       {ext, body},
			remoting.DeleteTopicInNamesrv: {del, []byte(nil)},
		} {
			resp := f.callOn(cl, code, req[0].(map[string]string), req[1].([]byte))
			if resp.Code != int32(remoting.NoPermission) {
				t.Errorf("%s, %s: got %s %q, want NO_PERMISSION", name, code, remoting.ResponseCode(resp.Code), resp.Remark)
			}
			if strings.HasPrefix(name, "another") && !strings.Contains(resp.Remark, "client certificate does not authorise") {
				t.Errorf("%s: the refusal does not say why the certificate failed: %q", name, resp.Remark)
			}
		}
	}
	if _, after, _ := f.route("TopicTest"); after != before {
		t.Fatalf("the route changed:\nbefore %s\nafter  %s", before, after)
	}
	if _, _, ok := f.route("Evil"); ok {
		t.Fatal("a refused registration's topic has a route")
	}

	// A certificate that does not authorise, with a good signature: the signature path still works.
	signed := tlsClientWith(t, ca.Issue("app", nil), "brokerAccount", "brokerSecret1")
	b := brokerA
	b.name, b.addr, b.topics = "broker-b", "127.0.0.1:20911", topicsOf("TopicB")
	f.register(signed, b)
	// The node certificate with a signature of the broker account; then the node deletes a topic unsigned.
	b.name, b.addr, b.topics = "broker-c", "127.0.0.1:30911", topicsOf("TopicC")
	f.register(tlsClientWith(t, node, "brokerAccount", "brokerSecret1"), b)
	for _, topic := range []string{"TopicB", "TopicC"} {
		if _, _, ok := f.route(topic); !ok {
			t.Fatalf("no route of %s", topic)
		}
	}
	if resp := f.callOn(tlsClientWith(t, node, "", ""), remoting.DeleteTopicInNamesrv, del, nil); resp.Code != int32(remoting.Success) {
		t.Fatalf("delete topic by certificate: %v", resp)
	}
	if _, _, ok := f.route("TopicTest"); ok {
		t.Fatal("route after the certificate's deletion")
	}
}

func TestACLClientCertificateConfigNamesTheKey(t *testing.T) {
	ca := peertlstest.NewCA(t, "cluster")
	base := testConfig(t)
	base.ACL.AclEnable = true
	base.ACL.PeerTlsTrustCertPath = ca.CertPath
	base.TLS.ServerMode, base.TLS.TestModeEnable, base.TLS.ServerNeedClientAuth = "enforcing", true, "require"
	if err := base.Validate(); err != nil {
		t.Fatalf("good config: %v", err)
	}
	for name, edit := range map[string]func(c *Config){
		"without aclEnable":    func(c *Config) { c.ACL.AclEnable = false },
		"TLS disabled":         func(c *Config) { c.TLS.ServerMode = "disabled" },
		"no client auth asked": func(c *Config) { c.TLS.ServerNeedClientAuth = "none" },
	} {
		c := base
		edit(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "config key peerTlsTrustCertPath") {
			t.Errorf("%s: %v", name, err)
		}
	}
	// A missing CA file stops New with the key (aclFile present).
	f := aclFixture(t)
	c := f.ns.cfg
	c.TLS = base.TLS
	c.ACL.PeerTlsTrustCertPath = ca.CertPath + ".gone"
	if _, err := New(c, nil); err == nil || !strings.Contains(err.Error(), "config key peerTlsTrustCertPath") {
		t.Fatalf("missing CA file: %v", err)
	}
}
