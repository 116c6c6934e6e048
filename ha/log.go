package ha

import "context"

// CommitLog is the part of the message store replication reads (master) and writes (slave).
// *store.Store implements it. Every method may be called from any goroutine.
type CommitLog interface {
	// MaxPhyOffset is the end of the readable CommitLog: every byte below it can be read.
	MaxPhyOffset() int64
	// MinPhyOffset is the first offset still on disk (0 for an empty log).
	MinPhyOffset() int64
	// ReadCommitLog returns up to maxBytes bytes from offset, never across a file boundary, as
	// mapped memory that stays valid until release is called (once). At the end of the log it
	// returns no data and no error; for an offset that is not in the log, an error.
	ReadCommitLog(offset int64, maxBytes int) (data []byte, release func(), err error)
	// AppendCommitLog (slave) writes data at offset, which must be the log's max offset (or,
	// for an empty log, any multiple of the file size: the log then starts there). It returns once the bytes are
	// readable; the store's own dispatch builds ConsumeQueue and IndexFile from them.
	AppendCommitLog(offset int64, data []byte) error
	// TruncateCommitLog (slave) drops every byte at and after offset, with the ConsumeQueue
	// units and index entries of the records it drops.
	TruncateCommitLog(offset int64) error
	// WaitForNewData blocks until MaxPhyOffset passes after and returns it, or returns ctx's
	// error when ctx ends first, or an error once the store closes. Writers of transfer frames
	// park here instead of polling.
	WaitForNewData(ctx context.Context, after int64) (int64, error)
}
