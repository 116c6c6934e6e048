package servers

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/rocketraft/rocketraft/acl"
	"github.com/rocketraft/rocketraft/client"
	"github.com/rocketraft/rocketraft/internal/gctune"
	"github.com/rocketraft/rocketraft/internal/logging"
	"github.com/rocketraft/rocketraft/proxy"
	"github.com/rocketraft/rocketraft/remoting"
)

const proxyUsage = `usage: mqproxy [-c FILE] [-n NAMESRV_ADDR] [-p] [--key=value ...]
  RocketMQ 5's gRPC endpoint (apache.rocketmq.v2.MessagingService) in front of every broker group the name
  servers route (cluster mode); v5 clients (rocketmq-clients) connect to grpcServerPort.
  -c FILE   config (.properties or .yaml)
  -n ADDR   name servers, "host:9876;host2:9876" (namesrvAddr; default $NAMESRV_ADDR)
  -p        print the effective config and exit
  --key=v   any config key: --grpcServerPort=8081 --grpcListenHost=0.0.0.0 --grpcAdvertiseAddress=host:8081
            --tlsServerMode=enforcing --tlsServerCertPath=F --tlsServerKeyPath=F (TLS on the gRPC port)
            --aclEnable=true --aclFile=conf/plain_acl.yml --accessKey=AK --secretKey=SK (its own account towards
            the brokers) --logDir=DIR --logLevel=DEBUG
Environment: NAMESRV_ADDR, ROCKETMQ_HOME (rocketmqHome: conf/plain_acl.yml lives there; default $HOME).
Logs: logDir ($HOME/logs/rocketmqlogs/proxy.log). SIGHUP re-reads logLevel.
`

// ProxyConfig is mqproxy's configuration, with RocketMQ 5 ProxyConfig's key names where it has them.
type ProxyConfig struct {
	NamesrvAddr          string `mapstructure:"namesrvAddr"`          // name servers, "host:port;host:port"
	GrpcServerPort       int    `mapstructure:"grpcServerPort"`       // the gRPC port (8081)
	GrpcListenHost       string `mapstructure:"grpcListenHost"`       // the address to listen on ("" = every interface)
	GrpcAdvertiseAddress string `mapstructure:"grpcAdvertiseAddress"` // "host:port" QueryRoute gives clients; "" = what they dialled
	// GrpcClientConsumerMaxLongPollingTimeoutMillis bounds a receive's wait for messages (20000, RocketMQ 5's key).
	GrpcClientConsumerMaxLongPollingTimeoutMillis int64           `mapstructure:"grpcClientConsumerMaxLongPollingTimeoutMillis"`
	RocketmqHome                                  string          `mapstructure:"rocketmqHome"` // home of a relative aclFile
	AclEnable                                     bool            `mapstructure:"aclEnable"`    // check every call's signature and permissions against aclFile
	AclFile                                       string          `mapstructure:"aclFile"`      // the brokers' ACL file format (plain_acl.yml)
	AccessKey                                     string          `mapstructure:"accessKey"`    // the proxy's own account, signing its requests to the brokers
	SecretKey                                     remoting.Secret `mapstructure:"secretKey"`
	// TLS holds the tls* keys: tlsServerMode permissive or enforcing serves the gRPC port with TLS only; tlsEnable
	// makes the proxy's own connections to name servers and brokers TLS.
	TLS remoting.TLSConfig `mapstructure:",squash"`
	Log logging.Config     `mapstructure:",squash"`
	// GCHeapFloorMB (ours, 64): the Go heap's collection target is at least this many MiB, as the broker's key
	// of that name (internal/gctune); 0 gives Go's default, a GOGC in the environment wins.
	GCHeapFloorMB int `mapstructure:"gcHeapFloorMB"`
}

// DefaultProxyConfig is port 8081 on every interface, no ACL, no TLS.
func DefaultProxyConfig() ProxyConfig {
	home := os.Getenv("ROCKETMQ_HOME")
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	return ProxyConfig{NamesrvAddr: strings.TrimSpace(os.Getenv("NAMESRV_ADDR")), GrpcServerPort: proxy.DefaultGrpcServerPort,
		GrpcClientConsumerMaxLongPollingTimeoutMillis: 20_000, RocketmqHome: home, AclFile: "conf/plain_acl.yml", TLS: remoting.DefaultTLSConfig(), Log: logging.DefaultConfig(), GCHeapFloorMB: gctune.DefaultFloorMB}
}

// Validate names the first bad key.
func (c ProxyConfig) Validate() error {
	if len(client.SplitAddrs(c.NamesrvAddr)) == 0 {
		return errors.New("config key namesrvAddr: no name server (give -n host:9876 or set NAMESRV_ADDR)")
	}
	if c.GrpcServerPort < 0 || c.GrpcServerPort > 65535 {
		return fmt.Errorf("config key grpcServerPort: %d is not a port", c.GrpcServerPort)
	}
	if c.GrpcClientConsumerMaxLongPollingTimeoutMillis <= 0 {
		return fmt.Errorf("config key grpcClientConsumerMaxLongPollingTimeoutMillis: %d is not positive", c.GrpcClientConsumerMaxLongPollingTimeoutMillis)
	}
	if err := gctune.CheckFloorMB(c.GCHeapFloorMB); err != nil {
		return fmt.Errorf("config key gcHeapFloorMB: %w", err)
	}
	if a := c.GrpcAdvertiseAddress; a != "" {
		if _, _, err := net.SplitHostPort(a); err != nil {
			return fmt.Errorf("config key grpcAdvertiseAddress: %q is not host:port", a)
		}
	}
	return c.TLS.Validate()
}

// RunProxy is the mqproxy command: it loads the config, serves the gRPC endpoint until SIGINT or SIGTERM and
// returns the exit code (0 clean, 1 failure, 2 bad arguments).
func RunProxy(argv []string, stdout, stderr io.Writer) int {
	cfg := DefaultProxyConfig()
	args, unknown, done, code := loadConfig("mqproxy", proxyUsage, argv, stdout, stderr, &cfg)
	if done {
		return code
	}
	if err := cfg.Validate(); err != nil {
		fmt.Fprintf(stderr, "mqproxy: %v\n", err)
		return 2
	}
	logs, err := openLogs(cfg.Log, cfg.Log.LogDir, logging.Layout{Default: "proxy.log"}, stderr, unknown)
	if err != nil {
		fmt.Fprintf(stderr, "mqproxy: %v\n", err)
		return 2
	}
	defer logs.Close()
	log := logs.Logger
	defer gctune.Start(uint64(cfg.GCHeapFloorMB)<<20, log).Stop()
	px, nc, err := startProxy(cfg, log)
	if err != nil {
		log.Error("start-up failed", "err", err)
		fmt.Fprintf(stderr, "mqproxy: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "The gRPC proxy boot success: apache.rocketmq.v2.MessagingService on %s (tls %v, acl %v), name servers %s\n",
		px.Addr(), cfg.TLS.ServerMode != "disabled", cfg.AclEnable, cfg.NamesrvAddr)
	fmt.Fprintf(stdout, "  %s\n", describeLogs(logs))
	waitForSignal(func() {
		reloadLogLevel(logs, args, func() (any, func() string) {
			c := DefaultProxyConfig()
			return &c, func() string { return c.Log.LogLevel }
		})
	})
	log.Info("shutting down")
	err = errors.Join(px.Close(), nc.Close())
	if err != nil {
		log.Error("shutdown failed", "err", err)
		return 1
	}
	return 0
}

// startProxy builds the native client, the ACL and TLS of cfg and serves the endpoint.
func startProxy(cfg ProxyConfig, log *slog.Logger) (*proxy.Server, *client.Client, error) {
	ccfg := client.Config{Namesrvs: client.SplitAddrs(cfg.NamesrvAddr), Credentials: remoting.Credentials{AccessKey: cfg.AccessKey,
		SecretKey: cfg.SecretKey}, Log: log.With("component", "client")}
	if cfg.TLS.Enable {
		tc, err := cfg.TLS.ClientTLS()
		if err != nil {
			return nil, nil, err
		}
		ccfg.TLS = tc
	}
	nc := client.New(ccfg)
	opts := proxy.Options{Client: nc, Advertise: cfg.GrpcAdvertiseAddress, Log: log,
		MaxLongPolling: time.Duration(cfg.GrpcClientConsumerMaxLongPollingTimeoutMillis) * time.Millisecond}
	fail := func(err error) (*proxy.Server, *client.Client, error) {
		nc.Close()
		return nil, nil, err
	}
	if cfg.AclEnable {
		path := cfg.AclFile
		if !filepath.IsAbs(path) {
			path = filepath.Join(cfg.RocketmqHome, path)
		}
		v, err := acl.New(path, log.With("component", "acl"))
		if err != nil {
			return fail(err)
		}
		if err := v.Start(); err != nil {
			return fail(err)
		}
		opts.Auth = v
	}
	mode, tc, err := cfg.TLS.ServerTLS(log)
	if err != nil {
		return fail(err)
	}
	if mode != remoting.TLSDisabled {
		opts.TLS = tc
	}
	px, err := proxy.New(opts)
	if err != nil {
		return fail(err)
	}
	if err := px.Listen(net.JoinHostPort(cfg.GrpcListenHost, strconv.Itoa(cfg.GrpcServerPort))); err != nil {
		return fail(err)
	}
	return px, nc, nil
}
