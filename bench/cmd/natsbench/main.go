// Command natsbench runs NATS JetStream as the peer of RocketRaft's comparison benchmark
// (scripts/bench-compare.sh):
//
//	natsbench serve --dir D --servers 1|3 [--sync always|default] [--port-file F]
//	natsbench pub -s URLS --replicas 1|3 -w 16 -s 1024 --duration 60s --json
//
// serve embeds one server, or three clustered on 127.0.0.1 (JetStream, file storage under D), writes the
// client URLs to --port-file once every server is ready, and runs until SIGTERM. pub creates (or recreates) a
// file-storage stream with --replicas replicas and publishes synchronously with acknowledgement (each
// goroutine waits for its PubAck) through tools/bench's driver, so messages/s and latencies mean what
// they mean for mqbench.
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/rocketraft/rocketraft/internal/gctune"
)

const usage = `usage: natsbench serve|pub [flags]   (natsbench serve -h lists the flags)

  serve  embedded JetStream servers (1, or 3 clustered on loopback), file storage, until SIGTERM
  pub    synchronous JetStream publishes with ack from -w goroutines, summary as mqbench's
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run is the whole command. Exit codes: 0 done, 1 failed, 2 bad usage.
func run(ctx context.Context, argv []string, stdout, stderr io.Writer) int {
	if len(argv) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch argv[0] {
	case "serve":
		return serve(ctx, argv[1:], stderr)
	case "pub":
		// The publisher gets mqbench's heap floor (gctune.DefaultFloorMB), so both drivers
		// of make bench-compare cost their servers the same; the servers keep their own.
		defer gctune.Start(gctune.DefaultFloorMB<<20, slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))).Stop()
		return pub(ctx, argv[1:], stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "natsbench: unknown command %q\n%s", argv[0], usage)
	return 2
}
