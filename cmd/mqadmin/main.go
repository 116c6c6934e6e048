// Command mqadmin is RocketRaft's admin tool, with RocketMQ's command names, options and output:
//
//	mqadmin clusterList -n 127.0.0.1:9876
//	mqadmin updateTopic -n 127.0.0.1:9876 -c DefaultCluster -t TopicTest -r 8 -w 8
//	mqadmin consumerProgress -n 127.0.0.1:9876 -g GroupTest --json
//	mqadmin help [command]
//
// tools/admin does the work. Exit status: 0 done, 1 the command failed, 2 bad command line.
package main

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/rocketraft/rocketraft/tools/admin"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	level := slog.LevelError + 1 // the remoting client's logs stay quiet unless asked for
	if os.Getenv("ROCKETRAFT_LOG") == "debug" {
		level = slog.LevelDebug
	}
	code := admin.Run(ctx, os.Args[1:], admin.Env{
		Stdout: os.Stdout,
		Stderr: os.Stderr,
		Getenv: os.Getenv,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})),
	})
	stop()
	os.Exit(code)
}
