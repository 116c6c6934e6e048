package peertls

import (
	"crypto/x509"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
)

// Trust is the cluster CA alone, for a server that is a member of no group but must recognise the
// certificates of the cluster's nodes: the name server, where a client certificate of a node
// authorises the write requests (namesrv/acl.go). It is re-read when its file changes, as Material
// is, and safe for concurrent use.
type Trust struct {
	key, path string // the config key (for errors) and the file
	logger    *slog.Logger

	mu struct {
		sync.Mutex
		pool   *x509.CertPool
		loaded stamp // of the file pool was read from
		failed stamp // of the last content that did not load (reported once)
	}
}

// LoadTrust reads the CA certificate(s) of path, the file of config key key. An error names the key.
func LoadTrust(key, path string, logger *slog.Logger) (*Trust, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	t := &Trust{key: key, path: path, logger: logger}
	st, err := statFile(key, path)
	if err != nil {
		return nil, err
	}
	pool, err := t.read()
	if err != nil {
		return nil, err
	}
	t.mu.pool, t.mu.loaded = pool, st
	return t, nil
}

func (t *Trust) read() (*x509.CertPool, error) {
	data, err := os.ReadFile(t.path)
	if err != nil {
		return nil, fmt.Errorf("config key %s: %w", t.key, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data) {
		return nil, fmt.Errorf("config key %s: %s holds no PEM certificate", t.key, t.path)
	}
	return pool, nil
}

// current is the CA pool, read again first when the file's stamp changed; a file that cannot be
// read or holds no certificate is logged once and the previous pool kept.
func (t *Trust) current() *x509.CertPool {
	st, err := statFile(t.key, t.path)
	if err != nil {
		st = stamp{size: -1} // unreadable: one report until it is readable again
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	switch st {
	case t.mu.loaded:
		t.mu.failed = stamp{}
		return t.mu.pool
	case t.mu.failed:
		return t.mu.pool
	}
	var pool *x509.CertPool
	if err == nil {
		pool, err = t.read()
	}
	if err != nil {
		t.mu.failed = st
		t.logger.Error("peertls: the cluster CA file changed but does not load; keeping the loaded one", "err", err)
		return t.mu.pool
	}
	t.mu.pool, t.mu.loaded, t.mu.failed = pool, st, stamp{}
	t.logger.Info("peertls: reloaded the cluster CA", "key", t.key, "file", t.path)
	return pool
}

// VerifyNode checks that chain (a peer's certificates, leaf first, as tls.ConnectionState has
// them) verifies against the cluster CA as it is on disk now and that the leaf names a node
// (a URI rocketraft://<group>/<id>, of any group). It returns the node names, or an error wrapping
// ErrRefused with the reason.
func (t *Trust) VerifyNode(chain []*x509.Certificate) ([]string, error) {
	if len(chain) == 0 {
		return nil, fmt.Errorf("%w: no client certificate", ErrRefused)
	}
	leaf := chain[0]
	inter := x509.NewCertPool()
	for _, c := range chain[1:] {
		inter.AddCert(c)
	}
	opts := x509.VerifyOptions{Roots: t.current(), Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}
	if _, err := leaf.Verify(opts); err != nil {
		return nil, fmt.Errorf("%w: subject %q is not signed by the cluster CA (%s): %v", ErrRefused, leaf.Subject.String(), t.key, err)
	}
	var names []string
	for _, u := range leaf.URIs {
		id := strings.TrimPrefix(u.Path, "/")
		if u.Scheme == Scheme && u.Host != "" && id != "" && !strings.Contains(id, "/") {
			names = append(names, u.String())
		}
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("%w: the certificate (subject %q) names no node (want a URI name %s://<group>/<id>)",
			ErrRefused, leaf.Subject.String(), Scheme)
	}
	return names, nil
}
