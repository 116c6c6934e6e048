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
// # Writing and flushing
//
// The CommitLog lock covers offset assignment and the copy of the encoded record into the
// mapping (or into a transient pool buffer, or, with writeWithoutMmap, a pwrite of it; with
// SYNC_FLUSH into the staged writes, see below); validation, CRC and sizing come before it,
// the flush wait after it. SYNC_FLUSH puts queue a waiter for the group-commit flusher; each
// flush writes the staged records with one pwrite per file (only then can readers and
// dispatch see them, and dispatch is woken so it runs while the disk works), then fdatasyncs
// (measured faster here than msync of the dirty range) and completes every waiter it
// covers. Staging keeps system calls out of the put lock: the writers a flush releases are
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
// clean (expiry and disk-full detection).
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
// records; dispatch waits for a record to be whole.
//
// # Reads
//
// GetMessage, SelectRecord and QueryMessage return slices of mapped memory and hold a
// reference on each file they point into until Release; a deleted or closed file is unmapped
// only after its last reference is released, so readers never touch unmapped memory.
package store
