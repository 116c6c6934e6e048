package ha

import (
	"errors"
	"fmt"
	"net"
	"time"
)

// Config holds the replication keys of RocketMQ 4.x's MessageStoreConfig, with RocketMQ's
// names and defaults. Times are milliseconds, sizes bytes. The mapstructure tags let a broker
// .properties file fill it through the broker's config (it is embedded there).
type Config struct {
	// HAListenPort is the port the master accepts slaves on; 0 means the broker's listenPort+1,
	// which is what RocketMQ's BrokerStartup sets.
	HAListenPort int `mapstructure:"haListenPort"`
	// HASendHeartbeatInterval: the master sends an empty frame, and the slave reports its
	// offset, when nothing else was sent for this long (5 s).
	HASendHeartbeatInterval int64 `mapstructure:"haSendHeartbeatInterval"`
	// HAHousekeepingInterval: either side closes a connection it read nothing from for this
	// long (20 s).
	HAHousekeepingInterval int64 `mapstructure:"haHousekeepingInterval"`
	// HATransferBatchSize caps the body of one transfer frame (32 KiB).
	HATransferBatchSize int `mapstructure:"haTransferBatchSize"`
	// HASlaveFallbehindMax: a SYNC_MASTER answers SLAVE_NOT_AVAILABLE at once when the best
	// slave is this far behind the end of the put (256 MiB).
	HASlaveFallbehindMax int64 `mapstructure:"haSlaveFallbehindMax"`
	// HAMasterAddress (slave) fixes the master's HA address, host:port; "" takes it from the
	// name server's answer to the registration.
	HAMasterAddress string `mapstructure:"haMasterAddress"`
	// SlaveTimeout is how long a SYNC_MASTER put waits for a slave before it answers
	// FLUSH_SLAVE_TIMEOUT (3 s; RocketMQ 4.9.3 and later).
	SlaveTimeout int64 `mapstructure:"slaveTimeout"`
}

// DefaultConfig returns RocketMQ's defaults.
func DefaultConfig() Config {
	return Config{
		HAListenPort:            0,
		HASendHeartbeatInterval: 5000,
		HAHousekeepingInterval:  20000,
		HATransferBatchSize:     32 << 10,
		HASlaveFallbehindMax:    256 << 20,
		SlaveTimeout:            3000,
	}
}

// MaxTransferBatchSize is the largest haTransferBatchSize accepted: RocketMQ's HAClient reads
// into a 4 MiB buffer, so a larger frame would stall a RocketMQ slave.
const MaxTransferBatchSize = 4 << 20

// ErrInvalidConfig is wrapped by every Validate error.
var ErrInvalidConfig = errors.New("ha: invalid config")

func configErr(key string, format string, args ...any) error {
	return fmt.Errorf("%w: config key %s: %s", ErrInvalidConfig, key, fmt.Sprintf(format, args...))
}

// Validate returns an error naming the first key whose value is out of range.
func (c Config) Validate() error {
	if c.HAListenPort < 0 || c.HAListenPort > 65535 {
		return configErr("haListenPort", "%d is not a TCP port (0 = listenPort+1)", c.HAListenPort)
	}
	if c.HASendHeartbeatInterval <= 0 {
		return configErr("haSendHeartbeatInterval", "%d must be positive", c.HASendHeartbeatInterval)
	}
	if c.HAHousekeepingInterval <= c.HASendHeartbeatInterval {
		return configErr("haHousekeepingInterval", "%d must be longer than haSendHeartbeatInterval (%d), or idle connections are closed",
			c.HAHousekeepingInterval, c.HASendHeartbeatInterval)
	}
	if c.HATransferBatchSize <= 0 || c.HATransferBatchSize > MaxTransferBatchSize {
		return configErr("haTransferBatchSize", "%d outside 1..%d", c.HATransferBatchSize, MaxTransferBatchSize)
	}
	if c.HASlaveFallbehindMax <= 0 {
		return configErr("haSlaveFallbehindMax", "%d must be positive", c.HASlaveFallbehindMax)
	}
	if c.HAMasterAddress != "" {
		if _, _, err := net.SplitHostPort(c.HAMasterAddress); err != nil {
			return configErr("haMasterAddress", "%q is not host:port", c.HAMasterAddress)
		}
	}
	if c.SlaveTimeout <= 0 {
		return configErr("slaveTimeout", "%d must be positive", c.SlaveTimeout)
	}
	return nil
}

func (c Config) heartbeat() time.Duration    { return ms(c.HASendHeartbeatInterval) }
func (c Config) housekeeping() time.Duration { return ms(c.HAHousekeepingInterval) }
func (c Config) slaveTimeout() time.Duration { return ms(c.SlaveTimeout) }

func ms(v int64) time.Duration { return time.Duration(v) * time.Millisecond }
