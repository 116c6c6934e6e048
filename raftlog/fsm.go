package raftlog

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
	"github.com/rocketraft/rocketraft/store"
)

// MetaApplier is the broker's side of the state machine: the metadata commands (kind 2:
// topics, subscription groups, consumer and delay offsets) and their state in snapshots.
// Every method runs on the FSM goroutine, except PersistMeta (the snapshot goroutine).
type MetaApplier interface {
	// ApplyMeta applies the command data (without its kind byte) of entry index, on every
	// node in log order, and returns the proposer's response. After a restart Raft replays
	// the entries since the last snapshot, which applied them before: commands must give
	// the same state when applied again in order (set, not add). dispatched reports that
	// the store has dispatched past the entry already (a replay): effects on the message
	// store (deleting a topic's queues) must then be skipped, the metadata still applied.
	ApplyMeta(index uint64, data []byte, dispatched bool) any
	// SnapshotMeta returns the metadata as it is after the last entry applied.
	SnapshotMeta() ([]byte, error)
	// RestoreMeta replaces the metadata with a snapshot's.
	RestoreMeta(data []byte) error
	// PersistMeta writes the metadata files, so what a snapshot covers is durable locally.
	PersistMeta() error
}

// MessagesResult is the response of a message entry: what each record got, in order. Err
// is set when the entry could not be dispatched (its records do not parse, or this node's
// store failed: errStoreFailed, store.ErrNotWritable).
type MessagesResult struct {
	Index   uint64
	Offsets []store.AssignedOffset
	// Replayed is true for an entry dispatched before a restart (no offsets).
	Replayed bool
	Err      error
	// When the leader dispatched the entry (Log.AppendedAt), and when this node's state
	// machine began and ended it: the send stages (stats.go).
	dispatchedAt, applyStart, applyEnd time.Time
}

// FSM is the Raft state machine of a broker group: it dispatches committed message entries
// to the ConsumeQueues and the index (queue offsets assigned here, in log order, identically
// on every node), hands metadata commands to the MetaApplier, and skips the other entries
// (configuration, no-op and barrier entries do not even reach it). Raft calls it on one
// goroutine. Reads on this node see nothing past what it dispatched.
type FSM struct {
	log  *Store
	cl   CommitLog
	meta MetaApplier
	lg   *slog.Logger

	applied atomic.Uint64
	// failed: a dispatch met a store turned read-only (store.ErrNotWritable). The state machine
	// applies nothing more, and the node stops (Store.storeFailed).
	failed atomic.Bool
}

var _ raft.BatchingFSM = (*FSM)(nil)

// NewFSM returns the state machine over the log store and its CommitLog store; meta may be nil
// (metadata commands are then ignored).
func NewFSM(log *Store, meta MetaApplier, lg *slog.Logger) *FSM {
	if lg == nil {
		lg = slog.New(slog.DiscardHandler)
	}
	return &FSM{log: log, cl: log.cl, meta: meta, lg: lg.With("component", "raft-fsm")}
}

// AppliedIndex is the last entry the state machine was handed.
func (f *FSM) AppliedIndex() uint64 { return f.applied.Load() }

// Apply applies one entry (raft.FSM).
func (f *FSM) Apply(l *raft.Log) any { return f.ApplyBatch([]*raft.Log{l})[0] }

// ApplyBatch applies committed entries in log order (raft.BatchingFSM). With the leader's
// sync overlapped (leader_sync.go) it first waits until this node holds the entries durably;
// if that sync failed, nothing of the batch is applied here and every entry answers the
// error (the node stops: Store.storeFailed).
func (f *FSM) ApplyBatch(logs []*raft.Log) []any {
	out := make([]any, len(logs))
	if len(logs) > 0 {
		if err := f.log.waitDurable(logs[len(logs)-1].Index); err != nil {
			for i, l := range logs {
				err := fmt.Errorf("raftlog: entry %d is not durable on this node, not applied: %w", l.Index, err)
				out[i] = &MessagesResult{Index: l.Index, Err: err}
			}
			return out
		}
	}
	for i, l := range logs {
		if f.failed.Load() {
			out[i] = &MessagesResult{Index: l.Index, Err: fmt.Errorf("raftlog: entry %d not applied: %w", l.Index, errStoreFailed)}
			continue
		}
		out[i] = f.apply(l)
		if f.failed.Load() {
			continue // not applied either: recovery dispatches it after the restart
		}
		f.applied.Store(l.Index)
		f.log.SetAppliedIndex(l.Index)
	}
	return out
}

// errStoreFailed: the node's store failed for good; it applies nothing more until restarted.
var errStoreFailed = errors.New("raftlog: this node's store failed (read-only until the broker restarts)")

func (f *FSM) apply(l *raft.Log) any {
	p, ok := f.log.Position(l.Index)
	if !ok {
		err := fmt.Errorf("raftlog: committed entry %d is not in the log", l.Index)
		f.lg.Error("cannot apply", "index", l.Index, "err", err)
		return &MessagesResult{Index: l.Index, Err: err}
	}
	dispatched := p.End <= f.cl.DispatchedOffset()
	if l.Type != raft.LogCommand {
		f.cl.AdvanceDispatch(p.End)
		return nil
	}
	switch p.Kind {
	case KindMessages:
		if dispatched {
			return &MessagesResult{Index: l.Index, Replayed: true}
		}
		start := time.Now()
		offs, err := f.cl.DispatchMessages(p.Data, p.End, p.End, true, nil)
		if errors.Is(err, store.ErrNotWritable) {
			// A disk fault of this node alone. Skipping the entry, as below, would give its
			// queue offsets to the next records here and not on the other nodes: stop instead.
			f.failed.Store(true)
			f.lg.Error("dispatching a committed message entry failed: the store is read-only; this node applies nothing more",
				"index", l.Index, "offset", p.Pos, "err", err)
			f.log.storeFailed(fmt.Errorf("raftlog: dispatch entry %d: %w", l.Index, err))
			return &MessagesResult{Index: l.Index, Err: err}
		}
		if err != nil {
			f.lg.Error("dispatching a committed message entry failed; its messages are not readable on this node",
				"index", l.Index, "offset", p.Pos, "err", err)
			f.cl.AdvanceDispatch(p.End)
			f.log.pred.stale.Store(true) // its records took no queue offsets
		}
		return &MessagesResult{Index: l.Index, Offsets: offs, Err: err, dispatchedAt: l.AppendedAt, applyStart: start, applyEnd: time.Now()}
	case KindMeta:
		// An empty command is a marker (the new leader's, roles.go): it only moves dispatch.
		var resp any
		if f.meta != nil && len(l.Data) > 1 {
			resp = f.meta.ApplyMeta(l.Index, l.Data[1:], dispatched)
		}
		f.cl.AdvanceDispatch(p.End)
		return resp
	}
	f.cl.AdvanceDispatch(p.End)
	return nil
}

// Snapshot captures the metadata and the next queue offset of every queue (raft.FSM; on the
// FSM goroutine, so the table is the one of the snapshot's last entry); the messages are the
// log itself, so a snapshot is small. Persist makes the local state durable up to it first.
func (f *FSM) Snapshot() (raft.FSMSnapshot, error) {
	if f.failed.Load() {
		return nil, errStoreFailed
	}
	var meta []byte
	if f.meta != nil {
		var err error
		if meta, err = f.meta.SnapshotMeta(); err != nil {
			return nil, err
		}
	}
	return &fsmSnapshot{f: f, head: snapshotHead{meta: meta, queues: f.cl.QueueOffsetTable()}}, nil
}

type fsmSnapshot struct {
	f    *FSM
	head snapshotHead
}

// Persist flushes the CommitLog, the ConsumeQueues (the checkpoint then covers every entry
// the snapshot covers, so Raft never needs to replay below it) and the metadata files, then
// writes the snapshot header and metadata.
func (s *fsmSnapshot) Persist(sink raft.SnapshotSink) error {
	err := s.f.cl.Flush()
	if err == nil && s.f.meta != nil {
		err = s.f.meta.PersistMeta()
	}
	if err == nil {
		_, err = sink.Write(encodeSnapshotHeader(s.head))
	}
	if err != nil {
		_ = sink.Cancel()
		return err
	}
	return sink.Close()
}

func (s *fsmSnapshot) Release() {}

// Restore installs a snapshot a leader sent (raft.FSM): its metadata, and the CommitLog files
// that come with it (snapshot.go): the local log, ConsumeQueues and index are replaced by the
// leader's retained files, dispatched as they are (their queue offsets were assigned by the
// leader's state machine).
func (f *FSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	head, err := readSnapshotHeader(rc)
	if err != nil {
		return err
	}
	if head.version == 1 {
		f.lg.Warn("installing a snapshot without queue offsets (written by an older node): a queue whose records all lie before its files starts again at queue offset 0 here")
	}
	last, err := f.log.restoreFiles(rc, head.queues)
	if err != nil {
		return err
	}
	if f.meta != nil {
		if err := f.meta.RestoreMeta(head.meta); err != nil {
			return err
		}
	}
	f.applied.Store(last)
	f.log.SetAppliedIndex(last)
	return nil
}

// errNoFiles: a snapshot stream without the CommitLog files (restoreFiles).
var errNoFiles = errors.New("raftlog: snapshot without commitlog files")
