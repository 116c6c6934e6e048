package raftlog

import (
	"bytes"
	"errors"
	"log/slog"
	"testing"

	"github.com/rocketraft/rocketraft/message"
	"github.com/rocketraft/rocketraft/store"
)

// The store is the CommitLog the broker hands to OpenNode.
var _ CommitLog = (*store.Store)(nil)

// TestStoreKeepsTheCommitLogContract drives a framed store through the CommitLog interface
// only and checks the promises the log store and the state machine build on: where appends
// may go and what a refused one leaves, reads past the dispatched position, the dispatched
// position never moving back, no truncation of dispatched bytes, the blank filler, dispatch
// of a run of records, and the reset for a snapshot install.
func TestStoreKeepsTheCommitLogContract(t *testing.T) {
	st, err := store.Open(testStoreConfig(t.TempDir(), false),
		store.Options{Logger: testLogger(t, slog.LevelWarn), StoreHost: testHost, Framed: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	var cl CommitLog = st
	fs := cl.CommitLogFileSize()
	if !cl.Framed() || cl.StoreHost() != testHost {
		t.Fatalf("Framed %v, StoreHost %v", cl.Framed(), cl.StoreHost())
	}
	if start := cl.RecoveryStart(); start != 0 {
		t.Fatalf("RecoveryStart of an empty store = %d", start)
	}
	if err := cl.RecoverFramed(0, false); err != nil {
		t.Fatal(err)
	}
	if err := cl.RecoverFramed(0, false); err == nil {
		t.Fatal("a second RecoverFramed was taken")
	}
	if err := st.Start(); err != nil {
		t.Fatal(err)
	}

	// Appends go at the end only, within a file; a refused one writes nothing.
	chunk := bytes.Repeat([]byte{0xA5}, 100)
	if err := cl.AppendCommitLog(0, chunk); err != nil {
		t.Fatal(err)
	}
	if err := cl.AppendCommitLog(99, chunk); !errors.Is(err, store.ErrOffsetMismatch) {
		t.Errorf("append at 99 of a log ending at 100: %v, want ErrOffsetMismatch", err)
	}
	if err := cl.AppendCommitLog(100, make([]byte, fs)); !errors.Is(err, store.ErrChunkCrossesFile) {
		t.Errorf("append across the file end: %v, want ErrChunkCrossesFile", err)
	}
	if end := cl.CommitLogEnd(); end != 100 {
		t.Fatalf("CommitLogEnd after refused appends = %d, want 100", end)
	}

	// Undispatched bytes are readable (the log store reads its own uncommitted frames).
	data, release, err := cl.ReadCommitLog(0, 1000)
	if err != nil || !bytes.Equal(data, chunk) || cl.DispatchedOffset() != 0 {
		t.Fatalf("ReadCommitLog(0) = %d bytes, %v; dispatched %d", len(data), err, cl.DispatchedOffset())
	}
	release()
	if _, _, err := cl.ReadCommitLog(5*fs, 8); !errors.Is(err, store.ErrOffsetOutOfRange) {
		t.Errorf("ReadCommitLog past the end: %v, want ErrOffsetOutOfRange", err)
	}

	// Dispatch never moves back, and dispatched bytes are never cut.
	cl.AdvanceDispatch(60)
	cl.AdvanceDispatch(10)
	if d := cl.DispatchedOffset(); d != 60 {
		t.Fatalf("DispatchedOffset = %d, want 60", d)
	}
	if err := cl.TruncateCommitLog(50); !errors.Is(err, store.ErrOffsetOutOfRange) {
		t.Errorf("truncate below the dispatched position: %v, want ErrOffsetOutOfRange", err)
	}
	if err := cl.TruncateCommitLog(80); err != nil || cl.CommitLogEnd() != 80 {
		t.Fatalf("TruncateCommitLog(80): %v, end %d", err, cl.CommitLogEnd())
	}

	// The blank filler closes the file: the next append goes to the next one.
	if err := cl.AppendCommitLogBlank(79); !errors.Is(err, store.ErrOffsetMismatch) {
		t.Errorf("blank before the end: %v, want ErrOffsetMismatch", err)
	}
	if err := cl.AppendCommitLogBlank(80); err != nil || cl.CommitLogEnd() != fs {
		t.Fatalf("AppendCommitLogBlank(80): %v, end %d, want %d", err, cl.CommitLogEnd(), fs)
	}
	cl.AdvanceDispatch(fs)

	// A run of records: encoded, placed, appended, dispatched with queue offsets assigned.
	m := &message.Message{Topic: "T", QueueID: 1, Body: []byte("body"), BornHost: testHost}
	prefix := []byte("prefix")
	recs, ts, err := cl.EncodeMessages(prefix, []*message.Message{m, m})
	if err != nil || ts == 0 || !bytes.HasPrefix(recs, prefix) {
		t.Fatalf("EncodeMessages: %v, timestamp %d", err, ts)
	}
	other := &message.Message{Topic: "U", Body: []byte("x"), BornHost: testHost}
	if got, _, err := cl.EncodeMessages(prefix, []*message.Message{m, other}); !errors.Is(err, store.ErrBatchMismatch) ||
		!bytes.Equal(got, prefix) {
		t.Errorf("EncodeMessages of a mixed batch: %v, %d bytes", err, len(got))
	}
	recs = recs[len(prefix):]
	if _, err := message.PatchRecords(recs, fs); err != nil {
		t.Fatal(err)
	}
	if err := cl.AppendCommitLog(fs, recs); err != nil {
		t.Fatal(err)
	}
	end := fs + int64(len(recs))
	out := []store.AssignedOffset{{PhysicalOffset: -1}}
	out, err = cl.DispatchMessages(fs, end, end, true, out)
	if err != nil || len(out) != 3 || out[0].PhysicalOffset != -1 {
		t.Fatalf("DispatchMessages: %v, %+v", err, out)
	}
	if out[1].PhysicalOffset != fs || out[1].QueueOffset != 0 || out[2].QueueOffset != 1 || cl.DispatchedOffset() != end {
		t.Errorf("dispatched %+v, position %d; want queue offsets 0, 1 from %d and the position at %d", out[1:], cl.DispatchedOffset(), fs, end)
	}
	if err := cl.SyncCommitLog(); err != nil {
		t.Fatal(err)
	}
	if err := cl.Flush(); err != nil {
		t.Fatal(err)
	}

	// A reset for a snapshot install: empty, then the first append decides where the log starts.
	if err := cl.ResetCommitLog(fs + 1); !errors.Is(err, store.ErrOffsetOutOfRange) {
		t.Errorf("reset off a file boundary: %v, want ErrOffsetOutOfRange", err)
	}
	if err := cl.ResetCommitLog(3 * fs); err != nil {
		t.Fatal(err)
	}
	if cl.DispatchedOffset() != 3*fs || cl.CommitLogEnd() != 0 || cl.MinPhyOffset() != 0 {
		t.Errorf("after the reset: dispatched %d, end %d, min %d; want %d, 0, 0 (empty)", cl.DispatchedOffset(),
			cl.CommitLogEnd(), cl.MinPhyOffset(), 3*fs)
	}
	if err := cl.AppendCommitLog(3*fs, chunk); err != nil {
		t.Fatal(err)
	}
	if cl.MinPhyOffset() != 3*fs || cl.CommitLogEnd() != 3*fs+100 {
		t.Errorf("after the reset and an append: min %d, end %d; want %d, %d", cl.MinPhyOffset(), cl.CommitLogEnd(), 3*fs, 3*fs+100)
	}
}
