// Command mqbroker runs a RocketRaft broker: `mqbroker -c broker.properties [-n namesrv:9876] [--key=value]`.
package main

import (
	"fmt"
	"io"
	"os"

	"github.com/rocketraft/rocketraft/broker"
	"github.com/rocketraft/rocketraft/internal/cmdutil"
)

const usage = `usage: mqbroker [-c FILE] [-n NAMESRV_ADDR] [-p] [--key=value ...]
  -c FILE   broker config (.properties as RocketMQ's broker.conf, or .yaml)
  -n ADDR   name servers, "host:9876;host2:9876" (namesrvAddr)
  -p        print the effective config and exit
  --key=v   any config key, e.g. --listenPort=10911 --storePathRootDir=./data --flushDiskType=SYNC_FLUSH
`

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(argv []string, stdout, stderr io.Writer) int {
	cfg := broker.DefaultConfig()
	log, done, code := cmdutil.LoadConfig("mqbroker", usage, argv, stdout, stderr, &cfg)
	if done {
		return code
	}
	b, err := broker.New(cfg, broker.Options{Logger: log})
	if err != nil {
		fmt.Fprintf(stderr, "mqbroker: %v\n", err)
		return 1
	}
	if err := b.Start(); err != nil {
		fmt.Fprintf(stderr, "mqbroker: %v\n", err)
		_ = b.Close()
		return 1
	}
	fmt.Fprintf(stdout, "The broker[%s, %s] boot success. serializeType=JSON and name server is %s\n", cfg.BrokerName, b.Addr(), cfg.NamesrvAddr)
	cmdutil.WaitForSignal()
	log.Info("shutting down")
	if err := b.Close(); err != nil {
		fmt.Fprintf(stderr, "mqbroker: shutdown: %v\n", err)
		return 1
	}
	return 0
}
