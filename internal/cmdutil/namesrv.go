package cmdutil

import (
	"fmt"
	"io"

	"github.com/rocketraft/rocketraft/namesrv"
)

const namesrvUsage = `usage: mqnamesrv [-c FILE] [-p] [--key=value ...]
  -c FILE   name server config (.properties or .yaml)
  -p        print the effective config and exit
  --key=v   any config key, e.g. --listenPort=9876
`

// RunNamesrv is the mqnamesrv command: it loads the config from argv, runs a name server until SIGINT or
// SIGTERM and returns the exit code (0 clean, 1 failure, 2 bad arguments).
func RunNamesrv(argv []string, stdout, stderr io.Writer) int {
	cfg := namesrv.DefaultConfig()
	log, done, code := LoadConfig("mqnamesrv", namesrvUsage, argv, stdout, stderr, &cfg)
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
	WaitForSignal()
	log.Info("shutting down")
	if err := ns.Close(); err != nil {
		fmt.Fprintf(stderr, "mqnamesrv: shutdown: %v\n", err)
		return 1
	}
	return 0
}
