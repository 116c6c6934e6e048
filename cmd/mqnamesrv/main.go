// Command mqnamesrv runs a RocketRaft name server: `mqnamesrv [-c namesrv.properties] [--key=value]`.
package main

import (
	"fmt"
	"io"
	"os"

	"github.com/rocketraft/rocketraft/internal/cmdutil"
	"github.com/rocketraft/rocketraft/namesrv"
)

const usage = `usage: mqnamesrv [-c FILE] [-p] [--key=value ...]
  -c FILE   name server config (.properties or .yaml)
  -p        print the effective config and exit
  --key=v   any config key, e.g. --listenPort=9876
`

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(argv []string, stdout, stderr io.Writer) int {
	cfg := namesrv.DefaultConfig()
	log, done, code := cmdutil.LoadConfig("mqnamesrv", usage, argv, stdout, stderr, &cfg)
	if done {
		return code
	}
	ns, err := namesrv.New(cfg, log)
	if err != nil {
		fmt.Fprintf(stderr, "mqnamesrv: %v\n", err)
		return 1
	}
	if err := ns.Start(); err != nil {
		fmt.Fprintf(stderr, "mqnamesrv: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "The Name Server boot success. serializeType=JSON, address %s\n", ns.Addr())
	cmdutil.WaitForSignal()
	log.Info("shutting down")
	if err := ns.Close(); err != nil {
		fmt.Fprintf(stderr, "mqnamesrv: shutdown: %v\n", err)
		return 1
	}
	return 0
}
