// Command mqchaos is RocketRaft's fault-injection suite: it starts a real broker group (bin/mqnamesrv,
// bin/mqbroker), runs a producer and consumers that record what they did, injects a seeded schedule of
// faults (kill -9, SIGSTOP/SIGCONT, partitions both ways or one way, delays, loss and cuts of the replication
// links, the clients cut from the writer, power losses, disks that fail with EIO, fill up or slow down), then
// checks the history (tools/chaos):
//
//	mqchaos run -bin ./bin -dir /tmp/chaos -role SYNC_MASTER -flush SYNC_FLUSH -rounds 8 -seed 1
//	mqchaos run -bin ./bin -mode raft -flush SYNC_FLUSH -duration 5m
//	mqchaos check /tmp/chaos        (checks a recorded run again)
//	mqchaos soak -bin ./bin -role SYNC_MASTER -flush SYNC_FLUSH -duration 1h
//
// soak is a long run (make soak): the same group, load and faults (one every few minutes), plus a mixed
// workload of the official Go client (every send kind, push and pull consumers, mqadmin calls), with every
// server process's memory, goroutines, open files and mappings sampled; it fails on growth beyond the
// bounds as well as on anything the checker finds (tools/chaos soak.go).
//
// The output ends with one summary line, PASS or FAIL and the counts; the exit code is 1 on FAIL.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/apache/rocketmq-client-go/v2/rlog"

	"github.com/rocketraft/rocketraft/tools/chaos"
)

const usage = `usage: mqchaos run [flags]    (mqchaos run -h lists the flags)
       mqchaos check DIR
       mqchaos soak [flags]   (mqchaos soak -h lists the flags)

  run    starts a name server and a master and a slave (or a Raft group of three) from -bin, runs the load and the fault schedule, heals,
         drains, scans every broker and checks the history recorded in -dir
  check  checks the history in DIR again and prints the report
  soak   run for -duration (1h) with a fault every few minutes and a mixed workload beside the recorded
         load, sampling every process's memory, goroutines, fds and mappings; fails on growth or a checker failure
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run is main without the process: it returns the exit code (0 PASS, 1 FAIL, 2 usage or a run that could
// not start).
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	var rep interface {
		String() string
		Failures() []string
	}
	var err error
	switch args[0] {
	case "run":
		cfg, ok := parseRun(args[1:], stdout, stderr)
		if !ok {
			return 2
		}
		rep, err = chaos.Run(ctx, cfg)
	case "soak":
		cfg, ok := parseSoak(args[1:], stdout, stderr)
		if !ok {
			return 2
		}
		rep, err = chaos.Soak(ctx, cfg)
	case "check":
		if len(args) != 2 {
			fmt.Fprint(stderr, usage)
			return 2
		}
		rep, err = chaos.CheckDir(args[1])
	default:
		fmt.Fprint(stderr, usage)
		return 2
	}
	if err != nil {
		fmt.Fprintf(stderr, "mqchaos: %v\n", err)
		return 2
	}
	fmt.Fprint(stdout, rep.String())
	if len(rep.Failures()) > 0 {
		return 1
	}
	return 0
}

// parseRun parses the run flags into a config with its schedule; false after a usage error (printed).
func parseRun(args []string, stdout, stderr io.Writer) (chaos.RunConfig, bool) {
	cfg := chaos.DefaultRunConfig()
	sc := chaos.ScheduleConfig{Rounds: 6, MinFor: 3 * time.Second, MaxFor: 10 * time.Second,
		MinGap: 5 * time.Second, MaxGap: 15 * time.Second, Delay: 200 * time.Millisecond, IOPS: chaos.DefaultSlowIOPS}
	fs := flag.NewFlagSet("mqchaos run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	verbose := runFlags(fs, &cfg)
	kinds := scheduleFlags(fs, &sc)
	fs.DurationVar(&cfg.Warmup, "warmup", cfg.Warmup, "load before the first fault")
	fs.DurationVar(&cfg.Settle, "settle", cfg.Settle, "load after the last fault")
	fs.IntVar(&sc.Rounds, "rounds", sc.Rounds, "number of faults")
	length := fs.Duration("duration", 0, "draw faults until the schedule fills about this long (overrides -rounds; restarts and scans come on top)")
	if !parseFlags(fs, args, stderr) {
		return cfg, false
	}
	sc.Kinds = faultKinds(*kinds, stderr)
	seedFromClock(&sc)
	if *length > 0 {
		sc.Rounds = max(1, int(*length/((sc.MinFor+sc.MaxFor+sc.MinGap+sc.MaxGap)/2)))
	}
	s, err := chaos.NewSchedule(sc)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return cfg, false
	}
	cfg.Schedule = s
	return cfg, finishRun(&cfg, *verbose, stdout, stderr)
}

// parseSoak parses the soak flags: the run's, the schedule's (without -rounds: faults are drawn while they
// fit in -duration), and the soak's own.
func parseSoak(args []string, stdout, stderr io.Writer) (chaos.SoakConfig, bool) {
	cfg := chaos.DefaultSoakConfig()
	fs := flag.NewFlagSet("mqchaos soak", flag.ContinueOnError)
	fs.SetOutput(stderr)
	verbose := runFlags(fs, &cfg.Run)
	kinds := scheduleFlags(fs, &cfg.Faults)
	clientLevel := fs.String("client-log", "fatal", "log level of the official Go client (the mixed workload), to stderr (it logs every rolled-back transaction as an error)")
	b := &cfg.Bounds
	fs.DurationVar(&cfg.Duration, "duration", cfg.Duration, "the whole run, warm-up included")
	fs.DurationVar(&cfg.Every, "every", cfg.Every, "one sample of every server process")
	fs.DurationVar(&b.Warmup, "warmup", b.Warmup, "load before the first fault, and from a (re)start to the baseline sample")
	fs.DurationVar(&cfg.Quiet, "quiet", cfg.Quiet, "the last part of the run, without faults")
	fs.IntVar(&b.Last, "last", b.Last, "a figure grew when each of the last samples exceeds its bound")
	fs.IntVar(&b.MinAfter, "min-after", b.MinAfter, "samples after the baseline needed to judge a process")
	fs.Float64Var(&b.RSSAnon.Pct, "rss-pct", b.RSSAnon.Pct, "RssAnon bound: percent over the baseline (or -rss-abs, the larger)")
	fs.Int64Var(&b.RSSAnon.Abs, "rss-abs", b.RSSAnon.Abs, "RssAnon bound: bytes over the baseline")
	fs.Float64Var(&b.Goroutines.Pct, "goroutines-pct", b.Goroutines.Pct, "goroutines bound: percent over the baseline (or -goroutines-abs)")
	fs.Int64Var(&b.Goroutines.Abs, "goroutines-abs", b.Goroutines.Abs, "goroutines bound: count over the baseline")
	fs.Int64Var(&b.FDs.Abs, "fds-abs", b.FDs.Abs, "open files (store files left out) over the baseline")
	fs.Int64Var(&b.Maps.Abs, "maps-abs", b.Maps.Abs, "mappings (store files left out) over the baseline")
	fs.Float64Var(&cfg.MixedRate, "mixed-rate", cfg.MixedRate, "mixed sends per second (official client), every kind in turn")
	fs.DurationVar(&cfg.AdminEvery, "admin-every", cfg.AdminEvery, "a round of mqadmin calls (clusterList, consumerProgress, a topic created and deleted)")
	if !parseFlags(fs, args, stderr) {
		return cfg, false
	}
	cfg.Faults.Kinds = faultKinds(*kinds, stderr)
	seedFromClock(&cfg.Faults)
	rlog.SetLogLevel(*clientLevel)
	if err := cfg.Validate(); err != nil {
		fmt.Fprintln(stderr, err)
		return cfg, false
	}
	return cfg, finishRun(&cfg.Run, *verbose, stdout, stderr)
}

// runFlags registers the flags of the cluster and the recorded load; it returns -v.
func runFlags(fs *flag.FlagSet, cfg *chaos.RunConfig) *bool {
	fs.StringVar(&cfg.Bin, "bin", "bin", "folder holding mqnamesrv and mqbroker")
	fs.StringVar(&cfg.Dir, "dir", "", "output folder (history, report, data and logs of the processes); default a new folder under the system's temp folder")
	fs.StringVar(&cfg.Mode, "mode", cfg.Mode, "topology: masterslave (a master and a slave) or raft (a group of three, enableDLegerCommitLog)")
	fs.StringVar(&cfg.Role, "role", cfg.Role, "masterslave: brokerRole of the master, SYNC_MASTER or ASYNC_MASTER")
	fs.StringVar(&cfg.Flush, "flush", cfg.Flush, "flushDiskType: SYNC_FLUSH or ASYNC_FLUSH")
	fs.Int64Var(&cfg.FileSize, "file-size", cfg.FileSize, "mappedFileSizeCommitLog of the brokers")
	fs.StringVar(&cfg.Topic, "topic", cfg.Topic, "topic")
	fs.IntVar(&cfg.Queues, "queues", cfg.Queues, "queues of the topic")
	fs.IntVar(&cfg.Workers, "workers", cfg.Workers, "producer goroutines (worker w sends to queue w % queues, in order)")
	fs.Float64Var(&cfg.Rate, "rate", cfg.Rate, "messages per second, all workers together")
	fs.IntVar(&cfg.Size, "size", cfg.Size, "message body size")
	fs.IntVar(&cfg.Retries, "retries", cfg.Retries, "more attempts of a send that was not acknowledged")
	fs.DurationVar(&cfg.SendTimeout, "send-timeout", cfg.SendTimeout, "send timeout")
	fs.IntVar(&cfg.PopWorkers, "pop-workers", cfg.PopWorkers, "goroutines of the pop consumer (RocketMQ 5's pop and batch ack; 0: none)")
	return fs.Bool("v", false, "log the suite's own events (proxies, pulls) to stderr")
}

// scheduleFlags registers the flags that draw faults (but -rounds); it returns -faults.
func scheduleFlags(fs *flag.FlagSet, sc *chaos.ScheduleConfig) *string {
	fs.Uint64Var(&sc.Seed, "seed", 0, "schedule seed (0: from the clock; printed)")
	kinds := fs.String("faults", "", "fault kinds to draw from, comma-separated (default: every kind this machine can run: "+
		strings.Join(chaos.Kinds, ",")+", the disk kinds only as root)")
	fs.DurationVar(&sc.MinFor, "min-for", sc.MinFor, "shortest fault")
	fs.DurationVar(&sc.MaxFor, "max-for", sc.MaxFor, "longest fault")
	fs.DurationVar(&sc.MinGap, "min-gap", sc.MinGap, "shortest quiet time before a fault")
	fs.DurationVar(&sc.MaxGap, "max-gap", sc.MaxGap, "longest quiet time before a fault")
	fs.DurationVar(&sc.Delay, "delay", sc.Delay, "one-way delay of delay-repl")
	fs.IntVar(&sc.IOPS, "slow-iops", sc.IOPS, "reads and writes a second of a disk slowed by disk-slow-writer or disk-slow-follower")
	return kinds
}

// faultKinds is the -faults list, or when it is empty every fault kind this machine can run: without the
// disk kinds when it cannot run them (they need root, loop devices and blkio throttling), which it says on w.
func faultKinds(flag string, w io.Writer) []string {
	if flag != "" {
		return strings.Split(flag, ",")
	}
	kinds, err := chaos.DefaultKinds()
	if err != nil {
		fmt.Fprintf(w, "mqchaos: the disk fault kinds are left out: %v\n", err)
	}
	return kinds
}

// seedFromClock draws a seed from the clock when -seed was 0.
func seedFromClock(sc *chaos.ScheduleConfig) {
	if sc.Seed == 0 {
		sc.Seed = uint64(time.Now().UnixNano())
	}
}

// parseFlags parses args into fs; false (printed) on an error or stray arguments.
func parseFlags(fs *flag.FlagSet, args []string, stderr io.Writer) bool {
	if err := fs.Parse(args); err != nil {
		return false
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "%s: unexpected arguments %v\n", fs.Name(), fs.Args())
		return false
	}
	return true
}

// finishRun fills in what the flags leave open (the folder, the logger, the output) and validates; false
// after an error (printed).
func finishRun(cfg *chaos.RunConfig, verbose bool, stdout, stderr io.Writer) bool {
	var err error
	if cfg.Dir == "" {
		if cfg.Dir, err = os.MkdirTemp("", "mqchaos-"); err != nil {
			fmt.Fprintln(stderr, err)
			return false
		}
	}
	if cfg.Bin, err = filepath.Abs(cfg.Bin); err != nil {
		fmt.Fprintln(stderr, err)
		return false
	}
	level := slog.LevelWarn
	if verbose {
		level = slog.LevelDebug
	}
	cfg.Log = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	cfg.Out = stdout
	if err := cfg.Validate(); err != nil {
		fmt.Fprintln(stderr, err)
		return false
	}
	if cfg.Mode == chaos.ModeRaft {
		cfg.Role = "raft"
	}
	fmt.Fprintf(stdout, "mqchaos: %s %s/%s, output in %s\n", cfg.Mode, cfg.Role, cfg.Flush, cfg.Dir)
	return true
}
