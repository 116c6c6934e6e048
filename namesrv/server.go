package namesrv

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/rocketraft/rocketraft/remoting"
)

// Server is a name server: the routing tables, the KV settings, the remoting server that answers brokers and
// clients, and the scan that drops silent brokers. Several run side by side unaware of each other; brokers
// register with each.
type Server struct {
	cfg    Config
	logger *slog.Logger
	routes *RouteInfoManager
	kv     *KVConfigManager
	rs     *remoting.Server
	mx     *serverMetrics // metrics.go: the /metrics endpoint (metricsExporterType=PROM)
	acl    *writeGuard    // acl.go: nil unless aclEnable
	ready  *readiness     // readiness.go: whether routes are served yet after a restart
	live   liveConfig     // config_admin.go: the config as UPDATE_NAMESRV_CONFIG last changed it

	stop      chan struct{}
	wg        sync.WaitGroup
	closeOnce sync.Once
	started   bool
	mu        sync.Mutex // guards started and conns
	conns     map[uint64]*remoting.Conn
}

// New validates cfg, loads the KV settings and prepares the server; Start makes it listen. A nil logger
// discards.
func New(cfg Config, logger *slog.Logger) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("namesrv: %w", err)
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	tlsMode, serverTLS, err := cfg.TLS.ServerTLS(logger)
	if err != nil {
		return nil, fmt.Errorf("namesrv: %w", err)
	}
	kv, err := NewKVConfigManager(cfg.kvPath(), logger)
	if err != nil {
		return nil, err
	}
	idle := time.Duration(cfg.ServerChannelMaxIdleTimeSeconds) * time.Second
	if idle == 0 {
		idle = -1 // never
	}
	write := time.Duration(cfg.ServerChannelWriteTimeoutMillis) * time.Millisecond
	if write == 0 {
		write = -1
	}
	s := &Server{
		cfg:    cfg,
		logger: logger,
		routes: NewRouteInfoManager(time.Duration(cfg.BrokerChannelExpiredTime)*time.Millisecond,
			cfg.DeleteTopicWithBrokerRegistration, logger),
		kv:    kv,
		stop:  make(chan struct{}),
		conns: make(map[uint64]*remoting.Conn),
		rs: remoting.NewServer(remoting.ServerConfig{
			ListenAddr:   net.JoinHostPort(cfg.ListenAddr, strconv.Itoa(cfg.ListenPort)),
			MaxFrameSize: cfg.ServerSocketMaxFrameSize,
			IdleTimeout:  idle,
			WriteTimeout: write,
			TLSMode:      tlsMode,
			TLS:          serverTLS,
		}, logger.With("component", "namesrv-remoting")),
	}
	s.registerProcessors()
	if s.acl, err = newWriteGuard(s); err != nil {
		return nil, err
	}
	if s.acl != nil {
		s.rs.AddGuard(s.acl.name(), s.acl.intercept)
	}
	s.mx = newServerMetrics(s)
	s.rs.OnConnClose(func(c *remoting.Conn) {
		s.mu.Lock()
		delete(s.conns, c.ID())
		s.mu.Unlock()
		s.routes.OnConnClose(c.ID())
	})
	s.routes.SetRaftMasterHold(time.Duration(cfg.RaftMasterHoldMillis) * time.Millisecond)
	if s.ready, err = newReadiness(cfg.kvPath(), cfg.NeedWaitForService,
		time.Duration(cfg.WaitSecondsForService)*time.Second, time.Now(), logger); err != nil {
		return nil, err
	}
	s.routes.onRouted = s.ready.changed
	return s, nil
}

// Start listens and starts the liveness scan.
func (s *Server) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		return errors.New("namesrv: already started")
	}
	if err := s.mx.start(); err != nil {
		return err
	}
	if s.acl != nil {
		if err := s.acl.v.Start(); err != nil {
			_ = s.mx.close()
			return fmt.Errorf("namesrv: %w", err)
		}
	}
	if err := s.rs.Start(); err != nil {
		_ = s.mx.close()
		return fmt.Errorf("namesrv: %w", err)
	}
	s.started = true
	s.wg.Add(2)
	go s.scanLoop()
	go s.persistLoop()
	s.logger.Info("namesrv: started", "addr", s.Addr(), "kvConfigPath", s.cfg.kvPath())
	return nil
}

// MetricsAddr is the bound address of the Prometheus endpoint, or "" while it is off or not started.
func (s *Server) MetricsAddr() string { return s.mx.server.Addr() }

// Addr returns the address the server listens on (host:port), or "" before Start.
func (s *Server) Addr() string {
	a := s.rs.Addr()
	if a == nil {
		return ""
	}
	return a.String()
}

// Routes returns the routing tables, for inspection.
func (s *Server) Routes() *RouteInfoManager { return s.routes }

// KV returns the KV settings, for inspection.
func (s *Server) KV() *KVConfigManager { return s.kv }

// scanLoop drops silent brokers every scanNotActiveBrokerInterval and closes their connections.
func (s *Server) scanLoop() {
	defer s.wg.Done()
	t := time.NewTicker(time.Duration(s.cfg.ScanNotActiveBrokerInterval) * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case now := <-t.C:
			connIDs, removed := s.routes.ScanNotActiveBroker(now)
			if removed > 0 {
				s.logger.Warn("namesrv: removed silent brokers", "count", removed)
			}
			s.closeConns(connIDs)
		}
	}
}

// trackConn remembers the connection a broker registered on, so that expiry can close it.
func (s *Server) trackConn(c *remoting.Conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-c.Closed():
	default:
		s.conns[c.ID()] = c
	}
}

func (s *Server) closeConns(ids []uint64) {
	for _, id := range ids {
		s.mu.Lock()
		c := s.conns[id]
		s.mu.Unlock()
		if c != nil {
			_ = c.Close()
		}
	}
}

// Close stops the scan, closes every connection and the worker pools, and waits for all of it. It may be called
// more than once, also without Start.
func (s *Server) Close() error {
	var err error
	s.closeOnce.Do(func() {
		mxErr := s.mx.close()
		close(s.stop)
		s.wg.Wait()
		err = errors.Join(s.rs.Close(), mxErr)
		if s.acl != nil {
			err = errors.Join(err, s.acl.v.Close())
		}
		s.logger.Info("namesrv: closed")
	})
	return err
}
