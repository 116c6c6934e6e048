// Command mqbroker runs a RocketRaft broker: `mqbroker -c broker.properties [-n namesrv:9876] [--key=value]`.
package main

import (
	"os"

	"github.com/rocketraft/rocketraft/internal/cmdutil"
)

func main() { os.Exit(cmdutil.RunBroker(os.Args[1:], os.Stdout, os.Stderr)) }
