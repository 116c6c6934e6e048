package broker

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"

	"github.com/rocketraft/rocketraft/acl"
	"github.com/rocketraft/rocketraft/client"
	"github.com/rocketraft/rocketraft/proxy"
	"github.com/rocketraft/rocketraft/remoting"
)

// GrpcConfig holds the local mode of RocketMQ 5's gRPC endpoint (package proxy): the broker process serves
// apache.rocketmq.v2.MessagingService for its own broker group, as RocketMQ 5's `mqbroker --enable-proxy`.
// TLS on it follows tlsServerMode (permissive or enforcing: TLS only, the keys of tlsServerCertPath and
// tlsServerKeyPath); the ACL follows aclEnable.
type GrpcConfig struct {
	EnableProxy    bool `mapstructure:"enableProxy"`    // serve the gRPC endpoint in this process (local mode)
	GrpcServerPort int  `mapstructure:"grpcServerPort"` // its port (8081, RocketMQ 5 proxy's)
}

// DefaultGrpcConfig is the endpoint off, on port 8081 when turned on.
func DefaultGrpcConfig() GrpcConfig { return GrpcConfig{GrpcServerPort: proxy.DefaultGrpcServerPort} }

func (c Config) validateGrpc() error {
	if !c.Grpc.EnableProxy {
		return nil
	}
	if c.Grpc.GrpcServerPort < 0 || c.Grpc.GrpcServerPort > 65535 {
		return fmt.Errorf("config key grpcServerPort: %d is not a port", c.Grpc.GrpcServerPort)
	}
	if c.Grpc.GrpcServerPort == c.ListenPort {
		return fmt.Errorf("config key grpcServerPort: %d is listenPort too", c.Grpc.GrpcServerPort)
	}
	if len(client.SplitAddrs(c.NamesrvAddr)) == 0 {
		return errors.New("config key enableProxy: the gRPC endpoint routes through the name servers; set namesrvAddr")
	}
	return nil
}

// grpcEndpoint is the local-mode gRPC endpoint and the native client it reaches the name servers through
// (routes), and this broker's master over remoting while this broker is not it; while it is, the data path
// runs in process (grpc_local.go).
type grpcEndpoint struct {
	c  *client.Client
	px *proxy.Server
}

// startGrpc starts the gRPC endpoint on grpcServerPort when enableProxy is set (nil, nil otherwise); local is
// this broker, which serves the endpoint's data path in process.
func startGrpc(cfg Config, check *acl.Validator, local proxy.Local, log *slog.Logger) (*grpcEndpoint, error) {
	if !cfg.Grpc.EnableProxy {
		return nil, nil
	}
	var ccfg client.Config
	ccfg.Namesrvs, ccfg.Credentials, ccfg.Log = client.SplitAddrs(cfg.NamesrvAddr), cfg.ACL.Credentials(), log
	if cfg.TLS.Enable { // as the broker's own name server client
		tc, err := cfg.TLS.ClientTLS()
		if err != nil {
			return nil, fmt.Errorf("broker: gRPC endpoint: %w", err)
		}
		ccfg.TLS = tc
	}
	opts := proxy.Options{Client: client.New(ccfg), BrokerName: cfg.BrokerName, Local: local, Log: log}
	if check != nil {
		opts.Auth = check
	}
	if mode, tc, err := cfg.TLS.ServerTLS(log); err != nil {
		opts.Client.Close()
		return nil, fmt.Errorf("broker: gRPC endpoint: %w", err)
	} else if mode != remoting.TLSDisabled {
		opts.TLS = tc
	}
	px, err := proxy.New(opts)
	if err == nil {
		err = px.Listen(net.JoinHostPort(clientListenHost(cfg), strconv.Itoa(cfg.Grpc.GrpcServerPort)))
	}
	if err != nil {
		opts.Client.Close()
		return nil, fmt.Errorf("broker: gRPC endpoint (grpcServerPort %d): %w", cfg.Grpc.GrpcServerPort, err)
	}
	return &grpcEndpoint{c: opts.Client, px: px}, nil
}

// close stops the endpoint, then its client. Safe on nil.
func (g *grpcEndpoint) close() error {
	if g == nil {
		return nil
	}
	err := g.px.Close()
	return errors.Join(err, g.c.Close())
}

// GrpcAddr is the address of the gRPC endpoint (enableProxy), or "" when it is off.
func (b *Broker) GrpcAddr() string {
	if b.grpc == nil {
		return ""
	}
	return b.grpc.px.Addr()
}
