package main

import (
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/rocketraft/rocketraft/internal/bench"
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
