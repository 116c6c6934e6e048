package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/rocketraft/rocketraft/tools/bench"
)

// pubConfig is natsbench pub's flags; the workload flags are mqbench producer's.
type pubConfig struct {
	bench.PublishConfig
	urls     string
	stream   string
	replicas int
	json     bool
}

func pub(ctx context.Context, argv []string, stdout, stderr io.Writer) int {
	cfg := pubConfig{stream: "BENCH", replicas: 1}
	cfg.Client, cfg.Threads, cfg.MessageSize, cfg.Timeout, cfg.Interval = "nats", 16, 1024, 5*time.Second, time.Second
	fs := flag.NewFlagSet("natsbench pub", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.urls, "n", "nats://127.0.0.1:4222", "server URLs, comma-separated")
	fs.StringVar(&cfg.stream, "t", cfg.stream, "stream name (its subject is the name in lower case)")
	fs.IntVar(&cfg.replicas, "replicas", 1, "stream replicas (1, or 3 with three servers)")
	fs.IntVar(&cfg.Threads, "w", cfg.Threads, "goroutines, each with one publish outstanding")
	fs.IntVar(&cfg.MessageSize, "s", cfg.MessageSize, "message body size in bytes")
	fs.DurationVar(&cfg.Duration, "duration", 0, "run this long, e.g. 60s")
	fs.Int64Var(&cfg.Total, "q", 0, "messages to send over all goroutines (0: no limit)")
	fs.Float64Var(&cfg.Rate, "rate", 0, "messages/s over all goroutines (0: no limit)")
	fs.DurationVar(&cfg.Timeout, "timeout", cfg.Timeout, "timeout of one publish")
	fs.DurationVar(&cfg.Interval, "interval", cfg.Interval, "report interval")
	fs.BoolVar(&cfg.json, "json", false, "print the summary as one JSON object on stdout (interval lines go to stderr)")
	if err := fs.Parse(argv); err != nil {
		return 2
	}
	if cfg.replicas < 1 || cfg.replicas > 5 {
		fmt.Fprintf(stderr, "natsbench pub: --replicas: %d is not within 1..5\n", cfg.replicas)
		return 2
	}
	if err := cfg.Validate(); err != nil {
		fmt.Fprintf(stderr, "natsbench pub: %s\n", strings.ReplaceAll(err.Error(), "\n", "\n  "))
		return 2
	}
	cfg.Subject = strings.ToLower(cfg.stream)
	sum, err := publish(ctx, cfg, stdout, stderr)
	if sum != nil {
		var werr error
		if cfg.json {
			werr = sum.WriteJSON(stdout)
		} else {
			werr = sum.WriteText(stdout)
		}
		if werr != nil {
			err = errors.Join(err, werr)
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "natsbench pub: %v\n", err)
		return 1
	}
	return 0
}

// publish connects, recreates the stream and runs the publishers over one connection (as mqbench's native
// producer shares one connection among its goroutines).
func publish(ctx context.Context, cfg pubConfig, stdout, stderr io.Writer) (*bench.Summary, error) {
	nc, err := nats.Connect(cfg.urls, nats.Timeout(cfg.Timeout))
	if err != nil {
		return nil, fmt.Errorf("connect %s: %w", cfg.urls, err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	if err := createStream(ctx, js, cfg); err != nil {
		return nil, err
	}
	body := bench.NewBody(cfg.MessageSize)
	report := stdout
	if cfg.json {
		report = stderr
	}
	fmt.Fprintf(report, "client: nats, urls: %s, stream: %s, replicas: %d, threadCount: %d, messageSize: %d, duration: %v\n",
		cfg.urls, cfg.stream, cfg.replicas, cfg.Threads, cfg.MessageSize, cfg.Duration)
	opts := bench.Options{Report: report, Log: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	return bench.RunPublishers(ctx, cfg.PublishConfig, func(int) bench.Publish {
		return func(ctx context.Context) error {
			_, err := js.Publish(ctx, cfg.Subject, body)
			return err
		}
	}, opts)
}

// createStream makes a fresh file-storage stream for the run. A cluster just started has no JetStream meta
// leader for a few seconds, so the creation is retried for up to a minute.
func createStream(ctx context.Context, js jetstream.JetStream, cfg pubConfig) error {
	setup, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		try, cancelTry := context.WithTimeout(setup, 5*time.Second)
		_ = js.DeleteStream(try, cfg.stream) // absent is fine
		_, err := js.CreateStream(try, jetstream.StreamConfig{Name: cfg.stream, Subjects: []string{cfg.Subject},
			Storage: jetstream.FileStorage, Replicas: cfg.replicas})
		cancelTry()
		if err == nil {
			return nil
		}
		select {
		case <-setup.Done():
			return fmt.Errorf("create stream %s (R%d): %w", cfg.stream, cfg.replicas, err)
		case <-tick.C:
		}
	}
}
