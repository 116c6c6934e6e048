package broker

import (
	"errors"
	"fmt"

	"github.com/rocketraft/rocketraft/ha"
)

// ReplicationConfig holds the classic replication keys: package ha's (haListenPort,
// haSendHeartbeatInterval, haHousekeepingInterval, haTransferBatchSize, haSlaveFallbehindMax,
// haMasterAddress, slaveTimeout) and the broker's own keys for slaves. It is squashed into Config,
// so the keys sit next to the others in a .properties file.
type ReplicationConfig struct {
	ha.Config `mapstructure:",squash"`

	// SlaveReadEnable lets pull answers point consumers at a slave (suggestWhichBrokerId): the
	// group's whichBrokerWhenConsumeSlowly when the consumer is far behind, else the group's
	// brokerId. False (RocketMQ's default) always suggests the master.
	SlaveReadEnable bool `mapstructure:"slaveReadEnable"`
	// SlaveSynchronizeInterval is how often a slave pulls topics, consumer offsets, delay offsets
	// and subscription groups from its master (10 s, as RocketMQ's fixed SlaveSynchronize period;
	// not a RocketMQ key).
	SlaveSynchronizeInterval int64 `mapstructure:"slaveSynchronizeInterval"`
	// HAOffsetSyncInterval is how often a classic master writes the consumer and delay offsets that
	// changed into its CommitLog for its slaves (ha_meta.go; 1 s, not a RocketMQ key): a slave's offsets
	// trail the master's by about this much.
	HAOffsetSyncInterval int64 `mapstructure:"haOffsetSyncInterval"`
}

// DefaultReplicationConfig returns RocketMQ's defaults.
func DefaultReplicationConfig() ReplicationConfig {
	return ReplicationConfig{Config: ha.DefaultConfig(), SlaveSynchronizeInterval: 10_000, HAOffsetSyncInterval: 1000}
}

// haListenPort is the HA port: haListenPort, or listenPort+1 when it is 0 (RocketMQ's BrokerStartup).
func (c Config) haListenPort() int {
	if c.Replication.HAListenPort > 0 {
		return c.Replication.HAListenPort
	}
	return c.ListenPort + 1
}

// validateReplication checks the replication keys, naming the bad one.
func (c Config) validateReplication() error {
	var errs []error
	if err := c.Replication.Config.Validate(); err != nil {
		errs = append(errs, err)
	}
	if p := c.haListenPort(); p > 65535 {
		errs = append(errs, fmt.Errorf("config key haListenPort: listenPort+1 = %d is not a TCP port; set haListenPort", p))
	} else if p == c.ListenPort {
		errs = append(errs, fmt.Errorf("config key haListenPort: %d is listenPort too", p))
	}
	if c.Replication.SlaveSynchronizeInterval <= 0 {
		errs = append(errs, fmt.Errorf("config key slaveSynchronizeInterval: %d must be positive", c.Replication.SlaveSynchronizeInterval))
	}
	if c.Replication.HAOffsetSyncInterval <= 0 {
		errs = append(errs, fmt.Errorf("config key haOffsetSyncInterval: %d must be positive", c.Replication.HAOffsetSyncInterval))
	}
	return errors.Join(errs...)
}
