package proxy

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"runtime"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/keepalive"

	"github.com/rocketraft/rocketraft/client"
	"github.com/rocketraft/rocketraft/proxy/v2pb"
)

// DefaultGrpcServerPort is grpcServerPort's default, as RocketMQ 5's proxy has it.
const DefaultGrpcServerPort = 8081

// Options is what a Server is built with.
type Options struct {
	// Client is the native client the proxy reaches the name servers and brokers through; the Server does
	// not close it. It must have name servers: routes come from them, in both modes.
	Client *client.Client
	// BrokerName, when set, is local mode: the proxy runs inside that broker's process and offers only that
	// broker group's queues. Empty is cluster mode: every group the name servers route.
	BrokerName string
	// Advertise is the "host:port" QueryRoute gives clients as every broker's endpoint; empty: the
	// endpoints the client dialled (QueryRouteRequest.endpoints), else the address it reached.
	Advertise string
	// TLS, when set, serves gRPC over TLS only (v5 clients with sslEnabled).
	TLS *tls.Config
	// Auth, when set, checks every call's signature and permissions (ACL); nil lets every call through.
	Auth Authorizer
	// Local, in local mode, is the broker the Server runs in: the data path (sends, pops, acks, offsets)
	// calls it in process while it is its group's master (local.go). Nil: over remoting, as cluster mode.
	Local Local
	// RouteTTL bounds how long a topic's route is reused before the name servers are asked again (default 3s).
	RouteTTL time.Duration
	// MaxLongPolling bounds how long a receive waits for messages, and is the long polling time handed to
	// consumers in their settings (default 20s, RocketMQ 5 proxy's grpcClientConsumerMaxLongPollingTimeoutMillis).
	MaxLongPolling time.Duration
	// AutoRenewInvisible is the invisible time of messages received with auto_renew (push consumers), renewed
	// until they are acked (default 60s, RocketMQ 5 proxy's defaultInvisibleTimeMills).
	AutoRenewInvisible time.Duration
	// HeartbeatInterval is how often the proxy heartbeats its producer and consumer groups to the brokers
	// (default 20s); a new group is sent at once.
	HeartbeatInterval time.Duration
	// StreamWorkers is how many goroutines serve calls, each in turn (grpc.NumStreamWorkers); a call that
	// finds none free gets a goroutine of its own, as every call does without them. Default
	// DefaultStreamWorkers per GOMAXPROCS; negative: none. A worker's stack stays grown between calls,
	// where a call's own goroutine grows its 8 KiB stack in gRPC's receive every time (runtime.copystack
	// was 10 % of a local-mode broker's CPU under mqbench's sends; doc.go "Speed").
	StreamWorkers int
	Log           *slog.Logger // nil discards
}

// DefaultStreamWorkers is Options.StreamWorkers' default, per GOMAXPROCS: enough for mqbench's 16 senders on
// 2 cores, few enough that the idle ones cost little (a stack each).
const DefaultStreamWorkers = 8

// Server is the gRPC endpoint: apache.rocketmq.v2.MessagingService over the native client. Safe for
// concurrent use; Close stops it and waits for its goroutines.
type Server struct {
	v2pb.UnimplementedMessagingServiceServer
	opts    Options
	c       *client.Client
	log     *slog.Logger
	grpc    *grpc.Server
	routes  *routeCache
	clients *registry
	hb      *heartbeater
	pop     *brokers // the data path to the brokers (local.go)
	groups  *groupCache
	renew   *renewer

	mu struct {
		sync.Mutex
		lis net.Listener
	}
	wg sync.WaitGroup
}

// New returns a server; Serve starts it.
func New(opts Options) (*Server, error) {
	if opts.Client == nil {
		return nil, errors.New("proxy: Options.Client is nil")
	}
	if len(opts.Client.Namesrvs()) == 0 {
		return nil, errors.New("proxy: the client has no name servers (namesrvAddr): routes come from them")
	}
	if opts.RouteTTL <= 0 {
		opts.RouteTTL = 3 * time.Second
	}
	if opts.MaxLongPolling <= 0 {
		opts.MaxLongPolling = 20 * time.Second
	}
	if opts.AutoRenewInvisible <= 0 {
		opts.AutoRenewInvisible = time.Minute
	}
	if opts.StreamWorkers == 0 {
		opts.StreamWorkers = DefaultStreamWorkers * runtime.GOMAXPROCS(0)
	}
	if opts.HeartbeatInterval <= 0 {
		opts.HeartbeatInterval = 20 * time.Second
	}
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{opts: opts, c: opts.Client, log: log.With("service", "grpc-proxy")}
	s.routes = newRouteCache(opts.Client, opts.BrokerName, opts.RouteTTL)
	s.clients = newRegistry()
	s.pop = &brokers{c: opts.Client, name: opts.BrokerName}
	if opts.BrokerName != "" {
		s.pop.local = opts.Local
	}
	s.groups = &groupCache{c: opts.Client, ttl: opts.RouteTTL, m: map[string]groupEntry{}}
	s.renew = newRenewer(s.pop, opts.AutoRenewInvisible, s.log)
	s.hb = newHeartbeater(s.c, s.routes, s.clients, opts.HeartbeatInterval, s.log)
	s.hb.expired = func(ids []string) {
		for _, id := range ids {
			s.renew.dropClient(id)
		}
	}
	s.c.OnCheckTransaction(s.relayCheck)

	sopts := []grpc.ServerOption{
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 5 * time.Second, PermitWithoutStream: true}),
		grpc.ChainUnaryInterceptor(s.unaryAuth),
		grpc.ChainStreamInterceptor(s.streamAuth),
	}
	if opts.StreamWorkers > 0 {
		sopts = append(sopts, grpc.NumStreamWorkers(uint32(opts.StreamWorkers)))
	}
	if opts.TLS != nil {
		sopts = append(sopts, grpc.Creds(credentials.NewTLS(opts.TLS)))
	}
	s.grpc = grpc.NewServer(sopts...)
	v2pb.RegisterMessagingServiceServer(s.grpc, s)
	return s, nil
}

// Serve serves lis in the background until Close.
func (s *Server) Serve(lis net.Listener) {
	s.mu.Lock()
	s.mu.lis = lis
	s.mu.Unlock()
	s.hb.start()
	s.renew.start()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if err := s.grpc.Serve(lis); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
			s.log.Error("gRPC server stopped", "err", err)
		}
	}()
	// The start-up line of the port says which guards hold on it (remoting/doc.go "Interceptors" has the same
	// line for the remoting ports): TLS (only, when on), the client certificate policy, the ACL.
	tlsMode, clientCerts := "disabled", "none"
	if s.opts.TLS != nil {
		tlsMode = "tls-only"
		if s.opts.TLS.ClientAuth != tls.NoClientCert {
			clientCerts = s.opts.TLS.ClientAuth.String()
		}
	}
	guards := "none"
	if s.opts.Auth != nil {
		guards = "acl"
	}
	s.log.Info("gRPC endpoint serving", "addr", lis.Addr().String(), "tls", tlsMode, "clientCerts", clientCerts,
		"guards", guards, "localBroker", s.opts.BrokerName)
}

// Listen listens on addr ("host:port") and serves it.
func (s *Server) Listen(addr string) error {
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("proxy: listen on grpcServerPort: %w", err)
	}
	s.Serve(lis)
	return nil
}

// Addr is the address served, or "" before Serve.
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.lis == nil {
		return ""
	}
	return s.mu.lis.Addr().String()
}

// Close stops serving (streams in flight are ended), stops the heartbeats and unregisters the proxy's
// groups at the brokers.
func (s *Server) Close() error {
	s.grpc.Stop()
	s.wg.Wait()
	if s.Addr() != "" { // the services run once Serve started them
		s.hb.close()
		s.renew.close()
	}
	s.clients.closeAll()
	return nil
}

// callCtx bounds a call to a broker by the client's timeout, under the gRPC call's own context.
func (s *Server) callCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, s.c.Timeout())
}
