// Package bench is a Go module of its own that holds the peer side of RocketRaft's benchmarks, so that the
// peer's dependencies (nats-server, nats.go) never enter the broker's module or binaries:
//
//	cmd/natsbench  NATS JetStream servers embedded (serve: one, or three clustered on loopback; file storage;
//	               fsync every 2 min (NATS's default) or sync_interval: always), and a publisher (pub) that
//	               sends the same workload as `mqbench producer --mode sync` through the same driver loop and
//	               statistics (tools/bench.RunPublishers), printing the same JSON summary
//	cmd/diskbench  the disk's raw figures: sequential write MB/s, serial write+fdatasync rate and latency,
//	               cold sequential read MB/s; --evict drops a folder's files from the page cache
//	cmd/brokerprobe  the time from a broker's start to serving (a send and a pull of it answered), for the
//	               recovery runs of scripts/bench-scale.sh
//
// The module requires the broker's module through a replace directive (../), so the publisher shares
// tools/bench; nothing in the broker's module imports this one. scripts/bench-compare.sh and
// scripts/bench-scale.sh build the tools into bin/ and run them next to our brokers.
package bench
