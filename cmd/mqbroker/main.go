// Command mqbroker runs a RocketRaft broker: `mqbroker -c broker.properties [-n namesrv:9876] [--key=value]`.
package main

import (
	"os"

	"github.com/rocketraft/rocketraft/app/servers"
)

func main() { os.Exit(servers.RunBroker(os.Args[1:], os.Stdout, os.Stderr)) }
