package namesrv

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"

	"github.com/rocketraft/rocketraft/internal/logging"
	"github.com/rocketraft/rocketraft/internal/metrics"
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
	// ExporterConfig holds RocketMQ 5's metrics keys: metricsExporterType (DISABLE by default, or PROM),
	// metricsPromExporterHost (default bindAddress), metricsPromExporterPort (5556, one below the broker's
	// 5557 so both run on one host) and the older synonym metricsPort.
	metrics.ExporterConfig `mapstructure:",squash"`
	// Log holds logDir, logLevel, logFileMaxSize and logFileMaxIndex (internal/logging); mqnamesrv opens the
	// files (namesrv.log) and re-reads logLevel on SIGHUP.
	Log logging.Config `mapstructure:",squash"`

	OrderMessageEnable bool `mapstructure:"orderMessageEnable"` // routes carry orderTopicConf from the KV table
	EnableAllTopicList bool `mapstructure:"enableAllTopicList"` // answer GET_ALL_TOPIC_LIST_FROM_NAMESERVER
	// DeleteTopicWithBrokerRegistration: a master's registration with a new data version drops the topics its
	// table no longer has (RocketMQ 5; off by default, as there).
	DeleteTopicWithBrokerRegistration bool `mapstructure:"deleteTopicWithBrokerRegistration"`

	ScanNotActiveBrokerInterval int64 `mapstructure:"scanNotActiveBrokerInterval"` // liveness scan period (10 s)
	BrokerChannelExpiredTime    int64 `mapstructure:"brokerChannelExpiredTime"`    // a broker silent this long is removed (120 s)
	// NeedWaitForService: after a restart, routes are answered SYSTEM_ERROR "name server not ready" until
	// the broker names routed before the restart registered again, at most WaitSecondsForService (RocketMQ
	// 5's keys; there off by default and a fixed wait; readiness.go). On by default here: a first start
	// waits for nothing.
	NeedWaitForService    bool `mapstructure:"needWaitForService"`
	WaitSecondsForService int  `mapstructure:"waitSecondsForService"` // the longest wait (45 s)
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
	TLS remoting.TLSConfig `mapstructure:",squash"`
	// ACL holds aclEnable, aclFile, aclBrokerAccessKeys and peerTlsTrustCertPath: with aclEnable the write
	// requests need a signed request of an allowed account, or a client certificate of the cluster CA under
	// TLS (acl.go); reads stay open.
	ACL ACLConfig `mapstructure:",squash"`
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
		ExporterConfig:                       metrics.DefaultExporterConfig(metrics.DefaultNamesrvPort),
		Log:                                  logging.DefaultConfig(),
		EnableAllTopicList:                   true,
		ScanNotActiveBrokerInterval:          10_000,
		BrokerChannelExpiredTime:             120_000,
		RaftMasterHoldMillis:                 DefaultRaftMasterHold.Milliseconds(),
		NeedWaitForService:                   true,
		WaitSecondsForService:                45,
		ClientRequestThreadPoolNums:          8,
		ClientRequestThreadPoolQueueCapacity: 50_000,
		DefaultThreadPoolNums:                16,
		DefaultThreadPoolQueueCapacity:       10_000,
		ServerChannelMaxIdleTimeSeconds:      120,
		ServerSocketMaxFrameSize:             16 << 20,
		ServerChannelWriteTimeoutMillis:      60_000,
		TLS:                                  remoting.DefaultTLSConfig(),
		ACL:                                  ACLConfig{AclFile: defaultAclFile},
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
	if err := c.ExporterConfig.Validate(map[string]int{"listenPort": c.ListenPort}); err != nil {
		errs = append(errs, err)
	}
	if err := c.Log.Validate(); err != nil {
		errs = append(errs, err)
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
		{"waitSecondsForService", int64(c.WaitSecondsForService)},
	}
	for _, p := range nonNegative {
		if p.v < 0 {
			bad(p.key, "%d must not be negative", p.v)
		}
	}
	if err := c.ACL.validate(c.TLS); err != nil {
		errs = append(errs, err)
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
