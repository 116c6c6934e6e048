package console

import (
	"context"
	"crypto/tls"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"
)

//go:embed assets
var assetsFS embed.FS

// Config is a console server. The fields are the options of mqadmin console, and Validate names them so.
type Config struct {
	// Listen is the host:port the HTTP server listens on (--listen); port 0 picks a free one.
	Listen string
	// Source answers the pages. Required.
	Source Source
	// Logger receives the server's logs; nil discards them.
	Logger *slog.Logger
	// SampleInterval is how often the brokers' throughput and the groups' lag are sampled for the plots,
	// and how often the pages refresh themselves (--sampleInterval).
	SampleInterval time.Duration
	// History is how far back the plots go (--history); the samples are kept in memory.
	History time.Duration
	// AclFile is the plain_acl.yml whose accounts may log in (--aclFile): accessKey and secretKey, as the
	// brokers check them (the brokers' own file serves). Re-read when it changes.
	AclFile string
	// RequireLogin requires a login on a loopback Listen too (--login). Beyond loopback a login is always
	// required (login.go).
	RequireLogin bool
	// TLSCertPath and TLSKeyPath (--tlsCertPath, --tlsKeyPath), PEM files, serve HTTPS instead of HTTP; the
	// session cookie is then Secure.
	TLSCertPath, TLSKeyPath string
}

// DefaultConfig is a console on 127.0.0.1:8080 that samples every 5 s and keeps 10 minutes.
func DefaultConfig() Config {
	return Config{Listen: "127.0.0.1:8080", SampleInterval: 5 * time.Second, History: 10 * time.Minute}
}

// maxHistoryPoints bounds the memory of a series: History / SampleInterval points.
const maxHistoryPoints = 10_000

// Validate reports the first bad option, by its flag name.
func (c Config) Validate() error {
	if _, _, err := net.SplitHostPort(c.Listen); err != nil {
		return fmt.Errorf("--listen %q: want host:port (%v)", c.Listen, err)
	}
	if c.SampleInterval <= 0 {
		return fmt.Errorf("--sampleInterval %v: must be positive", c.SampleInterval)
	}
	if c.History < c.SampleInterval {
		return fmt.Errorf("--history %v: must be at least --sampleInterval (%v)", c.History, c.SampleInterval)
	}
	if c.History/c.SampleInterval > maxHistoryPoints {
		return fmt.Errorf("--history %v: more than %d samples of --sampleInterval %v", c.History, maxHistoryPoints, c.SampleInterval)
	}
	if (c.TLSCertPath == "") != (c.TLSKeyPath == "") {
		return errors.New("--tlsCertPath and --tlsKeyPath go together: give both or neither")
	}
	if c.Source == nil {
		return errors.New("console: no Source")
	}
	return nil
}

// Server is the console: the pages (embedded), the JSON API they call, and the sampler behind the plots.
type Server struct {
	cfg     Config
	log     *slog.Logger
	hist    *history
	sampler *sampler
	handler http.Handler
	login   *loginGate

	http   *http.Server
	ln     net.Listener
	cancel context.CancelFunc
	wg     sync.WaitGroup // the HTTP server and the sampler
	closed sync.Once
	err    error
}

// New returns a console that is not started yet.
func New(cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{cfg: cfg, log: log.With("component", "console"), hist: newHistory(cfg.History)}
	cfg.Logger = s.log
	login, err := newLoginGate(cfg)
	if err != nil {
		return nil, err
	}
	s.login = login
	s.sampler = newSampler(cfg.Source, s.log, cfg.SampleInterval, s.hist)
	assets, err := fs.Sub(assetsFS, "assets")
	if err != nil {
		_ = login.close()
		return nil, err
	}
	s.handler = s.routes(assets)
	return s, nil
}

// Handler serves the pages and the API without the listener and without the sampler (tests drive the
// sampler themselves).
func (s *Server) Handler() http.Handler { return s.handler }

// Start listens on Listen and starts serving and sampling. It returns once the listener is bound. It logs
// whether a login is required, and why.
func (s *Server) Start() error {
	var tlsCfg *tls.Config
	if s.cfg.TLSCertPath != "" {
		cert, err := tls.LoadX509KeyPair(s.cfg.TLSCertPath, s.cfg.TLSKeyPath)
		if err != nil {
			return fmt.Errorf("--tlsCertPath, --tlsKeyPath: %w", err)
		}
		tlsCfg = &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}}
	}
	if s.login.accounts != nil {
		if err := s.login.accounts.Start(); err != nil {
			return fmt.Errorf("--aclFile: %w", err)
		}
	}
	ln, err := net.Listen("tcp", s.cfg.Listen)
	if err != nil {
		return fmt.Errorf("--listen %s: %w", s.cfg.Listen, err)
	}
	if tlsCfg != nil {
		ln = tls.NewListener(ln, tlsCfg)
	}
	s.ln = ln
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	// Requests live in ctx: Close cancels what they wait on at the cluster, so Shutdown does not wait for it.
	s.http = &http.Server{Handler: s.handler, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: time.Minute,
		BaseContext: func(net.Listener) context.Context { return ctx },
		ErrorLog:    slog.NewLogLogger(s.log.Handler(), slog.LevelWarn)}
	s.wg.Add(2)
	go func() {
		defer s.wg.Done()
		if err := s.http.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("console: serve", "err", err)
		}
	}()
	go func() {
		defer s.wg.Done()
		s.sampler.run(ctx)
	}()
	s.log.Info("console: serving", "url", s.URL(), "login", s.LoginStatus())
	if w := s.Warning(); w != "" {
		s.log.Warn("console: " + w)
	}
	return nil
}

// Warning is what the start-up should warn of, or "": a login over plain HTTP.
func (s *Server) Warning() string {
	if s.login.required && s.cfg.TLSCertPath == "" {
		return "login over plain HTTP: the secret key typed at login and the session cookie travel unencrypted " +
			"and the cookie cannot be Secure; give --tlsCertPath and --tlsKeyPath"
	}
	return ""
}

// LoginStatus says whether the console requires a login, and why: "login required (...)" or "login off (...)".
func (s *Server) LoginStatus() string { return s.login.status() }

// URL is the console's address as a browser opens it (after Start): http:// or https://.
func (s *Server) URL() string {
	if s.cfg.TLSCertPath != "" {
		return "https://" + s.Addr() + "/"
	}
	return "http://" + s.Addr() + "/"
}

// Addr is the address the server listens on (after Start).
func (s *Server) Addr() string {
	if s.ln == nil {
		return ""
	}
	return s.ln.Addr().String()
}

// shutdownTimeout is how long Close lets requests in flight finish before it cuts them.
const shutdownTimeout = 5 * time.Second

// Close stops sampling, stops accepting, cancels what the requests in flight wait on, lets them answer (for
// up to 5 s, then closes their connections) and waits for every goroutine it started. It may be called more
// than once.
func (s *Server) Close() error {
	s.closed.Do(func() {
		defer func() { s.err = errors.Join(s.err, s.login.close()) }()
		if s.http == nil {
			return
		}
		s.cancel()
		ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
		defer cancel()
		if err := s.http.Shutdown(ctx); err != nil {
			s.err = errors.Join(err, s.http.Close())
		}
		s.wg.Wait()
	})
	return s.err
}
