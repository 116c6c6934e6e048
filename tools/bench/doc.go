// Package bench is the load generator behind cmd/mqbench, modelled on RocketMQ's benchmark tool
// (example/.../benchmark/Producer.java and Consumer.java): producers and consumers driven either by our own
// client (package client, "native": requests built by hand, the fastest a Go client can be), by the official
// Apache RocketMQ Go client ("official": what a user runs), or with RocketMQ 5's gRPC protocol against a
// gRPC endpoint ("grpc", grpc.go: sends of one message, a SimpleConsumer's receive of up to --pull-batch
// messages and one ack of them, as the 5.x clients do).
//
// # What is measured
//
//	producer  messages/s and MB/s of acknowledged sends; send latency from the moment a goroutine
//	          builds the request to the moment the answer is handed back (for oneway sends, to the
//	          moment the request is queued on the connection); sends that got no answer ("failed":
//	          connection errors, timeouts) and sends answered with an error code ("rejected",
//	          FLUSH_DISK_TIMEOUT and the other non-SEND_OK statuses included)
//	consumer  messages/s and MB/s of consumed messages, from the first message consumed to the last
//	          (start-up and the wait after a drained backlog do not count); born-to-consume and
//	          store-to-consume delays: now minus the producer's born timestamp and minus the broker's
//	          store timestamp, both millisecond clocks of this machine. Each message counts once,
//	          by its queue and queue offset: one handed over again (a rebalance, a late offset commit)
//	          is a duplicate, reported apart, and the quota (-q) counts distinct messages. The run
//	          ends only once every callback of the official client that took a share of the quota
//	          has recorded it (the client's Shutdown does not wait for its consume goroutines)
//
// Latencies go into HdrHistograms (1 µs to 5 min, 3 significant digits): one per worker goroutine, so
// recording never contends, merged by the reporter once per interval. A line is printed per interval and a
// Summary at the end.
//
// # The native client's requests
//
// Producer: the route from GET_ROUTEINFO_BY_TOPIC; the topic's write queues on broker masters taken round
// robin, each goroutine starting at its own index; SEND_MESSAGE_V2 with the one-letter header keys (as
// RocketMQ's tool with sendSmartMsg) or SEND_BATCH_MESSAGE, ROCKETMQ binary headers by default (as the tool);
// every message carries a UNIQ_KEY, KEYS and TAGS as the flags ask. Consumer: every read queue owned by one
// worker, one PULL_MESSAGE outstanding per queue with long polling (suspend 20 s) and the subscription "*" in
// the request, answers decoded with message.DecodeMessage; offsets start at the group's committed offset, else
// the queue's min (--from first) or max, and are committed with each pull and at the end.
//
// Topics are created when missing: UPDATE_AND_CREATE_TOPIC to the master of every broker that
// GET_BROKER_CLUSTER_INFO lists, then a wait until every name server routes the topic. A producer with
// --topics N sends to N topics (-t's value + "_0" .. "_{N-1}"), all created before the run starts, its
// goroutines going round the queues of every topic (queue 0 of each topic, then queue 1, ...): the same load,
// spread, for the scale runs of scripts/bench-scale.sh.
//
// # The fleet simulator (mqbench namesrv)
//
// fleet.go to fleet_run.go: broker groups registering their topic tables (plain, compressed and split
// bodies) on their own connections, client connections asking routes open loop at a set rate with latency
// counted from when each query was due, churn, and the same load and churn (on a fleet of its own, without
// the restart) against a stand-in that answers at once as the simulator's own floor; the name server's CPU, memory and allocations come from its metrics endpoint.
// docs/bench/namesrv.md describes the run and its figures.
package bench
