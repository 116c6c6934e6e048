package broker

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/rocketraft/rocketraft/internal/gctune"
	"github.com/rocketraft/rocketraft/internal/logging"
	"github.com/rocketraft/rocketraft/internal/metrics"
	"github.com/rocketraft/rocketraft/internal/peertls"
	"github.com/rocketraft/rocketraft/protocol"
	"github.com/rocketraft/rocketraft/remoting"
	"github.com/rocketraft/rocketraft/store"
)

// Broker roles (brokerRole, a key of the embedded store config: a SLAVE store refuses puts).
const (
	RoleAsyncMaster = store.RoleAsyncMaster
	RoleSyncMaster  = store.RoleSyncMaster
	RoleSlave       = store.RoleSlave
)

// Config is a broker's configuration: RocketMQ's BrokerConfig keys, with the message store's keys
// (MessageStoreConfig) embedded, so one .properties file configures both as in RocketMQ.
// Times are milliseconds, as RocketMQ has them.
type Config struct {
	store.Config `mapstructure:",squash"`
	// Replication holds the classic master/slave keys (ha_config.go).
	Replication ReplicationConfig `mapstructure:",squash"`
	// TLS holds the tls* keys of the client port and of the name server client (remoting.TLSConfig).
	TLS remoting.TLSConfig `mapstructure:",squash"`
	// ACL holds aclEnable, aclFile, rocketmqHome and the broker's own accessKey/secretKey.
	ACL ACLConfig `mapstructure:",squash"`
	// Grpc holds enableProxy and grpcServerPort: RocketMQ 5's gRPC endpoint in this process (grpc.go).
	Grpc GrpcConfig `mapstructure:",squash"`
	// Raft holds the Raft mode's keys (raft_config.go): enableDLegerCommitLog, dLegerPeers, ...
	Raft RaftConfig `mapstructure:",squash"`
	// Pop holds RocketMQ 5's keys of pop consumption (broker/internal/pop): reviveQueueNum, reviveInterval, ...
	Pop PopConfig `mapstructure:",squash"`
	// ExporterConfig holds RocketMQ 5's metrics keys: metricsExporterType (DISABLE by default, or PROM),
	// metricsPromExporterHost, metricsPromExporterPort (5557), and metricsPort, the older synonym that turns
	// the endpoint on at its port.
	metrics.ExporterConfig `mapstructure:",squash"`
	// Log holds logDir, logLevel, logFileMaxSize and logFileMaxIndex (internal/logging). mqbroker opens the
	// files; logLevel is reloadable (UPDATE_BROKER_CONFIG, SIGHUP).
	Log logging.Config `mapstructure:",squash"`
	// IsolateLogEnable puts this broker's log files in logDir/<brokerName>_<brokerId> (RocketMQ 5's key), so
	// several brokers on one host can share logDir.
	IsolateLogEnable bool `mapstructure:"isolateLogEnable"`
	// PeerTLS holds the peerTls* keys: mutual TLS on the Raft and HA links (peer_tls.go).
	PeerTLS peertls.Config `mapstructure:",squash"`

	BrokerClusterName string `mapstructure:"brokerClusterName"` // cluster this broker belongs to
	BrokerName        string `mapstructure:"brokerName"`        // group name shared by a master and its slaves
	BrokerID          int64  `mapstructure:"brokerId"`          // 0 = master, > 0 = slave
	BrokerIP1         string `mapstructure:"brokerIP1"`         // address clients use; "" = first non-loopback IPv4 (127.0.0.1 if none)
	ListenPort        int    `mapstructure:"listenPort"`        // client port (10911)
	NamesrvAddr       string `mapstructure:"namesrvAddr"`       // name servers, "host:port;host:port"
	BrokerPermission  int    `mapstructure:"brokerPermission"`  // 6 = read + write

	AutoCreateTopicEnable        bool   `mapstructure:"autoCreateTopicEnable"`        // create unknown topics on send through TBW102
	AutoCreateSubscriptionGroup  bool   `mapstructure:"autoCreateSubscriptionGroup"`  // create unknown consumer groups on use
	DefaultTopicQueueNums        int    `mapstructure:"defaultTopicQueueNums"`        // queues of TBW102 and of auto-created topics
	ClusterTopicEnable           bool   `mapstructure:"clusterTopicEnable"`           // a topic named after the cluster
	BrokerTopicEnable            bool   `mapstructure:"brokerTopicEnable"`            // a topic named after the broker
	TraceTopicEnable             bool   `mapstructure:"traceTopicEnable"`             // create the message-trace topic msgTraceTopicName
	MsgTraceTopicName            string `mapstructure:"msgTraceTopicName"`            // topic the clients' trace records go to
	RejectTransactionMessage     bool   `mapstructure:"rejectTransactionMessage"`     // refuse half messages
	MaxReconsumeTimes            int    `mapstructure:"maxReconsumeTimes"`            // default retry budget of a group
	LongPollingEnable            bool   `mapstructure:"longPollingEnable"`            // hold pulls that find nothing
	ShortPollingTimeMills        int64  `mapstructure:"shortPollingTimeMills"`        // hold time when long polling is off
	RegisterNameServerPeriod     int64  `mapstructure:"registerNameServerPeriod"`     // re-registration interval (30 s)
	RegisterBrokerTimeoutMills   int64  `mapstructure:"registerBrokerTimeoutMills"`   // per name server request timeout
	CompressedRegister           bool   `mapstructure:"compressedRegister"`           // zlib REGISTER_BROKER bodies (register.go)
	FlushConsumerOffsetInterval  int64  `mapstructure:"flushConsumerOffsetInterval"`  // consumerOffset.json persistence (5 s)
	ChannelExpiredTimeout        int64  `mapstructure:"channelExpiredTimeout"`        // close silent client connections (120 s)
	ClientHousekeepingInterval   int64  `mapstructure:"clientHousekeepingInterval"`   // scan for silent clients (10 s)
	PullHoldRecheckInterval      int64  `mapstructure:"pullHoldRecheckInterval"`      // re-check held pulls (5 s)
	RebalanceLockMaxLiveTime     int64  `mapstructure:"rebalanceLockMaxLiveTime"`     // orderly queue lock lease (60 s)
	SendMessageThreadPoolNums    int    `mapstructure:"sendMessageThreadPoolNums"`    // send workers
	PullMessageThreadPoolNums    int    `mapstructure:"pullMessageThreadPoolNums"`    // pull workers
	AdminBrokerThreadPoolNums    int    `mapstructure:"adminBrokerThreadPoolNums"`    // admin workers
	ClientManageThreadPoolNums   int    `mapstructure:"clientManageThreadPoolNums"`   // heartbeat / client workers
	ConsumerManageThreadPoolNums int    `mapstructure:"consumerManageThreadPoolNums"` // offset / consumer-list workers
	QueryMessageThreadPoolNums   int    `mapstructure:"queryMessageThreadPoolNums"`   // query workers
	SendThreadPoolQueueCapacity  int    `mapstructure:"sendThreadPoolQueueCapacity"`  // queued sends before SYSTEM_BUSY
	PullThreadPoolQueueCapacity  int    `mapstructure:"pullThreadPoolQueueCapacity"`  // queued pulls before SYSTEM_BUSY
	PopMessageThreadPoolNums     int    `mapstructure:"popMessageThreadPoolNums"`     // pop and notification workers
	AckMessageThreadPoolNums     int    `mapstructure:"ackMessageThreadPoolNums"`     // ack and change-of-invisible-time workers
	PopThreadPoolQueueCapacity   int    `mapstructure:"popThreadPoolQueueCapacity"`   // queued pops before SYSTEM_BUSY
	AckThreadPoolQueueCapacity   int    `mapstructure:"ackThreadPoolQueueCapacity"`   // queued acks before SYSTEM_BUSY
	TransferMsgByHeap            bool   `mapstructure:"transferMsgByHeap"`            // false: pull answers are written from the mapped file
	DiskFallRecorded             bool   `mapstructure:"diskFallRecorded"`             // kept for config compatibility
	StoreReplyMessageEnable      bool   `mapstructure:"storeReplyMessageEnable"`      // keep replies in the store too
	EnablePropertyFilter         bool   `mapstructure:"enablePropertyFilter"`         // SQL92 subscriptions
	MetricsQueueLagSeriesLimit   int    `mapstructure:"metricsQueueLagSeriesLimit"`   // cap on per-queue consumer lag series (10000; 0 = none)
	MessageDelayLevel            string `mapstructure:"messageDelayLevel"`            // delay of each level, "1s 5s 10s ... 2h"
	FlushDelayOffsetInterval     int64  `mapstructure:"flushDelayOffsetInterval"`     // delayOffset.json persistence (10 s)
	TimerMaxDelaySec             int64  `mapstructure:"timerMaxDelaySec"`             // furthest delivery time accepted (3 days)
	TransactionCheckInterval     int64  `mapstructure:"transactionCheckInterval"`     // check-back scan period (60 s)
	TransactionTimeOut           int64  `mapstructure:"transactionTimeOut"`           // a half message younger than this is not checked (6 s)
	TransactionCheckMax          int    `mapstructure:"transactionCheckMax"`          // checks before a half message is given up (15)
	ShutdownTimeoutMillis        int64  `mapstructure:"shutdownTimeoutMillis"`        // budget for an ordered shutdown
	// GCHeapFloorMB (ours, 64) keeps the Go heap's collection target at least this many MiB
	// (internal/gctune): the broker's live heap is a few MB, and with Go's default target it was
	// collected ~27 times a second. 0 leaves Go's default; a GOGC in the environment wins. mqbroker
	// applies it to its process.
	GCHeapFloorMB int `mapstructure:"gcHeapFloorMB"`
}

// DefaultConfig returns RocketMQ's defaults, with the store under $HOME/store.
func DefaultConfig() Config {
	host, _ := os.Hostname()
	if host == "" {
		host = "broker-a"
	}
	return Config{
		Config:                       store.DefaultConfig(),
		Replication:                  DefaultReplicationConfig(),
		Pop:                          DefaultPopConfig(),
		TLS:                          remoting.DefaultTLSConfig(),
		ACL:                          ACLConfig{RocketmqHome: defaultRocketmqHome(), AclFile: DefaultAclFile},
		Grpc:                         DefaultGrpcConfig(),
		Raft:                         DefaultRaftConfig(),
		ExporterConfig:               metrics.DefaultExporterConfig(metrics.DefaultBrokerPort),
		Log:                          logging.DefaultConfig(),
		PeerTLS:                      peertls.DefaultConfig(),
		BrokerClusterName:            "DefaultCluster",
		BrokerName:                   host,
		BrokerID:                     0,
		ListenPort:                   10911,
		BrokerPermission:             protocol.PermRead | protocol.PermWrite,
		AutoCreateTopicEnable:        true,
		AutoCreateSubscriptionGroup:  true,
		DefaultTopicQueueNums:        8,
		ClusterTopicEnable:           true,
		BrokerTopicEnable:            true,
		TraceTopicEnable:             false,
		MsgTraceTopicName:            TopicTrace,
		MaxReconsumeTimes:            16,
		LongPollingEnable:            true,
		ShortPollingTimeMills:        1000,
		RegisterNameServerPeriod:     30_000,
		RegisterBrokerTimeoutMills:   6_000,
		CompressedRegister:           true,
		FlushConsumerOffsetInterval:  5_000,
		ChannelExpiredTimeout:        120_000,
		ClientHousekeepingInterval:   10_000,
		PullHoldRecheckInterval:      5_000,
		RebalanceLockMaxLiveTime:     60_000,
		SendMessageThreadPoolNums:    16,
		PullMessageThreadPoolNums:    16,
		AdminBrokerThreadPoolNums:    8,
		ClientManageThreadPoolNums:   8,
		ConsumerManageThreadPoolNums: 8,
		QueryMessageThreadPoolNums:   4,
		SendThreadPoolQueueCapacity:  10_000,
		PullThreadPoolQueueCapacity:  100_000,
		PopMessageThreadPoolNums:     16 + 2*runtime.NumCPU(), // RocketMQ 5's defaults
		AckMessageThreadPoolNums:     3,
		PopThreadPoolQueueCapacity:   100_000,
		AckThreadPoolQueueCapacity:   100_000,
		StoreReplyMessageEnable:      true,
		MetricsQueueLagSeriesLimit:   10_000,
		MessageDelayLevel:            "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h",
		FlushDelayOffsetInterval:     10_000,
		TimerMaxDelaySec:             3 * 24 * 3600,
		TransactionCheckInterval:     60_000,
		TransactionTimeOut:           6_000,
		TransactionCheckMax:          15,
		ShutdownTimeoutMillis:        10_000,
		GCHeapFloorMB:                gctune.DefaultFloorMB,
	}
}

// Validate checks every value and names the first bad key (all of them, joined).
func (c Config) Validate() error {
	var errs []error
	bad := func(key string, format string, args ...any) {
		errs = append(errs, fmt.Errorf("config key %s: %s", key, fmt.Sprintf(format, args...)))
	}
	if err := c.Config.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := c.validateReplication(); err != nil {
		errs = append(errs, err)
	}
	if err := c.validateGrpc(); err != nil {
		errs = append(errs, err)
	}
	if err := c.validateRaft(); err != nil {
		errs = append(errs, err)
	}
	if err := c.PeerTLS.Validate(); err != nil {
		errs = append(errs, err)
	}
	if c.BrokerClusterName == "" {
		bad("brokerClusterName", "must not be empty")
	}
	if err := protocol.ValidateTopicName(c.BrokerName); c.BrokerName == "" || err != nil {
		bad("brokerName", "%q must be 1..127 characters of %%|a-zA-Z0-9_-", c.BrokerName)
	}
	if err := protocol.ValidateTopicName(c.MsgTraceTopicName); err != nil {
		bad("msgTraceTopicName", "%v", err)
	}
	if c.BrokerID < 0 {
		bad("brokerId", "%d is negative", c.BrokerID)
	}
	if err := gctune.CheckFloorMB(c.GCHeapFloorMB); err != nil {
		bad("gcHeapFloorMB", "%v", err)
	}
	if c.ListenPort <= 0 || c.ListenPort > 65535 {
		bad("listenPort", "%d is not a TCP port (1..65535)", c.ListenPort)
	}
	if c.BrokerIP1 != "" && net.ParseIP(c.BrokerIP1) == nil {
		bad("brokerIP1", "%q is not an IP address", c.BrokerIP1)
	}
	for _, a := range c.NamesrvAddrs() {
		if _, _, err := net.SplitHostPort(a); err != nil {
			bad("namesrvAddr", "%q is not host:port", a)
		}
	}
	switch c.BrokerRole {
	case RoleAsyncMaster, RoleSyncMaster:
		if c.BrokerID != 0 {
			bad("brokerId", "a master (brokerRole=%s) has brokerId 0, not %d", c.BrokerRole, c.BrokerID)
		}
	case RoleSlave:
		if c.BrokerID == 0 {
			bad("brokerId", "a slave needs brokerId > 0")
		}
	default:
		bad("brokerRole", "%q is not ASYNC_MASTER, SYNC_MASTER or SLAVE", c.BrokerRole)
	}
	if c.BrokerPermission&^(protocol.PermRead|protocol.PermWrite|protocol.PermInherit|protocol.PermPriority) != 0 {
		bad("brokerPermission", "%d has bits other than 8|4|2|1", c.BrokerPermission)
	}
	if c.DefaultTopicQueueNums < 1 || c.DefaultTopicQueueNums > 1024 {
		bad("defaultTopicQueueNums", "%d is not within 1..1024", c.DefaultTopicQueueNums)
	}
	if c.MaxReconsumeTimes < 0 {
		bad("maxReconsumeTimes", "%d is negative", c.MaxReconsumeTimes)
	}
	positive := map[string]int64{
		"shortPollingTimeMills":        c.ShortPollingTimeMills,
		"registerNameServerPeriod":     c.RegisterNameServerPeriod,
		"registerBrokerTimeoutMills":   c.RegisterBrokerTimeoutMills,
		"flushConsumerOffsetInterval":  c.FlushConsumerOffsetInterval,
		"channelExpiredTimeout":        c.ChannelExpiredTimeout,
		"clientHousekeepingInterval":   c.ClientHousekeepingInterval,
		"pullHoldRecheckInterval":      c.PullHoldRecheckInterval,
		"rebalanceLockMaxLiveTime":     c.RebalanceLockMaxLiveTime,
		"shutdownTimeoutMillis":        c.ShutdownTimeoutMillis,
		"sendMessageThreadPoolNums":    int64(c.SendMessageThreadPoolNums),
		"pullMessageThreadPoolNums":    int64(c.PullMessageThreadPoolNums),
		"adminBrokerThreadPoolNums":    int64(c.AdminBrokerThreadPoolNums),
		"clientManageThreadPoolNums":   int64(c.ClientManageThreadPoolNums),
		"consumerManageThreadPoolNums": int64(c.ConsumerManageThreadPoolNums),
		"queryMessageThreadPoolNums":   int64(c.QueryMessageThreadPoolNums),
		"sendThreadPoolQueueCapacity":  int64(c.SendThreadPoolQueueCapacity),
		"pullThreadPoolQueueCapacity":  int64(c.PullThreadPoolQueueCapacity),
		"popMessageThreadPoolNums":     int64(c.PopMessageThreadPoolNums),
		"ackMessageThreadPoolNums":     int64(c.AckMessageThreadPoolNums),
		"popThreadPoolQueueCapacity":   int64(c.PopThreadPoolQueueCapacity),
		"ackThreadPoolQueueCapacity":   int64(c.AckThreadPoolQueueCapacity),
	}
	for _, k := range sortedKeys(positive) {
		if positive[k] <= 0 {
			bad(k, "%d must be positive", positive[k])
		}
	}
	if _, err := parseDelayLevels(c.MessageDelayLevel); err != nil {
		bad("messageDelayLevel", "%v", err)
	}
	if err := c.ExporterConfig.Validate(map[string]int{"listenPort": c.ListenPort, "haListenPort": c.haListenPort()}); err != nil {
		errs = append(errs, err)
	}
	if err := c.Log.Validate(); err != nil {
		errs = append(errs, err)
	}
	if c.MetricsQueueLagSeriesLimit < 0 {
		bad("metricsQueueLagSeriesLimit", "%d is negative (0 = no per-queue lag series)", c.MetricsQueueLagSeriesLimit)
	}
	if err := c.TLS.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := c.Pop.Validate(); err != nil {
		errs = append(errs, err)
	}
	if c.ACL.AclEnable && c.ACL.AclFile == "" {
		bad("aclFile", "is empty while aclEnable is true")
	}
	if (c.ACL.AccessKey == "") != (c.ACL.SecretKey == "") {
		bad("secretKey", "accessKey and secretKey go together: set both or neither")
	}
	return errors.Join(errs...)
}

// ACLConfig are the access-control keys (package acl).
type ACLConfig struct {
	RocketmqHome string          `mapstructure:"rocketmqHome"` // home of relative aclFile paths; default $ROCKETMQ_HOME, else $HOME
	AclEnable    bool            `mapstructure:"aclEnable"`    // check every request against aclFile (RocketMQ 4.x plain ACL)
	AclFile      string          `mapstructure:"aclFile"`      // ACL rules, absolute or under rocketmqHome (RocketMQ's rocketmq.acl.plain.file)
	AccessKey    string          `mapstructure:"accessKey"`    // this broker's own account: signs its requests to name servers
	SecretKey    remoting.Secret `mapstructure:"secretKey"`    // that account's secret; printed masked
}

// DefaultAclFile is aclFile's default, under rocketmqHome.
const DefaultAclFile = "conf/plain_acl.yml"

// AclPath is the ACL file: aclFile, under rocketmqHome unless absolute.
func (c ACLConfig) AclPath() string {
	if filepath.IsAbs(c.AclFile) {
		return c.AclFile
	}
	return filepath.Join(c.RocketmqHome, c.AclFile)
}

// Credentials is the broker's own account, signing what it sends (zero when accessKey is not set).
func (c ACLConfig) Credentials() remoting.Credentials {
	return remoting.Credentials{AccessKey: c.AccessKey, SecretKey: c.SecretKey}
}

func defaultRocketmqHome() string {
	if h := os.Getenv("ROCKETMQ_HOME"); h != "" {
		return h
	}
	h, _ := os.UserHomeDir()
	return h
}

// LogDir is the folder of this broker's log files: logDir, or logDir/<brokerName>_<brokerId> with
// isolateLogEnable ("" when logDir is empty: stderr only).
func (c Config) LogDir() string {
	if c.Log.LogDir == "" || !c.IsolateLogEnable {
		return c.Log.LogDir
	}
	return filepath.Join(c.Log.LogDir, c.BrokerName+"_"+strconv.FormatInt(c.BrokerID, 10))
}

// NamesrvAddrs splits namesrvAddr ("a:9876;b:9876") into addresses.
func (c Config) NamesrvAddrs() []string {
	var out []string
	for _, a := range strings.FieldsFunc(c.NamesrvAddr, func(r rune) bool { return r == ';' || r == ',' }) {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}

// parseDelayLevels reads messageDelayLevel: durations with unit s, m, h or d, separated by spaces.
func parseDelayLevels(text string) ([]time.Duration, error) {
	var out []time.Duration
	for _, f := range strings.Fields(text) {
		if len(f) < 2 {
			return nil, fmt.Errorf("%q is not a duration like 5s, 2m, 1h or 1d", f)
		}
		n, err := strconv.Atoi(f[:len(f)-1])
		if err != nil || n < 0 {
			return nil, fmt.Errorf("%q is not a duration like 5s, 2m, 1h or 1d", f)
		}
		unit := map[byte]time.Duration{'s': time.Second, 'm': time.Minute, 'h': time.Hour, 'd': 24 * time.Hour}[f[len(f)-1]]
		if unit == 0 {
			return nil, fmt.Errorf("%q has unit %q; the units are s, m, h and d", f, f[len(f)-1:])
		}
		out = append(out, time.Duration(n)*unit)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no delay level in %q", text)
	}
	return out, nil
}
