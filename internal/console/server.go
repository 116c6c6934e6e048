package console

import (
	"context"
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
	s.sampler = newSampler(cfg.Source, s.log, cfg.SampleInterval, s.hist)
	assets, err := fs.Sub(assetsFS, "assets")
	if err != nil {
		return nil, err
	}
	s.handler = s.routes(assets)
	return s, nil
}

// Handler serves the pages and the API without the listener and without the sampler (tests drive the
// sampler themselves).
func (s *Server) Handler() http.Handler { return s.handler }

// Start listens on Listen and starts serving and sampling. It returns once the listener is bound.
func (s *Server) Start() error {
	ln, err := net.Listen("tcp", s.cfg.Listen)
	if err != nil {
		return fmt.Errorf("--listen %s: %w", s.cfg.Listen, err)
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
	s.log.Info("console: serving", "addr", s.Addr())
	return nil
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
