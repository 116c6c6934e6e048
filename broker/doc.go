// Package broker is a RocketMQ broker: the request processors the official clients talk to, the metadata
// managers (topics.json, consumerOffset.json, subscriptionGroup.json), client bookkeeping, long polling,
// and the registration cycle with the name servers, all over one message store.
//
// One file per request family: send.go (SEND_MESSAGE, SEND_MESSAGE_V2, SEND_BATCH_MESSAGE), pull.go and
// pull_hold.go (PULL_MESSAGE and its long polling), consumer_manage.go (offsets, consumer lists),
// client_manage.go (HEART_BEAT, UNREGISTER_CLIENT), rebalance_lock.go (LOCK/UNLOCK_BATCH_MQ), query.go
// (QUERY_MESSAGE, VIEW_MESSAGE_BY_ID), admin.go and admin_*.go (topics, subscription groups, broker config,
// stats, connections, offset reset, the ACL file (admin_acl.go), store maintenance and QUERY_CONSUME_QUEUE
// (admin_store.go): what mqadmin asks), register.go (REGISTER_BROKER / UNREGISTER_BROKER to every name server: the whole topic table at start and every period, only the changed topics after a
// change, zlib-compressed; topic creation answers once that round is over), send_back.go (retry and dead-letter queues), transaction.go (half messages,
// END_TRANSACTION; the check-back is broker/internal/txcheck), reply.go (request-reply), pop.go (RocketMQ 5's POP_MESSAGE, ACK_MESSAGE,
// BATCH_ACK_MESSAGE, CHANGE_MESSAGE_INVISIBLETIME, NOTIFICATION, POLLING_INFO; the pop service in pop_*.go,
// held pops in pop_poll.go, see "Pop consumption").
//
// # Replication roles (role.go)
//
// What the replication mode changes is decided by one replicationRole, chosen in New from the config and
// kept until Close; nothing else in the package asks which mode runs (but the accessors for tests and
// tools: RaftNode, HAService, ...). The interface's methods say how a put is written (the putter: the
// store, or the Raft node's proposer), replicated (the store's SYNC_MASTER hook) and answered (forwarded
// to the master, or refused), whether writes are taken, what a registration carries, and where
// replication starts and stops in Start and Close. Three implement it:
//
//	classicMaster  role_classic.go: brokerRole ASYNC_MASTER / SYNC_MASTER. The HA service of package ha
//	               streams the CommitLog to slaves and answers SYNC_MASTER puts once a slave has them;
//	               topic and group changes and changed offsets written into the CommitLog for the slaves
//	               (ha_meta.go); the tail check's answer (ha_check.go). Runs the master services from start.
//	classicSlave   role_classic.go: brokerRole SLAVE. The HA client, the master's metadata records applied
//	               as they are dispatched (ha_meta_apply.go), the periodic metadata copy from the master
//	               (ha_sync.go) with the consumer-offset merge (ha_offsets.go), the tail check's question.
//	               Refuses writes; runs no master service.
//	raftRole       raft_role.go: enableDLegerCommitLog. The raftlog node over the framed store; the role
//	               follows leadership inside the one value (master: brokerId 0, writes taken, master
//	               services running; else a slave with its slave id that forwards writes). Its keys
//	               (raft_config.go), puts through the node's proposer (raft_put.go), topics, groups and
//	               offsets as Raft entries (raft_meta.go, raft_offsets.go), status and leadership transfer
//	               requests (raft_admin.go, raft_status.go), membership requests (raft_membership.go), the
//	               master's virtual address that follows leadership (raft_vip.go: masterVipAddress, a
//	               second listener of the client server and, on a real interface, the address added with
//	               netlink in raft_vip_linux.go), and the forwarding of writes from a node that is not the
//	               master to the master it announced through the log (raft_forward.go: bounds, loop guard,
//	               ACL). Broker.raft is this role (nil in classic mode) for the Raft mode's own handlers.
//
// Pulls need nothing of a role: in the Raft mode the store stops a read at a unit whose record the state
// machine has not made readable yet.
//
// # Services and tables
//
// The master services (master_services.go: delay-level and timer delivery, package broker/internal/delay;
// the transaction check-back, package broker/internal/txcheck; the pop engine's revive service) run while
// the broker is master and are started and stopped together by the role. None holds the broker: each is
// built with what it uses, as small interfaces it owns (a store.QueueReader for the consume queues and
// records, a put function, the Clock, its intervals; the check-back also the offsets, topic creation and
// the producers, which the broker asks over the wire: txProducers in transaction.go). The metadata tables (topic_config.go,
// subscription_group.go, consumer_offset.go, and the delay offsets and timer checkpoint of those services)
// are each owned by one manager and changed only through its methods, with its lock inside: the slave's
// sync, the Raft state machine (raft_meta.go: metadata entries, snapshots) and the offsets entries
// (raft_offsets.go) call them too. A topic or group change goes through the manager's topicChanges /
// groupChanges: the manager itself, or in the Raft mode the role's proposal, applied on every node by the
// manager's apply methods.
//
// Message semantics around the store: put.go rewrites delayed and timed messages to SCHEDULE_TOPIC_XXXX and
// the timer topic before they are stored; the delay engine (broker/internal/delay: its doc.go says what
// survives what) delivers them when due, and recall.go
// (RECALL_MESSAGE, RocketMQ 5.3) withdraws a timed message through a recall record the timer meets at the
// message's delivery time; filter.go and
// sql_cache.go pick the store filter (tag hashes or SQL92 from filter/) of a subscription.
//
// # Pop consumption (pop*.go, broker/internal/pop)
//
// RocketMQ 5's pop: the broker, not the client, tracks what a consumer group has in hand. pop.go checks the
// requests (POP_MESSAGE, ACK_MESSAGE, BATCH_ACK_MESSAGE, CHANGE_MESSAGE_INVISIBLETIME, NOTIFICATION,
// POLLING_INFO) and hands them to the pop engine, package broker/internal/pop (its doc.go says what it does
// and what survives what), a master service built with narrow interfaces it owns (pop.Store, pop.Offsets, a
// put function, the clock, callbacks for topics and the dead-letter copy), never the broker. pop_poll.go
// holds a pop or NOTIFICATION that finds nothing up to its pollTime and runs it again when a message of its
// topic or of the group's retry topic is dispatched, or an ordered ack unblocks its queue (popPollingSize per
// topic, maxPopPollingSize in all, else POLLING_FULL).
//
// # Cost per message (send.go, send_bench_test.go; issue 16)
//
// A SEND_MESSAGE costs one sendJob (header, message and answer state) and its callback, the header map
// the remoting layer decodes, the message's properties with CLUSTER added, the frame, the store's msg id
// and the response; dispatch decodes no properties (store.Arrival carries them encoded) and the held-pull
// table is looked up without building a key. Measured over the wire on one ASYNC_FLUSH broker, 1 KiB
// SEND_MESSAGE_V2 as the Go client builds it, allocations of client and broker together (both run in the
// test), 2 shared cores at load 9-15, before (main at 0fda97b) and after, alternating in one run:
//
//	go test ./broker -run '^$' -bench 'SendWire|PullWire' -benchmem -benchtime 2s
//	                      allocs/op   B/op         cpu-us/op (getrusage, whole process)
//	SendWire              45 -> 30    8101 -> 5631  105-147 -> 127-170 (latency-bound: idle services count)
//	SendWireParallel      45 -> 31    8459 -> 6012  81-110 -> 75-83
//	PullWire (per msg)    1 -> 1      1516 -> 1461  5.0-5.2 -> 5.3-5.9
//
// Of the 30, the broker's share is about 17 (the 14-member header map alone is 4: a Go map above 8
// entries). The broker's CPU per acknowledged message under mqbench (ROWS=async DURATION=15s PROFILE=1
// scripts/bench-compare.sh, 16 sync producers, load 14-28) did not move beyond the load's noise: 46 and 53
// us before, 54 and 53 after. Its profile says where the rest is: syscalls 29% (the writev of each answer
// batch and the reads; loopback TCP), memmove 10% (the record copied into the CommitLog mapping), futex
// 4-5% (goroutine hand-offs: reader, pool worker, store, writer), GC 4-6%, the JSON header decode about
// 10% and the message index (UNIQ_KEY) 6% of the benchmark's profile.
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
//	delay Timer   a message is due once the steady clock reaches its TIMER_OUT_MS: a step of this node's
//	              wall clock delivers nothing early and stalls nothing. An absolute time is compared with the
//	              steady clock, so it is met by this node's wall clock as it was at start plus the time since
//	              (the sender's and this node's clocks must agree, as in RocketMQ). After a restart, or on a
//	              new master or leader, the steady clock starts again from that node's wall clock: a step
//	              taken before then moves every pending delivery by the step (forward: due sooner, delivered
//	              at once in a burst if it passed them; back: delayed by the step)
//	delay levels  a delay-level message seen arriving (the arrival listener) is due its level's delay after
//	              the arrival on the monotonic clock, whatever the clocks did. One not seen arriving (stored
//	              before a restart or a leadership change, or beyond maxArrivals waiting in one level) is due
//	              by its tag code, the store's wall-clock store timestamp plus the delay, against the steady
//	              clock, bounded to [now, now + delay] when it reaches the head of its level (a store
//	              timestamp after a step back would otherwise hold the level for the step)
//	txcheck       a half message is checked once the steady clock is TransactionTimeOut (or its immunity)
//	              past its born timestamp, the producer's wall time: a step of this node's clock neither
//	              asks every producer at once nor stops the checks
//
// Timestamps stored in records (born and store timestamps, the store package's) stay wall time, as the
// protocol shows them to clients; they step with the clock and nothing here orders by them.
//
// Monitoring: the stats engine, package broker/internal/stats, counts what passes (per topic, group and
// message type, request latencies through the remoting server's reply observer, metrics.go observeReply)
// and keeps RocketMQ's BrokerStatsManager items behind VIEW_BROKER_STATS_DATA; admin_runtime*.go answers the
// GET_BROKER_RUNTIME_INFO table rocketmq-exporter parses, and admin_exporter.go answers 315 and 328.
// metrics.go serves Prometheus: RocketMQ 5's series under the names its OpenTelemetry exporter gives them
// (metrics_rmq5.go, metrics_lag.go, reading the stats engine at scrape time) beside our own (metrics.go,
// metrics_ha.go, the Raft series). The stats engine's LogWriter prints RocketMQ's per-minute stats.log lines
// from the stats items on a logger tagged component=stats (admin_runtime.go startStatsLog; mqbroker routes
// it to stats.log alone, internal/logging). A held pull of a connection the
// client has closed is not re-run (broker.go rerunPull); the Go client closes its connection on Shutdown
// and sends no UNREGISTER_CLIENT, so the close is all the broker learns.
//
// Threading: requests arrive on the remoting server's pools, one pool per family (send, pull, pop, ack,
// query, admin, client, consumer), so a slow disk never delays heartbeats, nor a pop's or an ack's revive
// record a pull. A send is answered from the store's
// completion callback and a pull that finds nothing is parked in the pull-hold service; neither keeps a
// worker waiting. Dispatch (the store's reput goroutine) wakes held pulls through the arrival listener.
//
// Shutdown order (Close): the role's first step (a Raft master stops its services for good, proposes its
// last offsets and hands leadership over while its pools still run), unregister from the name servers,
// stop accepting connections, stop the services and answer the held pulls, drain the pools, flush the
// store, stop replication (the role: a master's waiting SYNC_MASTER puts are answered), persist consumer
// offsets, close connections, close the store (which flushes and removes the abort file).
//
// Lock order: the managers and services each own their mutex and never call each other, or out to the
// network, while holding it, with two exceptions that nest in this order only: masterServices.mu is held
// while the services start and stop (their close waits for their goroutines and takes their own locks);
// raftOffsetSync.mu is held while it reads the tables through their managers and waits for its proposal.
// Nothing holds a manager's or a service's lock while taking either of those two.
package broker
