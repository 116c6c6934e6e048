package metrics

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Path is where the endpoint serves the metrics.
const Path = "/metrics"

// closeTimeout bounds how long Close waits for scrapes in flight before cutting their connections.
const closeTimeout = 5 * time.Second

// maxScrapesInFlight bounds concurrent scrapes: each one walks the consumer offsets and the topics.
const maxScrapesInFlight = 4

// NewRegistry returns a registry holding the Go runtime and process collectors (go_*, process_*), to which
// the component adds its own.
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// Server is the HTTP endpoint serving one registry on Path. A nil *Server is an endpoint that is off: its
// methods do nothing.
type Server struct {
	addr    string
	portKey string // the config key the port came from, named when it cannot be bound
	log     *slog.Logger
	srv     *http.Server
	wg      sync.WaitGroup

	mu struct {
		sync.Mutex
		ln     net.Listener // nil before Start
		closed bool
	}
}

// NewServer prepares an endpoint on addr (host:port; port 0 picks a free one) serving g. Nothing listens
// until Start. A nil log discards.
func NewServer(addr string, g prometheus.Gatherer, log *slog.Logger) *Server {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	mux := http.NewServeMux()
	mux.Handle(Path, promhttp.HandlerFor(g, promhttp.HandlerOpts{
		ErrorLog:            slogPrinter{log},
		ErrorHandling:       promhttp.ContinueOnError,
		MaxRequestsInFlight: maxScrapesInFlight,
		// No Timeout: promhttp's timeout answers the request but leaves the gathering running, which
		// could then outlive Close.
	}))
	s := &Server{addr: addr, portKey: "metricsPromExporterPort", log: log}
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	return s
}

// NewEndpoint prepares the endpoint cfg asks for (nil when metricsExporterType is not PROM), on defaultHost
// unless metricsPromExporterHost is set.
func NewEndpoint(cfg ExporterConfig, defaultHost string, g prometheus.Gatherer, log *slog.Logger) *Server {
	if !cfg.On() {
		return nil
	}
	s := NewServer(cfg.Addr(defaultHost), g, log)
	s.portKey = cfg.PortKey()
	return s
}

// Start binds the address and serves on a goroutine that Close waits for. A port that cannot be bound is
// an error naming the config key of the port.
func (s *Server) Start() error {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.closed || s.mu.ln != nil {
		return errors.New("metrics: endpoint started twice or after Close")
	}
	ln, err := net.Listen("tcp", s.addr)
	if err != nil {
		return fmt.Errorf("config key %s: listen on %s: %w (with metricsExporterType=PROM each broker and name server on a host needs its own %s; metricsExporterType=DISABLE turns the endpoint off)",
			s.portKey, s.addr, err, s.portKey)
	}
	s.mu.ln = ln
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("metrics endpoint stopped", "addr", ln.Addr().String(), "err", err)
		}
	}()
	s.log.Info("metrics endpoint listening", "addr", ln.Addr().String(), "path", Path)
	return nil
}

// Addr is the bound address (host:port), or "" before Start.
func (s *Server) Addr() string {
	if s == nil {
		return ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.ln == nil {
		return ""
	}
	return s.mu.ln.Addr().String()
}

// Close stops listening, lets the scrapes in flight finish (for up to five seconds, then cuts them) and
// waits for the serving goroutine. Once it returns no collector of the registry runs on behalf of this
// endpoint. Safe to call more than once, and without Start.
func (s *Server) Close() error {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	started := s.mu.ln != nil && !s.mu.closed
	s.mu.closed = true
	s.mu.Unlock()
	if !started {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	if err != nil {
		err = errors.Join(err, s.srv.Close())
	}
	s.wg.Wait()
	if err != nil {
		return fmt.Errorf("metrics: close endpoint: %w", err)
	}
	return nil
}

// slogPrinter is promhttp's error logger over slog.
type slogPrinter struct{ log *slog.Logger }

func (p slogPrinter) Println(v ...any) { p.log.Warn("metrics: scrape", "err", fmt.Sprint(v...)) }
