package main

import (
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/rocketraft/rocketraft/tools/bench"
)

// output holds the flags that choose what is printed.
type output struct {
	json    bool
	verbose bool
}

// commonFlags registers the flags producers and consumers share.
func commonFlags(fs *flag.FlagSet, c *bench.Common, out *output) {
	fs.Func("n", "name servers, \"host:port;host:port\" (default 127.0.0.1:9876)", func(s string) error {
		c.NamesrvAddrs = nil
		for _, a := range strings.Split(s, ";") {
			if a = strings.TrimSpace(a); a != "" {
				c.NamesrvAddrs = append(c.NamesrvAddrs, a)
			}
		}
		return nil
	})
	fs.StringVar(&c.Topic, "t", c.Topic, "topic")
	fs.IntVar(&c.Threads, "w", c.Threads, "goroutines")
	fs.DurationVar(&c.Duration, "duration", 0, "run this long, e.g. 60s (0: until -q is reached, or until interrupted)")
	fs.Func("client", "native (our remoting client), official (the Apache RocketMQ Go client) or grpc (RocketMQ 5's gRPC protocol to --endpoint) (default native)",
		func(s string) error { c.Client = bench.Client(s); return nil })
	fs.StringVar(&c.Endpoint, "endpoint", "", "the gRPC endpoint, host:port (--client grpc: a broker's with enableProxy, or mqproxy's)")
	fs.IntVar(&c.Queues, "queues", c.Queues, "read and write queues of the topic when it has to be created")
	fs.DurationVar(&c.Interval, "interval", c.Interval, "report interval")
	fs.DurationVar(&c.Timeout, "timeout", c.Timeout, "timeout of one request")
	fs.StringVar(&c.IDs, "ids", "", "write the id (UNIQ_KEY) of every message acknowledged (producer) or consumed (consumer) to this file, one per line (--client official)")
	fs.BoolVar(&out.json, "json", false, "print the summary as one JSON object on stdout (interval lines go to stderr)")
	fs.BoolVar(&out.verbose, "v", false, "log what the tool and the official client do (stderr)")
}

func producerFlags(stderr io.Writer) (*flag.FlagSet, *bench.ProducerConfig, *output) {
	cfg := bench.DefaultProducerConfig()
	out := &output{}
	fs := flag.NewFlagSet("mqbench producer", flag.ContinueOnError)
	fs.SetOutput(stderr)
	commonFlags(fs, &cfg.Common, out)
	fs.IntVar(&cfg.MessageSize, "s", cfg.MessageSize, "message body size in bytes")
	fs.BoolVar(&cfg.Keys, "k", false, "set message keys (the send time in seconds, as RocketMQ's tool)")
	fs.IntVar(&cfg.TagCount, "l", 0, "tag count: tags tag0..tag{l-1} by send time; 0 sets no tag")
	fs.Func("mode", "send mode: sync, async, oneway or batch (default sync)", func(s string) error {
		cfg.Mode = bench.Mode(s)
		return nil
	})
	fs.IntVar(&cfg.BatchSize, "b", cfg.BatchSize, "messages per batch (--mode batch)")
	fs.Float64Var(&cfg.Rate, "rate", 0, "messages/s over all goroutines (0: no limit)")
	fs.Int64Var(&cfg.Total, "q", 0, "messages to send over all goroutines (0: no limit)")
	fs.StringVar(&cfg.Group, "group", cfg.Group, "producer group")
	fs.IntVar(&cfg.Inflight, "inflight", cfg.Inflight, "outstanding sends per goroutine (--mode async)")
	fs.IntVar(&cfg.TopicCount, "topics", cfg.TopicCount, "spread the sends over this many topics, named -t's value + _0 .. _{n-1} and created when missing (1: -t itself; native client only)")
	fs.StringVar(&cfg.Serialize, "serialize", cfg.Serialize, "header encoding of the native client: rocketmq (binary) or json")
	return fs, &cfg, out
}

func consumerFlags(stderr io.Writer) (*flag.FlagSet, *bench.ConsumerConfig, *output) {
	cfg := bench.DefaultConsumerConfig()
	out := &output{}
	fs := flag.NewFlagSet("mqbench consumer", flag.ContinueOnError)
	fs.SetOutput(stderr)
	commonFlags(fs, &cfg.Common, out)
	fs.StringVar(&cfg.Group, "g", cfg.Group, "consumer group")
	fs.Int64Var(&cfg.Total, "q", 0, "stop after this many messages (0: no limit)")
	fs.DurationVar(&cfg.Idle, "idle", 0, "stop when nothing arrived for this long, e.g. 3s to drain a backlog (0: never)")
	fs.StringVar(&cfg.From, "from", cfg.From, "where a group with no committed offset starts: first or last")
	fs.IntVar(&cfg.PullBatch, "pull-batch", cfg.PullBatch, "messages per pull")
	return fs, &cfg, out
}

func hopFlags(stderr io.Writer) (*flag.FlagSet, *bench.HopConfig, *output) {
	cfg := bench.DefaultHopConfig()
	out := &output{}
	fs := flag.NewFlagSet("mqbench hop", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.DurationVar(&cfg.Every, "every", cfg.Every, "one round trip per this interval")
	fs.DurationVar(&cfg.Duration, "duration", cfg.Duration, "probe this long")
	fs.IntVar(&cfg.Size, "s", cfg.Size, "bytes each way")
	fs.BoolVar(&out.json, "json", false, "print the summary as one JSON object on stdout")
	return fs, &cfg, out
}

// parse parses argv into fs. Arguments left over are an error: flag stops at the first non-flag, so
// RocketMQ's "-k true" would otherwise silently end the parsing.
func parse(fs *flag.FlagSet, argv []string) error {
	if err := fs.Parse(argv); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q: flags come as -name value, and booleans as -k or -k=true", fs.Arg(0))
	}
	return nil
}

func fleetFlags(stderr io.Writer) (*flag.FlagSet, *bench.FleetConfig, *output) {
	cfg := bench.DefaultFleetConfig()
	out := &output{}
	fs := flag.NewFlagSet("mqbench namesrv", flag.ContinueOnError)
	fs.SetOutput(stderr)
	list := func(dst *[]string, sep string) func(string) error {
		return func(s string) error {
			*dst = nil
			for _, a := range strings.Split(s, sep) {
				if a = strings.TrimSpace(a); a != "" {
					*dst = append(*dst, a)
				}
			}
			return nil
		}
	}
	fs.Func("n", "name servers to drive, \"host:port;host:port\" (or --start)", list(&cfg.NamesrvAddrs, ";"))
	fs.StringVar(&cfg.Start, "start", "", "start this name server binary (bin/mqnamesrv) on 127.0.0.1 and drive it; its metrics give CPU, memory and allocations")
	fs.Func("start-arg", "one more --key=value for the started name server (repeatable)", func(s string) error {
		cfg.StartArgs = append(cfg.StartArgs, s)
		return nil
	})
	fs.StringVar(&cfg.CPU, "cpu", "", "taskset CPU list of the started name server and of the stand-in, e.g. 0 (empty: not pinned)")
	fs.Func("ns-metrics", "metrics endpoints (host:port) of the -n name servers, \"a;b\", for their CPU, memory and allocations", list(&cfg.MetricsAddr, ";"))
	fs.StringVar(&cfg.CPUProfile, "ns-cpuprofile", "", "the started name server writes its CPU profile to this file (go tool pprof)")
	fs.IntVar(&cfg.Groups, "groups", cfg.Groups, "broker groups (broker names)")
	fs.IntVar(&cfg.Replicas, "replicas", cfg.Replicas, "brokers per group: a master and replicas-1 slaves, each on its own connections")
	fs.IntVar(&cfg.Topics, "topics", cfg.Topics, "topics per group")
	fs.IntVar(&cfg.Spread, "spread", cfg.Spread, "groups per topic: 2 (narrow), or 0 for every group (wide)")
	fs.IntVar(&cfg.Queues, "queues", cfg.Queues, "read and write queues per topic")
	fs.Func("bodies", "REGISTER_BROKER bodies, taken by the groups in turn: plain, compressed, split (default plain,compressed,split)", list(&cfg.Bodies, ","))
	fs.IntVar(&cfg.Split, "split-size", cfg.Split, "topics per chunk of a split registration (splitRegistrationSize)")
	fs.DurationVar(&cfg.Every, "register-every", cfg.Every, "registration period of every broker")
	fs.BoolVar(&cfg.Burst, "register-burst", cfg.Burst, "every broker registers at the same moment of each period (false: spread over it)")
	fs.DurationVar(&cfg.Heartbeat, "heartbeat", 0, "BROKER_HEARTBEAT period between registrations, as RocketMQ 5 brokers (0: none)")
	fs.DurationVar(&cfg.HeartbeatTimeout, "heartbeat-timeout", cfg.HeartbeatTimeout, "heartbeatTimeoutMillis the brokers register with when --heartbeat is on")
	fs.IntVar(&cfg.Clients, "clients", cfg.Clients, "client connections asking routes")
	fs.Float64Var(&cfg.Rate, "rate", cfg.Rate, "route queries per second over all client connections (open loop)")
	fs.DurationVar(&cfg.Duration, "duration", cfg.Duration, "the measured phase")
	fs.DurationVar(&cfg.Floor, "floor", cfg.Floor, "the same load against a stand-in that answers at once, first (0: none)")
	fs.DurationVar(&cfg.Warmup, "warmup", cfg.Warmup, "load before each measured phase starts counting")
	fs.DurationVar(&cfg.Timeout, "timeout", cfg.Timeout, "a query not answered within this counts as lost")
	fs.IntVar(&cfg.Check, "check", cfg.Check, "count the groups of one answer in this many (1: every answer)")
	fs.Func("churn", "events of the measured phase: topic-create,master-change,broker-kill,reconnect-storm,restart", list(&cfg.Churn, ","))
	fs.IntVar(&cfg.IdleConns, "idle-conns", cfg.IdleConns, "open this many idle client connections before the load and report the name server's memory per connection")
	fs.DurationVar(&cfg.Interval, "interval", cfg.Interval, "report interval")
	fs.StringVar(&cfg.Cluster, "cluster", cfg.Cluster, "the brokers' cluster name")
	fs.BoolVar(&out.json, "json", false, "print the summary as one JSON object on stdout (progress goes to stderr)")
	fs.BoolVar(&out.verbose, "v", false, "log what the simulator does (stderr)")
	return fs, &cfg, out
}
