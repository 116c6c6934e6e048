// Package powerloss simulates a power loss on a store folder: it journals what a store made
// durable, file by file, while the store runs (Journal, behind store.Options.SyncObserver),
// and after the store's process was killed it cuts every journaled file back to what was
// synced (Cut), so the store restarts on what a machine crash could have left. The chaos
// suite (tools/chaos, fault kinds power-loss-*) and the store's crash tests use it.
//
// # Why a journal, and not a file-system layer
//
// A crashable file system (pebble's vfs keeps unsynced writes apart and drops them) would
// have to sit under mmap, which only FUSE or a block device can do; device-mapper targets
// (dm-flakey, dm-log-writes) and FUSE are not available on the machines this runs on
// (containers: no /dev/mapper/control). The store's files are few and simple instead: the
// CommitLog and ConsumeQueue files are fixed-size and written from the front (records,
// units), so "what a sync covered" is one number per file, the watermark, and a power loss
// is modelled by zeroing each file from its watermark to its end.
//
// # The journal (powerloss.journal in the store's root, or where EnvVar's absolute path says; text, one line per event)
//
//	create <size> <path>   the file was made (or emptied) with size bytes: nothing of it
//	                       is durable beyond zeros (watermark 0)
//	sync <n> <path>        every byte the store wrote to [0, n) before the sync began is
//	                       durable (watermark n)
//	cut <n> <path>         the store cut the file at n (a truncation): the watermark is at
//	                       most n
//
// Paths are relative to the root. Each event is one write(2) on a file opened O_APPEND,
// issued after the sync returned and before the store acknowledges anything that sync
// covered; a SIGKILL cannot lose a write(2) that returned (it is in the page cache), so the
// journal never claims less than the store acknowledged, nor more than it synced. A torn
// last line (killed mid-write) is ignored: its sync acknowledged nothing yet. Open and every
// 65,536 events rewrite the journal as one "sync" line per file (a temporary file renamed over
// it), so it stays small however long the store runs.
//
// # What a cut does (Cut)
//
// For every file the journal names and that still exists: the bytes from its watermark to
// its end become zeros (truncate to the watermark, extend back to the size: holes), the
// file is fsynced, and the journal is rewritten with the files as they now are (all durable).
// Files the journal does not name are left alone.
//
// What this models, and what it does not:
//   - Modelled: unsynced appends to the CommitLog (records written through the mapping with
//     ASYNC_FLUSH, staged pwrites with SYNC_FLUSH, raw replication appends) and to the
//     ConsumeQueues are lost, all of them (a real power loss may keep any part; losing all is
//     the harshest outcome short of tearing pages). Every file is cut on its own: losing the
//     CommitLog tail while keeping the index or the Raft dense index is a state a power loss
//     can leave, and recovery must cope with it.
//   - Kept (not modelled): writes in place below a watermark (the queue offsets Raft's
//     state machine writes into stored records, synced later with the ConsumeQueues), the
//     IndexFile, the checkpoint (rewritten in place and fdatasynced at once; its offsets only
//     ever name synced data), config/*.json (written by store.WriteFileAtomic: a rename
//     between the fsync of the new file and the fsync of the folder is the only window),
//     raft-boltdb (fsyncs every commit) and the Raft dense index (rebuilt from the CommitLog
//     scan at recovery). File creations, sizes and deletions are kept: ext4 commits them
//     within its 5 s journal interval; a file made or deleted in the last seconds before a
//     power loss could come back missing or short, which is not modelled.
package powerloss
