// Command mqproxy serves RocketMQ 5's gRPC protocol in front of every broker group the name servers route
// (cluster mode): `mqproxy -n namesrv:9876 [--grpcServerPort=8081] [--key=value]`.
package main

import (
	"os"

	"github.com/rocketraft/rocketraft/app/servers"
)

func main() { os.Exit(servers.RunProxy(os.Args[1:], os.Stdout, os.Stderr)) }
