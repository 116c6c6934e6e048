// Command mqnamesrv runs a RocketRaft name server: `mqnamesrv [-c namesrv.properties] [--key=value]`.
package main

import (
	"os"

	"github.com/rocketraft/rocketraft/app/servers"
)

func main() { os.Exit(servers.RunNamesrv(os.Args[1:], os.Stdout, os.Stderr)) }
