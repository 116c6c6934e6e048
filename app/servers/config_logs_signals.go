package servers

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/rocketraft/rocketraft/internal/conf"
	"github.com/rocketraft/rocketraft/internal/logging"
)

// What the three commands share: the config from the command line and the config file with RocketMQ's
// flags (loadConfig), the log files (openLogs, describeLogs; internal/logging), and running until SIGINT or
// SIGTERM while SIGHUP re-reads logLevel (waitForSignal, reloadLogLevel).

// loadConfig parses argv, fills targets (defaults already in them) and handles -h and -p. done is true
// when the program should exit with code after it returns (help, printed config, or an error). unknown
// are the keys no target knows, as the user wrote them, for a warning once the logger exists.
func loadConfig(prog, usage string, argv []string, stdout, stderr io.Writer, targets ...any) (args conf.Args, unknown []string, done bool, code int) {
	args, err := conf.ParseArgs(argv)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n%s", prog, err, usage)
		return args, nil, true, 2
	}
	if args.Help {
		fmt.Fprint(stdout, usage)
		return args, nil, true, 0
	}
	res, err := conf.Load(args, targets...)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", prog, strings.ReplaceAll(err.Error(), "\n", "\n  "))
		return args, nil, true, 2
	}
	if args.Print {
		warn := slog.New(slog.NewTextHandler(stderr, nil)) // no log files for -p
		for _, k := range res.UnknownKeys {
			warn.Warn("unknown config key ignored", "key", k)
		}
		if err := conf.Print(stdout, targets...); err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", prog, err)
			return args, nil, true, 1
		}
		return args, nil, true, 0
	}
	return args, res.UnknownKeys, false, 0
}

// openLogs opens stderr and the log files of cfg in dir (ROCKETRAFT_LOG=debug forces DEBUG) and warns
// about the unknown keys.
func openLogs(cfg logging.Config, dir string, layout logging.Layout, stderr io.Writer, unknown []string) (*logging.Logs, error) {
	cfg.LogDir = dir
	if os.Getenv("ROCKETRAFT_LOG") == "debug" {
		cfg.LogLevel = "DEBUG"
	}
	logs, err := logging.Open(cfg, layout, stderr)
	if err != nil {
		return nil, err
	}
	for _, k := range unknown {
		logs.Logger.Warn("unknown config key ignored", "key", k)
	}
	return logs, nil
}

// reloadLogLevel reads logLevel again from the config file and the command line of args (SIGHUP) into a
// fresh default of the command's config, and applies it.
func reloadLogLevel(logs *logging.Logs, args conf.Args, fresh func() (target any, level func() string)) {
	target, level := fresh()
	if _, err := conf.Load(args, target); err != nil {
		logs.Logger.Error("SIGHUP: config not reloaded", "err", err)
		return
	}
	if err := logs.SetLevel(level()); err != nil {
		logs.Logger.Error("SIGHUP: log level not changed", "err", err)
		return
	}
	logs.Logger.Info("SIGHUP: logLevel re-read", "logLevel", logs.Level().String(), "configFile", args.ConfigFile)
}

// waitForSignal blocks until SIGINT or SIGTERM, calling onHup on every SIGHUP meanwhile.
func waitForSignal(onHup func()) {
	ch := make(chan os.Signal, 4)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(ch)
	for sig := range ch {
		if sig != syscall.SIGHUP {
			return
		}
		onHup()
	}
}

// describeLogs says where the logs go, for the start-up lines.
func describeLogs(logs *logging.Logs) string {
	if logs.Dir() == "" {
		return fmt.Sprintf("logs on stderr only (logDir is empty), level %s", logs.Level())
	}
	return fmt.Sprintf("logs in %s and on stderr, level %s", logs.Dir(), logs.Level())
}
