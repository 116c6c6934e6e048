package servers

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/pprof"
	"strings"

	"github.com/rocketraft/rocketraft/broker"
	"github.com/rocketraft/rocketraft/internal/gctune"
	"github.com/rocketraft/rocketraft/internal/logging"
	"github.com/rocketraft/rocketraft/internal/powerloss"
)

const brokerUsage = `usage: mqbroker [-c FILE] [-n NAMESRV_ADDR] [-p] [--key=value ...]
  -c FILE   broker config (.properties as RocketMQ's broker.conf, or .yaml)
  -n ADDR   name servers, "host:9876;host2:9876" (namesrvAddr; default $NAMESRV_ADDR)
  -p        print the effective config and exit
  --key=v   any config key, e.g. --listenPort=10911 --storePathRootDir=./data --flushDiskType=SYNC_FLUSH
            --metricsExporterType=PROM (Prometheus /metrics on 5557) --logDir=DIR --logLevel=DEBUG
  --cpuprofile=FILE  write a CPU profile (go tool pprof) from start to shutdown
Environment: NAMESRV_ADDR (name servers unless -n or namesrvAddr), ROCKETMQ_HOME (rocketmqHome: conf/
plain_acl.yml lives there; default $HOME), ROCKETRAFT_POWERLOSS_JOURNAL (tests only: journal syncs to
storePathRootDir/powerloss.journal, or to the file an absolute path names, for the chaos suite's power-loss faults). Data: storePathRootDir ($HOME/store). Logs: logDir
($HOME/logs/rocketmqlogs: broker.log, store.log, remoting.log, stats.log). SIGHUP re-reads logLevel.
`

// RunBroker is the mqbroker command: it loads the config from argv, runs a broker until SIGINT or SIGTERM,
// shuts it down in order and returns the exit code (0 clean, 1 failure, 2 bad arguments).
func RunBroker(argv []string, stdout, stderr io.Writer) int {
	argv, profile, err := takeCPUProfile(argv)
	if err != nil {
		fmt.Fprintf(stderr, "mqbroker: %v\n%s", err, brokerUsage)
		return 2
	}
	cfg := defaultBrokerConfig()
	args, unknown, done, code := loadConfig("mqbroker", brokerUsage, argv, stdout, stderr, &cfg)
	if done {
		return code
	}
	logs, err := openLogs(cfg.Log, cfg.LogDir(), logging.BrokerLayout(), stderr, unknown)
	if err != nil {
		fmt.Fprintf(stderr, "mqbroker: %v\n", err)
		return 2
	}
	defer logs.Close()
	log := logs.Logger
	if profile != "" {
		stop, err := startCPUProfile(profile)
		if err != nil {
			fmt.Fprintf(stderr, "mqbroker: --cpuprofile: %v\n", err)
			return 1
		}
		defer stop(log)
	}
	opts := broker.Options{Logger: log, SetLogLevel: logs.SetLevel}
	if powerloss.Enabled() {
		// The chaos suite's power-loss faults cut the store back to what this journal says
		// was synced (internal/powerloss); nothing else sets it.
		path := powerloss.JournalPath(cfg.StorePathRootDir)
		j, err := powerloss.OpenAt(cfg.StorePathRootDir, path)
		if err != nil {
			fmt.Fprintf(stderr, "mqbroker: %s: %v\n", powerloss.EnvVar, err)
			return 1
		}
		defer j.Close()
		opts.SyncObserver = j
		log.Warn("journaling syncs for power-loss tests", "env", powerloss.EnvVar, "journal", path)
	}
	b, err := broker.New(cfg, opts)
	if err != nil {
		log.Error("start-up failed", "err", err)
		fmt.Fprintf(stderr, "mqbroker: %v\n", err)
		return 1
	}
	defer gctune.Start(uint64(cfg.GCHeapFloorMB)<<20, log).Stop() // cfg is valid: broker.New checked it
	if err := b.Start(); err != nil {
		log.Error("start-up failed", "err", err)
		fmt.Fprintf(stderr, "mqbroker: %v\n", err)
		_ = b.Close()
		return 1
	}
	ns := cfg.NamesrvAddr
	if ns == "" {
		ns = "none (give -n host:9876 or set NAMESRV_ADDR)"
	}
	fmt.Fprintf(stdout, "The broker[%s, %s] boot success. serializeType=JSON and name server is %s\n", cfg.BrokerName, b.Addr(), ns)
	fmt.Fprintf(stdout, "  store %s; %s; %s\n", cfg.StorePathRootDir, cfg.ExporterConfig.Describe(b.MetricsAddr()), describeLogs(logs))
	log.Info("broker started", "addr", b.Addr(), "namesrvAddr", cfg.NamesrvAddr, "storePathRootDir", cfg.StorePathRootDir,
		"metrics", cfg.ExporterConfig.Describe(b.MetricsAddr()), "logDir", logs.Dir())
	waitForSignal(func() {
		reloadLogLevel(logs, args, func() (any, func() string) {
			c := defaultBrokerConfig()
			return &c, func() string { return c.Log.LogLevel }
		})
	})
	log.Info("shutting down")
	if err := b.Close(); err != nil {
		log.Error("shutdown failed", "err", err)
		fmt.Fprintf(stderr, "mqbroker: shutdown: %v\n", err)
		return 1
	}
	return 0
}

// defaultBrokerConfig is RocketMQ's defaults with the environment mqbroker reads as RocketMQ's does:
// NAMESRV_ADDR for namesrvAddr (ROCKETMQ_HOME is read by broker.DefaultConfig for rocketmqHome).
func defaultBrokerConfig() broker.Config {
	cfg := broker.DefaultConfig()
	cfg.NamesrvAddr = strings.TrimSpace(os.Getenv("NAMESRV_ADDR"))
	return cfg
}

// takeCPUProfile removes --cpuprofile=FILE (or --cpuprofile FILE) from argv, since it is no config key.
func takeCPUProfile(argv []string) (rest []string, file string, err error) {
	for i := 0; i < len(argv); i++ {
		switch a := argv[i]; {
		case a == "--cpuprofile":
			if i+1 >= len(argv) {
				return nil, "", errors.New("flag --cpuprofile needs a file")
			}
			file = argv[i+1]
			i++
		case strings.HasPrefix(a, "--cpuprofile="):
			if file = strings.TrimPrefix(a, "--cpuprofile="); file == "" {
				return nil, "", errors.New("flag --cpuprofile needs a file")
			}
		default:
			rest = append(rest, a)
		}
	}
	return rest, file, nil
}

// startCPUProfile profiles the process into file until the returned stop is called.
func startCPUProfile(file string) (stop func(*slog.Logger), err error) {
	f, err := os.Create(file)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func(log *slog.Logger) {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			log.Error("write CPU profile", "file", file, "err", err)
			return
		}
		log.Info("CPU profile written", "file", file)
	}, nil
}
