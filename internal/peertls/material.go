package peertls

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"
)

// Scheme is the URI scheme of a node name in a certificate: rocketraft://<group>/<id>.
const Scheme = "rocketraft"

// NodeURI is the URI subject alternative name of node id of group.
func NodeURI(group, id string) *url.URL {
	return &url.URL{Scheme: Scheme, Host: group, Path: "/" + id}
}

// ErrRefused marks a peer certificate that does not pass the checks (wrapped with the reason).
var ErrRefused = errors.New("peertls: peer certificate refused")

// Material is a node's certificate, key and the cluster CA, re-read when their files change,
// for the links of one group. Safe for concurrent use.
type Material struct {
	cfg    Config
	group  string
	logger *slog.Logger

	mu struct {
		sync.Mutex
		cur    *loaded
		failed [3]stamp // the stamps of the last set that did not load (reported once)
	}
}

// loaded is one consistent set of the three files.
type loaded struct {
	cert   *tls.Certificate
	pool   *x509.CertPool
	stamps [3]stamp // cert, key, trust
}

// stamp is what the reloader compares: a file's modification time and size.
type stamp struct {
	mod  time.Time
	size int64
}

// Load reads the three files of an enforcing Config for the links of group (the Raft group, or
// the brokerName for HA). It returns nil, nil when peer TLS is disabled. An error names the key of
// the file that cannot be used.
func Load(c Config, group string, logger *slog.Logger) (*Material, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if !c.Enforcing() {
		return nil, nil
	}
	if group == "" || strings.ContainsAny(group, "/:") {
		return nil, fmt.Errorf("peertls: group %q is not a valid name for a node certificate (rocketraft://<group>/<id>)", group)
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	m := &Material{cfg: c, group: group, logger: logger}
	l, err := m.load()
	if err != nil {
		return nil, err
	}
	m.mu.cur = l
	return m, nil
}

// Group is the group this material checks peers against.
func (m *Material) Group() string { return m.group }

func statFile(key, path string) (stamp, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return stamp{}, fmt.Errorf("config key %s: %w", key, err)
	}
	return stamp{mod: fi.ModTime(), size: fi.Size()}, nil
}

func (m *Material) stamps() ([3]stamp, error) {
	var s [3]stamp
	var err error
	if s[0], err = statFile("peerTlsCertPath", m.cfg.CertPath); err != nil {
		return s, err
	}
	if s[1], err = statFile("peerTlsKeyPath", m.cfg.KeyPath); err != nil {
		return s, err
	}
	s[2], err = statFile("peerTlsTrustCertPath", m.cfg.TrustCertPath)
	return s, err
}

// load reads the three files; the error names the key at fault.
func (m *Material) load() (*loaded, error) {
	st, err := m.stamps()
	if err != nil {
		return nil, err
	}
	certPEM, err := os.ReadFile(m.cfg.CertPath)
	if err != nil {
		return nil, fmt.Errorf("config key peerTlsCertPath: %w", err)
	}
	keyPEM, err := os.ReadFile(m.cfg.KeyPath)
	if err != nil {
		return nil, fmt.Errorf("config key peerTlsKeyPath: %w", err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("config key peerTlsKeyPath: %s and %s do not make a certificate and its key: %w", m.cfg.CertPath, m.cfg.KeyPath, err)
	}
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		return nil, fmt.Errorf("config key peerTlsCertPath: %w", err)
	}
	if _, err := NameIn(leaf, m.group); err != nil {
		return nil, fmt.Errorf("config key peerTlsCertPath: %s: %w", m.cfg.CertPath, err)
	}
	cert.Leaf = leaf
	caPEM, err := os.ReadFile(m.cfg.TrustCertPath)
	if err != nil {
		return nil, fmt.Errorf("config key peerTlsTrustCertPath: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("config key peerTlsTrustCertPath: %s holds no PEM certificate", m.cfg.TrustCertPath)
	}
	if _, err := leaf.Verify(m.verifyOptions(pool, cert.Certificate[1:])); err != nil {
		return nil, fmt.Errorf("config key peerTlsCertPath: %s is not signed by the CA of peerTlsTrustCertPath %s: %w", m.cfg.CertPath, m.cfg.TrustCertPath, err)
	}
	return &loaded{cert: &cert, pool: pool, stamps: st}, nil
}

func (m *Material) verifyOptions(pool *x509.CertPool, intermediates [][]byte) x509.VerifyOptions {
	inter := x509.NewCertPool()
	for _, der := range intermediates {
		if c, err := x509.ParseCertificate(der); err == nil {
			inter.AddCert(c)
		}
	}
	// A node certificate serves both ends of a link: any extended key usage.
	return x509.VerifyOptions{Roots: pool, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}
}

// current is the loaded set, loaded again first when a file's stamp changed. A set that does
// not load is logged once (per set of stamps) and the previous one kept.
func (m *Material) current() *loaded {
	st, statErr := m.stamps()
	m.mu.Lock()
	defer m.mu.Unlock()
	cur := m.mu.cur
	if statErr != nil {
		if m.mu.failed != ([3]stamp{}) {
			return cur
		}
		m.mu.failed = [3]stamp{{size: -1}}
		m.logger.Error("peertls: cannot read the peer TLS files; keeping the loaded ones", "err", statErr)
		return cur
	}
	if st == cur.stamps { // back to (or still) the loaded set: a later failure is reported again
		m.mu.failed = [3]stamp{}
		return cur
	}
	if st == m.mu.failed {
		return cur
	}
	l, err := m.load()
	if err != nil {
		m.mu.failed = st
		m.logger.Error("peertls: the peer TLS files changed but do not load; keeping the loaded ones", "err", err)
		return cur
	}
	m.mu.cur, m.mu.failed = l, [3]stamp{}
	m.logger.Info("peertls: reloaded the peer TLS certificate and CA", "cert", m.cfg.CertPath,
		"notAfter", l.cert.Leaf.NotAfter.UTC().Format(time.RFC3339))
	return l
}

// NameIn is the id the certificate names in group (URI rocketraft://<group>/<id>): an error when
// it names none, or more than one.
func NameIn(cert *x509.Certificate, group string) (string, error) {
	var ids []string
	for _, u := range cert.URIs {
		if u.Scheme != Scheme || u.Host != group {
			continue
		}
		if id := strings.TrimPrefix(u.Path, "/"); id != "" && !strings.Contains(id, "/") {
			ids = append(ids, id)
		}
	}
	switch len(ids) {
	case 0:
		return "", fmt.Errorf("%w: the certificate (subject %q) names no node of group %q (want a URI name %s://%s/<id>)",
			ErrRefused, cert.Subject.String(), group, Scheme, group)
	case 1:
		return ids[0], nil
	default:
		return "", fmt.Errorf("%w: the certificate (subject %q) names %d nodes of group %q: %v", ErrRefused, cert.Subject.String(), len(ids), group, ids)
	}
}

// check verifies a peer's chain against the current CA and returns the id its certificate names
// in the group; with want set, that id must be want.
func (m *Material) check(cs tls.ConnectionState, l *loaded, want string) (string, error) {
	if len(cs.PeerCertificates) == 0 {
		return "", fmt.Errorf("%w: the peer presented no certificate", ErrRefused)
	}
	leaf := cs.PeerCertificates[0]
	var inter [][]byte
	for _, c := range cs.PeerCertificates[1:] {
		inter = append(inter, c.Raw)
	}
	if _, err := leaf.Verify(m.verifyOptions(l.pool, inter)); err != nil {
		return "", fmt.Errorf("%w: subject %q is not signed by the cluster CA: %v", ErrRefused, leaf.Subject.String(), err)
	}
	id, err := NameIn(leaf, m.group)
	if err != nil {
		return "", err
	}
	if want != "" && id != want {
		return "", fmt.Errorf("%w: dialed node %q of group %q but its certificate names %q", ErrRefused, want, m.group, id)
	}
	return id, nil
}

// ServerConfig is the TLS config of the accepting end: a client certificate is required and
// checked (chain and group) during the handshake; PeerID then gives the id it names.
func (m *Material) ServerConfig() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			l := m.current()
			return &tls.Config{
				MinVersion:   tls.VersionTLS12,
				Certificates: []tls.Certificate{*l.cert},
				ClientAuth:   tls.RequireAnyClientCert, // verified below against the current CA
				VerifyConnection: func(cs tls.ConnectionState) error {
					_, err := m.check(cs, l, "")
					return err
				},
			}, nil
		},
	}
}

// ClientConfig is the TLS config of the dialing end: the server's certificate must chain to the
// CA and name node want of the group ("" = any node of the group, when the dialer cannot tell
// whom an address belongs to). Host names are not checked: the URI name is the identity.
func (m *Material) ClientConfig(want string) *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			return m.current().cert, nil
		},
		InsecureSkipVerify: true, // the chain and the name are checked by VerifyConnection
		VerifyConnection: func(cs tls.ConnectionState) error {
			_, err := m.check(cs, m.current(), want)
			return err
		},
	}
}

// PeerID is the id the peer's certificate names in the group, after a handshake that passed
// ServerConfig's or ClientConfig's checks.
func (m *Material) PeerID(cs tls.ConnectionState) (string, error) {
	if len(cs.PeerCertificates) == 0 {
		return "", fmt.Errorf("%w: the peer presented no certificate", ErrRefused)
	}
	return NameIn(cs.PeerCertificates[0], m.group)
}
