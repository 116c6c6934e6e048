package namesrv

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"

	"github.com/rocketraft/rocketraft/remoting"
)

// Config is a name server's configuration: RocketMQ's NamesrvConfig and NettyServerConfig keys. Times are
// milliseconds, as RocketMQ has them.
type Config struct {
	RocketmqHome    string `mapstructure:"rocketmqHome"`    // home directory; default $ROCKETMQ_HOME, else $HOME
	KvConfigPath    string `mapstructure:"kvConfigPath"`    // KV settings file; default $HOME/namesrv/kvConfig.json
	ConfigStorePath string `mapstructure:"configStorePath"` // kept for config compatibility; not written
	ProductEnvName  string `mapstructure:"productEnvName"`  // kept for config compatibility
	ClusterTest     bool   `mapstructure:"clusterTest"`     // kept for config compatibility

	ListenAddr string `mapstructure:"bindAddress"` // address to listen on; default 0.0.0.0 (all)
	ListenPort int    `mapstructure:"listenPort"`  // default 9876
	// MetricsPort is the Prometheus /metrics endpoint's port, on bindAddress (5557; 0 = off). Every name
	// server and broker on one host needs its own.
	MetricsPort int `mapstructure:"metricsPort"`

	OrderMessageEnable bool `mapstructure:"orderMessageEnable"` // routes carry orderTopicConf from the KV table
	EnableAllTopicList bool `mapstructure:"enableAllTopicList"` // answer GET_ALL_TOPIC_LIST_FROM_NAMESERVER
	// DeleteTopicWithBrokerRegistration: a master's registration with a new data version drops the topics its
	// table no longer has (RocketMQ 5; off by default, as there).
	DeleteTopicWithBrokerRegistration bool `mapstructure:"deleteTopicWithBrokerRegistration"`

	ScanNotActiveBrokerInterval int64 `mapstructure:"scanNotActiveBrokerInterval"` // liveness scan period (10 s)
	BrokerChannelExpiredTime    int64 `mapstructure:"brokerChannelExpiredTime"`    // a broker silent this long is removed (120 s)
	// RaftMasterHoldMillis: how long the routes of a Raft group whose master entry went away still carry
	// a stand-in master, the last master or a live member, which forward writes (10 s; 0 = never;
	// raftgroup.go).
	RaftMasterHoldMillis int64 `mapstructure:"raftMasterHoldMillis"`

	ClientRequestThreadPoolNums          int   `mapstructure:"clientRequestThreadPoolNums"`          // GET_ROUTEINFO_BY_TOPIC workers (8)
	ClientRequestThreadPoolQueueCapacity int   `mapstructure:"clientRequestThreadPoolQueueCapacity"` // their queue (50000)
	DefaultThreadPoolNums                int   `mapstructure:"defaultThreadPoolNums"`                // workers of every other request (16)
	DefaultThreadPoolQueueCapacity       int   `mapstructure:"defaultThreadPoolQueueCapacity"`       // their queue (10000)
	ServerChannelMaxIdleTimeSeconds      int   `mapstructure:"serverChannelMaxIdleTimeSeconds"`      // close connections idle this long (120)
	ServerSocketMaxFrameSize             int   `mapstructure:"serverSocketMaxFrameSize"`             // largest frame accepted (16 MiB)
	ServerChannelWriteTimeoutMillis      int64 `mapstructure:"serverChannelWriteTimeoutMillis"`      // a write stuck this long closes the connection (60 s)

	// TLS holds the tls* keys of the listening port (tlsServerMode, tlsServerCertPath, ...; remoting.TLSConfig).
	// The name server has no ACL, as in RocketMQ 4.x: it ignores the signature fields clients send.
	TLS remoting.TLSConfig `mapstructure:",squash"`
}

// DefaultConfig returns RocketMQ's defaults.
func DefaultConfig() Config {
	home, _ := os.UserHomeDir()
	rocketmqHome := os.Getenv("ROCKETMQ_HOME")
	if rocketmqHome == "" {
		rocketmqHome = home
	}
	return Config{
		RocketmqHome:                         rocketmqHome,
		KvConfigPath:                         filepath.Join(home, "namesrv", "kvConfig.json"),
		ConfigStorePath:                      filepath.Join(home, "namesrv", "namesrv.properties"),
		ProductEnvName:                       "center",
		ListenAddr:                           "0.0.0.0",
		ListenPort:                           9876,
		MetricsPort:                          5557,
		EnableAllTopicList:                   true,
		ScanNotActiveBrokerInterval:          10_000,
		BrokerChannelExpiredTime:             120_000,
		RaftMasterHoldMillis:                 DefaultRaftMasterHold.Milliseconds(),
		ClientRequestThreadPoolNums:          8,
		ClientRequestThreadPoolQueueCapacity: 50_000,
		DefaultThreadPoolNums:                16,
		DefaultThreadPoolQueueCapacity:       10_000,
		ServerChannelMaxIdleTimeSeconds:      120,
		ServerSocketMaxFrameSize:             16 << 20,
		ServerChannelWriteTimeoutMillis:      60_000,
		TLS:                                  remoting.DefaultTLSConfig(),
	}
}

// Validate checks every value and names each bad key.
func (c Config) Validate() error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("config key %s: %s", key, fmt.Sprintf(format, args...)))
	}
	if c.KvConfigPath == "" && c.RocketmqHome == "" {
		bad("kvConfigPath", "is empty and rocketmqHome is too: nowhere to keep KV settings")
	}
	if c.ListenPort < 0 || c.ListenPort > 65535 {
		bad("listenPort", "%d is not a TCP port (0..65535, 0 = any free port)", c.ListenPort)
	}
	if c.MetricsPort < 0 || c.MetricsPort > 65535 {
		bad("metricsPort", "%d is not a TCP port (0 = off)", c.MetricsPort)
	} else if c.MetricsPort != 0 && c.MetricsPort == c.ListenPort {
		bad("metricsPort", "%d is listenPort too", c.MetricsPort)
	}
	if c.ListenAddr != "" && net.ParseIP(c.ListenAddr) == nil {
		bad("bindAddress", "%q is not an IP address", c.ListenAddr)
	}
	positive := []struct {
		key string
		v   int64
	}{
		{"scanNotActiveBrokerInterval", c.ScanNotActiveBrokerInterval},
		{"brokerChannelExpiredTime", c.BrokerChannelExpiredTime},
		{"clientRequestThreadPoolNums", int64(c.ClientRequestThreadPoolNums)},
		{"defaultThreadPoolNums", int64(c.DefaultThreadPoolNums)},
		{"serverSocketMaxFrameSize", int64(c.ServerSocketMaxFrameSize)},
	}
	for _, p := range positive {
		if p.v <= 0 {
			bad(p.key, "%d must be positive", p.v)
		}
	}
	nonNegative := []struct {
		key string
		v   int64
	}{
		{"clientRequestThreadPoolQueueCapacity", int64(c.ClientRequestThreadPoolQueueCapacity)},
		{"defaultThreadPoolQueueCapacity", int64(c.DefaultThreadPoolQueueCapacity)},
		{"serverChannelMaxIdleTimeSeconds", int64(c.ServerChannelMaxIdleTimeSeconds)},
		{"serverChannelWriteTimeoutMillis", c.ServerChannelWriteTimeoutMillis},
		{"raftMasterHoldMillis", c.RaftMasterHoldMillis},
	}
	for _, p := range nonNegative {
		if p.v < 0 {
			bad(p.key, "%d must not be negative", p.v)
		}
	}
	if err := c.TLS.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// kvPath is where KV settings live: kvConfigPath, or rocketmqHome/namesrv/kvConfig.json when it is empty.
func (c Config) kvPath() string {
	if c.KvConfigPath != "" {
		return c.KvConfigPath
	}
	return filepath.Join(c.RocketmqHome, "namesrv", "kvConfig.json")
}
