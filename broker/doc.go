// Package broker is a RocketMQ broker: the request processors the official clients talk to, the metadata
// managers (topics.json, consumerOffset.json, subscriptionGroup.json), client bookkeeping, long polling,
// and the registration cycle with the name servers, all over one message store.
//
// One file per request family: send.go (SEND_MESSAGE, SEND_MESSAGE_V2, SEND_BATCH_MESSAGE), pull.go and
// pull_hold.go (PULL_MESSAGE and its long polling), consumer_manage.go (offsets, consumer lists),
// client_manage.go (HEART_BEAT, UNREGISTER_CLIENT), rebalance_lock.go (LOCK/UNLOCK_BATCH_MQ), query.go
// (QUERY_MESSAGE, VIEW_MESSAGE_BY_ID), admin.go and admin_*.go (topics, subscription groups, broker config,
// stats, connections, offset reset: what mqadmin asks), register.go (REGISTER_BROKER / UNREGISTER_BROKER to
// every name server), send_back.go (retry and dead-letter queues), transaction.go (half messages,
// END_TRANSACTION, check-back), reply.go (request-reply). Classic replication (package ha) is wired in by
// ha_*.go: the HA service or client by role and the SYNC_MASTER store hook (ha_wiring.go), a slave's
// metadata sync (ha_sync.go) and consumer-offset merge (ha_offsets.go), the tail check (ha_check.go). The Raft
// mode (enableDLegerCommitLog, instead of the classic roles) is wired in by raft_*.go: its keys
// (raft_config.go), the raftlog node and the role that follows leadership (raft_role.go), puts through the
// node's proposer (raft_put.go), topics, groups and offsets as Raft entries (raft_meta.go, raft_offsets.go),
// status and leadership transfer requests (raft_admin.go, raft_status.go), membership requests
// (raft_membership.go), the master's virtual address that follows leadership (raft_vip.go: masterVipAddress,
// a second listener of the client server and, on a real interface, the address added with netlink in
// raft_vip_linux.go), and the forwarding of writes from a node that is not the master to the master it
// announced through the log (raft_forward.go: bounds, loop guard, ACL). Pulls need nothing of their own:
// the store stops a read at a unit whose
// record the state machine has not made readable yet.
//
// Message semantics around the store: put.go rewrites delayed and timed messages to SCHEDULE_TOPIC_XXXX and
// the timer topic before they are stored; schedule.go and timer.go deliver them when due; filter.go and
// sql_cache.go pick the store filter (tag hashes or SQL92 from filter/) of a subscription.
//
// # Clocks (clock.go)
//
// The services that act on time read an injected Clock (Options.Clock; the system's by default) through a
// steady clock: the wall clock read once, at New, plus the monotonic time elapsed since. A step of the
// wall clock afterwards (settimeofday, an NTP step, a VM resumed from a snapshot) is not followed until the
// broker starts again; NTP's rate corrections are (CLOCK_MONOTONIC follows them). What each reads:
//
//	put.go        TIMER_DELAY_SEC / TIMER_DELAY_MS become a delivery time (ms) of the steady clock, stored
//	              as the message's TIMER_OUT_MS; TIMER_DELIVER_MS / __STARTDELIVERTIME are the sender's wall
//	              time and are stored as given
//	timer.go      a message is due once the steady clock reaches its TIMER_OUT_MS: a step of this node's
//	              wall clock delivers nothing early and stalls nothing. An absolute time is compared with the
//	              steady clock, so it is met by this node's wall clock as it was at start plus the time since
//	              (the sender's and this node's clocks must agree, as in RocketMQ). After a restart, or on a
//	              new master or leader, the steady clock starts again from that node's wall clock: a step
//	              taken before then moves every pending delivery by the step (forward: due sooner, delivered
//	              at once in a burst if it passed them; back: delayed by the step)
//	schedule.go   a delay-level message seen arriving (the arrival listener) is due its level's delay after
//	              the arrival on the monotonic clock, whatever the clocks did. One not seen arriving (stored
//	              before a restart or a leadership change, or beyond maxArrivals waiting in one level) is due
//	              by its tag code, the store's wall-clock store timestamp plus the delay, against the steady
//	              clock, bounded to [now, now + delay] when it reaches the head of its level (a store
//	              timestamp after a step back would otherwise hold the level for the step)
//	transaction   a half message is checked once the steady clock is TransactionTimeOut (or its immunity)
//	              past its born timestamp, the producer's wall time: a step of this node's clock neither
//	              asks every producer at once nor stops the checks
//
// Timestamps stored in records (born and store timestamps, the store package's) stay wall time, as the
// protocol shows them to clients; they step with the clock and nothing here orders by them.
//
// Monitoring: stats.go counts what passes (per topic, group and message type, request latencies through the
// remoting server's reply observer), stats_items.go keeps RocketMQ's BrokerStatsManager items behind
// VIEW_BROKER_STATS_DATA, admin_runtime*.go the GET_BROKER_RUNTIME_INFO table rocketmq-exporter parses, and
// admin_exporter.go answers 315 and 328. metrics.go serves Prometheus: RocketMQ 5's series under the names
// its OpenTelemetry exporter gives them (metrics_rmq5.go, metrics_lag.go) beside our own (metrics.go,
// metrics_ha.go, the Raft series).
// stats_log.go prints RocketMQ's per-minute stats.log lines from the stats items on a logger tagged
// component=stats (mqbroker routes it to stats.log alone, internal/logging). A held pull of a connection the
// client has closed is not re-run (broker.go rerunPull); the Go client closes its connection on Shutdown
// and sends no UNREGISTER_CLIENT, so the close is all the broker learns.
//
// Threading: requests arrive on the remoting server's pools, one pool per family (send, pull, query,
// admin, client, consumer), so a slow disk never delays heartbeats. A send is answered from the store's
// completion callback and a pull that finds nothing is parked in the pull-hold service; neither keeps a
// worker waiting. Dispatch (the store's reput goroutine) wakes held pulls through the arrival listener.
//
// Shutdown order (Close): unregister from the name servers, stop accepting connections, stop the
// services and answer the held pulls, persist consumer offsets, close connections and pools, close the
// store (which flushes and removes the abort file).
//
// Lock order: the managers each own one mutex and never call each other, or out to the network, while
// holding it.
package broker
