package peertls_test

import (
	"crypto/tls"
	"errors"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/rocketraft/rocketraft/internal/peertls"
	"github.com/rocketraft/rocketraft/internal/peertls/peertlstest"
)

func TestLoadErrorsNameTheKey(t *testing.T) {
	ca := peertlstest.NewCA(t, "cluster")
	good := ca.Node("g", "n0")
	other := ca.Node("g", "n1")
	empty := t.TempDir() + "/empty.pem"
	if err := os.WriteFile(empty, []byte("nothing"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		edit func(c *peertls.Config)
		key  string
	}{
		{"bad mode", func(c *peertls.Config) { c.Mode = "strict" }, "peerTlsMode"},
		{"no cert key", func(c *peertls.Config) { c.CertPath = "" }, "peerTlsCertPath"},
		{"missing cert file", func(c *peertls.Config) { c.CertPath += ".gone" }, "peerTlsCertPath"},
		{"missing key file", func(c *peertls.Config) { c.KeyPath += ".gone" }, "peerTlsKeyPath"},
		{"key of another cert", func(c *peertls.Config) { c.KeyPath = other.KeyPath }, "peerTlsKeyPath"},
		{"missing CA", func(c *peertls.Config) { c.TrustCertPath += ".gone" }, "peerTlsTrustCertPath"},
		{"CA file without a cert", func(c *peertls.Config) { c.TrustCertPath = empty }, "peerTlsTrustCertPath"},
		{"cert of another CA", func(c *peertls.Config) { c.TrustCertPath = peertlstest.NewCA(t, "x").CertPath }, "peerTlsCertPath"},
	}
	for _, tc := range cases {
		c := good
		tc.edit(&c)
		_, err := peertls.Load(c, "g", nil)
		if err == nil || !strings.Contains(err.Error(), "config key "+tc.key) {
			t.Errorf("%s: got %v, want an error naming %s", tc.name, err, tc.key)
		}
	}
	if _, err := peertls.Load(good, "other-group", nil); err == nil || !strings.Contains(err.Error(), "names no node of group") {
		t.Errorf("a certificate of another group loaded: %v", err)
	}
	if m, err := peertls.Load(peertls.DefaultConfig(), "g", nil); m != nil || err != nil {
		t.Errorf("disabled: %v %v", m, err)
	}
}

// handshake runs one TLS handshake over a loopback pair and returns both sides' errors and the
// id the server certified.
func handshake(t *testing.T, srv, cli *peertls.Material, want string) (serr, cerr error, id string) {
	t.Helper()
	return handshakeWith(t, srv, cli.ClientConfig(want))
}

func handshakeWith(t *testing.T, srv *peertls.Material, ccfg *tls.Config) (serr, cerr error, id string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		c, err := ln.Accept()
		if err != nil {
			serr = err
			return
		}
		defer c.Close()
		tc := tls.Server(c, srv.ServerConfig())
		_ = tc.SetDeadline(time.Now().Add(10 * time.Second))
		if serr = tc.Handshake(); serr == nil {
			id, serr = srv.PeerID(tc.ConnectionState())
			_, _ = tc.Write([]byte{1}) // let the client's handshake finish reading
		}
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	tc := tls.Client(c, ccfg)
	_ = tc.SetDeadline(time.Now().Add(10 * time.Second))
	cerr = tc.Handshake()
	if cerr == nil {
		_, cerr = tc.Read(make([]byte, 1))
	}
	_ = tc.Close()
	<-done
	return serr, cerr, id
}

func mustLoad(t *testing.T, c peertls.Config, group string) *peertls.Material {
	t.Helper()
	m, err := peertls.Load(c, group, nil)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestHandshakeChecksBothEnds(t *testing.T) {
	ca := peertlstest.NewCA(t, "cluster")
	n0 := mustLoad(t, ca.Node("g", "n0"), "g")
	n1 := mustLoad(t, ca.Node("g", "n1"), "g")
	if serr, cerr, id := handshake(t, n0, n1, "n0"); serr != nil || cerr != nil || id != "n1" {
		t.Fatalf("members: server %v, client %v, id %q", serr, cerr, id)
	}
	// The dialer expected n2 at that address: n0's certificate does not name it.
	if _, cerr, _ := handshake(t, n0, n1, "n2"); cerr == nil || !strings.Contains(cerr.Error(), `names "n0"`) {
		t.Errorf("a server naming another node was accepted: %v", cerr)
	}
	// A client of another CA, and a client of this CA but another group, are refused.
	rogueCA := peertlstest.NewCA(t, "rogue")
	if serr, _, _ := handshakeWith(t, n0, peertlstest.ClientPresenting(t, rogueCA.Node("g", "n1"))); !errors.Is(serr, peertls.ErrRefused) || !strings.Contains(serr.Error(), "not signed by the cluster CA") {
		t.Errorf("a client of another CA was accepted: %v", serr)
	}
	if serr, _, _ := handshakeWith(t, n0, peertlstest.ClientPresenting(t, ca.Node("h", "n1"))); serr == nil || !strings.Contains(serr.Error(), "names no node of group") {
		t.Errorf("a client of another group was accepted: %v", serr)
	}
	// No client certificate at all.
	if serr, _, _ := handshakeWith(t, n0, &tls.Config{InsecureSkipVerify: true}); serr == nil {
		t.Errorf("a client without a certificate was accepted")
	}
}

func TestReloadOnFileChange(t *testing.T) {
	ca := peertlstest.NewCA(t, "cluster")
	c0 := ca.Node("g", "n0")
	n0 := mustLoad(t, c0, "g")
	n1 := mustLoad(t, ca.Node("g", "n1"), "g")
	// Swap n0's files for a certificate naming n5: the next handshake serves it.
	c5 := ca.Node("g", "n5")
	for _, p := range [][2]string{{c5.CertPath, c0.CertPath}, {c5.KeyPath, c0.KeyPath}} {
		data, err := os.ReadFile(p[0])
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p[1], data, 0o600); err != nil {
			t.Fatal(err)
		}
		// Make sure the stamp moves even on a coarse-grained file system.
		future := time.Now().Add(time.Minute)
		if err := os.Chtimes(p[1], future, future); err != nil {
			t.Fatal(err)
		}
	}
	if serr, cerr, _ := handshake(t, n0, n1, "n5"); serr != nil || cerr != nil {
		t.Fatalf("after the swap n0 does not serve n5's certificate: server %v, client %v", serr, cerr)
	}
	// A broken key file is not taken: the loaded pair stays.
	if err := os.WriteFile(c0.KeyPath, []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	if serr, cerr, _ := handshake(t, n0, n1, "n5"); serr != nil || cerr != nil {
		t.Fatalf("a broken key file replaced the loaded pair: server %v, client %v", serr, cerr)
	}
}

// TestTrustRotation: appending a new CA to the trust file (a rotation bundle) makes the node accept peers
// of the new CA at the next handshake, while its own certificate of the old CA keeps working.
func TestTrustRotation(t *testing.T) {
	oldCA := peertlstest.NewCA(t, "old")
	newCA := peertlstest.NewCA(t, "new")
	c0 := oldCA.Node("g", "n0")
	n0 := mustLoad(t, c0, "g")
	fromNew := peertlstest.ClientPresenting(t, newCA.Node("g", "n1"))
	if serr, _, _ := handshakeWith(t, n0, fromNew); serr == nil {
		t.Fatal("a peer of the new CA was accepted before the rotation")
	}
	oldPEM, err := os.ReadFile(oldCA.CertPath)
	if err != nil {
		t.Fatal(err)
	}
	newPEM, err := os.ReadFile(newCA.CertPath)
	if err != nil {
		t.Fatal(err)
	}
	// n0's own copy of the trust file (the CA's file is shared with the other nodes of the test).
	trust := t.TempDir() + "/trust.pem"
	if err := os.WriteFile(trust, oldPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	c0.TrustCertPath = trust
	n0 = mustLoad(t, c0, "g")
	if err := os.WriteFile(trust, append(append([]byte{}, oldPEM...), newPEM...), 0o600); err != nil {
		t.Fatal(err)
	}
	future := time.Now().Add(time.Minute)
	if err := os.Chtimes(trust, future, future); err != nil {
		t.Fatal(err)
	}
	if serr, cerr, id := handshakeWith(t, n0, fromNew); serr != nil || cerr != nil || id != "n1" {
		t.Fatalf("after the rotation: server %v, client %v, id %q", serr, cerr, id)
	}
	if serr, cerr, _ := handshake(t, n0, mustLoad(t, oldCA.Node("g", "n2"), "g"), "n0"); serr != nil || cerr != nil {
		t.Fatalf("a peer of the old CA after the rotation: server %v, client %v", serr, cerr)
	}
}
