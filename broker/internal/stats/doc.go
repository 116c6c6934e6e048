// Package stats is the broker's counting of what passes through it, RocketMQ's BrokerStatsManager and the
// counters behind RocketMQ 5's metrics: the broker's handlers record each stored put (RecordPut, by topic and
// message type: TypeOf), each pull or pop answer (RecordGet), send-backs, transactions, timer messages,
// topic and group creations and every answer's latency (ObserveRPC); the broker's admin handlers, its
// metrics endpoint and its stats.log read them. It takes nothing of the broker: the broker calls it, and
// hands it what it must know at the time (whether a topic still exists, the logger of stats.log).
//
// Files: stats.go (the counters and what records into them), items.go (the stats items of
// VIEW_BROKER_STATS_DATA, each with its minute, hour and day windows, sampled every second by the broker),
// read.go (the counters as the metrics endpoint reads them at scrape time), log.go (stats.log's lines).
//
//	hot path   every record is one lock-free map read (metrics.PerKey) and a few atomic adds; a put to one
//	           of thousands of topics reads one map: its topic's record holds the in counters by message
//	           type and the TOPIC_PUT_NUMS and TOPIC_PUT_SIZE items together
//	names      a map keyed by a topic keeps its own copy of the name, never the request's substring (which
//	           would keep the frame alive)
//	topics     the counters of a topic the broker no longer has are dropped at the next scrape (In, Out,
//	           Counts with exists) or sample (Sample), so their series end
//
// Nothing here is persisted: the counters start from zero when the broker starts (Boot), as RocketMQ's do.
package stats
