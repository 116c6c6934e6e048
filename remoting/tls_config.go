package remoting

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"
)

// TLSConfig is the TLS part of a broker's or name server's config file. RocketMQ sets these as Java system
// properties (tls.server.mode, tls.server.certPath, ...); here each is a config key named after its property,
// shown on each field. Squash it into a component config (`mapstructure:",squash"`).
type TLSConfig struct {
	ServerMode           string `mapstructure:"tlsServerMode"`           // tls.server.mode: disabled (default), permissive or enforcing
	ServerCertPath       string `mapstructure:"tlsServerCertPath"`       // tls.server.certPath: PEM certificate (chain), reloaded when it changes
	ServerKeyPath        string `mapstructure:"tlsServerKeyPath"`        // tls.server.keyPath: PEM private key, unencrypted (PKCS#1, PKCS#8 or EC)
	ServerNeedClientAuth string `mapstructure:"tlsServerNeedClientAuth"` // tls.server.need.client.auth: none (default), optional or require
	ServerAuthClient     bool   `mapstructure:"tlsServerAuthClient"`     // tls.server.authClient: verify client certificates against tlsServerTrustCertPath
	ServerTrustCertPath  string `mapstructure:"tlsServerTrustCertPath"`  // tls.server.trustCertPath: PEM CA certificates for client certificates
	TestModeEnable       bool   `mapstructure:"tlsTestModeEnable"`       // tls.test.mode.enable: a self-signed certificate when no tlsServerCertPath is set
	Enable               bool   `mapstructure:"tlsEnable"`               // tls.enable: this process's own remoting client (to name servers) dials TLS
	ClientAuthServer     bool   `mapstructure:"tlsClientAuthServer"`     // tls.client.authServer: verify the server's certificate (off: any, as RocketMQ)
	ClientTrustCertPath  string `mapstructure:"tlsClientTrustCertPath"`  // tls.client.trustCertPath: PEM CAs for server certificates; empty: the system's
	ClientCertPath       string `mapstructure:"tlsClientCertPath"`       // tls.client.certPath: PEM client certificate, for servers that ask for one
	ClientKeyPath        string `mapstructure:"tlsClientKeyPath"`        // tls.client.keyPath: its private key
}

// Client authentication policies of tlsServerNeedClientAuth (Netty's ClientAuth names).
const (
	clientAuthNone     = "none"
	clientAuthOptional = "optional"
	clientAuthRequire  = "require"
)

// DefaultTLSConfig is TLS off on both sides. (RocketMQ defaults tls.server.mode to permissive with
// tls.test.mode.enable on, i.e. a throw-away self-signed certificate; here TLS is asked for explicitly.)
func DefaultTLSConfig() TLSConfig {
	return TLSConfig{ServerMode: string(TLSDisabled), ServerNeedClientAuth: clientAuthNone}
}

// Validate checks the keys' values and their combinations, naming each bad key. Files are read by ServerTLS
// and ClientTLS, whose errors name the key of a file that cannot be used.
func (c TLSConfig) Validate() error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("config key %s: %s", key, fmt.Sprintf(format, args...)))
	}
	mode, err := ParseTLSMode(c.ServerMode)
	if err != nil {
		bad("tlsServerMode", "%v", err)
	}
	if mode.on() && !c.TestModeEnable {
		if c.ServerCertPath == "" {
			bad("tlsServerCertPath", "is needed when tlsServerMode is %s (or set tlsTestModeEnable=true for a self-signed certificate)", mode)
		}
		if c.ServerKeyPath == "" {
			bad("tlsServerKeyPath", "is needed when tlsServerMode is %s", mode)
		}
	}
	if (c.ServerCertPath == "") != (c.ServerKeyPath == "") {
		bad("tlsServerKeyPath", "tlsServerCertPath and tlsServerKeyPath go together: set both or neither")
	}
	switch strings.ToLower(strings.TrimSpace(c.ServerNeedClientAuth)) {
	case "", clientAuthNone, clientAuthOptional, clientAuthRequire:
	default:
		bad("tlsServerNeedClientAuth", "%q is not none, optional or require", c.ServerNeedClientAuth)
	}
	if c.ServerAuthClient && c.ServerTrustCertPath == "" {
		bad("tlsServerTrustCertPath", "is needed when tlsServerAuthClient is true (the CAs client certificates must chain to)")
	}
	if (c.ClientCertPath == "") != (c.ClientKeyPath == "") {
		bad("tlsClientKeyPath", "tlsClientCertPath and tlsClientKeyPath go together: set both or neither")
	}
	return errors.Join(errs...)
}

// ServerTLS returns the mode and, unless it is disabled, the server's TLS configuration: the certificate from
// tlsServerCertPath/tlsServerKeyPath (re-read on the next handshake after either file changes; a pair that
// does not load is logged and the previous one kept) or a self-signed one in test mode, and the client
// certificate policy. logger may be nil.
func (c TLSConfig) ServerTLS(logger *slog.Logger) (TLSMode, *tls.Config, error) {
	if err := c.Validate(); err != nil {
		return "", nil, err
	}
	mode, _ := ParseTLSMode(c.ServerMode)
	if !mode.on() {
		return TLSDisabled, nil, nil
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if c.ServerCertPath != "" {
		r, err := newCertReloader(c.ServerCertPath, c.ServerKeyPath, logger)
		if err != nil {
			return "", nil, err
		}
		cfg.GetCertificate = r.getCertificate
	} else {
		certPEM, keyPEM, err := GenerateSelfSignedCert([]string{"localhost", "127.0.0.1", "::1"}, 365*24*time.Hour)
		if err == nil {
			var cert tls.Certificate
			if cert, err = tls.X509KeyPair(certPEM, keyPEM); err == nil {
				cfg.Certificates = []tls.Certificate{cert}
			}
		}
		if err != nil {
			return "", nil, fmt.Errorf("config key tlsTestModeEnable: self-signed certificate: %w", err)
		}
		logger.Warn("remoting: TLS with a self-signed test certificate (tlsTestModeEnable); set tlsServerCertPath for real use")
	}
	var pool *x509.CertPool
	if c.ServerTrustCertPath != "" {
		var err error
		if pool, err = loadCertPool(c.ServerTrustCertPath); err != nil {
			return "", nil, fmt.Errorf("config key tlsServerTrustCertPath: %w", err)
		}
	}
	cfg.ClientCAs = pool
	switch strings.ToLower(strings.TrimSpace(c.ServerNeedClientAuth)) {
	case clientAuthOptional:
		cfg.ClientAuth = tls.RequestClientCert
		if c.ServerAuthClient {
			cfg.ClientAuth = tls.VerifyClientCertIfGiven
		}
	case clientAuthRequire:
		cfg.ClientAuth = tls.RequireAnyClientCert
		if c.ServerAuthClient {
			cfg.ClientAuth = tls.RequireAndVerifyClientCert
		}
	}
	return mode, cfg, nil
}

// ClientTLS returns the configuration our remoting client dials with, or nil when tlsEnable is off. Without
// tlsClientAuthServer any server certificate is accepted, as RocketMQ's clients (and the official Go client)
// do; the channel is then encrypted but the server unauthenticated.
func (c TLSConfig) ClientTLS() (*tls.Config, error) {
	if !c.Enable {
		return nil, nil
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: !c.ClientAuthServer} // RocketMQ's default, documented above
	if c.ClientAuthServer && c.ClientTrustCertPath != "" {
		pool, err := loadCertPool(c.ClientTrustCertPath)
		if err != nil {
			return nil, fmt.Errorf("config key tlsClientTrustCertPath: %w", err)
		}
		cfg.RootCAs = pool
	}
	if c.ClientCertPath != "" {
		cert, err := tls.LoadX509KeyPair(c.ClientCertPath, c.ClientKeyPath)
		if err != nil {
			return nil, fmt.Errorf("config key tlsClientCertPath: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

func loadCertPool(path string) (*x509.CertPool, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data) {
		return nil, fmt.Errorf("%s holds no PEM certificate", path)
	}
	return pool, nil
}

// certReloader serves the certificate of a cert/key file pair and loads it again on the first handshake after
// either file's content changed, as RocketMQ's FileWatchService on tls.server.certPath does. It reads both
// files on every handshake (a few KiB, far less work than the handshake itself) and compares them with what it
// loaded: no timestamp granularity to miss a quick rewrite, no watcher goroutine.
type certReloader struct {
	certPath, keyPath string
	logger            *slog.Logger

	mu struct {
		sync.Mutex
		cert             *tls.Certificate
		certPEM, keyPEM  []byte // the file contents cert was loaded from
		failPEM, failKey []byte // the last contents that did not load (reported once)
		unreadable       bool   // the files could not be read at the last handshake (reported once)
	}
}

func newCertReloader(certPath, keyPath string, logger *slog.Logger) (*certReloader, error) {
	r := &certReloader{certPath: certPath, keyPath: keyPath, logger: logger}
	certPEM, err := os.ReadFile(certPath)
	if err != nil {
		return nil, fmt.Errorf("config key tlsServerCertPath: %w", err)
	}
	keyPEM, err := os.ReadFile(keyPath)
	if err != nil {
		return nil, fmt.Errorf("config key tlsServerKeyPath: %w", err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("config keys tlsServerCertPath, tlsServerKeyPath (%s, %s): %w", certPath, keyPath, err)
	}
	r.mu.cert, r.mu.certPEM, r.mu.keyPEM = &cert, certPEM, keyPEM
	return r, nil
}

// getCertificate is tls.Config.GetCertificate. It never fails once a certificate was loaded: files that cannot
// be read or do not load leave the previous certificate in service.
func (r *certReloader) getCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	certPEM, errC := os.ReadFile(r.certPath)
	keyPEM, errK := os.ReadFile(r.keyPath)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := errors.Join(errC, errK); err != nil {
		if !r.mu.unreadable {
			r.logger.Error("remoting: TLS certificate files unreadable; serving the previous certificate", "err", err)
		}
		r.mu.unreadable = true
		return r.mu.cert, nil
	}
	r.mu.unreadable = false
	if bytes.Equal(certPEM, r.mu.certPEM) && bytes.Equal(keyPEM, r.mu.keyPEM) {
		return r.mu.cert, nil
	}
	if bytes.Equal(certPEM, r.mu.failPEM) && bytes.Equal(keyPEM, r.mu.failKey) {
		return r.mu.cert, nil // known bad, already reported
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		r.mu.failPEM, r.mu.failKey = certPEM, keyPEM
		r.logger.Error("remoting: TLS certificate changed but does not load; serving the previous one",
			"certPath", r.certPath, "keyPath", r.keyPath, "err", err)
		return r.mu.cert, nil
	}
	r.mu.cert, r.mu.certPEM, r.mu.keyPEM = &cert, certPEM, keyPEM
	r.mu.failPEM, r.mu.failKey = nil, nil
	r.logger.Info("remoting: TLS certificate reloaded", "certPath", r.certPath)
	return r.mu.cert, nil
}
