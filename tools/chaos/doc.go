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
// 200 ms), the producer, the consumers and the pop consumer (pop.go); warm up; for each fault of the Schedule wait its gap, apply it
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
// Power loss (power-loss-writer, power-loss-follower, power-loss-all; power.go): when the schedule has one,
// every broker runs with internal/powerloss's journal of its syncs (GroupConfig.PowerLoss); the fault kills
// the node (or every node) and cuts its store back to what it had synced (powerloss.Cut: CommitLog and
// ConsumeQueue bytes written and never fsynced become zeros; internal/powerloss/doc.go says what is and is
// not modelled), then restarts it on that after the length. With SYNC_FLUSH nothing acknowledged may be lost;
// with ASYNC_FLUSH the loss is counted, not failed (checker.go).
//
// # Disk faults (disk.go, disk_faults.go)
//
// disk-eio-writer and disk-eio-follower fail a node's disk, disk-full-* fill it, disk-slow-* slow it down, each
// in the middle of the load. When the schedule has one (it needs root: DiskSupport; mqchaos leaves the kinds
// out otherwise and says why), every broker's store lies on a disk of its own, an ext4 on a loop device
// whose image lies on a second ext4 on a loop device (Disk draws it), and the faults act in the kernel, under
// the broker's real system calls, not in a layer of the broker: the store disk's I/O fails with EIO because
// the outer file system it lives in is shut down (FS_IOC_SHUTDOWN), so the broker's write() still lands in
// the page cache and its fsync, fdatasync and msync fail, and its file system's journal aborts, as with a
// dead disk; a fill takes every free block (fallocate), so the next block allocation fails with ENOSPC, in a
// write() or as SIGBUS in a page fault of a mapping; a slow disk is the device throttled to a few reads and
// writes a second (blk-throttle of the root blkio cgroup). Why not device-mapper (dm-error, dm-flakey,
// dm-delay), the usual tools: this machine's kernel has no device-mapper and no modules to load; the loop
// devices, ext4's shutdown ioctl and blk-throttle are what it has, and they fail or stall the same system
// calls. Why not a fault layer in the store's file I/O (store.FileOps, which the unit tests use): it only
// sees the calls routed through it, and a full disk showed what it would have missed (the Raft index's
// mapped writes, the CQ dispatch's, the config files, the Raft stable store and snapshots).
//
// The heals are an operator's: a failed disk is repaired with the broker stopped (SIGTERM; a broker that
// does not stop within 30 s fails the run), both file systems unmounted, the outer one mounted again, the
// store disk checked with e2fsck -fy and mounted, and the broker restarted on what it had synced (the
// failure dropped what was only in its page cache, as a power loss does: the checker counts disk-eio faults
// with the power losses where a flush type allows loss). A full disk is emptied and a slow one sped up, and
// the node is given a minute to move again by itself (a writer stores a new message, a follower holds what
// the writer held at the heal); one that does not, whose Raft stopped (getRaftStatus: Shutdown, what a Raft
// node does once its store turned read-only), or that exited, is restarted. A failed master's slave is
// scanned before the master restarts, as at a kill. Each fault's notes say what the broker logged (lines
// naming EIO, ENOSPC, a full disk, a write fault, a slow sync), how it stopped, e2fsck's verdict, and
// whether it recovered by itself. Runs with disk faults start their brokers with
// cleanFileForciblyEnable=false: a full disk would otherwise make them delete unexpired CommitLog files, a
// loss of acknowledged messages by design, and journal their syncs for the power-loss faults beside the disk
// images (powerloss.JournalPath), not on the disk the faults fail or fill.
//
// # The history (history.go), JSON lines in the run's folder
//
//	sends.jsonl   SendRecord per attempt: id w<worker>-<seq> (also the message's KEYS), attempt number,
//	              queue, node, start and end (µs), ok / rejected (code) / failed / timeout, acked offset
//	reads.jsonl   ReadRecord per message read: phase run (consumers), outage (scan at a kill) or final
//	              (scan after healing), node, queue, queue offset, id
//	faults.jsonl  FaultRecord per fault: kind, target, start, healed, notes, whether survivors were scanned
//	pops.jsonl    PopRecord per message delivered to the pop consumer: node, id, delivery attempt, held
//	              (left unacked on purpose), acked or the ack's error
//	run.json      RunInfo: topology, role, flush, promises, the writer at the end, drained, run errors
//
// Producer worker w sends its messages one at a time, in seq order, to queue w % queues, and retries a
// send that was not acknowledged up to Retries more times; so per (worker, queue) the acknowledged sends
// have a total order to check, and a duplicate is allowed only for an id sent more than once.
//
// The pop consumer (RunConfig.PopWorkers, 2 by default) is RocketMQ 5's way of consuming beside the pulling
// consumers: POP_MESSAGE of 32 from the routed master (through its client proxy), invisible 3 s, and one
// BATCH_ACK_MESSAGE of what it does not hold back: a delivery of attempt 1 of one id in 16 is left unacked,
// while no delivery of the id was acked, and must come back (a duplicate of a consumed message need not:
// after a failover the new master's pop offsets may lag the old one's, synced about once a second, so it
// hands out acked messages once more, and a later master whose offsets passed them does not bring such
// a delivery back; pop.go, popHeldEvery). So every fault also meets messages popped and not acked, check points in the broker's
// merge buffer and acks of them (broker/internal/pop). After the load it goes on until it got every
// acknowledged message and every held one back (at most 90 s).
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
// time without one. After a power loss with ASYNC_FLUSH, lost acknowledged messages and the queue offsets
// later messages took from them (OffsetsReused) are reported, not failed. Report.String ends with
// Report.Summary, one line: PASS or FAIL and the counts. The pop consumer's checks (PopReport): it drained
// (a failure where acknowledged messages must survive), every acknowledged message of the writer's final
// scan was delivered to it, every message it held came back, none it got was never sent; deliveries again
// are counted by what came before (a held delivery: expected; an acked one: the ack was lost to the fault
// or in a broker's memory, at least once; a failed ack).
//
// # Soak (soak.go, make soak)
//
// Soak holds a Run for SoakConfig.Duration (1 h): the faults are drawn (every kind, one every 2 to 4 minutes,
// 5 to 30 s long) while they fit between the warm-up (2 min) and a quiet end (2 min). RunConfig.During runs
// beside the load until the settle time is over: the mixed workload (soak_mixed.go: the official Go client
// sending normal, oneway, batch, delayed, transactional commit and rollback, and ordered messages in turn,
// a concurrent and an orderly push consumer and a lite pull consumer, and mqadmin clusterList,
// consumerProgress, and a topic created and deleted every 20 s) and the sampler (soak_sample.go), which
// reads every server process every 30 s: RssAnon and RssFile from /proc/PID/status, go_goroutines and
// go_memstats_heap_inuse_bytes from its /metrics (metricsExporterType=PROM on a port of its own), the
// /proc/PID/fd entries and /proc/PID/maps lines, the ones naming a live file of its data folder counted
// apart (a store opens and maps one more file per CommitLog or ConsumeQueue file it fills: growth by
// design; a deleted file still open or mapped counts as a leak would).
//
// JudgeGrowth (soak_growth.go) splits the samples by process and pid (a restart is a new incarnation),
// keeps those at least Warmup after its first in the role of its last (writer or follower as Cluster.Writer
// named it when sampled: a Raft follower that became the leader serves every client, some 40 goroutines
// more), takes the first of them as the baseline, and says a figure
// grew when each of its Last (3) last samples exceeds the bound over the baseline: the larger of a
// percentage and an absolute slack (DefaultGrowthBounds: RssAnon +30 % or 32 MiB, goroutines +20 % or 30,
// fds +50, maps +40; docs/soak.md has the measured figures behind them). An incarnation without MinAfter
// samples after its baseline is listed, not judged. The soak fails on any checker failure, on a mixed
// check (an acknowledged message never consumed where the mode promises no loss, a rolled-back transaction
// delivered, a delayed message read early, ordered messages out of order, a consumer that read nothing),
// on growth, or when nothing could be judged. The run's folder keeps samples.jsonl and soak.txt, whose last
// lines are the per-process resource table and SoakReport.Summary.
package chaos
