// Command mqbench is RocketRaft's benchmark tool, modelled on RocketMQ's benchmark Producer and Consumer:
//
//	mqbench producer -n 127.0.0.1:9876 -t BenchmarkTest -w 16 -s 1024 --duration 60s [--client native|official]
//	mqbench producer -n 127.0.0.1:9876 -t Scale -w 16 -s 1024 --duration 60s --topics 1000   (Scale_0 .. Scale_999)
//	mqbench consumer -n 127.0.0.1:9876 -t BenchmarkTest -g benchmark_consumer --idle 3s
//	mqbench producer|consumer ... --client grpc --endpoint 127.0.0.1:8081   (RocketMQ 5's gRPC protocol)
//	mqbench hop --every 1ms --duration 20s   (a bare round trip to an echo process it starts)
//	mqbench namesrv --start bin/mqnamesrv --cpu 0 --groups 100 --topics 1000 --spread 2 --clients 1000 --rate 17000
//
// Each prints a line per second (messages/s, MB/s, latency p50/p99/p999/max, failures) and a summary at the
// end; --json prints the summary as one JSON object instead. tools/bench does the work.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"

	"github.com/apache/rocketmq-client-go/v2/rlog"

	"github.com/rocketraft/rocketraft/internal/gctune"
	"github.com/rocketraft/rocketraft/tools/bench"
)

const usage = `usage: mqbench producer|consumer|hop|namesrv [flags]   (mqbench producer -h lists the flags)

  producer  sends -q messages or for --duration from -w goroutines, --mode sync|async|oneway|batch
  consumer  consumes the topic as group -g until --duration, -q messages, or --idle without messages
  hop       times round trips of -s bytes to an echo process it starts (GOMAXPROCS 1), one per --every:
            what a hop between two processes costs at the machine's load, with no broker in the way
  namesrv   a fleet behind name servers: --groups broker groups registering --topics each every
            --register-every, --clients connections asking --rate routes/s open loop, churn; the same
            load against a stand-in that answers at once first (--floor), as the simulator's own floor

Both create the topic (--queues) when it is missing, print a line per --interval and a summary.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	// The broker's default heap floor (internal/gctune): a driver's live heap is small and it
	// allocates a frame per answer, so with Go's default it collects many times a second, CPU
	// the broker under test then lacks on a small machine. natsbench's publisher uses the same
	// floor, so that both sides of make bench-compare drive their servers alike. GOGC in the
	// environment wins.
	tuner := gctune.Start(gctune.DefaultFloorMB<<20, slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	tuner.Stop()
	stop()
	os.Exit(code)
}

// command is a parsed subcommand.
type command struct {
	fs       *flag.FlagSet
	out      *output
	validate func() error
	describe func() string // the settings, printed before the run as RocketMQ's tool does
	exec     func(ctx context.Context, opts bench.Options) (summary, error)
}

// summary is a run's result: a producer's, consumer's or hop's bench.Summary, or the fleet's.
type summary interface {
	WriteJSON(io.Writer) error
	WriteText(io.Writer) error
}

// some turns a run's result into a summary, nil (not a nil pointer in an interface) when it gave none.
func some[T any, PT interface {
	*T
	summary
}](s PT, err error) (summary, error) {
	if s == nil {
		return nil, err
	}
	return s, err
}

func newCommand(name string, stderr io.Writer) (*command, bool) {
	switch name {
	case "producer":
		fs, cfg, out := producerFlags(stderr)
		return &command{fs: fs, out: out, validate: cfg.Validate,
			describe: func() string {
				return fmt.Sprintf("client: %s, namesrv: %s, topic: %s, threadCount: %d, messageSize: %d, keyEnable: %t, tagCount: %d, mode: %s, batchSize: %d, rate: %g, messageQuantity: %d, duration: %v, topics: %d",
					cfg.Client, strings.Join(cfg.NamesrvAddrs, ";"), cfg.Topic, cfg.Threads, cfg.MessageSize, cfg.Keys,
					cfg.TagCount, cfg.Mode, cfg.BatchSize, cfg.Rate, cfg.Total, cfg.Duration, cfg.TopicCount)
			},
			exec: func(ctx context.Context, opts bench.Options) (summary, error) {
				return some(bench.RunProducer(ctx, *cfg, opts))
			}}, true
	case "consumer":
		fs, cfg, out := consumerFlags(stderr)
		return &command{fs: fs, out: out, validate: cfg.Validate,
			describe: func() string {
				return fmt.Sprintf("client: %s, namesrv: %s, topic: %s, threadCount: %d, group: %s, from: %s, messageQuantity: %d, idle: %v, duration: %v",
					cfg.Client, strings.Join(cfg.NamesrvAddrs, ";"), cfg.Topic, cfg.Threads, cfg.Group, cfg.From, cfg.Total,
					cfg.Idle, cfg.Duration)
			},
			exec: func(ctx context.Context, opts bench.Options) (summary, error) {
				return some(bench.RunConsumer(ctx, *cfg, opts))
			}}, true
	case "hop":
		fs, cfg, out := hopFlags(stderr)
		return &command{fs: fs, out: out, validate: cfg.Validate,
			describe: func() string {
				return fmt.Sprintf("hop: %d bytes each way, one round per %v, duration: %v", cfg.Size, cfg.Every, cfg.Duration)
			},
			exec: func(ctx context.Context, opts bench.Options) (summary, error) {
				self, err := os.Executable()
				if err != nil {
					return nil, err
				}
				echo := exec.CommandContext(ctx, self, hopEchoCommand)
				echo.Env = append(os.Environ(), "GOMAXPROCS=1")
				echo.Stderr = os.Stderr
				return some(bench.RunHop(ctx, *cfg, echo, opts))
			}}, true
	case "namesrv":
		fs, cfg, out := fleetFlags(stderr)
		return &command{fs: fs, out: out, validate: cfg.Validate,
			describe: func() string {
				target := "namesrv: " + strings.Join(cfg.NamesrvAddrs, ";")
				if cfg.Start != "" {
					target = fmt.Sprintf("start: %s (cpu %q)", cfg.Start, cfg.CPU)
				}
				return fmt.Sprintf("%s, groups: %d x %d brokers, topics: %d per group on %d groups, bodies: %s, register every %v (burst %t), clients: %d, rate: %g/s, duration: %v, floor: %v, churn: %s",
					target, cfg.Groups, cfg.Replicas, cfg.Topics, cfg.Spread, strings.Join(cfg.Bodies, ","), cfg.Every,
					cfg.Burst, cfg.Clients, cfg.Rate, cfg.Duration, cfg.Floor, strings.Join(cfg.Churn, ","))
			},
			exec: func(ctx context.Context, opts bench.Options) (summary, error) {
				self, err := os.Executable()
				if err != nil {
					return nil, err
				}
				return some(bench.RunFleet(ctx, *cfg, self, opts))
			}}, true
	}
	return nil, false
}

// hopEchoCommand is the hidden command mqbench hop starts its echo process with.
const hopEchoCommand = "hop-echo"

// run is the whole command; ctx ending (Ctrl-C) ends the run early and still prints the summary. Exit codes:
// 0 done, 1 the run failed, 2 bad usage.
func run(ctx context.Context, argv []string, stdout, stderr io.Writer) int {
	if len(argv) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch argv[0] {
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	case hopEchoCommand: // the other end of mqbench hop
		if err := bench.ServeEcho(ctx, os.Stdin, stdout); err != nil {
			fmt.Fprintf(stderr, "mqbench %s: %v\n", hopEchoCommand, err)
			return 1
		}
		return 0
	case bench.StandInCommand: // mqbench namesrv's stand-in name server
		fs, cfg, _ := fleetFlags(stderr)
		if err := parse(fs, argv[1:]); err != nil {
			fmt.Fprintf(stderr, "mqbench %s: %v\n", bench.StandInCommand, err)
			return 2
		}
		if err := bench.ServeStandIn(ctx, *cfg, os.Stdin, stdout); err != nil {
			fmt.Fprintf(stderr, "mqbench %s: %v\n", bench.StandInCommand, err)
			return 1
		}
		return 0
	}
	cmd, ok := newCommand(argv[0], stderr)
	if !ok {
		fmt.Fprintf(stderr, "mqbench: unknown command %q\n%s", argv[0], usage)
		return 2
	}
	prog := "mqbench " + argv[0]
	if err := parse(cmd.fs, argv[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(stderr, "%s: %v\n", prog, err)
		return 2
	}
	if err := cmd.validate(); err != nil {
		fmt.Fprintf(stderr, "%s: %s\n", prog, strings.ReplaceAll(err.Error(), "\n", "\n  "))
		return 2
	}
	level, clientLevel := slog.LevelWarn, "error"
	if cmd.out.verbose {
		level, clientLevel = slog.LevelInfo, "warn"
	}
	rlog.SetLogLevel(clientLevel)
	opts := bench.Options{Report: stdout, Log: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))}
	if cmd.out.json {
		opts.Report = stderr
	}
	fmt.Fprintln(opts.Report, cmd.describe())
	sum, err := cmd.exec(ctx, opts)
	if sum != nil {
		var werr error
		if cmd.out.json {
			werr = sum.WriteJSON(stdout)
		} else {
			werr = sum.WriteText(stdout)
		}
		if werr != nil {
			fmt.Fprintf(stderr, "%s: write summary: %v\n", prog, werr)
			return 1
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", prog, err)
		return 1
	}
	return 0
}
