// Package store is the RocketMQ-compatible message store every broker runs on: one
// append-only CommitLog of stored-message records, a ConsumeQueue per topic/queue indexing
// it, a hash IndexFile by message key, flush, recovery, expiry. Files and formats are
// RocketMQ 4.x's, byte for byte, so a pull answer is the stored bytes as they are.
//
// # On disk
//
//	storePathRootDir/
//	  commitlog/00000000000000000000     fixed-size files named by their first offset (20 digits)
//	  consumequeue/TOPIC/QUEUEID/000...  20-byte units
//	  index/yyyyMMddHHmmssSSS            hash index files
//	  checkpoint                         flush progress (below)
//	  abort                              exists while the store is open; left by a crash
//	  lock                               flock'ed while the store is open
//	  config/*.json                      broker metadata, written with WriteFileAtomic
//
// # Stored-message record (CommitLog, pull bodies)
//
// The record layout, its magic codes, sysFlag bits, properties and message ids belong to package
// message (message/doc.go draws the table); the store writes and reads records only through it.
//
// A record never spans two files: when one does not fit (with 8 bytes to spare), the rest of
// the file gets a blank record, totalSize = bytes left and magic 0xCBD43194, and the record
// goes to the next file. With ASYNC_FLUSH files are sparse, as in RocketMQ. With SYNC_FLUSH
// records are only ever written where the file is warm (zeros written with pwrite and
// synced, so no block is allocated by a record's fdatasync): each file has a warm frontier
// (warm.go) kept 16 MiB (defaultWarmAhead) ahead of the writes. The allocate service warms
// the head of the next file, Open the head of an empty master store's first file or the
// 16 MiB after the end of the last file (a no-op when they are warm already), and the warm
// service moves the frontier in bursts once the writes come within 8 MiB of it; should the
// writes outrun it, the flusher warms up to the end of the records it is about to write
// before writing them (Stats.WarmStalls counts those), so the frontier is a guarantee, not
// a race. A cut tail has its written parts rewritten with zeros (holes read as zeros). Open
// of an empty SYNC_FLUSH store thus writes 16 MiB of zeros, and the allocate service another
// 16 MiB at the head of the next file, not two whole files (1 GiB took
// 3.4 s here, and three Raft nodes starting at once spent up to 28 s electing a leader
// behind it). warmMapedFileEnable with ASYNC_FLUSH (writes that do not check the frontier)
// still warms each file in full when it is made. Disk use is measured after each new file.
// A write fault on a full disk is caught and turns the store read-only, and puts are
// refused with ErrDiskFull well before the disk is full.
//
// # ConsumeQueue unit (consumequeue/TOPIC/QUEUEID/, 300,000 units per file by default)
//
//	+-----+------+------------------+---------------------------------------------------+
//	| off | size | field            | notes                                             |
//	+-----+------+------------------+---------------------------------------------------+
//	|  0  |   8  | commitLogOffset  | physical offset of the record                     |
//	|  8  |   4  | size             | record size; 0x7FFFFFFF (offset 0) = filler unit  |
//	| 12  |   8  | tagsCode         | Java String.hashCode(TAGS), sign-extended         |
//	+-----+------+------------------+---------------------------------------------------+
//
// Unit n is the record with queue offset n; file names are the byte offset of their first
// unit.
//
// # IndexFile (index/, a new file when one is full)
//
//	+--------------------------+------------------------------------------------------+
//	| header, 40 bytes         | beginTimestamp 8, endTimestamp 8, beginPhyOffset 8,  |
//	|                          | endPhyOffset 8, hashSlotCount 4, indexCount 4        |
//	+--------------------------+------------------------------------------------------+
//	| maxHashSlotNum slots x 4 | number of the newest entry of the slot (0 = none)    |
//	+--------------------------+------------------------------------------------------+
//	| maxIndexNum entries x 20 | keyHash 4, phyOffset 8, timeDiff 4 (seconds from      |
//	|                          | beginTimestamp), prevIndex 4 (previous entry, slot)  |
//	+--------------------------+------------------------------------------------------+
//
// Keys are "topic#key" for every key of KEYS (space-separated) and for UNIQ_KEY; keyHash is
// |String.hashCode|, the slot keyHash % maxHashSlotNum. Entry 0 is never used. This store
// also moves endPhyOffset to every record it dispatched, keys or not, as its progress mark.
// The slots of the file being written are kept in memory and written to it at each thorough
// flush and when it is full; recovery replays the entries since the last flush into them
// (index_slots.go).
//
// # Checkpoint (4 KiB, rewritten in place and fdatasynced)
//
//	+-----+------------------------+---------------------------------------------------+
//	| off | field (int64)          | notes                                             |
//	+-----+------------------------+---------------------------------------------------+
//	|   0 | physicMsgTimestamp     | RocketMQ's five fields                            |
//	|   8 | logicsMsgTimestamp     |                                                   |
//	|  16 | indexMsgTimestamp      |                                                   |
//	|  24 | masterFlushedOffset    |                                                   |
//	|  32 | confirmPhyOffset       |                                                   |
//	|  40 | physicFlushedOffset    | this store: CommitLog durable up to here          |
//	|  48 | logicsFlushedOffset    | every record before it is durable in the CQs      |
//	|  56 | indexFlushedOffset     | last record indexed durably                       |
//	+-----+------------------------+---------------------------------------------------+
//
// # Lifecycle and crash safety
//
// Open validates the config, loads every file, recovers and creates the abort file; Start
// starts the services; Close stops them (waiting), commits, flushes and dispatches what is
// left, writes the checkpoint and removes the abort file.
//
// Recovery after a clean Close checks the last three CommitLog files. After a crash (abort
// file present, or no checkpoint) it checks from the file holding the checkpoint's safe point
// min(physicFlushedOffset, logicsFlushedOffset): magic, sizes, physical offset and body CRC of
// every record; the CommitLog is truncated at the first bad or torn record (the rest of the
// file zeroed, later files deleted), ConsumeQueue units and index entries past it are
// dropped, the file systems are synced, and dispatch re-runs from the earliest point anything
// may be missing. Dispatch is idempotent: existing units (by queue offset) and index entries
// (by physical offset) are skipped.
//
// With SYNC_FLUSH a put returns PutOK only after a flush (fdatasync) covered its record, so
// every acknowledged message survives a process or machine crash. ASYNC_FLUSH loses at most
// the last flushIntervalCommitLog of writes on a machine crash, nothing on a process crash
// (with transientStorePoolEnable, also what was not yet committed from the pool, at most
// commitCommitLogThoroughInterval of writes, on a process crash too).
//
// # Power loss
//
// Options.SyncObserver is told, per CommitLog and ConsumeQueue file, what each flush made
// durable (the watermark: every byte written before the sync began, from the front of the
// file), when a file is made and when a truncation cuts one; Open's recovery after a crash
// reports every file durable up to its write position once it has synced the file systems. The observer
// is called after the sync and before any put it covers is acknowledged. The power-loss
// harness (internal/powerloss, set up by mqbroker when ROCKETRAFT_POWERLOSS_JOURNAL is set)
// journals the calls and, after a SIGKILL, zeros every file from its watermark on, which is
// what a machine crash may leave; internal/powerloss/doc.go says what that models and what
// it does not (writes in place below a watermark, the index, the checkpoint and config
// files are kept). TestPowerLossWithSyncFlush shows every SYNC_FLUSH acknowledgement
// surviving it.
//
// # Disk faults
//
// The pwrites of SYNC_FLUSH records and the fdatasyncs of CommitLog and ConsumeQueue files go
// through Options.FileOps (SysFileOps by default), where tests inject faults. A failed write
// (ENOSPC part way, EIO) or a failed CommitLog sync turns the store read-only until it is
// reopened: the puts the flush was for get PutFlushDiskTimeout (never PutOK), later puts and
// appends ErrNotWritable naming the first failure, and the CommitLog is never synced again in
// this run. After a failed fsync the kernel may have dropped the dirty pages and marked them
// clean, so a later fsync succeeds without writing them (PostgreSQL's "fsyncgate"): no retry
// can prove them durable, only a reopen, whose recovery checks every record from the
// checkpoint's safe point (the checkpoint never moves past the failure, and Close then leaves
// the abort file as a crash would). Reads, pulls and everything else go on meanwhile. A slow
// sync is not a failure: puts waiting for it time out with PutFlushDiskTimeout after
// syncFlushTimeout, the store stays writable. A failed ConsumeQueue sync is logged and keeps
// the checkpoint's dispatched offset where it was (recovery dispatches again from there).
// TestFsyncEIOStopsAcknowledging,
// TestENOSPCInTheMiddleOfAWrite and TestSlowFsync show each case.
//
// With SYNC_FLUSH a master dispatches a record (puts it in its ConsumeQueue, where consumers
// find it) only once a flush made it durable: dispatchLimit stops at the flushed end
// (durableDispatch), and the flusher wakes dispatch after each flush that moved it. Before,
// dispatch ran while the flush waited for the disk, so a consumer could read a record whose
// flush then failed; the repaired disk came back without it (the failed flush's bytes never
// reached it), the restarted store gave its queue offset to the next message, and the consumer,
// past that offset, skipped that message although it was acknowledged (make chaos,
// disk-eio-writer on a SYNC_MASTER; a power loss in the flush's window did the same, rarely).
// Why it is safe: dispatch still runs in log order over whole records, only later (by about one
// fdatasync); nothing waits for dispatch before it acknowledges (a put is answered after its
// flush and, on a SYNC_MASTER, its replica); after a failed flush dispatch stops at the last
// durable byte for good, which is where recovery puts the CommitLog's end after a reopen. The
// cost: a message reaches consumers about one fdatasync later, and dispatch no longer overlaps
// the flush. Measured 2026-12-07 with scripts/bench-compare.sh ROWS="sync ms" DURATION=20s, three
// alternating pairs of this build and one switched back to dispatch during the flush, load 17 to
// 26 (other helpers' builds; the machine 100 % busy): one SYNC_FLUSH broker 8,816 8,939 6,783
// msgs/s against 9,341 7,293 8,826 (0.96 of it on average), 42 42 51 CPU us/msg against 39 50
// 45; SYNC_MASTER with its slave 6,277 5,051 4,782 against 7,329 5,022 5,308 (0.91), 74 95 101
// against 75 91 91: within the noise of that machine, the CPU per message unchanged. What a slave receives is not held back (replication
// overlaps the flush, as in RocketMQ), so a slave may hold, and serve, a record its master then
// loses; the slave is cut back at their next connection (ha/doc.go). ASYNC_FLUSH promises no
// durability and dispatches what is written; a slave and a framed store are not concerned.
// TestSyncFlushReadsOnlyDurableRecords holds a flush (the record stays unread until it ends)
// and fails one (the record is never read).
//
// Reads come from the mappings, where the kernel reports a page it cannot read (an I/O error,
// or a page past the end of a file cut beneath its mapping) as SIGBUS, which would kill the
// process. Every read of mapped CommitLog or ConsumeQueue bytes (selectRange, selectRecord,
// unitsFrom, ReadCommitLog) first probes them (read_fault.go: one load per page with
// debug.SetPanicOnFault, the fault recovered into ErrReadFault naming the file and offset), so
// the read fails, holding no reference and no lock, and nothing else does: a pull answers SYSTEM_ERROR
// with that reason and the same next offset (nothing is skipped), a query by key reports it
// when no match reads, and once the file reads again so does the record
// (TestReadErrorOnAnOldFile; the broker over the wire: TestBrokerReadErrorOnAnOldFile). Not
// covered: the IndexFile's slots (read from their mapping) and a page that stops reading
// between the probe and the read (the window of one read).
//
// # Writing and flushing
//
// The CommitLog lock covers offset assignment and the write of the encoded record: a copy of it
// into the mapping (the default, as in RocketMQ), a pwrite (writeWithoutMmap=true), a copy into a
// transient pool buffer, or with SYNC_FLUSH into the staged writes (see below). Copies into the
// mapping of a sparse file fault its pages in, and on the development VM (kernel 6.18, ext4) one
// put in about 8,000 waited 22-25 ms in such a fault, about once a second at 8 MB/s of 1 KiB
// records, while ext4 allocated blocks; so with ASYNC_FLUSH the populate service (populate.go)
// keeps the next 16 MiB (defaultPopulateAhead) of the file being written faulted in
// (MADV_POPULATE_WRITE, woken by the writers once they come within 8 MiB of its frontier), and
// the copies find their pages mapped writable. Those pages are dirty zeros until the records
// land in them, so such a CommitLog is flushed with msync of the written range rather than
// fdatasync (which would write the zeros ahead as well, 1.57 bytes dirtied per body byte instead
// of 1.25 in the async row). Measured against pwrite, the default until 2026-12-04: the store's
// AsyncPutVsWrite (one writer, against write() of the same records in the same run) median
// 0.85-1.22x of write() for the copies, 0.46-0.57x for pwrite; make bench-compare, one broker,
// 16 producers: 67,890-70,223 msgs/s at 13-14 CPU µs/msg with the copies, 59,248-60,432 at 15-16
// with pwrite, p99 0.81-0.84 ms both, per-second p999 1.6-4.1 ms both; Raft x3 ASYNC_FLUSH 22,093 at 61 µs/msg
// against 18,800-20,459 at 63-70. A populate that fails (a full disk) is logged once for the file;
// its writes then fault their pages in themselves, and a write fault is caught as below. A cut of
// the CommitLog (truncateTo) moves the frontier back to the cut, whose zeroing dropped the pages.
// The cost of the window: its blocks are allocated zeros rather than holes, so below about
// 0.5 MB/s of writes (16 MiB in the kernel's 30 s dirty expiry) the kernel may write those zeros
// back, and a page the VM then drops from the page cache is read from the disk when the copies
// reach it, where a hole would have been zero-filled. With
// pwrite, the part of the file being written that is not written yet is mapped MADV_RANDOM until
// the writer moves to the next file (mappedFile.adviseUnwritten): a read through the mapping of a
// written page dropped from the page cache must not read ahead into the holes after the written
// end. Validation, CRC and sizing come before the lock, the flush wait after it.
// SYNC_FLUSH puts queue a waiter for the group-commit flusher; each flush writes the staged records
// with one pwrite per file (only then can readers see them, and replication is woken so it runs
// while the disk works; dispatch waits for the sync, see "Disk faults"), then fdatasyncs (measured faster here than msync of the dirty range)
// and completes every waiter it covers. Staging keeps system calls out of the put lock: the writers a flush releases are
// back in the queue sooner, so the next flush serves them all. The flusher also asks the
// kernel to read the next 4 MiB of a file ahead (a partial-page pwrite into a page not
// cached must read it first, which after a reboot would be a disk read per flush).
//
// Why SYNC_FLUSH warms files and writes with pwrite (measured, see Config.syncFlushFiles):
// an fdatasync that must also allocate blocks writes metadata too (on ext4 a journal commit,
// or without a journal synchronous bitmap and inode writes), and a write through the mapping
// dirties a whole page-cache folio (16 KiB to 1 MiB on current kernels), all of which the
// next fdatasync writes, where pwrite dirties only the blocks it touches. Before flushing,
// the flusher waits briefly (at most half the last flush, 1 ms) for as many writers as the
// last flush saw active, so closed-loop writers do not split into two cohorts that
// alternate; Stats counts the waits that timed out (GatherTimeouts). Every flush is
// timed into Stats; flushes over 500 ms are logged.
//
// # Services
//
// One goroutine each, started by Start and waited for by Close, woken through capacity-1
// channels: group commit (SYNC_FLUSH) with its timeout watcher, or the periodic flush
// (ASYNC_FLUSH); commit of the transient store pool; reput (dispatch to ConsumeQueues, index
// and the arriving listener); allocation of the next CommitLog file; ConsumeQueue flush;
// clean (expiry and disk-full detection). Consumers' reads of CommitLog chunks that are not in
// the page cache go around it (cold_read.go: O_DIRECT into reused buffers, with a prefetcher
// goroutine started by the reads). admin_clean.go runs cleaning on request (mqadmin):
// DeleteExpiredFilesNow (the clean at any hour, serialized with the service),
// CleanExpiredConsumeQueues (destroys queues whose records are all gone, keeping their next
// queue offset; dispatch holds cqRemove shared so no unit lands in a destroyed queue) and
// ConsumeQueueTopics.
//
// # Replication
//
// replica.go and truncate.go give ha/ and raftlog/ what they need, with contracts on each
// method: ReadCommitLog (a zero-copy view of raw bytes from an offset, within one file, up
// to the readable end), AppendCommitLog (raw bytes exactly at the end; an empty log starts at
// any file boundary; typed errors for a gap, an overlap or a chunk crossing a file),
// TruncateCommitLog (drop a diverged tail at any byte, with its ConsumeQueue units, index
// entries and queue offsets, durably), FlushedPhyOffset, WaitForNewData (no polling: writers
// signal only while someone waits), and Options.Replicator, which a SYNC_MASTER put waits for
// after its flush. Replicas hold identical bytes at identical offsets, so chunks may split
// records; dispatch waits for a record to be whole. ha and raftlog each declare the methods
// they use as a CommitLog interface of their own (ha/log.go, raftlog/commitlog.go), which
// *Store implements; the store knows neither.
//
// # Framed mode (Options.Framed: the CommitLog is the Raft log)
//
// framed.go explains the mode and holds its methods (the ones raftlog's CommitLog interface
// lists). Everywhere else the store checks opts.Framed in these places only, each for a reason:
//
//   - Open (store.go): no Replicator, even on a SYNC_MASTER (Raft replicates; no put waits
//     for a slave); no transient store pool (the log store reads a frame as soon as it
//     appended it, and dispatch writes queue offsets into the mapped pages, neither of which
//     a pool buffer allows); loadFramed instead of recover, and no warming of the current
//     file there (only the Raft log store can tell a frame from a torn one: it finds the end
//     and calls RecoverFramed, which cuts the log and warms the file).
//   - Start (store.go): refuses before RecoverFramed (ErrNotRecovered) and starts no reput
//     service; doReput (dispatch.go), which Open and Close also call, returns at once. The
//     Raft state machine dispatches, in log order, only what is committed.
//   - checkWritable (store.go): puts are refused (ErrNotWritable): messages come through Raft.
//   - MaxPhyOffset (store.go): the dispatched position, not the write end, so reads by
//     physical offset never see an uncommitted entry.
//   - flushConsumeQueues (flush.go): a thorough flush first syncs the CommitLog pages
//     dispatch wrote queue offsets into, before the checkpoint says they are dispatched.
//   - AppendCommitLog (replica.go): replicaAppends stays unset (DispatchMessages keeps the
//     next queue offsets itself); an empty log restarted at a file boundary moves the read
//     limit with the dispatched position (setDispatched), not only the reput position; no
//     flush is woken (the log store calls SyncCommitLog when Options.Sync says so).
//   - TruncateCommitLog (truncate.go): refuses to cut below the dispatched position
//     (committed entries are never cut).
//   - RecoverFramed, DispatchMessages, AdvanceDispatch and ResetCommitLog (framed.go) refuse
//     (or do nothing) on a classic store.
//
// # Reads
//
// GetMessage, SelectRecord and QueryMessage return slices of mapped memory and hold a
// reference on each file they point into until Release; a deleted or closed file is unmapped
// only after its last reference is released, so readers never touch unmapped memory.
//
// # Per-file costs
//
// Every mapped file (CommitLog, IndexFile, a ConsumeQueue file once its queue has a unit: a
// queue without messages has no file) holds one memory mapping and one descriptor until it is
// deleted or the store closes. file_budget.go counts the mappings against vm.max_map_count,
// warns past 80 % of it or of RLIMIT_NOFILE with a value to raise the limit to, and refuses a
// new mapping (ErrMapLimit; dispatch then stops at that record and retries) before the Go
// runtime's reserve, so the process does not die for want of a heap mapping (the CommitLog file
// being written counts one more after a truncation inside it: its written head and its MADV_RANDOM
// tail are two areas of the process's map). The thorough
// ConsumeQueue flush (Close included) syncs 16 files at a time.
package store
