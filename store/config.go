package store

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/rocketraft/rocketraft/message"
)

// Flush disk types (RocketMQ FlushDiskType).
const (
	AsyncFlush = "ASYNC_FLUSH"
	SyncFlush  = "SYNC_FLUSH"
)

// Broker roles (RocketMQ BrokerRole). A SLAVE store refuses PutMessage.
const (
	RoleAsyncMaster = "ASYNC_MASTER"
	RoleSyncMaster  = "SYNC_MASTER"
	RoleSlave       = "SLAVE"
)

// Config holds the store's RocketMQ MessageStoreConfig keys. Times are milliseconds unless the
// field says otherwise, sizes are bytes. The mapstructure tags are RocketMQ's key names, so a
// broker .properties file fills it through viper.
type Config struct {
	// StorePathRootDir holds commitlog/, consumequeue/, index/, checkpoint, abort, config/.
	StorePathRootDir string `mapstructure:"storePathRootDir"`
	// StorePathCommitLog is the CommitLog folder; "" means <StorePathRootDir>/commitlog.
	StorePathCommitLog string `mapstructure:"storePathCommitLog"`
	// MappedFileSizeCommitLog is the size of each CommitLog file (1 GiB).
	MappedFileSizeCommitLog int64 `mapstructure:"mappedFileSizeCommitLog"`
	// MappedFileSizeConsumeQueue is the size of each ConsumeQueue file (300,000 units of 20 bytes).
	MappedFileSizeConsumeQueue int64 `mapstructure:"mappedFileSizeConsumeQueue"`
	// MaxMessageSize is the largest body accepted (4 MiB).
	MaxMessageSize int `mapstructure:"maxMessageSize"`
	// BrokerRole is ASYNC_MASTER, SYNC_MASTER or SLAVE; a SLAVE store takes no PutMessage.
	BrokerRole string `mapstructure:"brokerRole"`

	// FlushDiskType is ASYNC_FLUSH or SYNC_FLUSH (group commit).
	FlushDiskType string `mapstructure:"flushDiskType"`
	// SyncFlushTimeout is how long a SYNC_FLUSH put waits before FLUSH_DISK_TIMEOUT (5 s).
	SyncFlushTimeout int64 `mapstructure:"syncFlushTimeout"`
	// FlushIntervalCommitLog is the ASYNC_FLUSH period (500 ms).
	FlushIntervalCommitLog int64 `mapstructure:"flushIntervalCommitLog"`
	// FlushCommitLogLeastPages is the dirty 4 KiB pages needed for a periodic flush (4).
	FlushCommitLogLeastPages int `mapstructure:"flushCommitLogLeastPages"`
	// FlushCommitLogThoroughInterval forces a flush of everything this often (10 s).
	FlushCommitLogThoroughInterval int64 `mapstructure:"flushCommitLogThoroughInterval"`
	// CommitIntervalCommitLog is the period of the transient-pool commit (200 ms).
	CommitIntervalCommitLog int64 `mapstructure:"commitIntervalCommitLog"`
	// CommitCommitLogLeastPages is the uncommitted pages needed for a periodic commit (4).
	CommitCommitLogLeastPages int `mapstructure:"commitCommitLogLeastPages"`
	// CommitCommitLogThoroughInterval forces a commit of everything this often (200 ms).
	CommitCommitLogThoroughInterval int64 `mapstructure:"commitCommitLogThoroughInterval"`
	// FlushIntervalConsumeQueue is the ConsumeQueue flush period (1 s).
	FlushIntervalConsumeQueue int64 `mapstructure:"flushIntervalConsumeQueue"`
	// FlushConsumeQueueLeastPages is the dirty pages needed for a ConsumeQueue flush (2).
	FlushConsumeQueueLeastPages int `mapstructure:"flushConsumeQueueLeastPages"`
	// FlushConsumeQueueThoroughInterval forces a ConsumeQueue flush of everything (60 s).
	FlushConsumeQueueThoroughInterval int64 `mapstructure:"flushConsumeQueueThoroughInterval"`

	// TransientStorePoolEnable writes the CommitLog into mlock'ed buffers committed to the file
	// every CommitIntervalCommitLog (ASYNC_FLUSH masters only; ignored otherwise).
	TransientStorePoolEnable bool `mapstructure:"transientStorePoolEnable"`
	// TransientStorePoolSize is the number of buffers (each MappedFileSizeCommitLog bytes) (5).
	TransientStorePoolSize int `mapstructure:"transientStorePoolSize"`
	// FastFailIfNoBufferInStorePool refuses a new CommitLog file when the pool is empty,
	// instead of writing that file through the mapping.
	FastFailIfNoBufferInStorePool bool `mapstructure:"fastFailIfNoBufferInStorePool"`
	// WriteWithoutMmap writes CommitLog records with pwrite(2) instead of copying them into the
	// mapping (reads still use the mapping). Always on with SYNC_FLUSH (see syncFlushFiles). Off
	// by default, as in RocketMQ: with ASYNC_FLUSH the copies go into pages the populate service
	// faulted in ahead of them (populate.go; doc.go "Writing and flushing" has the measurements).
	WriteWithoutMmap bool `mapstructure:"writeWithoutMmap"`
	// WarmMapedFileEnable writes zeros over every new CommitLog file and syncs them before the
	// file takes records (RocketMQ's warm-up; RocketMQ's spelling). Always on with SYNC_FLUSH
	// (see syncFlushFiles), where only a frontier 16 MiB ahead of the writes is warm.
	WarmMapedFileEnable bool `mapstructure:"warmMapedFileEnable"`

	// FileReservedTime is how long CommitLog files are kept, in hours (72).
	FileReservedTime int `mapstructure:"fileReservedTime"`
	// DeleteWhen lists the hours ("04", or "03;04") at which expired files are deleted.
	DeleteWhen string `mapstructure:"deleteWhen"`
	// DiskMaxUsedSpaceRatio is the disk use, in percent, past which expired files are deleted
	// at once instead of waiting for DeleteWhen (75).
	DiskMaxUsedSpaceRatio int `mapstructure:"diskMaxUsedSpaceRatio"`
	// DiskSpaceCleanForciblyRatio is the disk use (percent, capped 85) past which files are
	// deleted even before FileReservedTime (85).
	DiskSpaceCleanForciblyRatio int `mapstructure:"diskSpaceCleanForciblyRatio"`
	// DiskSpaceWarningLevelRatio is the disk use (percent, capped 90) past which writes are
	// refused with ErrDiskFull (90).
	DiskSpaceWarningLevelRatio int `mapstructure:"diskSpaceWarningLevelRatio"`
	// CleanFileForciblyEnable allows deleting unexpired files when the disk is nearly full.
	CleanFileForciblyEnable bool `mapstructure:"cleanFileForciblyEnable"`
	// CleanResourceInterval is the period of the clean service (10 s).
	CleanResourceInterval int64 `mapstructure:"cleanResourceInterval"`
	// DeleteCommitLogFilesInterval is the pause between two CommitLog file deletions (100 ms).
	DeleteCommitLogFilesInterval int64 `mapstructure:"deleteCommitLogFilesInterval"`
	// DeleteConsumeQueueFilesInterval is the pause between two ConsumeQueue deletions (100 ms).
	DeleteConsumeQueueFilesInterval int64 `mapstructure:"deleteConsumeQueueFilesInterval"`
	// DestroyMapedFileIntervalForcibly is how long a deleted file may stay mapped for readers
	// before the store logs it as hanging (120 s). Files are never unmapped under a reader.
	DestroyMapedFileIntervalForcibly int64 `mapstructure:"destroyMapedFileIntervalForcibly"`
	// DeleteFileBatchMax is the most CommitLog files deleted per clean run (10).
	DeleteFileBatchMax int `mapstructure:"deleteFileBatchMax"`

	// CheckCRCOnRecover verifies body CRCs while recovering the CommitLog.
	CheckCRCOnRecover bool `mapstructure:"checkCRCOnRecover"`

	// MessageIndexEnable builds the IndexFile (keys and unique ids).
	MessageIndexEnable bool `mapstructure:"messageIndexEnable"`
	// MessageIndexSafe makes abnormal recovery also start before the last index flush.
	MessageIndexSafe bool `mapstructure:"messageIndexSafe"`
	// MaxHashSlotNum is the number of hash slots per index file (5,000,000).
	MaxHashSlotNum int `mapstructure:"maxHashSlotNum"`
	// MaxIndexNum is the number of entries per index file (20,000,000).
	MaxIndexNum int `mapstructure:"maxIndexNum"`
	// DefaultQueryMaxNum caps the results of one QueryMessage (32).
	DefaultQueryMaxNum int `mapstructure:"defaultQueryMaxNum"`

	// MaxTransferBytesOnMessageInMemory caps one GetMessage over data in memory (256 KiB).
	MaxTransferBytesOnMessageInMemory int `mapstructure:"maxTransferBytesOnMessageInMemory"`
	// MaxTransferCountOnMessageInMemory caps the messages of one GetMessage in memory (32).
	MaxTransferCountOnMessageInMemory int `mapstructure:"maxTransferCountOnMessageInMemory"`
	// MaxTransferBytesOnMessageInDisk caps one GetMessage over data likely on disk (64 KiB).
	MaxTransferBytesOnMessageInDisk int `mapstructure:"maxTransferBytesOnMessageInDisk"`
	// MaxTransferCountOnMessageInDisk caps the messages of one GetMessage on disk (8).
	MaxTransferCountOnMessageInDisk int `mapstructure:"maxTransferCountOnMessageInDisk"`
	// AccessMessageInMemoryMaxRatio is the share of RAM (percent) behind the CommitLog end
	// still taken to be in memory (40).
	AccessMessageInMemoryMaxRatio int `mapstructure:"accessMessageInMemoryMaxRatio"`
	// MaxFilterMessageSize is how many ConsumeQueue bytes one GetMessage may examine (16000).
	MaxFilterMessageSize int `mapstructure:"maxFilterMessageSize"`
	// ColdReadEnable reads the CommitLog chunks a consumer asks for that are not in the page
	// cache with O_DIRECT, into buffers the store reuses, instead of through the mapping (true;
	// cold_read.go).
	ColdReadEnable bool `mapstructure:"coldReadEnable"`
	// ColdReadBufferBytes is the memory of those buffers, in 2 MiB chunks (64 MiB).
	ColdReadBufferBytes int64 `mapstructure:"coldReadBufferBytes"`

	// sparseSyncFlush (benchmarks only) keeps SYNC_FLUSH on sparse files written through the
	// mapping, as this store did before syncFlushFiles.
	sparseSyncFlush bool
	// warmAhead (tests) replaces defaultWarmAhead when positive.
	warmAhead int64
}

// syncFlushFiles reports whether the CommitLog is written the SYNC_FLUSH way: every file
// warmed ahead of the writes (written with zeros and synced before it takes records there,
// see warmAheadBytes) and records staged in
// memory by the puts, then written with pwrite by the group-commit flusher (stage.go). Measured here (BenchmarkRawSyncWrite, BenchmarkSyncFlushVariants): an fdatasync
// after appending into a sparse file allocates blocks and commits the ext4 journal, about
// twice the cost of one that only overwrites written blocks once 16 records are flushed
// together; and writes through the mapping dirty whole (large) page-cache folios, so every
// flush wrote far more than the records, while pwrite dirties only the blocks it touches.
func (c Config) syncFlushFiles() bool { return c.FlushDiskType == SyncFlush && !c.sparseSyncFlush }

// warmCommitLog reports whether new CommitLog files are warmed.
func (c Config) warmCommitLog() bool { return c.WarmMapedFileEnable || c.syncFlushFiles() }

// warmAheadBytes is how far ahead of the writes CommitLog files are kept warm: with
// SYNC_FLUSH (staged writes, the only path that checks the frontier before it writes)
// defaultWarmAhead, capped at the file size; 0 means files are warmed in full when made
// (warmMapedFileEnable with ASYNC_FLUSH).
func (c Config) warmAheadBytes() int64 {
	if !c.syncFlushFiles() {
		return 0
	}
	ahead := int64(defaultWarmAhead)
	if c.warmAhead > 0 {
		ahead = c.warmAhead
	}
	return min(ahead, c.MappedFileSizeCommitLog)
}

// populateAheadBytes is how far ahead of the writes the pages of a CommitLog file written
// through the mapping are faulted in (populate.go): defaultPopulateAhead with ASYNC_FLUSH copies
// into the mapping of files that are not warmed in full, 0 otherwise.
func (c Config) populateAheadBytes() int64 {
	if c.pwriteCommitLog() || c.warmCommitLog() || c.transientPoolActive() {
		return 0
	}
	return min(int64(defaultPopulateAhead), c.MappedFileSizeCommitLog)
}

// pwriteCommitLog reports whether CommitLog records are written with pwrite.
func (c Config) pwriteCommitLog() bool { return c.WriteWithoutMmap || c.syncFlushFiles() }

// DefaultConfig returns RocketMQ's defaults: the root is $HOME/store (./store when the home
// folder is unknown) and the CommitLog <root>/commitlog.
func DefaultConfig() Config {
	root := "store"
	if home, err := os.UserHomeDir(); err == nil && home != "" {
		root = filepath.Join(home, "store")
	}
	return Config{
		StorePathRootDir:                  root,
		MappedFileSizeCommitLog:           1 << 30,
		MappedFileSizeConsumeQueue:        300000 * cqUnitSize,
		MaxMessageSize:                    4 << 20,
		BrokerRole:                        RoleAsyncMaster,
		FlushDiskType:                     AsyncFlush,
		SyncFlushTimeout:                  5000,
		FlushIntervalCommitLog:            500,
		FlushCommitLogLeastPages:          4,
		FlushCommitLogThoroughInterval:    10000,
		CommitIntervalCommitLog:           200,
		CommitCommitLogLeastPages:         4,
		CommitCommitLogThoroughInterval:   200,
		FlushIntervalConsumeQueue:         1000,
		FlushConsumeQueueLeastPages:       2,
		FlushConsumeQueueThoroughInterval: 60000,
		TransientStorePoolSize:            5,
		WriteWithoutMmap:                  false,
		FileReservedTime:                  72,
		DeleteWhen:                        "04",
		DiskMaxUsedSpaceRatio:             75,
		DiskSpaceCleanForciblyRatio:       85,
		DiskSpaceWarningLevelRatio:        90,
		CleanFileForciblyEnable:           true,
		CleanResourceInterval:             10000,
		DeleteCommitLogFilesInterval:      100,
		DeleteConsumeQueueFilesInterval:   100,
		DestroyMapedFileIntervalForcibly:  120000,
		DeleteFileBatchMax:                10,
		CheckCRCOnRecover:                 true,
		MessageIndexEnable:                true,
		MaxHashSlotNum:                    5000000,
		MaxIndexNum:                       5000000 * 4,
		DefaultQueryMaxNum:                32,
		MaxTransferBytesOnMessageInMemory: 256 << 10,
		MaxTransferCountOnMessageInMemory: 32,
		MaxTransferBytesOnMessageInDisk:   64 << 10,
		MaxTransferCountOnMessageInDisk:   8,
		AccessMessageInMemoryMaxRatio:     40,
		MaxFilterMessageSize:              16000,
		ColdReadEnable:                    true,
		ColdReadBufferBytes:               64 << 20,
	}
}

// maxRecordOverhead is the largest record minus its body: header with IPv6 hosts, topic,
// properties.
const maxRecordOverhead = message.RecordFixedLength - 2*message.HostV4Length + 2*message.HostV6Length + message.MaxTopicLength + message.MaxPropertiesLength

// ErrInvalidConfig is wrapped by every Validate error.
var ErrInvalidConfig = errors.New("store: invalid config")

func configErr(key string, format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrInvalidConfig, key, fmt.Sprintf(format, args...))
}

// Validate returns an error naming the first key whose value is out of range, with the limit.
func (c Config) Validate() error {
	if strings.TrimSpace(c.StorePathRootDir) == "" {
		return configErr("storePathRootDir", "must not be empty")
	}
	if c.MappedFileSizeCommitLog < 4096 || c.MappedFileSizeCommitLog > math.MaxInt32 {
		return configErr("mappedFileSizeCommitLog", "%d outside 4096..%d", c.MappedFileSizeCommitLog, math.MaxInt32)
	}
	if c.MappedFileSizeConsumeQueue < cqUnitSize || c.MappedFileSizeConsumeQueue%cqUnitSize != 0 || c.MappedFileSizeConsumeQueue > math.MaxInt32 {
		return configErr("mappedFileSizeConsumeQueue", "%d must be a multiple of %d between %d and %d",
			c.MappedFileSizeConsumeQueue, cqUnitSize, cqUnitSize, math.MaxInt32)
	}
	if c.MaxMessageSize <= 0 {
		return configErr("maxMessageSize", "%d must be positive", c.MaxMessageSize)
	}
	if limit := c.MappedFileSizeCommitLog - message.BlankRecordMinLength - (message.RecordFixedLength + 2*(message.HostV6Length-message.HostV4Length)); int64(c.MaxMessageSize) > limit {
		return configErr("maxMessageSize", "%d does not fit a commitlog file of %d bytes (limit %d)", c.MaxMessageSize, c.MappedFileSizeCommitLog, limit)
	}
	switch c.BrokerRole {
	case RoleAsyncMaster, RoleSyncMaster, RoleSlave:
	default:
		return configErr("brokerRole", "%q, want %s, %s or %s", c.BrokerRole, RoleAsyncMaster, RoleSyncMaster, RoleSlave)
	}
	switch c.FlushDiskType {
	case AsyncFlush, SyncFlush:
	default:
		return configErr("flushDiskType", "%q, want %s or %s", c.FlushDiskType, AsyncFlush, SyncFlush)
	}
	positive := []struct {
		key string
		v   int64
	}{
		{"syncFlushTimeout", c.SyncFlushTimeout},
		{"flushIntervalCommitLog", c.FlushIntervalCommitLog},
		{"flushCommitLogThoroughInterval", c.FlushCommitLogThoroughInterval},
		{"commitIntervalCommitLog", c.CommitIntervalCommitLog},
		{"commitCommitLogThoroughInterval", c.CommitCommitLogThoroughInterval},
		{"flushIntervalConsumeQueue", c.FlushIntervalConsumeQueue},
		{"flushConsumeQueueThoroughInterval", c.FlushConsumeQueueThoroughInterval},
		{"cleanResourceInterval", c.CleanResourceInterval},
		{"maxHashSlotNum", int64(c.MaxHashSlotNum)},
		{"maxIndexNum", int64(c.MaxIndexNum)},
		{"defaultQueryMaxNum", int64(c.DefaultQueryMaxNum)},
		{"deleteFileBatchMax", int64(c.DeleteFileBatchMax)},
		{"maxTransferBytesOnMessageInMemory", int64(c.MaxTransferBytesOnMessageInMemory)},
		{"maxTransferCountOnMessageInMemory", int64(c.MaxTransferCountOnMessageInMemory)},
		{"maxTransferBytesOnMessageInDisk", int64(c.MaxTransferBytesOnMessageInDisk)},
		{"maxTransferCountOnMessageInDisk", int64(c.MaxTransferCountOnMessageInDisk)},
	}
	for _, p := range positive {
		if p.v <= 0 {
			return configErr(p.key, "%d must be positive", p.v)
		}
	}
	nonNegative := []struct {
		key string
		v   int64
	}{
		{"flushCommitLogLeastPages", int64(c.FlushCommitLogLeastPages)},
		{"commitCommitLogLeastPages", int64(c.CommitCommitLogLeastPages)},
		{"flushConsumeQueueLeastPages", int64(c.FlushConsumeQueueLeastPages)},
		{"deleteCommitLogFilesInterval", c.DeleteCommitLogFilesInterval},
		{"deleteConsumeQueueFilesInterval", c.DeleteConsumeQueueFilesInterval},
		{"destroyMapedFileIntervalForcibly", c.DestroyMapedFileIntervalForcibly},
		{"fileReservedTime", int64(c.FileReservedTime)},
		{"maxFilterMessageSize", int64(c.MaxFilterMessageSize)},
	}
	for _, p := range nonNegative {
		if p.v < 0 {
			return configErr(p.key, "%d must not be negative", p.v)
		}
	}
	if c.ColdReadEnable && c.ColdReadBufferBytes < coldChunkSize {
		return configErr("coldReadBufferBytes", "%d is less than one chunk (%d bytes) with coldReadEnable", c.ColdReadBufferBytes, coldChunkSize)
	}
	if c.TransientStorePoolEnable && c.TransientStorePoolSize < 1 {
		return configErr("transientStorePoolSize", "%d must be at least 1 with transientStorePoolEnable", c.TransientStorePoolSize)
	}
	if _, err := parseDeleteWhen(c.DeleteWhen); err != nil {
		return err
	}
	ratios := []struct {
		key      string
		v        int
		min, max int
	}{
		{"diskMaxUsedSpaceRatio", c.DiskMaxUsedSpaceRatio, 10, 95},
		{"diskSpaceCleanForciblyRatio", c.DiskSpaceCleanForciblyRatio, 30, 100},
		{"diskSpaceWarningLevelRatio", c.DiskSpaceWarningLevelRatio, 35, 100},
		{"accessMessageInMemoryMaxRatio", c.AccessMessageInMemoryMaxRatio, 0, 100},
	}
	for _, r := range ratios {
		if r.v < r.min || r.v > r.max {
			return configErr(r.key, "%d outside %d..%d", r.v, r.min, r.max)
		}
	}
	if n := indexFileSize(c.MaxHashSlotNum, c.MaxIndexNum); n > math.MaxInt32 {
		return configErr("maxIndexNum", "index file of %d bytes (maxHashSlotNum %d, maxIndexNum %d) exceeds %d",
			n, c.MaxHashSlotNum, c.MaxIndexNum, math.MaxInt32)
	}
	return nil
}

// parseDeleteWhen parses "04" or "03;04" into hours.
func parseDeleteWhen(s string) ([]int, error) {
	var hours []int
	for _, part := range strings.Split(s, ";") {
		part = strings.TrimSpace(part)
		h, err := strconv.Atoi(part)
		if err != nil || h < 0 || h > 23 {
			return nil, configErr("deleteWhen", "%q: each hour must be 00..23, separated by ';'", s)
		}
		hours = append(hours, h)
	}
	return hours, nil
}

// commitLogDir is the CommitLog folder.
func (c Config) commitLogDir() string {
	if c.StorePathCommitLog != "" {
		return c.StorePathCommitLog
	}
	return filepath.Join(c.StorePathRootDir, "commitlog")
}

func (c Config) consumeQueueDir() string { return filepath.Join(c.StorePathRootDir, "consumequeue") }
func (c Config) indexDir() string        { return filepath.Join(c.StorePathRootDir, "index") }
func (c Config) checkpointPath() string  { return filepath.Join(c.StorePathRootDir, "checkpoint") }
func (c Config) abortPath() string       { return filepath.Join(c.StorePathRootDir, "abort") }

// diskWarningRatio and diskForciblyRatio are the effective ratios (0..1), capped as RocketMQ caps them.
func (c Config) diskWarningRatio() float64 {
	return clampRatio(c.DiskSpaceWarningLevelRatio, 35, 90)
}

func (c Config) diskForciblyRatio() float64 {
	return clampRatio(c.DiskSpaceCleanForciblyRatio, 30, 85)
}

func clampRatio(v, lo, hi int) float64 {
	return float64(min(max(v, lo), hi)) / 100
}

// transientPoolActive reports whether the transient store pool is really in use.
func (c Config) transientPoolActive() bool {
	return c.TransientStorePoolEnable && c.FlushDiskType == AsyncFlush && c.BrokerRole != RoleSlave
}
