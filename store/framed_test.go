package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/rocketraft/rocketraft/message"
)

// testFrameMagic marks the stand-in frames of these tests; the store only reads a unit's size
// and magic, so any magic but the blank one will do.
const testFrameMagic = int32(0x54455354) // "TEST"

// testFrameHeader is the size of the stand-in frame header: size, magic, 8 bytes of padding.
const testFrameHeader = 16

// openFramed opens a framed store, recovers it at the end of the last complete stand-in
// frame and starts it; the test closes it.
func openFramed(t *testing.T, cfg Config) *Store {
	t.Helper()
	opts := testOptions(t)
	opts.Framed = true
	s, err := Open(cfg, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if err := s.Start(); !errors.Is(err, ErrNotRecovered) {
		t.Fatalf("Start before RecoverFramed = %v, want ErrNotRecovered", err)
	}
	if err := s.RecoverFramed(scanTestFrames(s), false); err != nil {
		t.Fatalf("RecoverFramed: %v", err)
	}
	if err := s.Start(); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// scanTestFrames walks the units from the first file to the first zero size: the recovered end.
func scanTestFrames(s *Store) int64 {
	off := s.MinPhyOffset()
	for {
		head, release, err := s.ReadCommitLog(off, 8)
		if err != nil || len(head) < 8 {
			return off
		}
		size := int64(binary.BigEndian.Uint32(head))
		magic := int32(binary.BigEndian.Uint32(head[4:]))
		release()
		switch {
		case magic == message.BlankMagicCode:
			off += size
		case magic == testFrameMagic && size > 0:
			off += size
		default:
			return off
		}
	}
}

// framedEntry is one stand-in entry: where it was appended and the records it holds.
type framedEntry struct {
	pos, recFrom, recTo, end int64
}

// appendFramed appends a stand-in frame with msgs as records (blank filler and next file when
// it does not fit) and returns where it went.
func appendFramed(t *testing.T, s *Store, msgs ...*message.Message) framedEntry {
	t.Helper()
	return appendFramedCarrying(t, s, nil, msgs...)
}

// appendFramedCarrying is appendFramed with records carrying queue offsets (queueOffsets[i]
// for msgs[i]; nil: 0), as the Raft log store writes its predictions.
func appendFramedCarrying(t *testing.T, s *Store, queueOffsets []int64, msgs ...*message.Message) framedEntry {
	t.Helper()
	var recs []byte
	for i, m := range msgs {
		var err error
		ext := &message.MessageExt{Message: *m, StoreHost: testStoreHost, StoreTimestamp: 1700000000001}
		if queueOffsets != nil {
			ext.QueueOffset = queueOffsets[i]
		}
		recs, err = message.EncodeRecord(recs, ext)
		if err != nil {
			t.Fatal(err)
		}
	}
	size := int64(testFrameHeader + len(recs))
	pos := s.CommitLogEnd()
	fs := s.CommitLogFileSize()
	if pos%fs+size+message.BlankRecordMinLength > fs {
		if err := s.AppendCommitLogBlank(pos); err != nil {
			t.Fatalf("AppendCommitLogBlank(%d): %v", pos, err)
		}
		pos = s.CommitLogEnd()
	}
	frame := make([]byte, testFrameHeader, size)
	binary.BigEndian.PutUint32(frame, uint32(size))
	message.PutInt32(frame[4:], testFrameMagic)
	frame = append(frame, recs...)
	// Records carry their physical offsets, as the Raft log store writes them.
	for off := testFrameHeader; off < len(frame); {
		n := int(binary.BigEndian.Uint32(frame[off:]))
		binary.BigEndian.PutUint64(frame[off+message.OffPhysicalOffset:], uint64(pos+int64(off)))
		off += n
	}
	if err := s.AppendCommitLog(pos, frame); err != nil {
		t.Fatalf("AppendCommitLog(%d): %v", pos, err)
	}
	return framedEntry{pos: pos, recFrom: pos + testFrameHeader, recTo: pos + size, end: pos + size}
}

func dispatchFramed(t *testing.T, s *Store, e framedEntry) []AssignedOffset {
	t.Helper()
	got, err := s.DispatchMessages(e.recFrom, e.recTo, e.end, true, nil)
	if err != nil {
		t.Fatalf("DispatchMessages(%d): %v", e.pos, err)
	}
	return got
}

func TestFramedRefusesPuts(t *testing.T) {
	s := openFramed(t, smallConfig(t))
	if _, err := s.PutMessage(t.Context(), testMessage("T", 0, "x", nil)); !errors.Is(err, ErrNotWritable) {
		t.Fatalf("PutMessage on a framed store = %v, want ErrNotWritable", err)
	}
	classic := openStore(t, smallConfig(t), testOptions(t))
	if _, err := classic.DispatchMessages(0, 0, 0, true, nil); !errors.Is(err, errNotFramed) {
		t.Fatalf("DispatchMessages on a classic store = %v, want errNotFramed", err)
	}
}

func TestFramedDispatchAssignsQueueOffsets(t *testing.T) {
	forEachFlush(t, func(t *testing.T, cfg Config) {
		s := openFramed(t, cfg)
		var entries []framedEntry
		for i := range 40 {
			var msgs []*message.Message
			for j := range 1 + i%3 {
				msgs = append(msgs, testMessage("T", int32(j%2), bodyOf(i*10+j, 300), map[string]string{message.PropertyKeys: fmt.Sprintf("k%d-%d", i, j)}))
			}
			entries = append(entries, appendFramed(t, s, msgs...))
		}
		if s.MaxPhyOffset() != 0 {
			t.Fatalf("MaxPhyOffset before dispatch = %d, want 0 (nothing dispatched)", s.MaxPhyOffset())
		}
		if _, err := s.LookMessageByOffset(entries[0].recFrom); !errors.Is(err, ErrNotFound) || !errors.Is(err, ErrNotVisibleYet) {
			t.Fatalf("reading an entry not dispatched = %v, want ErrNotFound and ErrNotVisibleYet", err)
		}
		next := map[int32]int64{}
		for _, e := range entries {
			for _, a := range dispatchFramed(t, s, e) {
				m, err := s.LookMessageByOffset(a.PhysicalOffset)
				if err != nil {
					t.Fatalf("LookMessageByOffset(%d): %v", a.PhysicalOffset, err)
				}
				if a.QueueOffset != next[m.QueueID] || m.QueueOffset != a.QueueOffset {
					t.Fatalf("record at %d: assigned %d, stored %d, want %d", a.PhysicalOffset, a.QueueOffset, m.QueueOffset, next[m.QueueID])
				}
				next[m.QueueID]++
			}
			if s.MaxPhyOffset() != e.end {
				t.Fatalf("MaxPhyOffset = %d, want the entry end %d", s.MaxPhyOffset(), e.end)
			}
		}
		for q, n := range next {
			if got := len(readQueue(t, s, "T", q)); int64(got) != n {
				t.Fatalf("queue %d reads %d messages, want %d", q, got, n)
			}
		}
		r, err := s.QueryMessage("T", "k7-1", 4, 0, 1<<62)
		if err != nil || len(r.Records) != 1 {
			t.Fatalf("QueryMessage: %d records, %v", len(r.Records), err)
		}
		r.Release()
	})
}

// TestFramedDispatchChecksCarriedQueueOffsets: records that carry the queue offset dispatch
// gives them are left as they are; records that carry another one (missing or wrong
// predictions) get the right one written, counted in Stats.QueueOffsetsWritten, durable after
// a Flush and kept by a restart.
func TestFramedDispatchChecksCarriedQueueOffsets(t *testing.T) {
	forEachFlush(t, func(t *testing.T, cfg Config) {
		s := openFramed(t, cfg)
		next := map[int32]int64{}
		wrong := 0
		var want []AssignedOffset
		for i := range 30 {
			var msgs []*message.Message
			var carried []int64
			for j := range 1 + i%4 {
				q := int32(j % 2)
				msgs = append(msgs, testMessage("T", q, bodyOf(i*10+j, 200), nil))
				qo := next[q]
				next[q]++
				switch {
				case i%7 == 3 && j == 0: // a missing prediction
					if qo != 0 {
						wrong++
					}
					qo = 0
				case i%5 == 4: // a wrong one, in every record of the entry
					qo += 100
					wrong++
				}
				carried = append(carried, qo)
			}
			e := appendFramedCarrying(t, s, carried, msgs...)
			want = append(want, dispatchFramed(t, s, e)...)
		}
		if got := s.Stats().QueueOffsetsWritten; got != int64(wrong) {
			t.Fatalf("QueueOffsetsWritten = %d, want %d (the records that carried another offset)", got, wrong)
		}
		if err := s.Flush(); err != nil {
			t.Fatal(err)
		}
		check := func(s *Store, when string) {
			seen := map[int32]int64{}
			for _, a := range want {
				m, err := s.LookMessageByOffset(a.PhysicalOffset)
				if err != nil {
					t.Fatalf("%s: LookMessageByOffset(%d): %v", when, a.PhysicalOffset, err)
				}
				if m.QueueOffset != seen[m.QueueID] || a.QueueOffset != m.QueueOffset {
					t.Fatalf("%s: record at %d carries queue offset %d (dispatch said %d), want %d", when, a.PhysicalOffset,
						m.QueueOffset, a.QueueOffset, seen[m.QueueID])
				}
				seen[m.QueueID]++
			}
		}
		check(s, "after dispatch")
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		check(openFramed(t, cfg), "after a restart")
	})
}

func TestFramedRecoverAfterCleanClose(t *testing.T) {
	cfg := smallConfig(t)
	s := openFramed(t, cfg)
	var last AssignedOffset
	for i := range 30 {
		e := appendFramed(t, s, testMessage("T", 0, bodyOf(i, 500), nil))
		if i < 25 {
			last = dispatchFramed(t, s, e)[0]
		}
	}
	end := s.CommitLogEnd()
	dispatched := s.DispatchedOffset()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openFramed(t, cfg)
	if s.CommitLogEnd() != end || s.DispatchedOffset() != dispatched {
		t.Fatalf("reopened at end %d dispatched %d, want %d and %d", s.CommitLogEnd(), s.DispatchedOffset(), end, dispatched)
	}
	// The five entries not dispatched before get the queue offsets that follow.
	e := framedEntryAt(t, s, dispatched)
	if got := dispatchFramed(t, s, e)[0].QueueOffset; got != last.QueueOffset+1 {
		t.Fatalf("next queue offset after reopen = %d, want %d", got, last.QueueOffset+1)
	}
}

// framedEntryAt reads back the stand-in frame at pos.
func framedEntryAt(t *testing.T, s *Store, pos int64) framedEntry {
	t.Helper()
	head, release, err := s.ReadCommitLog(pos, 8)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	size := int64(binary.BigEndian.Uint32(head))
	return framedEntry{pos: pos, recFrom: pos + testFrameHeader, recTo: pos + size, end: pos + size}
}

// copyDir copies a store folder as a process crash would leave it: every byte written to the
// files, nothing more (the abort file included).
func copyDir(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.Walk(from, func(path string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, path)
		dst := filepath.Join(to, rel)
		if info.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		in, err := os.Open(path)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.Create(dst)
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestFramedCrashReassignsIdentically(t *testing.T) {
	cfg := smallConfig(t)
	cfg.FlushConsumeQueueThoroughInterval = 3600 * 1000 // the checkpoint stays where the test flushes it
	s := openFramed(t, cfg)
	var entries []framedEntry
	var want []AssignedOffset
	for i := range 60 {
		e := appendFramed(t, s, testMessage("T", int32(i%3), bodyOf(i, 400), nil), testMessage("T", int32((i+1)%3), bodyOf(i, 100), nil))
		entries = append(entries, e)
		want = append(want, dispatchFramed(t, s, e)...)
		if i == 20 {
			if err := s.Flush(); err != nil { // a thorough flush: checkpoint at entry 20
				t.Fatal(err)
			}
		}
	}
	crashed := t.TempDir()
	copyDir(t, cfg.StorePathRootDir, crashed)
	crashCfg := cfg
	crashCfg.StorePathRootDir = crashed
	c := openFramed(t, crashCfg)
	if got := c.DispatchedOffset(); got != entries[20].end {
		t.Fatalf("dispatched after the crash = %d, want the checkpoint at entry 20 (%d)", got, entries[20].end)
	}
	var again []AssignedOffset
	for _, e := range entries[21:] {
		again = append(again, dispatchFramed(t, c, e)...)
	}
	if fmt.Sprint(again) != fmt.Sprint(want[len(want)-len(again):]) {
		t.Fatalf("dispatch after the crash assigned\n%v\nwant\n%v", again, want[len(want)-len(again):])
	}
	for q := range int32(3) {
		a, b := readQueue(t, s, "T", q), readQueue(t, c, "T", q)
		if len(a) != len(b) {
			t.Fatalf("queue %d: %d messages before the crash, %d after", q, len(a), len(b))
		}
		for i := range a {
			if a[i].QueueOffset != b[i].QueueOffset || a[i].PhysicalOffset != b[i].PhysicalOffset {
				t.Fatalf("queue %d message %d differs after the crash", q, i)
			}
		}
	}
}

func TestFramedTruncateAndBlank(t *testing.T) {
	cfg := smallConfig(t)
	s := openFramed(t, cfg)
	var entries []framedEntry
	for i := range 50 {
		entries = append(entries, appendFramed(t, s, testMessage("T", 0, bodyOf(i, 700), nil)))
	}
	if entries[49].pos < 2*cfg.MappedFileSizeCommitLog {
		t.Fatalf("entries end at %d, want three files at least", entries[49].end)
	}
	for _, e := range entries[:10] {
		dispatchFramed(t, s, e)
	}
	if err := s.TruncateCommitLog(entries[5].pos); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("truncating dispatched entries = %v, want ErrOffsetOutOfRange", err)
	}
	cut := entries[30].pos
	if err := s.TruncateCommitLog(cut); err != nil {
		t.Fatal(err)
	}
	if s.CommitLogEnd() != cut {
		t.Fatalf("end after truncation = %d, want %d", s.CommitLogEnd(), cut)
	}
	e := appendFramed(t, s, testMessage("T", 0, bodyOf(99, 700), nil))
	if e.pos != cut {
		t.Fatalf("entry after truncation at %d, want %d", e.pos, cut)
	}
	if err := s.SyncCommitLog(); err != nil || s.FlushedPhyOffset() != s.CommitLogEnd() {
		t.Fatalf("SyncCommitLog: %v, flushed %d of %d", err, s.FlushedPhyOffset(), s.CommitLogEnd())
	}
	if err := s.AppendCommitLogBlank(e.pos); err == nil {
		t.Fatal("AppendCommitLogBlank below the end succeeded")
	}
	if err := s.AppendCommitLogBlank(s.CommitLogEnd()); err != nil {
		t.Fatal(err)
	}
	if end := s.CommitLogEnd(); end%cfg.MappedFileSizeCommitLog != 0 {
		t.Fatalf("end after a blank record = %d, want a file boundary", end)
	}
}

func TestFramedPruneFollowsGuard(t *testing.T) {
	cfg := smallConfig(t)
	s := openFramed(t, cfg)
	var entries []framedEntry
	for i := range 60 {
		e := appendFramed(t, s, testMessage("T", 0, bodyOf(i, 700), nil))
		dispatchFramed(t, s, e)
		entries = append(entries, e)
	}
	if err := s.SyncCommitLog(); err != nil {
		t.Fatal(err)
	}
	fs := cfg.MappedFileSizeCommitLog
	allowTo := int64(fs)
	s.SetRetentionGuard(func(from, to int64) bool { return to <= allowTo })
	if n := s.PruneCommitLog(s.DispatchedOffset()); n != 1 || s.MinPhyOffset() != fs {
		t.Fatalf("prune with the guard at one file: %d deleted, min %d", n, s.MinPhyOffset())
	}
	s.SetRetentionGuard(nil)
	if n := s.PruneCommitLog(2 * fs); n != 1 || s.MinPhyOffset() != 2*fs {
		t.Fatalf("prune up to %d: %d deleted, min %d", 2*fs, n, s.MinPhyOffset())
	}
	if got := readQueue(t, s, "T", 0); len(got) == 0 || got[0].PhysicalOffset < 2*fs {
		t.Fatalf("queue after pruning starts at %v", got)
	}
}

func TestFramedRestoreAtFileBoundary(t *testing.T) {
	cfg := smallConfig(t)
	src := openFramed(t, cfg)
	var entries []framedEntry
	for i := range 40 {
		e := appendFramed(t, src, testMessage("T", 0, bodyOf(i, 700), nil))
		dispatchFramed(t, src, e)
		entries = append(entries, e)
	}
	fs := cfg.MappedFileSizeCommitLog
	dst := openFramed(t, smallConfig(t))
	// Copy from the second file on, as a new replica gets the retained files of its leader.
	for off := fs; off < src.CommitLogEnd(); {
		data, release, err := src.ReadCommitLog(off, 4096)
		if err != nil {
			t.Fatal(err)
		}
		if err := dst.AppendCommitLog(off, data); err != nil {
			t.Fatal(err)
		}
		off += int64(len(data))
		release()
	}
	if dst.DispatchedOffset() != fs {
		t.Fatalf("dispatched position of the copy = %d, want %d", dst.DispatchedOffset(), fs)
	}
	for _, e := range entries {
		if e.pos < fs {
			continue
		}
		if _, err := dst.DispatchMessages(e.recFrom, e.recTo, e.end, false, nil); err != nil {
			t.Fatal(err)
		}
	}
	a, b := readQueue(t, src, "T", 0), readQueue(t, dst, "T", 0)
	if len(b) == 0 || b[len(b)-1].QueueOffset != a[len(a)-1].QueueOffset {
		t.Fatalf("copy reads %d messages ending at queue offset %v, want the source's last %d", len(b), b, a[len(a)-1].QueueOffset)
	}
	for i := range b {
		x := a[len(a)-len(b)+i]
		if !bytes.Equal(x.Body, b[i].Body) || x.QueueOffset != b[i].QueueOffset {
			t.Fatalf("copied message %d differs", i)
		}
	}
}
