package peertls_test

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rocketraft/rocketraft/internal/peertls"
	"github.com/rocketraft/rocketraft/internal/peertls/peertlstest"
)

// chainOf reads the certificate of c as a peer presents it.
func chainOf(t *testing.T, c peertls.Config) []*x509.Certificate {
	t.Helper()
	pair, err := tls.LoadX509KeyPair(c.CertPath, c.KeyPath)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	return []*x509.Certificate{leaf}
}

func TestTrustVerifiesNodeCertificates(t *testing.T) {
	ca := peertlstest.NewCA(t, "cluster")
	trust, err := peertls.LoadTrust("peerTlsTrustCertPath", ca.CertPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	names, err := trust.VerifyNode(chainOf(t, ca.Node("broker-a", "0")))
	if err != nil || len(names) != 1 || names[0] != "rocketraft://broker-a/0" {
		t.Fatalf("node certificate: %v %v", names, err)
	}
	for name, chain := range map[string][]*x509.Certificate{
		"no certificate":           nil,
		"another CA's node":        chainOf(t, peertlstest.NewCA(t, "rogue").Node("broker-a", "0")),
		"the CA's, naming no node": chainOf(t, ca.Issue("app-client", nil)),
	} {
		if _, err := trust.VerifyNode(chain); !errors.Is(err, peertls.ErrRefused) {
			t.Errorf("%s: %v, want ErrRefused", name, err)
		}
	}

	// The CA file is replaced by another CA's: the old nodes are refused, the new ones pass. A file
	// that holds no certificate keeps the CA loaded before it.
	next := peertlstest.NewCA(t, "cluster-2")
	data, err := os.ReadFile(next.CertPath)
	if err != nil {
		t.Fatal(err)
	}
	replace := func(content []byte) {
		tmp := filepath.Join(filepath.Dir(ca.CertPath), "ca.tmp")
		if err := os.WriteFile(tmp, content, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, ca.CertPath); err != nil {
			t.Fatal(err)
		}
	}
	replace(data)
	if _, err := trust.VerifyNode(chainOf(t, ca.Node("broker-a", "0"))); err == nil {
		t.Fatal("a node of the replaced CA still passes")
	}
	if _, err := trust.VerifyNode(chainOf(t, next.Node("broker-a", "0"))); err != nil {
		t.Fatalf("a node of the new CA: %v", err)
	}
	replace([]byte("not a certificate, longer than before to change the size"))
	if _, err := trust.VerifyNode(chainOf(t, next.Node("broker-a", "1"))); err != nil {
		t.Fatalf("after a broken CA file, the loaded CA should stay: %v", err)
	}
}

func TestLoadTrustNamesTheKey(t *testing.T) {
	empty := filepath.Join(t.TempDir(), "empty.pem")
	if err := os.WriteFile(empty, []byte("nothing"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{empty, empty + ".gone"} {
		if _, err := peertls.LoadTrust("peerTlsTrustCertPath", path, nil); err == nil ||
			!strings.Contains(err.Error(), "config key peerTlsTrustCertPath") {
			t.Errorf("%s: %v", path, err)
		}
	}
}

// BenchmarkTrustVerifyNode is the name server's cost per write authorised by a certificate: a stat of the
// CA file and a chain verification.
func BenchmarkTrustVerifyNode(b *testing.B) {
	ca := peertlstest.NewCA(b, "cluster")
	trust, err := peertls.LoadTrust("peerTlsTrustCertPath", ca.CertPath, nil)
	if err != nil {
		b.Fatal(err)
	}
	node := ca.Node("broker-a", "0")
	pair, err := tls.LoadX509KeyPair(node.CertPath, node.KeyPath)
	if err != nil {
		b.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		b.Fatal(err)
	}
	chain := []*x509.Certificate{leaf}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := trust.VerifyNode(chain); err != nil {
			b.Fatal(err)
		}
	}
}
