// Package peertlstest makes a throw-away CA and node certificates at test time (crypto/x509,
// ECDSA P-256) and writes them where a peertls.Config can read them.
package peertlstest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rocketraft/rocketraft/internal/peertls"
)

// CA is a test certificate authority.
type CA struct {
	t    testing.TB
	dir  string
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	// CertPath is the CA certificate's PEM file (peerTlsTrustCertPath).
	CertPath string
}

var serial atomic.Int64

func nextSerial() *big.Int { return big.NewInt(time.Now().UnixNano() + serial.Add(1)) }

// NewCA makes a CA named name under a new t.TempDir().
func NewCA(t testing.TB, name string) *CA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: nextSerial(), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	ca := &CA{t: t, dir: t.TempDir(), cert: cert, key: key}
	ca.CertPath = filepath.Join(ca.dir, "ca.pem")
	writePEM(t, ca.CertPath, "CERTIFICATE", der)
	return ca
}

// Node issues a certificate naming rocketraft://group/id (plus 127.0.0.1 and localhost) and
// returns a Config (enforcing) with its files and this CA as the trust.
func (ca *CA) Node(group, id string) peertls.Config {
	ca.t.Helper()
	return ca.Issue(id+"."+group, []*url.URL{peertls.NodeURI(group, id)})
}

// Issue issues a certificate with the given common name and URI names, as Node does.
func (ca *CA) Issue(cn string, uris []*url.URL) peertls.Config {
	t := ca.t
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: nextSerial(), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		URIs:        uris, DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp(ca.dir, "node-")
	if err != nil {
		t.Fatal(err)
	}
	c := peertls.Config{Mode: peertls.ModeEnforcing, CertPath: filepath.Join(dir, "node.pem"),
		KeyPath: filepath.Join(dir, "node.key"), TrustCertPath: ca.CertPath}
	writePEM(t, c.CertPath, "CERTIFICATE", der)
	writePEM(t, c.KeyPath, "PRIVATE KEY", keyDER)
	return c
}

func writePEM(t testing.TB, path, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// ClientPresenting is a TLS client config that presents the certificate of c and checks nothing of the
// server: what a rogue peer holding a certificate of some CA dials with.
func ClientPresenting(t testing.TB, c peertls.Config) *tls.Config {
	t.Helper()
	cert, err := tls.LoadX509KeyPair(c.CertPath, c.KeyPath)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, InsecureSkipVerify: true}
}
