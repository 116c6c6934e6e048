package remoting

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rocketraft/rocketraft/internal/testutil"
)

// writeCert makes a self-signed certificate for 127.0.0.1 and writes it and its key to dir/name.{crt,key}.
func writeCert(t *testing.T, dir, name string) (certPath, keyPath string) {
	t.Helper()
	certPEM, keyPEM, err := GenerateSelfSignedCert([]string{"127.0.0.1", "localhost"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	certPath, keyPath = filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
	writeFileAtomic(t, certPath, certPEM)
	writeFileAtomic(t, keyPath, keyPEM)
	return certPath, keyPath
}

// writeFileAtomic replaces path by renaming a finished temporary file over it.
func writeFileAtomic(t *testing.T, path string, data []byte) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// tlsServer starts an echo server in mode with the certificate at certPath/keyPath.
func tlsServer(t *testing.T, mode TLSMode, tc TLSConfig, logs *syncBuffer) *Server {
	t.Helper()
	tc.ServerMode = string(mode)
	m, cfg, err := tc.ServerTLS(testLogger(t, logs))
	if err != nil {
		t.Fatal(err)
	}
	pool := NewPool("echo", 2, 64)
	return startServer(t, ServerConfig{TLSMode: m, TLS: cfg}, logs, func(s *Server) { s.Register(SendMessage, pool, echo) })
}

func tlsClient(t *testing.T, tc TLSConfig) *Client {
	t.Helper()
	tc.Enable = true
	cfg, err := tc.ClientTLS()
	if err != nil {
		t.Fatal(err)
	}
	return newClient(t, ClientConfig{TLS: cfg})
}

// roundTrip sends a request with body and checks the echo.
func roundTrip(cl *Client, addr string, body []byte) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := cl.Invoke(ctx, addr, NewRequest(SendMessage, map[string]string{"k": "v"}, body))
	if err != nil {
		return err
	}
	if resp.Code != int32(Success) || !bytes.Equal(resp.Body, body) || resp.ExtFields["k"] != "v" {
		return errors.New("bad echo: " + resp.String())
	}
	return nil
}

func TestTLSPermissiveServesPlainAndTLSOnOnePort(t *testing.T) {
	cert, key := writeCert(t, t.TempDir(), "server")
	s := tlsServer(t, TLSPermissive, TLSConfig{ServerCertPath: cert, ServerKeyPath: key}, nil)
	addr := s.Addr().String()
	plain, secure := newClient(t, ClientConfig{}), tlsClient(t, TLSConfig{})
	// Bodies below and above the inline limit, and above one TLS record (16 KiB).
	for _, size := range []int{0, 100, 5000, 70_000} {
		body := bytes.Repeat([]byte{0x16}, size) // the TLS byte inside a frame means nothing
		for name, cl := range map[string]*Client{"plain": plain, "tls": secure} {
			if err := roundTrip(cl, addr, body); err != nil {
				t.Fatalf("%s client, body of %d bytes: %v", name, size, err)
			}
		}
	}
	// Many calls in flight on the TLS connection: batches of several frames go out through the TLS writer.
	errs := make(chan error, 50)
	for i := range 50 {
		go func() { errs <- roundTrip(secure, addr, bytes.Repeat([]byte{byte(i)}, 300*i)) }()
	}
	for range 50 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if n := s.ConnCount(); n != 2 {
		t.Fatalf("%d connections, want one plain and one TLS", n)
	}
}

func TestTLSEnforcingRefusesPlain(t *testing.T) {
	cert, key := writeCert(t, t.TempDir(), "server")
	logs := &syncBuffer{}
	s := tlsServer(t, TLSEnforcing, TLSConfig{ServerCertPath: cert, ServerKeyPath: key}, logs)
	addr := s.Addr().String()
	if err := roundTrip(tlsClient(t, TLSConfig{}), addr, []byte("over TLS")); err != nil {
		t.Fatal(err)
	}
	err := roundTrip(newClient(t, ClientConfig{}), addr, []byte("plain"))
	if !errors.Is(err, ErrConnClosed) {
		t.Fatalf("plain call to an enforcing server: %v, want ErrConnClosed", err)
	}
	testutil.WaitFor(t, 10*time.Second, "the refusal in the log", func() bool { return strings.Contains(logs.String(), "plain connection refused") })
}

func TestTLSClientToDisabledServerFails(t *testing.T) {
	logs := &syncBuffer{}
	s := startServer(t, ServerConfig{}, logs, nil)
	err := roundTrip(tlsClient(t, TLSConfig{}), s.Addr().String(), nil)
	if err == nil || !strings.Contains(err.Error(), "TLS handshake") {
		t.Fatalf("TLS client against a plain server: %v", err)
	}
	testutil.WaitFor(t, 10*time.Second, "the reason in the log", func() bool { return strings.Contains(logs.String(), "the peer speaks TLS") })
}

func TestTLSClientVerifiesServer(t *testing.T) {
	dir := t.TempDir()
	cert, key := writeCert(t, dir, "server")
	other, _ := writeCert(t, dir, "other")
	s := tlsServer(t, TLSEnforcing, TLSConfig{ServerCertPath: cert, ServerKeyPath: key}, nil)
	addr := s.Addr().String()
	if err := roundTrip(tlsClient(t, TLSConfig{ClientAuthServer: true, ClientTrustCertPath: cert}), addr, nil); err != nil {
		t.Fatalf("client trusting the server's certificate: %v", err)
	}
	err := roundTrip(tlsClient(t, TLSConfig{ClientAuthServer: true, ClientTrustCertPath: other}), addr, nil)
	if err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("client trusting another certificate: %v, want a verification error", err)
	}
}

func TestTLSServerRequiresClientCertificate(t *testing.T) {
	dir := t.TempDir()
	cert, key := writeCert(t, dir, "server")
	clientCert, clientKey := writeCert(t, dir, "client")
	stranger, strangerKey := writeCert(t, dir, "stranger")
	s := tlsServer(t, TLSEnforcing, TLSConfig{ServerCertPath: cert, ServerKeyPath: key, ServerNeedClientAuth: "require",
		ServerAuthClient: true, ServerTrustCertPath: clientCert}, nil)
	addr := s.Addr().String()
	if err := roundTrip(tlsClient(t, TLSConfig{ClientCertPath: clientCert, ClientKeyPath: clientKey}), addr, nil); err != nil {
		t.Fatalf("client with a trusted certificate: %v", err)
	}
	for name, tc := range map[string]TLSConfig{
		"no certificate":        {},
		"untrusted certificate": {ClientCertPath: stranger, ClientKeyPath: strangerKey},
	} {
		if err := roundTrip(tlsClient(t, tc), addr, nil); err == nil {
			t.Fatalf("%s: call succeeded, want it refused", name)
		}
	}
}

func TestTLSCertificateReloadedWhenFilesChange(t *testing.T) {
	dir := t.TempDir()
	cert, key := writeCert(t, dir, "server")
	logs := &syncBuffer{}
	s := tlsServer(t, TLSEnforcing, TLSConfig{ServerCertPath: cert, ServerKeyPath: key}, logs)
	addr := s.Addr().String()
	firstPEM, _ := os.ReadFile(cert)
	trustFirst := filepath.Join(dir, "first.crt")
	writeFileAtomic(t, trustFirst, firstPEM)
	if err := roundTrip(tlsClient(t, TLSConfig{ClientAuthServer: true, ClientTrustCertPath: trustFirst}), addr, nil); err != nil {
		t.Fatal(err)
	}

	// A new pair replaces the files: the next connection gets it.
	writeCert(t, dir, "server")
	if err := roundTrip(tlsClient(t, TLSConfig{ClientAuthServer: true, ClientTrustCertPath: cert}), addr, nil); err != nil {
		t.Fatalf("after the certificate changed: %v", err)
	}
	if !strings.Contains(logs.String(), "TLS certificate reloaded") {
		t.Fatal("no reload in the log")
	}

	// A key that does not match: the server keeps the second pair and says why.
	_, badKey := writeCert(t, t.TempDir(), "unrelated")
	keyPEM, _ := os.ReadFile(badKey)
	writeFileAtomic(t, key, keyPEM)
	if err := roundTrip(tlsClient(t, TLSConfig{ClientAuthServer: true, ClientTrustCertPath: cert}), addr, nil); err != nil {
		t.Fatalf("after a bad key was written: %v", err)
	}
	if !strings.Contains(logs.String(), "does not load; serving the previous one") {
		t.Fatal("the bad pair was not reported")
	}
}

func TestTLSTestModeSelfSigned(t *testing.T) {
	s := tlsServer(t, TLSPermissive, TLSConfig{TestModeEnable: true}, nil)
	if err := roundTrip(tlsClient(t, TLSConfig{}), s.Addr().String(), []byte("x")); err != nil {
		t.Fatal(err)
	}
}

func TestTLSConfigValidateNamesKeys(t *testing.T) {
	for _, tc := range []struct {
		cfg  TLSConfig
		want string
	}{
		{TLSConfig{ServerMode: "strict"}, "config key tlsServerMode"},
		{TLSConfig{ServerMode: "enforcing"}, "config key tlsServerCertPath: is needed"},
		{TLSConfig{ServerMode: "permissive", ServerCertPath: "a.crt"}, "config key tlsServerKeyPath"},
		{TLSConfig{ServerNeedClientAuth: "always"}, "config key tlsServerNeedClientAuth"},
		{TLSConfig{ServerAuthClient: true}, "config key tlsServerTrustCertPath"},
		{TLSConfig{ClientCertPath: "c.crt"}, "config key tlsClientKeyPath"},
	} {
		err := tc.cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.cfg, err, tc.want)
		}
	}
	if err := DefaultTLSConfig().Validate(); err != nil {
		t.Fatal(err)
	}
	missing := TLSConfig{ServerMode: "enforcing", ServerCertPath: "/nonexistent.crt", ServerKeyPath: "/nonexistent.key"}
	if _, _, err := missing.ServerTLS(nil); err == nil || !strings.Contains(err.Error(), "tlsServerCertPath") {
		t.Fatalf("missing certificate file: %v", err)
	}
	if _, err := (TLSConfig{Enable: true, ClientAuthServer: true, ClientTrustCertPath: "/nonexistent"}).ClientTLS(); err == nil ||
		!strings.Contains(err.Error(), "config key tlsClientTrustCertPath") {
		t.Fatalf("missing trust file: %v", err)
	}
	if cfg, err := (TLSConfig{}).ClientTLS(); cfg != nil || err != nil {
		t.Fatalf("tlsEnable off: %v, %v", cfg, err)
	}
}

func TestTLSModeWithoutConfigRefusedAtStart(t *testing.T) {
	s := NewServer(ServerConfig{ListenAddr: "127.0.0.1:0", TLSMode: TLSEnforcing}, nil)
	defer s.Close()
	if err := s.Start(); err == nil {
		t.Fatal("enforcing without a tls.Config started")
	}
	s2 := NewServer(ServerConfig{ListenAddr: "127.0.0.1:0", TLSMode: "strict"}, nil)
	defer s2.Close()
	if err := s2.Start(); err == nil {
		t.Fatal("an unknown mode started")
	}
}

// A permissive server never blocks its accept loop on a peer that connects and sends nothing.
func TestTLSSilentPeerDoesNotBlockOthers(t *testing.T) {
	cert, key := writeCert(t, t.TempDir(), "server")
	s := tlsServer(t, TLSPermissive, TLSConfig{ServerCertPath: cert, ServerKeyPath: key}, nil)
	silent, err := net.Dial("tcp", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	if err := roundTrip(newClient(t, ClientConfig{}), s.Addr().String(), []byte("after a silent peer")); err != nil {
		t.Fatal(err)
	}
}

// TLSState shows a handler the certificate a client presented (optional client authentication, nothing
// verified by the server), and nothing on a plain connection of the same permissive port.
func TestTLSStateShowsClientCertificate(t *testing.T) {
	dir := t.TempDir()
	cert, key := writeCert(t, dir, "server")
	clientCert, clientKey := writeCert(t, dir, "client")
	tc := TLSConfig{ServerMode: string(TLSPermissive), ServerCertPath: cert, ServerKeyPath: key, ServerNeedClientAuth: "optional"}
	m, cfg, err := tc.ServerTLS(nil)
	if err != nil {
		t.Fatal(err)
	}
	seen := make(chan string, 4)
	pool := NewPool("state", 1, 8)
	s := startServer(t, ServerConfig{TLSMode: m, TLS: cfg}, nil, func(s *Server) {
		s.Register(SendMessage, pool, func(_ context.Context, c *Conn, req *Command) *Command {
			switch cs, ok := c.TLSState(); {
			case !ok:
				seen <- "plain"
			case len(cs.PeerCertificates) == 0:
				seen <- "tls without a certificate"
			default:
				seen <- "tls " + cs.PeerCertificates[0].Subject.String()
			}
			return echo(context.Background(), c, req)
		})
	})
	addr := s.Addr().String()
	for _, c := range []struct {
		cl   *Client
		want string
	}{
		{newClient(t, ClientConfig{}), "plain"},
		{tlsClient(t, TLSConfig{}), "tls without a certificate"},
		{tlsClient(t, TLSConfig{ClientCertPath: clientCert, ClientKeyPath: clientKey}), "tls CN=rocketraft,O=RocketRaft"},
	} {
		if err := roundTrip(c.cl, addr, nil); err != nil {
			t.Fatal(err)
		}
		if got := <-seen; !strings.HasPrefix(got, c.want) {
			t.Errorf("handler saw %q, want %q", got, c.want)
		}
	}
}
