package servers

import (
	"fmt"
	"io"

	"github.com/rocketraft/rocketraft/internal/logging"
	"github.com/rocketraft/rocketraft/namesrv"
)

const namesrvUsage = `usage: mqnamesrv [-c FILE] [-p] [--key=value ...]
  -c FILE   name server config (.properties or .yaml)
  -p        print the effective config and exit
  --key=v   any config key, e.g. --listenPort=9876 --metricsExporterType=PROM (Prometheus /metrics on 5556)
            --logDir=DIR --logLevel=DEBUG
  --cpuprofile=FILE  write a CPU profile (go tool pprof) from start to shutdown
Environment: ROCKETMQ_HOME (rocketmqHome; default $HOME). Logs: logDir ($HOME/logs/rocketmqlogs/namesrv.log).
SIGHUP re-reads logLevel.
`

// RunNamesrv is the mqnamesrv command: it loads the config from argv, runs a name server until SIGINT or
// SIGTERM and returns the exit code (0 clean, 1 failure, 2 bad arguments).
func RunNamesrv(argv []string, stdout, stderr io.Writer) int {
	argv, profile, err := takeCPUProfile(argv)
	if err != nil {
		fmt.Fprintf(stderr, "mqnamesrv: %v\n%s", err, namesrvUsage)
		return 2
	}
	cfg := namesrv.DefaultConfig()
	args, unknown, done, code := loadConfig("mqnamesrv", namesrvUsage, argv, stdout, stderr, &cfg)
	if done {
		return code
	}
	logs, err := openLogs(cfg.Log, cfg.Log.LogDir, logging.NamesrvLayout(), stderr, unknown)
	if err != nil {
		fmt.Fprintf(stderr, "mqnamesrv: %v\n", err)
		return 2
	}
	defer logs.Close()
	log := logs.Logger
	if profile != "" {
		stop, err := startCPUProfile(profile)
		if err != nil {
			fmt.Fprintf(stderr, "mqnamesrv: --cpuprofile: %v\n", err)
			return 1
		}
		defer stop(log)
	}
	ns, err := namesrv.New(cfg, log)
	if err != nil {
		log.Error("start-up failed", "err", err)
		fmt.Fprintf(stderr, "mqnamesrv: %v\n", err)
		return 1
	}
	if err := ns.Start(); err != nil {
		log.Error("start-up failed", "err", err)
		fmt.Fprintf(stderr, "mqnamesrv: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "The Name Server boot success. serializeType=JSON, address %s\n", ns.Addr())
	fmt.Fprintf(stdout, "  %s; %s\n", cfg.ExporterConfig.Describe(ns.MetricsAddr()), describeLogs(logs))
	log.Info("name server started", "addr", ns.Addr(), "metrics", cfg.ExporterConfig.Describe(ns.MetricsAddr()), "logDir", logs.Dir())
	waitForSignal(func() {
		reloadLogLevel(logs, args, func() (any, func() string) {
			c := namesrv.DefaultConfig()
			return &c, func() string { return c.Log.LogLevel }
		})
	})
	log.Info("shutting down")
	if err := ns.Close(); err != nil {
		log.Error("shutdown failed", "err", err)
		fmt.Fprintf(stderr, "mqnamesrv: shutdown: %v\n", err)
		return 1
	}
	return 0
}
