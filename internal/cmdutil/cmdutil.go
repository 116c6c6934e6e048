// Package cmdutil holds what the thin mains share: config loading with RocketMQ's flags, a logger, and
// waiting for SIGINT/SIGTERM.
package cmdutil

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/rocketraft/rocketraft/internal/conf"
)

// LoadConfig parses argv, fills targets (defaults already in them) and handles -h and -p. done is true
// when the program should exit with code after LoadConfig returns (help, printed config, or an error).
func LoadConfig(prog, usage string, argv []string, stdout, stderr io.Writer, targets ...any) (log *slog.Logger, done bool, code int) {
	args, err := conf.ParseArgs(argv)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n%s", prog, err, usage)
		return nil, true, 2
	}
	if args.Help {
		fmt.Fprint(stdout, usage)
		return nil, true, 0
	}
	res, err := conf.Load(args, targets...)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", prog, strings.ReplaceAll(err.Error(), "\n", "\n  "))
		return nil, true, 2
	}
	level := slog.LevelInfo
	if os.Getenv("ROCKETRAFT_LOG") == "debug" {
		level = slog.LevelDebug
	}
	log = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	for _, k := range res.UnknownKeys {
		log.Warn("unknown config key ignored", "key", k)
	}
	if args.Print {
		if err := conf.Print(stdout, targets...); err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", prog, err)
			return nil, true, 1
		}
		return nil, true, 0
	}
	return log, false, 0
}

// WaitForSignal blocks until SIGINT or SIGTERM.
func WaitForSignal() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
}
