package bench

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/rocketraft/rocketraft/protocol"
)

// Client names which client drives the load.
type Client string

// The clients.
const (
	// ClientNative speaks the remoting protocol itself through remoting.Client.
	ClientNative Client = "native"
	// ClientOfficial drives the official Apache RocketMQ Go client.
	ClientOfficial Client = "official"
	// ClientGRPC speaks RocketMQ 5's gRPC protocol to the endpoint at Endpoint (grpc.go).
	ClientGRPC Client = "grpc"
)

// Mode is a producer's send mode.
type Mode string

// The send modes.
const (
	ModeSync   Mode = "sync"   // one request at a time per goroutine, wait for the answer
	ModeAsync  Mode = "async"  // up to Inflight requests outstanding per goroutine
	ModeOneway Mode = "oneway" // no answer is asked for
	ModeBatch  Mode = "batch"  // BatchSize messages per SEND_BATCH_MESSAGE, sync
)

// Common holds what producers and consumers share. Every field names its mqbench flag.
type Common struct {
	NamesrvAddrs []string      // -n: name servers, "host:port;host:port"
	Topic        string        // -t
	Threads      int           // -w: goroutines
	Duration     time.Duration // --duration: run this long (0: until -q is reached, or forever)
	Client       Client        // --client
	Queues       int           // --queues: read and write queues of the topic when it is created
	Interval     time.Duration // --interval: report period (1 s)
	Timeout      time.Duration // --timeout: per request
	IDs          string        // --ids: file of the message ids acknowledged or consumed (official client; idlog.go)
	Endpoint     string        // --endpoint: the gRPC endpoint, host:port (--client grpc)
}

// ProducerConfig configures `mqbench producer`.
type ProducerConfig struct {
	Common
	Group       string  // --group: producer group
	MessageSize int     // -s: body bytes
	Keys        bool    // -k: set KEYS to the send time in seconds, as RocketMQ's tool
	TagCount    int     // -l: tags "tag0".."tag{n-1}" by send time; 0 sets none
	Mode        Mode    // --mode
	BatchSize   int     // -b: messages per batch (--mode batch)
	Rate        float64 // --rate: messages/s over all goroutines; 0 = unlimited
	Total       int64   // -q: messages to send over all goroutines; 0 = no limit
	Inflight    int     // --inflight: outstanding async or oneway requests per goroutine
	Serialize   string  // --serialize: native client's header encoding, "rocketmq" (binary) or "json"
	// TopicCount (--topics) spreads the sends over this many topics, named by Topics; 1 sends to Topic itself.
	TopicCount int
}

// maxTopicCount bounds --topics: every topic is created up front, and a broker maps a ConsumeQueue file per
// queue of every topic.
const maxTopicCount = 10_000

// Topics is the topics the producer sends to: Topic itself when TopicCount is 1, else Topic_0 ..
// Topic_{TopicCount-1}.
func (c *ProducerConfig) Topics() []string {
	if c.TopicCount <= 1 {
		return []string{c.Topic}
	}
	ts := make([]string, c.TopicCount)
	for i := range ts {
		ts[i] = c.Topic + "_" + strconv.Itoa(i)
	}
	return ts
}

// ConsumerConfig configures `mqbench consumer`.
type ConsumerConfig struct {
	Common
	Group     string        // -g
	Total     int64         // -q: stop after this many messages; 0 = no limit
	Idle      time.Duration // --idle: stop when nothing arrived for this long; 0 = never
	From      string        // --from: "first" or "last", where a group without committed offsets starts
	PullBatch int           // --pull-batch: maxMsgNums of a pull
}

// DefaultCommon is the defaults of the shared flags.
func DefaultCommon() Common {
	return Common{NamesrvAddrs: []string{"127.0.0.1:9876"}, Topic: "BenchmarkTest", Client: ClientNative,
		Queues: 8, Interval: time.Second, Timeout: 5 * time.Second}
}

// DefaultProducerConfig is RocketMQ's benchmark defaults (64 threads, 128-byte messages), sync sends.
func DefaultProducerConfig() ProducerConfig {
	c := ProducerConfig{Common: DefaultCommon(), Group: "benchmark_producer", MessageSize: 128, Mode: ModeSync,
		BatchSize: 16, Inflight: 64, Serialize: "rocketmq", TopicCount: 1}
	c.Threads = 64
	return c
}

// DefaultConsumerConfig is RocketMQ's benchmark consumer defaults (20 threads, group benchmark_consumer).
func DefaultConsumerConfig() ConsumerConfig {
	c := ConsumerConfig{Common: DefaultCommon(), Group: "benchmark_consumer", From: "first", PullBatch: 32}
	c.Threads = 20
	return c
}

// validate checks the shared fields; every error names the flag.
func (c *Common) validate() error {
	var errs []error
	if len(c.NamesrvAddrs) == 0 {
		errs = append(errs, errors.New("-n: no name server address given"))
	}
	for _, a := range c.NamesrvAddrs {
		if _, _, ok := strings.Cut(a, ":"); !ok || strings.TrimSpace(a) != a {
			errs = append(errs, fmt.Errorf("-n: %q is not host:port", a))
		}
	}
	if err := protocol.ValidateTopicName(c.Topic); err != nil {
		errs = append(errs, fmt.Errorf("-t: %w", err))
	}
	if c.Threads < 1 || c.Threads > 10_000 {
		errs = append(errs, fmt.Errorf("-w: %d goroutines is not within 1..10000", c.Threads))
	}
	if c.Duration < 0 {
		errs = append(errs, fmt.Errorf("--duration: %v is negative", c.Duration))
	}
	if c.Client != ClientNative && c.Client != ClientOfficial && c.Client != ClientGRPC {
		errs = append(errs, fmt.Errorf("--client: %q is none of native, official, grpc", c.Client))
	}
	if (c.Client == ClientGRPC) != (c.Endpoint != "") {
		errs = append(errs, fmt.Errorf("--endpoint: %q: the gRPC endpoint (host:port) goes with --client grpc, and only with it", c.Endpoint))
	}
	if c.Queues < 1 || c.Queues > 1024 {
		errs = append(errs, fmt.Errorf("--queues: %d is not within 1..1024", c.Queues))
	}
	if c.Interval < 10*time.Millisecond {
		errs = append(errs, fmt.Errorf("--interval: %v is below 10ms", c.Interval))
	}
	if c.Timeout <= 0 {
		errs = append(errs, fmt.Errorf("--timeout: %v is not positive", c.Timeout))
	}
	if c.IDs != "" && c.Client != ClientOfficial {
		errs = append(errs, fmt.Errorf("--ids: writes the official client's message ids: it needs --client official"))
	}
	return errors.Join(errs...)
}

// maxBatchBytes keeps a batch well below the broker's 4 MiB message limit and the 16 MiB frame limit.
const maxBatchBytes = 4 << 20

// Validate checks the config; every error names the flag.
func (c *ProducerConfig) Validate() error {
	errs := []error{c.validate()}
	if c.Group == "" {
		errs = append(errs, errors.New("--group: empty producer group"))
	}
	if c.MessageSize < 1 || c.MessageSize > 4<<20 {
		errs = append(errs, fmt.Errorf("-s: message size %d is not within 1..%d", c.MessageSize, 4<<20))
	}
	if c.TagCount < 0 {
		errs = append(errs, fmt.Errorf("-l: tag count %d is negative", c.TagCount))
	}
	switch c.Mode {
	case ModeSync, ModeAsync, ModeOneway, ModeBatch:
	default:
		errs = append(errs, fmt.Errorf("--mode: %q is not one of sync, async, oneway, batch", c.Mode))
	}
	if c.BatchSize < 1 || (c.Mode == ModeBatch && c.BatchSize*(c.MessageSize+64) > maxBatchBytes) {
		errs = append(errs, fmt.Errorf("-b: batch of %d messages of %d bytes does not fit 1..%d bytes",
			c.BatchSize, c.MessageSize, maxBatchBytes))
	}
	if c.Rate < 0 {
		errs = append(errs, fmt.Errorf("--rate: %v is negative", c.Rate))
	}
	if c.Total < 0 {
		errs = append(errs, fmt.Errorf("-q: %d is negative", c.Total))
	}
	if c.Inflight < 1 {
		errs = append(errs, fmt.Errorf("--inflight: %d is below 1", c.Inflight))
	}
	if c.Client == ClientGRPC && c.Mode != ModeSync {
		errs = append(errs, fmt.Errorf("--mode: %q: the gRPC client sends one message per request, waiting for it (sync)", c.Mode))
	}
	if c.Serialize != "rocketmq" && c.Serialize != "json" {
		errs = append(errs, fmt.Errorf("--serialize: %q is neither rocketmq nor json", c.Serialize))
	}
	if c.TopicCount < 1 || c.TopicCount > maxTopicCount {
		errs = append(errs, fmt.Errorf("--topics: %d is not within 1..%d", c.TopicCount, maxTopicCount))
	} else if c.TopicCount > 1 {
		if c.Mode == ModeOneway {
			errs = append(errs, errors.New("--topics: oneway runs count the stored messages of one topic; use --topics 1"))
		}
		if c.Client != ClientNative {
			errs = append(errs, errors.New("--topics: only the native client spreads sends over topics; use --client native"))
		}
		if err := protocol.ValidateTopicName(c.Topics()[c.TopicCount-1]); err != nil {
			errs = append(errs, fmt.Errorf("--topics: %w", err))
		}
	}
	return errors.Join(errs...)
}

// Validate checks the config; every error names the flag.
func (c *ConsumerConfig) Validate() error {
	errs := []error{c.validate()}
	if c.Group == "" || strings.ContainsAny(c.Group, " \t") {
		errs = append(errs, fmt.Errorf("-g: %q is not a group name", c.Group))
	}
	if c.Total < 0 {
		errs = append(errs, fmt.Errorf("-q: %d is negative", c.Total))
	}
	if c.Idle < 0 {
		errs = append(errs, fmt.Errorf("--idle: %v is negative", c.Idle))
	}
	if c.From != "first" && c.From != "last" {
		errs = append(errs, fmt.Errorf("--from: %q is neither first nor last", c.From))
	}
	if c.PullBatch < 1 || c.PullBatch > 1024 {
		errs = append(errs, fmt.Errorf("--pull-batch: %d is not within 1..1024", c.PullBatch))
	}
	if c.Client == ClientGRPC && c.PullBatch > 32 {
		errs = append(errs, fmt.Errorf("--pull-batch: %d: a gRPC receive takes 32 messages at most", c.PullBatch))
	}
	return errors.Join(errs...)
}
