package pop

import "fmt"

// Config are RocketMQ 5's keys of pop consumption (BrokerConfig), with its defaults but one:
// enablePopBufferMerge is on here (off in RocketMQ 5), see buffer.go.
type Config struct {
	ReviveQueueNum          int32 `mapstructure:"reviveQueueNum"`          // queues of the revive topic (8)
	ReviveInterval          int64 `mapstructure:"reviveInterval"`          // ms between revive scans (1000)
	PopFromRetryProbability int   `mapstructure:"popFromRetryProbability"` // % of pops that read the retry topic first (20)
	EnableRetryTopicV2      bool  `mapstructure:"enableRetryTopicV2"`      // %RETRY%group+topic instead of %RETRY%group_topic
	PopPollingSize          int   `mapstructure:"popPollingSize"`          // held pops and notifications per topic@group@queue (1024)
	MaxPopPollingSize       int   `mapstructure:"maxPopPollingSize"`       // held pops and notifications in all (100000)
	// EnablePopBufferMerge keeps a pop's check point in memory for up to popCkStayBufferTime before it is
	// written (buffer.go): a pop acked within it writes no record (true here; false in RocketMQ 5).
	EnablePopBufferMerge bool  `mapstructure:"enablePopBufferMerge"`
	PopCkStayBufferTime  int64 `mapstructure:"popCkStayBufferTime"` // ms a check point stays in memory at most (10000)
	PopCkMaxBufferSize   int64 `mapstructure:"popCkMaxBufferSize"`  // check points in memory at most; beyond, written at once (200000)
}

// DefaultConfig is RocketMQ 5's.
func DefaultConfig() Config {
	return Config{ReviveQueueNum: 8, ReviveInterval: 1000, PopFromRetryProbability: 20, PopPollingSize: 1024,
		MaxPopPollingSize: 100_000, EnablePopBufferMerge: true, PopCkStayBufferTime: 10_000, PopCkMaxBufferSize: 200_000}
}

// Validate names the first bad key.
func (c Config) Validate() error {
	switch {
	case c.ReviveQueueNum <= 0 || c.ReviveQueueNum >= 999:
		return fmt.Errorf("config key reviveQueueNum: %d is not in [1, 998] (999 marks ordered pops)", c.ReviveQueueNum)
	case c.ReviveInterval <= 0:
		return fmt.Errorf("config key reviveInterval: %d must be positive", c.ReviveInterval)
	case c.PopFromRetryProbability < 0 || c.PopFromRetryProbability > 100:
		return fmt.Errorf("config key popFromRetryProbability: %d is not in [0, 100]", c.PopFromRetryProbability)
	case c.PopPollingSize <= 0:
		return fmt.Errorf("config key popPollingSize: %d must be positive", c.PopPollingSize)
	case c.MaxPopPollingSize <= 0:
		return fmt.Errorf("config key maxPopPollingSize: %d must be positive", c.MaxPopPollingSize)
	case c.PopCkStayBufferTime <= 0:
		return fmt.Errorf("config key popCkStayBufferTime: %d must be positive (ms)", c.PopCkStayBufferTime)
	case c.PopCkMaxBufferSize < 0:
		return fmt.Errorf("config key popCkMaxBufferSize: %d is negative", c.PopCkMaxBufferSize)
	}
	return nil
}
