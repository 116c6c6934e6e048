// Command mqnamesrv runs a RocketRaft name server: `mqnamesrv [-c namesrv.properties] [--key=value]`.
package main

import (
	"os"

	"github.com/rocketraft/rocketraft/internal/cmdutil"
)

func main() { os.Exit(cmdutil.RunNamesrv(os.Args[1:], os.Stdout, os.Stderr)) }
