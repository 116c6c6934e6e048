package raftlog

import (
	"net/netip"

	"github.com/rocketraft/rocketraft/message"
	"github.com/rocketraft/rocketraft/store"
)

// CommitLog is the part of the message store the Raft log lives in: the framed CommitLog
// (store.Options.Framed) that the log store writes and reads as the Raft log, the dispatch the
// state machine drives, and the record encoding the proposer borrows. *store.Store implements
// it (commitlog_test.go says so; the broker hands its store to OpenNode); raftlog names
// store's result types and sentinel errors only, never *store.Store.
//
// Offsets are CommitLog byte positions. The log is a sequence of fixed-size files (file
// boundaries at multiples of CommitLogFileSize); a unit (frame or blank filler) never spans
// two files. Who calls what, in raftlog:
//
//   - Open, once, before the store starts: RecoveryStart, the reads, RecoverFramed,
//     SetRetentionGuard (which Close sets again, to keep every file).
//   - The log store's writer (Store.StoreLogs, DeleteRange's suffix cut, the snapshot install
//     on the FSM goroutine), one at a time under Store.wmu: AppendCommitLog,
//     AppendCommitLogBlank, SyncCommitLog, TruncateCommitLog, ResetCommitLog,
//     DispatchedQueueOffsets (queue_predict.go).
//   - The state machine (FSM goroutine, log order): DispatchMessages, AdvanceDispatch,
//     QueueOffsetTable (its snapshot), SeedQueueOffsets (a snapshot install), and Flush from
//     the snapshot goroutine.
//   - Any goroutine: ReadCommitLog, the positions, CommitLogFileSize, StoreHost,
//     EncodeMessages, SyncCommitLog, Flush, AdvanceDispatch (a new leader's barrier).
type CommitLog interface {
	// Framed reports that the store was opened in framed mode: no reput service, no puts,
	// reads by physical offset stop at the dispatched position. Open refuses a store that is
	// not.
	Framed() bool
	// CommitLogFileSize is the size of every CommitLog file (mappedFileSizeCommitLog); it
	// never changes.
	CommitLogFileSize() int64
	// StoreHost is the address written into every record EncodeMessages encodes and into the
	// offset message ids of a put's answer; it never changes.
	StoreHost() netip.AddrPort

	// RecoveryStart is the file boundary where Open's scan for the last valid entry begins:
	// the start of the third-last file after a clean close (RocketMQ's normal recovery),
	// after a crash the file holding the checkpoint's safe point if that is earlier. Called
	// before RecoverFramed.
	RecoveryStart() int64
	// RecoverFramed completes the store's recovery, once, after the scan and before the
	// store starts: the CommitLog is cut at end (the end of the last valid entry), durably,
	// with the rest of its file zeroed after a crash or when dirtyTail says bytes follow end;
	// the ConsumeQueues and the index are cut back to the checkpoint's dispatched position
	// (lowered to a damaged ConsumeQueue's end, then to the start of the frame holding it), so
	// DispatchedOffset is then where the state machine must dispatch again from, and does so
	// with the same queue offsets. end outside [MinPhyOffset, CommitLogEnd] wraps
	// store.ErrOffsetOutOfRange.
	RecoverFramed(end int64, dirtyTail bool) error

	// MinPhyOffset is the first CommitLog offset still on disk (a file boundary; 0 for an
	// empty log). It rises when retention deletes the first files (only files
	// SetRetentionGuard's fn allowed) and jumps on ResetCommitLog.
	MinPhyOffset() int64
	// CommitLogEnd is the write end: where the next AppendCommitLog goes, readable bytes not
	// yet durable and entries not yet committed included.
	CommitLogEnd() int64
	// DispatchedOffset is the end of the last entry dispatched (DispatchMessages,
	// AdvanceDispatch): what the ConsumeQueues and index cover, and where reads by physical
	// offset (consumers) stop. It never passes an entry the state machine has not applied.
	DispatchedOffset() int64

	// ReadCommitLog returns up to maxBytes bytes from offset, never past the end of the file
	// holding offset nor past the readable end (in framed mode CommitLogEnd: frames not yet
	// committed included; the store's MaxPhyOffset, where consumers stop, is not the limit). data
	// aliases the mapped file, no copy: it stays valid, even if the file is deleted, until
	// release is called (once, from any goroutine); the caller must not write to it. At the
	// end it returns no data and no error; an offset outside [MinPhyOffset, the end] wraps
	// store.ErrOffsetOutOfRange (below MinPhyOffset: its file was deleted).
	ReadCommitLog(offset int64, maxBytes int) (data []byte, release func(), err error)
	// AppendCommitLog writes data at offset, which must be CommitLogEnd (else an error
	// wrapping store.ErrOffsetMismatch) and must not run past its file's end
	// (store.ErrChunkCrossesFile); nothing is written on those errors. An empty log takes
	// its first chunk at any file boundary (it then starts there: a snapshot install). When
	// it returns the bytes are readable, not durable: SyncCommitLog (or the store's flush
	// service, ASYNC_FLUSH) makes them so. data is copied; the caller keeps it. After a
	// write fault the store refuses every later write (store.ErrNotWritable), and appends
	// with the disk full (store.ErrDiskFull); the store must be started.
	AppendCommitLog(offset int64, data []byte) error
	// AppendCommitLogBlank closes the file holding offset (= CommitLogEnd) with a blank
	// filler; the next append goes to the next file. Readable and durable as AppendCommitLog.
	AppendCommitLogBlank(offset int64) error
	// SyncCommitLog returns once every byte appended before the call is durable (StoreLogs'
	// group commit with Options.Sync). A failed sync turns the store read-only
	// (store.ErrNotWritable from then on) and is returned. Safe for concurrent use.
	SyncCommitLog() error
	// TruncateCommitLog drops every byte from offset on (a conflicting suffix, or the leftover
	// of a failed append), with the ConsumeQueue units and index entries built from it;
	// durable when it returns (the cut file's tail zeroed and synced, later files deleted).
	// offset below DispatchedOffset (committed entries) or outside [MinPhyOffset,
	// CommitLogEnd] wraps store.ErrOffsetOutOfRange; at CommitLogEnd nothing changes.
	TruncateCommitLog(offset int64) error
	// ResetCommitLog empties the store for a log copied from another replica (a snapshot
	// install): every CommitLog, ConsumeQueue and index file deleted, the next queue offsets
	// forgotten, DispatchedOffset set to offset, a file boundary (else
	// store.ErrOffsetOutOfRange), where the next AppendCommitLog must start (CommitLogEnd and
	// MinPhyOffset read 0 until it does, as for an empty log). Durable when it returns. No
	// other writer or dispatch may run meanwhile.
	ResetCommitLog(offset int64) error

	// DispatchMessages dispatches the stored-message records lying back to back in [from, to)
	// (one message entry's data, within one file, already appended): with assign, each
	// record takes the next queue offset of its topic and queue, written into the record in
	// place unless the record carries it already (prepared and rolled-back transaction
	// messages get 0 and take none): the offsets StoreLogs predicted are checked, never
	// trusted; without, the records keep
	// the queue offsets they carry (a snapshot's files) and the next ones are raised past
	// them. Then their ConsumeQueue units, index entries and arrival notices, and
	// DispatchedOffset moves to end (>= to). It appends to out, which the caller owns, what
	// each record got. One caller, in log order. On an error (records that do not parse)
	// DispatchedOffset stays before the entry. A store that turned read-only (a failed write
	// or sync, a fault writing the mapped ConsumeQueues or index on a full or failed disk)
	// refuses with an error wrapping store.ErrNotWritable. The queue offsets written in place
	// are durable after the next Flush.
	DispatchMessages(from, to, end int64, assign bool, out []store.AssignedOffset) ([]store.AssignedOffset, error)
	// AdvanceDispatch moves DispatchedOffset to end, never back: an entry without messages
	// was applied. Safe concurrently with DispatchMessages (a new leader's barrier moves it
	// over the frames Raft never hands to the state machine).
	AdvanceDispatch(end int64)
	// QueueOffsetTable is the next queue offset of every queue that has taken one, as of the
	// last entry dispatched. The state machine, between two dispatches (its snapshot).
	QueueOffsetTable() []store.QueueNext
	// DispatchedQueueOffsets is QueueOffsetTable with DispatchedOffset, both as of one moment
	// (the table is the one of the entries dispatched below that position). Safe concurrently
	// with DispatchMessages; the log store's writer calls it to predict queue offsets.
	DispatchedQueueOffsets() ([]store.QueueNext, int64)
	// SeedQueueOffsets raises the next queue offset of every queue in the table to at least
	// its Next, and a ConsumeQueue that ends below it is filled with fillers up to it: a
	// snapshot's table, after its files were dispatched, for the queues whose records all lay
	// in files that expired before them. Durable when it returns; it survives a restart. The
	// state machine, with no dispatch running.
	SeedQueueOffsets(table []store.QueueNext) error
	// Flush makes durable the CommitLog written so far and, up to DispatchedOffset, the
	// ConsumeQueues, the index, the queue offsets dispatch wrote into records and the
	// checkpoint, which then says so: a restart dispatches nothing below it again (a
	// snapshot's Persist relies on it). Safe for concurrent use; an error once the store is
	// closed.
	Flush() error

	// SetRetentionGuard installs the check the store asks before deleting the CommitLog file
	// [from, to) (expiry, disk pressure, PruneCommitLog): false keeps it. fn runs on the
	// store's clean goroutine or a pruning caller, concurrently with everything else, and
	// must not block. It replaces the previous guard.
	SetRetentionGuard(fn func(from, to int64) bool)

	// EncodeMessages appends to dst (the caller's) the stored records of msgs as a put would
	// write them: one message, or a batch for one topic and queue (else an error wrapping
	// store.ErrBatchMismatch), StoreHost and the store's clock (the timestamp is returned) in
	// every record, queue and physical offsets 0 (message.PatchRecords places them). A put's
	// limits apply (store.ErrMessageTooLarge and the record format's errors); nothing is
	// appended on an error. Reads only configuration: safe for concurrent use.
	EncodeMessages(dst []byte, msgs []*message.Message) ([]byte, int64, error)
}
