// Package chaos is the fault-injection suite behind cmd/mqchaos and make chaos: it runs a real broker
// group as processes, a recorded load against it, and a seeded schedule of faults, then checks the
// recorded history.
//
// # Topologies (Cluster)
//
//	MasterSlave  bin/mqnamesrv, a master (SYNC_MASTER or ASYNC_MASTER) and its slave; no failover: the
//	             master is the writer while it is down, and producers wait for its restart
//	RaftGroup    bin/mqnamesrv and three brokers with enableDLegerCommitLog; the writer is the node the
//	             name server routes as brokerId 0 (the leader); a lost leader is replaced by an election
//
// Every broker's client connections and its name server connection go through an internal/faultnet
// proxy; so does the slave's HA connection to the master (Cluster.ReplicationLinks), and every peer link of
// a Raft group: each node dials each other node through a proxy of its own (dLegerPeersDial), so a
// follower's replication links are its peer links, both directions.
//
// # A run (Run)
//
// Start the cluster, create the topic, wait until every broker serves it; start the route poll (every
// 200 ms), the producer and the consumers; warm up; for each fault of the Schedule wait its gap, apply it
// for its length, heal it; keep the load for the settle time; stop the producer; wait until the followers
// hold what the writer holds; let the consumers drain to the writer's max offsets; scan every queue of
// every broker. Then Check the history and write the report. Faults (schedule.go): kill -9 of the writer
// or a follower (restarted on its data), SIGSTOP/SIGCONT of either, and a blackhole, a delay or a cut of
// a follower's replication links, a one-way partition of them (one direction dropped, the other passing),
// lossy replication links (faultnet.Lossy: stalls, jitter and resets, what TCP makes of packet loss and
// reordering), and the clients cut from the writer alone (a blackhole on the writer's Node.Client proxy, the
// proxy on the producer's and consumers' path; peers and the name server still reach it). Right after a kill of a master, the surviving slave is scanned, once
// its max offsets stop moving.
//
// # The history (history.go), JSON lines in the run's folder
//
//	sends.jsonl   SendRecord per attempt: id w<worker>-<seq> (also the message's KEYS), attempt number,
//	              queue, node, start and end (µs), ok / rejected (code) / failed / timeout, acked offset
//	reads.jsonl   ReadRecord per message read: phase run (consumers), outage (scan at a kill) or final
//	              (scan after healing), node, queue, queue offset, id
//	faults.jsonl  FaultRecord per fault: kind, target, start, healed, notes, whether survivors were scanned
//	run.json      RunInfo: topology, role, flush, promises, the writer at the end, drained, run errors
//
// Producer worker w sends its messages one at a time, in seq order, to queue w % queues, and retries a
// send that was not acknowledged up to Retries more times; so per (worker, queue) the acknowledged sends
// have a total order to check, and a duplicate is allowed only for an id sent more than once.
//
// # The checks (checker.go)
//
// Lost (acknowledged, absent from the writer's final scan; a failure where RunInfo.Durable), replica-lost
// (acknowledged before a scanned kill of the writer, absent from the survivors' scan; a failure where
// RunInfo.Replicated), duplicates (allowed for retried ids, a failure otherwise), per-queue order of
// acknowledged sends, queue offsets seen with two ids (any node, any phase, or two acknowledgements),
// phantoms (read, never sent), unacknowledged but stored (counted), acknowledged but never consumed (when
// the consumers drained), replicas whose final scans differ, and per fault the time to the first
// acknowledgement begun after its start (the failover time for a kill of the writer) and the longest
// time without one. Report.String ends with Report.Summary, one line: PASS or FAIL and the counts.
package chaos
