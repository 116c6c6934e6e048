// Package raftlog is the Raft mode's log: the CommitLog itself is the Raft log, as in
// DLedger, so there is no second copy of the messages. Store implements hashicorp/raft's
// LogStore (and MonotonicLogStore) over the mapped CommitLog files of a message store opened
// in framed mode, reached through the CommitLog interface this package owns (commitlog.go);
// raft-boltdb holds only the term and vote.
//
// # Frames
//
// Every Raft entry is one frame in the CommitLog, at the position where the previous one
// ended, with RocketMQ's file rule: a frame never spans two files; when it does not fit the
// rest of the current file with 8 bytes to spare, the rest gets the blank filler (size =
// bytes left, magic 0xCBD43194) and the frame goes to the next file. Every replica uses the
// same file size (mappedFileSizeCommitLog) and the same rule, and writes the same bytes for
// the same entry, so entry i lies at the same position on every node and the files of a group
// are byte-identical up to the commit index. Big-endian. Wire format: never change.
//
//	+-----+------+--------------+---------------------------------------------------------+
//	| off | size | field        | notes                                                   |
//	+-----+------+--------------+---------------------------------------------------------+
//	|   0 |    4 | totalSize    | header + extensions + data                              |
//	|   4 |    4 | magic        | 0x52414654 "RAFT" (never a stored-message magic)        |
//	|   8 |    8 | index        | Raft log index                                          |
//	|  16 |    8 | term         | Raft term                                               |
//	|  24 |    8 | pos          | absolute CommitLog offset of this frame (checked)       |
//	|  32 |    8 | appendedAt   | Log.AppendedAt, unix ns (the leader's clock; 0 = none)  |
//	|  40 |    1 | type         | raft.LogType: 0 command, 1 no-op, 4 barrier, 5 config   |
//	|  41 |    1 | kind         | commands: 1 messages, 2 metadata, 0 anything else       |
//	|  42 |    2 | reserved     | 0                                                       |
//	|  44 |    4 | extLen       | length of Log.Extensions                                |
//	|  48 |    4 | dataCRC      | CRC32C of the data; 0 for kind 1 (records have BODYCRC) |
//	|  52 |    4 | headerCRC    | CRC32C of bytes 0..51                                   |
//	|  56 |    e | extensions   | Log.Extensions                                          |
//	|56+e |    d | data         | Log.Data without its kind byte (kind 0: all of Data)    |
//	+-----+------+--------------+---------------------------------------------------------+
//
// A message entry (kind 1, what the broker proposes for a group of sends) carries standard
// stored-message records back to back (message/doc.go draws them), so a message's physical
// offset is the absolute position of its record and offset message ids and ConsumeQueue
// units keep RocketMQ's meaning. StoreLogs writes each record's PHYSICALOFFSET (every node
// knows the position) and the QUEUEOFFSET the state machine will give it (predicted from the
// log, queue_predict.go); the state machine checks that offset when it applies the entry and
// writes the right one in place where it differs, the same on every node. Configuration,
// no-op and barrier entries are frames too (they take an index and bytes) and dispatch skips
// them.
//
// # Dense index (dir/index/<20-digit first index>, 1 Mi slots per file by default)
//
//	+-----+------+-------+------------------------------------------+
//	| off | size | field | notes                                    |
//	+-----+------+-------+------------------------------------------+
//	|   0 |    8 | pos   | frame position in the CommitLog          |
//	|   8 |    8 | term  |                                          |
//	|  16 |    4 | size  | frame size; 0 = no entry                 |
//	|  20 |    1 | type  | raft.LogType                             |
//	|  21 |    1 | kind  |                                          |
//	|  22 |    2 | pad   |                                          |
//	+-----+------+-------+------------------------------------------+
//
// Slot i lies at (i mod n) * 24 in the file named n*floor(i/n): GetLog is one slot read and one
// frame read, O(1). The index is derived data: it is synced whenever the CommitLog moves to
// a new file and at Close, and rebuilt from the frames by recovery.
//
// # Deleting entries
//
// A suffix DeleteRange (a follower's conflicting, uncommitted tail) cuts the CommitLog at the
// frame, zeroes and syncs the rest of the file and deletes later files before it returns, so
// no new entry is acknowledged on top of a tail a crash could bring back. A prefix
// DeleteRange (compaction after a snapshot) is advisory: the CommitLog is the message data
// and keeps its own retention (fileReservedTime, disk pressure); a file becomes deletable
// once Raft compacted every entry in it and the newest snapshot's last entry lies in a later
// file (sending that snapshot reads the entry), and FirstIndex follows the files actually
// deleted.
// Lagging followers are thus served from the log for the whole retention window. The two are
// told apart by the applied index the state machine reports (SetAppliedIndex): Raft compacts
// only applied entries and cuts only above its commit index.
//
// # Snapshots (snapshot.go)
//
// The state machine's snapshot is small: the broker's metadata (MetaApplier.SnapshotMeta)
// and the next queue offset of every queue as of its last entry; the messages are the log
// itself. Sent to a follower that is behind the leader's first entry (its files expired),
// the snapshot carries the retained CommitLog files after them, and the follower replaces
// its CommitLog with them. Big-endian; wire format: never change (version 2 added the queue
// table; a version 1 snapshot, from an older node, is still read, without it; an older
// node refuses version 2, so a rolling upgrade should leave the leader for last).
//
//	+--------+------+-----------+--------------------------------------------------+
//	| off    | size | field     | notes                                            |
//	+--------+------+-----------+--------------------------------------------------+
//	|      0 |    4 | magic     | 0x524C534E "RLSN"                                |
//	|      4 |    4 | version   | 2                                                |
//	|      8 |    4 | metaLen   |                                                  |
//	|     12 |    4 | metaCRC   | CRC32C of the metadata                           |
//	|     16 |    m | metadata  | MetaApplier.SnapshotMeta                         |
//	|   16+m |    4 | tableLen  | at most 64 MiB                                   |
//	|   20+m |    4 | tableCRC  | CRC32C of the queue table                        |
//	|   24+m |    t | table     | count (4), then per queue: topic length (2),     |
//	|        |      |           | topic, queue id (4), next queue offset (8)       |
//	| 24+m+t |    8 | from      | first CommitLog offset sent (a file start)       |
//	| 32+m+t |    8 | to        | end of the snapshot's last entry                 |
//	| 40+m+t | to-from | bytes  | the CommitLog [from, to) as stored               |
//	+--------+------+-----------+--------------------------------------------------+
//
// The part from "from" on is present only in a snapshot opened for sending (and in one
// received that way); while it is read, retention keeps the files it reads. Raft stores a
// received snapshot whole (Dir/snapshots) before the state machine copies its files into
// the CommitLog, so a follower installing one needs about twice the retained size on disk
// for a while. The queue offsets of the copied records come with them (the leader's state
// machine wrote them), and the ConsumeQueues and the index are rebuilt from the copied
// files; then every queue of the table is seeded (store.SeedQueueOffsets): a queue whose
// records all lay in files that expired before the copied ones (a topic not written for a
// while) would otherwise start again at queue offset 0 on the follower and give its next
// record another offset than the leader's state machine gives it (TestCatchUpSeedsExpiredQueues;
// TestCatchUpBeyondRetention failed about once in 40 runs under load before, whenever the
// snapshot's files held no record of one of its two queues). The seed is ConsumeQueue
// fillers up to the next offset, durable before the install returns, which recovery keeps.
//
// # The CommitLog seam (commitlog.go)
//
// raftlog needs 22 methods of the store, declared in CommitLog with a contract each (who calls
// it, what is durable when it returns, who owns the bytes, which store sentinel an error
// wraps); *store.Store implements it, and the broker passes its store to OpenNode as one.
// The callers: Open (recovery, before the store starts: RecoveryStart, ReadCommitLog,
// RecoverFramed, SetRetentionGuard), the log store's single writer under Store.wmu
// (AppendCommitLog, AppendCommitLogBlank, SyncCommitLog, TruncateCommitLog, DispatchedQueueOffsets, and ResetCommitLog
// when a snapshot is installed), the state machine (DispatchMessages and AdvanceDispatch in
// log order, Flush before a snapshot is persisted), and the proposer (EncodeMessages,
// StoreHost, CommitLogFileSize: records are encoded by the store's rules before Raft sees
// them). The record layout itself is message's: frames place a run of records with
// message.PatchRecords and recovery checks it with message.CheckRecords. raftlog still
// imports store, for types and sentinels only: store.PutResult and its statuses (a Raft put
// answers as a classic one), store.AssignedOffset (DispatchMessages' result) and the store's
// errors (store.ErrOffsetOutOfRange, the encoding errors); internal/archtest checks that no
// non-test file names *store.Store or calls a store function. The tests run over the real
// store (TestStoreKeepsTheCommitLogContract checks the contract through the interface); the
// crash test injects its fault by wrapping it (crashingLog: the leader dies between writing
// entries and syncing them), so the log store carries no test hook.
//
// # Using it from the broker (Node)
//
// A broker in Raft mode opens its store with store.Options.Framed, then:
//
//	n, err := raftlog.OpenNode(st, cfg, raftlog.NodeOptions{Dir: root + "/raft", Meta: m, OnRoleChange: f})
//	err = st.Start()  // after OpenNode, which recovered the store
//	err = n.Start()   // bootstraps a new group from cfg.Peers, or rejoins
//	...
//	err = n.Close()   // hands leadership over first; then st.Close()
//
// Config comes from the broker's keys: SelfID (dLegerSelfId), Peers (ParsePeers of
// dLegerPeers), PreferredLeaderID (preferredLeaderId; Node.HoldPreferredLeader suspends the
// hand-over for a while), Sync (flushDiskType SYNC_FLUSH), the
// election timing; DefaultConfig has LAN values, Validate names a bad key. The nodes of a new
// group all bootstrap from the same Peers on their first start; a node added later to a
// running group starts with Join (no bootstrap) and is added by the leader with AddVoter.
//
// Sends: Node.PutMessage, PutMessages, PutMessageAsync and PutMessagesAsync take the same
// arguments as the store's methods of the same names and answer with a store.PutResult of
// the same meaning (offset msg ids from the leader's store host, the queue offset of the
// first message, the store timestamp the records carry), once the entry is committed and
// applied on this node; concurrent puts are grouped into one entry (propose.go). Errors:
// ErrNotLeader (a *NotLeaderError naming the leader: answer with a retriable code),
// ErrLeadershipLost and ErrProposalTimeout (fate unknown), ErrShutdown, or the store's
// encoding errors (store.ErrMessageTooLarge, store.ErrBatchMismatch, ...). Metadata commands
// go through ProposeMeta and come back to every node through MetaApplier.ApplyMeta.
//
// Roles: NodeOptions.OnRoleChange gets RoleEvents in order: RoleLeader once this node leads
// and every entry of earlier terms is applied (IsReadyLeader is then true: become master),
// RoleFollower with the leader's id when known (become slave). A leader cut off from its
// quorum steps down within LeaderLeaseTimeout and its puts fail fast with ErrNotLeader.
// TransferLeadership, AddVoter and RemoveServer are the operations; Status the view for
// admin tools.
//
// # Crash safety
//
// With Options.Sync every StoreLogs ends with one fdatasync of the CommitLog (group commit:
// Raft hands over a batch per call), so an acknowledged entry survives a machine crash;
// without it a majority holds it in memory (ASYNC_FLUSH). Open scans the CommitLog from
// store.RecoveryStart (the third-last file after a clean close, the checkpoint's safe point
// after a crash) and keeps the frames with a valid header CRC, their own position, an index
// one past the previous, a term not below it and valid data (data CRC, or record framing,
// physical offsets and, optionally, body CRCs); the log is cut at the first other unit, the
// index rewritten from the frames scanned. TestLeaderLosesUnsyncedTail kills a leader between
// the write and the sync of a StoreLogs and restarts it on files cut back to what it synced.
//
// # A disk that fails or fills up
//
// The frames reach the CommitLog through the store, whose writes and syncs report a full or
// failed disk as errors (store/doc.go "Disk faults"). The dense index is written through its
// mapping, and its files are sparse: on a full disk the kernel cannot give a page of a hole a
// block, and on a failed one it may not read a page in; either raises SIGBUS on the store into
// the mapping, which killed the broker ("fatal error: fault" in denseIndex.put, found by make
// chaos's disk-full faults). denseIndex.writeMapped catches that fault and fails the call with
// ErrIndexFault naming the file (TestIndexWriteFaultIsAnError). Why that is safe: a failed
// StoreLogs publishes nothing (the last index, the end and the durable index stay where they
// were; a slot half written is past the last index, so no reader looks at it, and the next
// StoreLogs writes it whole; recovery rebuilds slots from the frames anyway), and Raft treats
// it as any failed StoreLogs: a leader steps down and answers the entries' futures with the
// error, a follower answers the AppendEntries unsuccessfully and the leader sends it again.
// Once the disk has room the node stores again by itself. Not avoided: a leader with a full
// disk can win the next election (its log is as long as any) and step down again at its first
// StoreLogs, for a few rounds, until another node wins (make chaos measured gaps of about
// 3 s without an acknowledgement).
//
// A store that turned read-only is another matter: a sync failed (after which no sync can
// vouch for the pages it was to write, store/doc.go), or a write failed part way or faulted
// (a full disk under the mapped CommitLog, ConsumeQueues or index), and it refuses every later
// write with store.ErrNotWritable until it is reopened. The node then stops its Raft
// (Store.storeFailed, the hook set by Node.Start; as Close, the puts in flight are answered
// first), whatever its role: on a leader's failed sync (below), on a follower's failed sync or
// refused write in StoreLogs, and on the state machine's refused dispatch. Before, only a
// leader's sync stopped it: a follower with a read-only store stayed a voter that failed every
// append (make chaos: disk-eio-follower and disk-full-follower nodes that never caught up
// until restarted), and its state machine skipped the entry it could not dispatch and moved on,
// as it does for records that do not parse, which gave that entry's queue offsets to the next
// records on that node alone: its ConsumeQueues and the queue offsets written into its CommitLog
// parted from the others' (TestDispatchFailureStopsTheNode, which found the node's CommitLog
// differing from the leader's at a record's QUEUEOFFSET with the skip in place). Why stopping is
// safe: a node that stops is a crashed minority member; it answered nothing it did not store
// durably (a failed StoreLogs publishes nothing, and the state machine applies nothing after the
// refused entry, which stays undispatched); the restart, once the disk is repaired, recovers its
// log from what is on the disk and dispatches from the last durable dispatched position, so it
// catches up from the leader like any restarted follower. Errors that leave the store writable
// (ErrIndexFault, store.ErrDiskFull past diskSpaceWarningLevelRatio) do not stop it.
//
// Whether the node is stopped is the node's own record (raftDown, Node.raftState), not Raft's
// State: hashicorp/raft v1.8.0 sets a follower's state back from Shutdown to Follower when its
// run goroutine handles an AppendEntries it took before it saw the shutdown, then ends. Raft was
// stopped (its run, FSM and snapshot goroutines ended 2 ms after the failed dispatch), yet its
// State said Follower for good, and TestDispatchFailureStopsTheNode, waiting for Shutdown, timed
// out in 2 of about 45 runs beside two CPU-bound loops (TestStoppedFollowerSaysShutdown holds the
// run goroutine there and fails every time on the tree before). Only what the node reports
// changed (Status, leaderCheck, the role events): Raft's stop, and so the argument above, is as
// it was.
//
// # Group commit, and why it is safe (propose.go)
//
// The proposer takes an in-flight slot (Config.MaxInFlight) before it takes the queue, so
// the puts that arrive while every slot is replicated and synced wait in the queue and go
// into the next entry together; with a slot it lingers (at most MaxLinger, and a quarter of
// the recent round) until as many puts are queued as the last entry carried. Only the
// grouping changes, never what an answer means: an entry is committed or not as a whole,
// a put is answered from its own entry's state machine result once that entry is committed
// and applied here, a put's records are never split over two entries (a batch send keeps
// consecutive queue offsets), and entries keep the order of the queue (one proposer
// goroutine, one waiter taking the futures in order). What the proposer has not handed to
// Raft when leadership goes is refused with ErrNotLeader (nothing proposed: safe to send
// again); what is in flight fails with ErrLeadershipLost (outcome unknown, as before). The
// linger holds no lock and answers nothing; it only delays the next raft.Apply.
//
// Metrics (stats.go, rocketmq_raft_* in the broker): fsyncs, entries per StoreLogs as leader
// and as follower (one AppendEntries request each), messages and puts per entry, and the
// stages of a send on the leader.
//
// The depth and the transport's pipelining were chosen from scripts/bench-compare.sh (ROWS
// "sync raft", 1 KiB messages, 16 producers each waiting for its answer, 20 s; the ratio is
// to one broker with SYNC_FLUSH in the same run) on a 2-core machine shared with other
// builds (load average 9 to 17 throughout, so single figures move by a third between runs):
//
//	proposer                      in flight  RPCs in flight  msgs/s  x one broker  msgs/entry  fsyncs/msg
//	before (Apply, then the slot)   ~6           4             453      0.09          2.1        0.84
//	slot first                       4           4            1026      0.19          4.3        0.54
//	slot first                       1           4             745      0.13         10.3        0.29
//	slot first                       2           4             908      0.22          6.6        0.44
//	slot first                       2           1 (none)      825      0.16          6.1        0.47
//	slot first (the default)         2           2            1075      0.22          6.9        0.42
//
// One entry in flight makes the biggest entries but serialises everything: the leader's sync
// of the next entry cannot run while the followers sync this one. Two in flight let those
// overlap; pipelining two AppendEntries per follower hides the round trip (without it a
// follower still gets about one entry per request, as the leader stores one at a time).
// MaxAppendEntries never binds at these depths (1.04 entries per follower append). The first
// two rows ran with CPU profiles on, and before the benchmark waited for the nodes' CommitLog
// warm-up writes to end. The same script afterwards, before (commit b20d916) and after in
// two runs back to back at load 21 to 27: 653 msgs/s, 0.13x one broker, 2.1 msgs/entry, 0.90
// fsyncs/msg, stage means (ms) queue 4.3, dispatch 1.4, store 4.2, replicate 11.1, apply 0.8,
// answer 0.3; then 834 msgs/s, 0.15x, 6.6 msgs/entry, 0.44 fsyncs/msg, queue 3.3, dispatch
// 0.2, store 4.5, replicate 7.6, apply 1.1, answer 0.2 (0.92x NATS R3 with sync always).
// ASYNC_FLUSH: 4,250 then 3,155 msgs/s (0.29x one broker ASYNC_FLUSH; 0.62x NATS R3 default),
// 1.9 then 6.3 msgs/entry. On this machine a send's round is two syncs in series (leader, then
// follower) on one shared disk, so a group at 16 closed-loop producers cannot pass about half
// of one broker, whose round is one sync; the CPU the three nodes share bounds ASYNC_FLUSH.
//
// Then (issue 12, second pass) two costs found in the profiles were removed from the store:
// the SYNC_FLUSH warm-up of each whole 1 GiB CommitLog file at start and of the next file
// ahead (44-63 % of each node's CPU in the earlier profiles, and leader elections of up to
// 28 s at start), now a warm frontier 16 MiB ahead of the writes (store/warm.go; a node's
// first file is warmed in 34-42 ms, the leader elected 0.9 s after the first node opened its
// store), and the write-protect fault per page of the queue offsets written at apply (below).
// Command: ROWS="sync raft async raft-async nats-r3 nats-r3-always" DURATION=20s PROFILE=1
// scripts/bench-compare.sh; each line one run, ratios to one broker of the same flush mode in
// that run; load average from start to end of the run, and the disk's 4 KiB write+fdatasync
// rate as the script measured it first (other helpers' builds and benchmarks shared the disk):
//
//	run                          load     fsync/s  raft msgs/s  x sync  raft-async  x async  msgs/entry  fsyncs/msg
//	before (9e35b6c)             3 to 9    3309       1443       0.25       4686     0.18      -   (a)       -
//	warm frontier (acbf900)     5 to 15    1080        842       0.11       4120     0.27     7.3         0.40
//	+ pwrite at apply (004df13) 10 to 14   1353       2163       0.31       8495     0.57     6.8         0.42
//	same, MaxInFlight 1 (b)      8 to 10   1010       3203       0.28       8032     0.43    10.4         0.29
//	final (8fe40a4)             5 to 13    3035       2203       0.29       3438     0.21     6.8         0.42
//
// (a) the scrape of the rocketmq_raft_* series missed the broker's cluster/node labels then.
// (b) without PROFILE. In the final run the three nodes wrote 162 MiB of zeros ahead of
// their writes in the 20 s (about what they wrote) and no flush found the frontier behind
// (rocketmq_storage_warm_stalls_total 0); its Raft SYNC_FLUSH was 3.07x NATS R3 with sync
// always (717 msgs/s, p99 138 ms that run), its ASYNC_FLUSH 0.59x NATS R3 default (the load
// rose to 13 during that row). Stage means of the third run (ms): queue 1.18, dispatch 0.09, store
// 1.57, replicate 3.06, apply 0.26, answer 0.09 (second run: 2.70, 0.19, 4.74, 7.56, 1.35,
// 0.22); ASYNC_FLUSH: 0.25, 0.03, 0.05, 0.55, 0.07, 0.04. The figures move by a factor of two
// with the load of the other builds on this machine (the single broker's SYNC_FLUSH row went
// from 5,689 to 11,244 msgs/s between runs), so only the ratios of one run compare, and a
// change within about a third of a ratio is not shown to be one. Top of the leader's CPU
// profile in the third run: syscalls 39 % (pwrite, fdatasync, network), futex 8 %,
// PutUint32 5 % (the hash index, store.indexFile.put32, a fault per first touch of its
// pages; the same in one broker), memmove 3 %; the PutUint64 of dispatchFramed (12 % of the
// leader, 16 % of a follower in the second run) is gone. Why about 7 messages per entry with
// 16 producers: with two entries in flight the closed-loop producers split into two cohorts,
// one per entry, each answered together and back together (the linger keeps a cohort from
// splitting further); one entry in flight makes one cohort (10.4 per entry, 0.29 fsyncs per
// message) but serialises the leader's sync of the next entry behind the followers' sync of
// this one, and measured a lower ratio in both flush modes, so MaxInFlight stayed 2.
// Since the leader's sync overlaps replication (leader_sync.go) that serialisation is gone,
// and the broker (raftProposeMaxInFlight 0, the default) now uses 1 with SYNC_FLUSH and 2
// with ASYNC_FLUSH. Measured on 2026-12-03 with bench-compare ROWS="raft raft-async"
// DURATION=15s, runs alternating 2 and 1 in flight, load 7 to 16 (helpers' builds):
//
//	in flight   raft msgs/s   p99 ms   CPU us/msg   msgs/entry   fsyncs/msg   raft-async msgs/s   CPU us/msg
//	2           1887, 2049    69, 31   401, 449     6.9, 7.2     0.40, 0.38   6098, 4626          158, 233
//	1           2722, 2756    20, 27   358, 329     9.9, 10.2    0.30, 0.29   5650, 4323          177, 216
//
// (CPU us/msg: the three nodes' user and system time per message acknowledged, the figure the
// machine's load moves least.) ASYNC_FLUSH pays no sync per entry and loses a little with 1.
// MaxAppendEntries still never binds (1.04 entries per follower append; 1.33 with
// ASYNC_FLUSH), so it stays 256. The transport's pipelining stays at two RPCs in flight:
// without it (MaxRPCsInFlight 1, a temporary build; 2026-12-04, ROWS="raft-async raft", three
// alternating pairs, load 2.8-4.4) ASYNC_FLUSH ran 20,170 18,114 20,868 msgs/s against 21,250
// 20,244 21,784 and SYNC_FLUSH 7,922 8,673 7,805 against 8,275 9,265 9,511, behind in every pair,
// with the followers' appends no bigger (1.05 entries per append against 1.02).
//
// Where a round's time goes now (2026-12-04, bench-compare ROWS="raft", 20 s, load 2-5, at
// 7,000-8,800 msgs/s): stage means queue 0.3, store 0.03, replicate 0.9-1.1, apply 0.06-0.1,
// answer 0.03 ms, of which the follower's StoreLogs (write and sync) is 0.53-0.67 and its sync
// 0.5-0.66, against 0.18 ms for one 12 KiB write and sync alone on this disk (0.45 ms with
// three writers syncing at once). Two experiments (builds not kept) bound what the leader's
// side and the grouping can still give:
//
//   - The leader not syncing at all, and applying without waiting for it (unsafe, for the
//     bound only): 8,636 and 8,950 msgs/s against 8,562 and 8,411 for this build in the same
//     rounds, the followers' StoreLogs no faster (0.61 against 0.55 ms). The leader's sync is
//     not on the critical path any more (it overlaps, see below), so counting the two
//     followers as a majority without it (the thesis allows it) would gain about 5 % at most;
//     not done, as it would need each follower's acknowledgements tracked outside Raft.
//     Nor would it shorten the tail: the leader syncing as now but neither waiting for its
//     sync before the apply nor clamping the commit index (unsafe, for the bound only; what
//     the two followers as a majority could give at best, 2026-12-04, ROWS="raft", four
//     alternating pairs, load 2.8-4.2) ran 9,168 8,906 9,235 8,586 msgs/s, p99 8.57 8.26 7.55
//     9.21 ms, against 9,883 8,824 10,713 9,626 and 8.97 8.07 8.79 8.06 for this build.
//     bench-compare's "% over 4/8 ms" says why: the leader's syncs and the followers' are slow
//     alike (over 4 ms: 1.02 % of the follower appends and 1.03 % of all the syncs in one run,
//     0.84 % and 0.84 % in another), the device's flush tail stalling every sync in flight, and
//     1.3-1.5 % of the puts' replicate stages took over 4 ms; no quorum of the three avoids it.
//   - Lingering for every producer (the target 16 rather than the last entry's puts, and up to
//     half or all of the round rather than a quarter): 14.8-15.8 messages per entry and 0.19-0.20
//     fsyncs per message against 11.6-12.0 and 0.25-0.26, but msgs/s within the noise (9,435
//     and 9,056 against 8,822 in one round, 7,347 and 6,463 against 7,080 in the next): what a
//     bigger entry saves in rounds, the longer linger adds to each round, since the producers
//     answered by an entry take about half a millisecond to send again.
//
// So a round is bound by one follower's write and sync plus the hand-offs between the three
// processes on two cores (about 0.35 ms of replicate besides the follower's StoreLogs), and the
// tail by the syncs': 1 % of the syncs of a run took over 4 ms (0.2 % over 8), and a round
// waits for two of them (the leader's and the faster follower's); the p99 of a send (8-11 ms)
// follows. Writing the warm-up zeros (store/warm.go) in 256 or 64 KiB pieces instead of 1 MiB
// took the tail of three syncing writers down in a stand-alone test (p99.9 6.5 -> 2.7-3.9 ms)
// but did not move the raft row's p99 (9.2-10.8 ms in all three builds), so it was not changed.
//
// What a follower's sync is made of (2026-12-04; the kernel's tracepoints block_rq_issue and
// block_rq_complete, fdatasync's entry and exit and sched_wakeup, recorded with perf for 4 s of a
// raft row, 6,354 syncs of the three nodes): 0.54-0.72 ms on average per node (p50 0.36-0.57, p99
// 3.7-4.0), of which handing the pages to the device 0.04, their write 0.09, the device's cache
// flush 0.27 (p99 1.5), the syncing thread's wake-up 0.06-0.08 (p99 0.65-0.82) and, in 46 % of the
// syncs, a write of the inode's block (0.09): this machine's ext4 has no journal, and there a
// changed mtime (once per clock tick: the writes change it) makes fdatasync write the inode; a
// journalled ext4 leaves it to the journal. The syncs over 2 ms (2.4 %) spent it in the flush,
// the device's tail that the three nodes share; a quarter of them overlapped a 1 MiB warm-up
// write of the same node. Two experiments that gave nothing: a 100 us EEVDF slice for every broker
// thread (sched_setattr; fewer msgs/s in both Raft rows), and two entries in flight with
// SYNC_FLUSH instead of one (ten alternating pairs of the raft row in two series; in the second,
// six pairs, 48,429 against 46,912 msgs/s summed, ahead in 4 of 6; the first four were mixed:
// within the noise, so it stays 1).
//
// The nodes' Go runtimes (2026-12-04): three brokers on a 2-core machine, each with GOMAXPROCS 2
// (Go's default, the cores), spend CPU on processors that look for work and wake each other's
// threads (runtime.findRunnable 13 % and futex 8 % of a leader's CPU profile with ASYNC_FLUSH).
// Each node with GOMAXPROCS 1, its share of the cores, as bench-compare now runs them
// (scripts/bench-compare.sh, node_procs; NODE_PROCS=0 gives the default back), measured in runs
// of 20 s alternating with the default within the hour: ASYNC_FLUSH 21,460 msgs/s on average over
// five runs against 16,781 over four (+28 %), 53 against 75 CPU us per message; SYNC_FLUSH 8,561
// over nine against 8,195 over eight (+4 %, within the noise), 130 against 147 CPU us per message,
// p99 8.8 against 9.6 ms (medians). (The ms row's two SYNC_FLUSH brokers, GOMAXPROCS 1 each: 5 %
// fewer msgs/s in three pairs, p99 a little lower.) A node of a group that shares a host with the
// others should be run that way; on its own machine it keeps Go's default.
//
// # Queue offsets written before the sync (queue_predict.go)
//
// Each record's QUEUEOFFSET is written by StoreLogs, with the rest of the entry and before its
// sync: the offset the state machine will give it, predicted from the store's next-offset
// table as of the dispatched position plus the records of the entries stored after it. The
// state machine still decides (store.DispatchMessages with assign takes every offset from its
// own counters) and writes a record only where the prediction was missing or wrong, counted in
// rocketmq_storage_queue_offsets_written_total; so a prediction can cost a write, never a
// wrong offset, and the argument for the offsets' safety is the one of the apply: the same
// prefix of the log, applied in the same order on every node, gives the same offsets. The
// table is rebuilt whenever something other than StoreLogs moves the end of the log (Open, a
// suffix truncation, a snapshot install, a failed StoreLogs) and after an entry the state
// machine could not dispatch. The cluster tests check that no node wrote an offset at apply
// (failover, partition with a truncated tail, crash, catch-up by snapshot); without the rebuild
// after a truncation TestPartitionedLeader finds 53-77 records written.
//
// Before (commit db13e90 and earlier) StoreLogs wrote zeros and the apply wrote the offsets
// into a copy of the entry's records and put it back with a pwrite, after the entry's pages
// had been synced: every page of an entry was dirtied twice and written twice. Measured with
// scripts/bench-compare.sh ROWS="raft" DURATION=20s, the two builds alternating, two rounds
// each (2026-12-04, load 4-5): the device wrote 8.41 and 8.54 bytes per body byte acknowledged
// against 12.56 and 12.56 before (three CommitLogs of 1.2 bytes per body byte, the zeros written
// ahead of them, ConsumeQueues and index: about 7.3 is the floor), 33 % fewer. Messages per
// second and CPU per message did not move beyond the machine's noise (five alternating rounds:
// 6,934-8,528 msgs/s and 146-172 CPU us/msg against 5,571-7,858 and 146-216): the second write
// hit pages already in the cache, and the round is bound by the syncs' latency, not by the
// bytes. The profile entries it removed from each node: the copy (runtime.memmove under
// dispatchFramed, 4 % of a follower's CPU) and the second pwrite. Assigning the offsets when
// the leader proposes (DLedger's way) was not done: the leader would have to count the offsets
// of every entry in flight, forget them whenever an entry fails or leadership moves, and
// rebuild them after its barrier; the prediction needs none of that, because it never decides.
//
// # The leader's sync overlaps replication (leader_sync.go)
//
// Raft thesis section 10.2.1 lets a leader write its entry to its disk while it replicates
// it, provided the leader counts itself in a majority only once its own write is durable.
// hashicorp/raft (v1.8.0, raft.go dispatchLogs) cannot be told so: the leader loop calls
// LogStore.StoreLogs, then at once counts the leader as holding the entries
// (commitment.match(localID, lastIndex), unexported) and only then wakes the replicators.
// So with SYNC_FLUSH (Config.OverlapLeaderSync, on by default) a leader's StoreLogs writes
// and returns, a syncer goroutine syncs (one sync for whatever was written since the last),
// and Raft's early count is made harmless by three rules that hold back everything an early
// commit could otherwise release:
//
//  1. Apply: the leader's state machine applies an entry (makes it readable, assigns its
//     queue offsets, answers the put) only once the leader's own sync covers it
//     (FSM.ApplyBatch waits). Raft counts a follower only after the follower's StoreLogs
//     returned, and a follower's StoreLogs syncs before it returns. So a put is answered
//     once the leader and at least one follower hold it durably: a majority of three.
//  2. Commit index: what the leader sends its followers as LeaderCommitIndex is clamped to
//     what it holds durably (the transport wrapper, pipeline.go), so a follower applies an
//     entry only once the leader and the follower that completed its majority hold it
//     durably. Without this, a leader that lost power after Raft's early commit could come
//     back without the entry, a node that never had it could win an election with the
//     returning leader's vote, and overwrite an entry the followers had applied (and
//     consumers read).
//  3. Acknowledging old entries: a node that is not leading answers for entries it already
//     holds only once they are durable. Raft reads such entries with GetLog before it
//     acknowledges an AppendEntries that repeats them, without calling StoreLogs (which
//     would sync); the log Raft is given (gatedLog) waits for the sync there. This covers a
//     leader that stepped down with entries written but not synced: a new leader could
//     otherwise count its acknowledgement of them.
//
// What the syncer vouches for: the entries up to the last one published when its sync began,
// unless the log was cut (a suffix truncation) or replaced (a snapshot install) meanwhile,
// which a generation count detects. A failed sync is sticky: the store is read-only, the state
// machine applies nothing more (the batch answers the error, nothing is marked applied on
// this node), and the node shuts its Raft down, after answering the puts it has in flight
// while Raft still runs (each fails: an entry the state machine gets answers the sync error, one
// Raft gives up answers lost leadership), as Close does: Raft leaves a future it took and never
// answered waiting for ever once shut down, and Close would wait for it (the node's own
// goroutines that Close waits for, the new leader's barrier, a hand-over to the preferred
// leader, a membership change's wait, take Raft's answers through Node.await, which gives up
// when Close stops the node or Raft is shut down; Close's own hand-over too, since a transfer
// request Raft queued but had not read when the stop shut it down is never answered: Close
// hung there in about 1 run of 40 of TestSyncFailureAnswersEveryPutInFlight under load); the
// next StoreLogs fails too, so Raft steps down. Open syncs
// what recovery found, which after a process crash may be in the page cache only, before the
// node acknowledges any of it. Followers, and leaders with ASYNC_FLUSH or a
// transport without pre-vote, store as before (sync inside StoreLogs). The stage "store" of
// the send metrics is then the leader's write, and its sync runs inside "replicate".
// Not covered: entries that never reach the state machine. A membership change (AddVoter,
// RemoveServer) is answered by Raft once it commits, which may be before the leader's own sync;
// if the leader then loses power and a node without the entry wins the next election, the
// change is lost after mqadmin reported it done (the group keeps its old membership, nothing
// is lost from the log). Check getRaftStatus after a membership change that raced a crash.
//
// Shown by TestLeaderSyncOverlapAppliesNothingUnsynced: with the leader's syncs held, an
// entry commits on the followers' copies (the overlap), yet no commit index covering it is
// sent, no node applies it and the put is not answered; removing the clamp or the wait makes
// it fail. TestLeaderLosesUnsyncedTail crashes a leader between write and sync and finds
// every acknowledged put.
//
// # Pipelined replication that cannot hang (pipeline.go)
//
// hashicorp/raft's pipelined AppendEntries can block forever once the pipeline's decoder has
// stopped (pipeline.go has the sequence): the follower then gets no more entries from this
// leader, and Shutdown never returns (seen as a test stuck in Node.Close). The node wraps its
// network transport: a pipeline whose AppendEntries has not returned within twice the
// transport's I/O timeout is closed, and Close closes every pipeline right after signalling
// Raft to shut down. Safe: closing a pipeline is what Raft does after any pipeline error; it
// falls back to plain AppendEntries from the follower's nextIndex, so nothing is skipped, and a
// follower's log is only ever changed by what the leader sends. On stop, a master hands
// leadership over first (HandOver, called by the broker before its pools drain), so the
// requests still arriving are forwarded instead of refused.
//
// # Connections a restarted peer closed (redial.go)
//
// Every transport keeps outgoing connections between RPCs (NetworkTransport up to MaxPool 3 per
// peer, the append frames' client up to three), and a peer that restarts closes its end of all
// of them. Before, the next RPC went out on one and failed at once: a rolling restart handed
// leadership to a follower restarted seconds earlier and got "failed to make TimeoutNow RPC to
// n1: EOF" (issue 37; 3 transfers of 5, 4 s after the restart), and Raft's own hand-over at
// Close failed the same way. Now:
//
//  1. A kept connection is checked before a request is written on it: the socket's TCP state
//     (getsockopt TCP_INFO, Linux; no byte read) has left ESTABLISHED once the peer's FIN or
//     reset arrived, whatever bytes wait unread (a TLS close_notify). Such a connection is
//     dropped and the request goes out on another, or on a new dial: the frames' client checks
//     in getConn; NetworkTransport, whose pool is its own, dials through checkedStream, whose
//     connections check at the first write after a read and fail it with errStaleConn, having
//     written nothing, and redialTransport then calls again (up to MaxPool+1 times).
//  2. A request that fails with the peer's close (EOF, reset, broken pipe; not a timeout) once
//     written, when the peer closed the connection between the check and the write or while
//     answering, is sent once more where a second delivery is harmless.
//
// Why each is safe, per kind. Case 1 sends nothing on the dead connection, so every kind is
// called again, InstallSnapshot included (NetworkTransport reads the snapshot's data only
// after the request's first write succeeded). Case 2 may deliver a request twice:
//
//   - AppendEntries (plain and heartbeats, frames and msgpack): a follower skips entries it
//     holds with the same term, truncates nothing for them, and its commit index only moves
//     forward, so a repeat changes nothing; the retry sends the same request (its commit index
//     already clamped, leader_sync.go rule 2) before the replicator's next one, so the order is
//     kept. Raft resends after a failure anyway; the retry only spares the backoff.
//   - RequestVote and RequestPreVote: a voter that granted its vote in a term grants it again to
//     the same candidate and refuses others; a pre-vote changes no state.
//   - TimeoutNow: its receiver starts an election at once. A second delivery needs the first to
//     have reached Raft and its answer to be lost to the peer's close, and a node closes a
//     connection it serves only when it stops (or on a request it cannot read, answered by an
//     error first): the restarted process then gets the second, and the leader asked for
//     exactly that election. At worst one more election; terms and votes keep every safety
//     property as for any election.
//   - InstallSnapshot: not resent (its data stream is consumed); Raft sends the snapshot again.
//   - Pipelined appends: not retried; a pipeline fails as a whole, and Raft closes it and goes
//     on with plain AppendEntries from the follower's next index (pipeline.go). A pipeline's
//     connection is new (frames) or checked at its first write (msgpack).
//
// A transport also closes the connections it accepted when it closes (acceptedConns):
// NetworkTransport's Close left an idle incoming one open until the peer's next request, so a
// node closed within a process (tests, in-process groups) did not show its peers the close a
// process exit shows. TestKeptConnectionsOfARestartedPeer and TestFramesKeptConnectionOfA-
// RestartedPeer fail without the check, TestResendAfterPeerCloseWhereSafe without the resend,
// and TestTransferToRestartedFollower (frames, msgpack, peer TLS) restarts a follower and hands
// it leadership at once, eight times in a row (on the tree before, the first transfer failed).
//
// # Log entries as binary frames (append_wire.go, append_client.go, append_transport.go)
//
// The node's transport (Config.FramedAppends, the broker's raftFramedAppends, on by default)
// is hashicorp/raft's NetworkTransport for votes, pre-votes, snapshots and TimeoutNow, and its
// own frames for AppendEntries (pipelined, plain and heartbeats), on the same port, over plain
// TCP (append_transport.go) or peer TLS (tls.go): a connection that opens with the byte 0xF7 (NetworkTransport opens each with an
// RPC type, 0 to 4) and is answered 0xF7 carries length-prefixed frames, each field a uvarint
// or a length and its bytes (append_wire.go has the order). Only the encoding changes, not
// what Raft is told: every field of the request, of each Log and of the response travels
// (TestAppendWireRoundTrip), a frame that does not parse or is longer than 1 GiB drops its
// connection (and its bytes are never handed to Raft), requests are answered one at a time
// and in order on their connection, an error Raft answered travels as its text, a pipeline's
// broken connection fails every request in flight, and Raft then falls back to plain
// AppendEntries from the follower's nextIndex, as after any transport error. The node's
// wrappers (pipeline.go: the commit clamp of leader_sync.go, the stuck-pipeline close, the
// heartbeat gate at Close) wrap this transport as they wrapped NetworkTransport. A decoded
// entry's Data is a slice of its frame (capacity cut to its length), a buffer nothing else
// uses. A peer that hangs up on the handshake (a node of an older version reads 0xF7 as an
// unknown RPC type) is sent msgpack for a minute, then asked again, so a rolling upgrade keeps
// replicating (TestMixedGroupFramedAndMsgpack: a msgpack-only node leads and follows under
// load). Under peer TLS the frames travel inside the authenticated connection and each request
// passes the same claim check as an RPC read by NetworkTransport (checkClaim: the claimed id is
// the certificate's, a member's addresses are its own); one that fails is answered with the
// error and its connection closed (TestRogueCannotMoveAPeerTLSGroup sends the forged append as
// frames too, and its control shows the frames taken over plain TCP).
//
// Why: with ASYNC_FLUSH a round's replicate stage was 0.21-0.28 ms, and the profiles put
// much of it in msgpack's reflection and the copies along NetworkTransport's path (a
// follower's connection goroutine about 60 us of CPU per entry, its decode alone 19). Measured
// 2026-12-05 with scripts/bench-compare.sh ROWS="raft-async raft" DURATION=20s, six
// alternating pairs of a build with the frames (then switched by an environment variable) and
// without, load 0.5-3.7 (the runs' own processes):
//
//	                      raft-async msgs/s (mean)                      CPU us/msg   raft msgs/s (mean)
//	frames    24040 22085 23962 24829 22087 22869 (23,312)   43 50 48     9372 9721 9135 9678 9081 8420 (9,235)
//	msgpack   19013 22991 20628 19260 18482 22506 (20,480)   59 63 49     9029 9650 9739 7953 10507 9937 (9,469)
//
// (CPU us/msg: the three nodes' CPU time per message acknowledged, pairs 4-6.) Then the
// committed build, switched by the broker key (RAFT_ARGS="--raftFramedAppends=false"), four
// alternating pairs, load 0.3-4.5:
//
//	frames    24441 22082 27113 19415 (23,263)   44 50 40 57     11396 9570 11872 8757 (10,399)
//	msgpack   20746 23950 21000 21653 (21,837)   53 46 53 52     9670 9355 9389 9293 (9,427)
//
// Over the ten pairs ASYNC_FLUSH gains 11 % (23,292 against 21,023 msgs/s, ahead in 7 of 10)
// with less CPU per message in 5 of the 7 pairs that measured it; SYNC_FLUSH, bound by the
// followers' syncs, moves within the noise (+3 % over the ten). In one process
// (BenchmarkPeerTLS, 20,000 puts per run, three nodes sharing one runtime): ASYNC_FLUSH frames
// 11,503 msgs/s over plain TCP and 11,275 over peer TLS, msgpack 11,098 and 10,328; SYNC_FLUSH
// 10,212 and 10,284 against 10,936 and 10,750 (runs of 2 s: noise). A follower's CPU profile
// of a raft-async row: the frames' connection goroutine 1.08 s of 4.0 s against
// NetworkTransport's handleConn 1.61 s of 4.26 s before. The followers' populate service
// (store/populate.go, 0.5-0.6 s of each follower's 4 s) faulting 128 KiB per madvise instead of
// 1 MiB, so a node with one processor is held by the call for less (a temporary build, three
// alternating pairs of ROWS="async raft-async"): 24,250 21,927 24,609 against 24,086 22,914
// 22,002 msgs/s, 0.52-0.54 against 0.45-0.56 of one broker; within the noise, not kept.
//
// # Where the replicate stage goes (stats.go: the split, and a bare hop beside it)
//
// With the frames the leader splits each send's replicate stage at the start of the first
// AppendEntries carrying its entry (send: Raft's leader loop and replication goroutine) and at
// the first successful answer read (quorum: the write, loopback, the follower's serve, the
// answer's way back, the leader's reader waking); the rest, until the state machine starts the
// entry, is commit (commit notice, leader loop, the FSM hand-off). Both sides time each
// AppendEntries with entries (rocketmq_raft_append_seconds). bench-compare, 20 s rows,
// 2026-12-05 (load 0.4-3.9, the runs' own processes), five runs, means in ms:
//
//	row          msgs/s   replicate  send   quorum  commit  append (leader)  follower serve
//	raft-async   22,524     0.23     0.007  0.203   0.015       0.313             0.023
//	raft-async   22,976     0.22     0.007  0.198   0.014       0.302             0.022
//	raft-async   19,343     0.26     0.009  0.229   0.019       0.362             0.028
//	raft-async   16,620 h   0.31     0.009  0.282   0.020       0.447             0.043
//	raft-async   17,839 h   0.29     0.009  0.260   0.018       0.414             0.034
//	raft         11,074     0.66     0.010  0.600   0.045       0.740             0.432
//	raft          9,380 h   0.76     0.013  0.690   0.061       0.886             0.482
//
// (h: with HOP=500us, mqbench hop beside the row: a bare 64-byte round trip between two other
// processes (the echo side with GOMAXPROCS 1), every 0.5 ms: mean 0.143 and 0.139 ms (p50
// 0.079, p99 0.82-0.94) beside raft-async, 0.135 beside raft, 0.092 and 0.109 beside one
// ASYNC_FLUSH broker, 0.065 (p50 0.051) with the machine idle.)
//
// So with ASYNC_FLUSH the follower's own part (its frame read to its answer ready: Raft's
// follower loop and StoreLogs) is about a tenth of the quorum part, and the leader's own
// hand-offs (send and commit) under a tenth of the stage; the rest, 0.18-0.24 ms, is two
// processes waking each other on two shared cores, of which a bare round trip between two idle
// processes costs 0.14 ms at the same load. A replication path of our own (DLedger's: the
// leader pushes, counts the answers and commits without Raft's goroutines) would save the send
// and commit parts and some of the follower's serve, about 0.04 ms of the 0.7-0.96 ms a
// producer waits per send: about 5 %. With SYNC_FLUSH the follower's serve is its StoreLogs
// (write and sync, 0.41-0.48 ms), the same hop on top.
//
// What bounds the ratio to one broker on this machine is the machine: one run's CPU split
// (10 s of each row's measured run, /proc/PID/stat and /proc/stat): one ASYNC_FLUSH broker at
// 38,854 msgs/s used 0.84 cores (21.6 us per message) and its client 0.80 (20.6 us), the
// machine 85 % busy; the group at 19,343 msgs/s used 1.11 cores (57 us) and its client 0.48
// (25 us), the machine 81 % busy. Three copies cost three stores, and every send crosses two
// more process hops; NATS R3 (three servers in one process) ran at 0.34-0.52 of one of our
// ASYNC_FLUSH brokers in the three full runs of docs/bench/compare-2026-12-05-h.txt.
//
// # Who may talk to the group (peer TLS)
//
// Without NodeOptions.PeerTLS the transport is the node's plain TCP one: anyone who can
// reach a Raft port can send RequestVote or AppendEntries claiming any member's id, and a
// member grants it (a vote with the leadership-transfer flag is granted despite a live
// leader). So a plain-TCP group must sit on a network only its members reach.
//
// With PeerTLS (peerTlsMode=enforcing; internal/peertls/doc.go has the certificates and the
// CA) every link is mutual TLS and the transport (tls.go) binds what an RPC claims to who sent
// it: a connection is accepted only with a certificate of the cluster CA naming a node of this
// group (rocketraft://<dLegerGroup or brokerName>/<dLegerSelfId>), and every RPC read from it
// must carry that id in its header (RPCHeader.ID) and, for a member of dLegerPeers, that
// member's address in every address field (RPCHeader.Addr and the deprecated
// Leader/Candidate). A refused connection is closed after the handshake without a byte of
// Raft read; an RPC with a false claim is answered with an error and its connection closed;
// each is logged once with the remote address. The dialing side checks that the server's
// certificate names the node it meant to reach (by dLegerPeers or the dial override), so a
// member cannot answer for another and fake a quorum. Within the group the members trust
// each other as Raft does: a member can still vote and lead as itself.
package raftlog
