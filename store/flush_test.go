package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/rocketraft/rocketraft/message"
)

// openUnstarted opens a store and marks it running without starting any service, so a test
// can run exactly the services it wants.
func openUnstarted(t *testing.T, cfg Config, opts Options) (*Store, context.Context) {
	t.Helper()
	s, err := Open(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	s.state.Store(stateRunning)
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	t.Cleanup(func() { _ = s.Close() })
	return s, ctx
}

// One flush serves every waiter queued while no flush ran.
func TestGroupCommitOneFlushServesAllWaiters(t *testing.T) {
	cfg := smallConfig(t)
	cfg.FlushDiskType = SyncFlush
	s, ctx := openUnstarted(t, cfg, testOptions(t))
	const n = 20
	var wg sync.WaitGroup
	results := make(chan PutResult, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		s.PutMessageAsync(testMessage("T", 0, bodyOf(i, 200), nil), func(r PutResult, err error) {
			if err != nil {
				t.Errorf("put: %v", err)
			}
			results <- r
			wg.Done()
		})
	}
	s.group.mu.Lock()
	pending := len(s.group.mu.pending)
	s.group.mu.Unlock()
	if pending != n {
		t.Fatalf("%d waiters pending before the flusher ran, want %d", pending, n)
	}
	s.goService(ctx, "groupCommit", s.runGroupCommit)
	wg.Wait()
	close(results)
	for r := range results {
		if r.Status != PutOK {
			t.Errorf("status %v", r.Status)
		}
	}
	if got := s.Stats().FlushLatency.Count; got != 1 {
		t.Errorf("%d flushes for %d waiters, want 1", got, n)
	}
	if s.commitLog.q.flushedWhere.Load() != s.MaxPhyOffset() {
		t.Errorf("flushed %d of %d", s.commitLog.q.flushedWhere.Load(), s.MaxPhyOffset())
	}
}

func TestSyncFlushTimeoutAndContext(t *testing.T) {
	cfg := smallConfig(t)
	cfg.FlushDiskType = SyncFlush
	cfg.SyncFlushTimeout = 20
	s, ctx := openUnstarted(t, cfg, testOptions(t))
	// Only the watcher runs: no flush ever confirms.
	s.goService(ctx, "flushWatcher", s.runFlushWatcher)
	res, err := s.PutMessage(context.Background(), testMessage("T", 0, "x", nil))
	if err != nil || res.Status != PutFlushDiskTimeout || res.MsgID == "" {
		t.Fatalf("no flusher: %+v, %v", res, err)
	}
	cctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.PutMessage(cctx, testMessage("T", 0, "x", nil)); err == nil {
		t.Fatal("put with a cancelled context succeeded")
	}
	async := make(chan PutResult, 1)
	s.PutMessageAsync(testMessage("T", 0, "y", nil), func(r PutResult, _ error) { async <- r })
	if r := <-async; r.Status != PutFlushDiskTimeout {
		t.Fatalf("async status %v", r.Status)
	}
	// WAIT=false does not wait for the flush.
	r, err := s.PutMessage(context.Background(), testMessage("T", 0, "z", map[string]string{message.PropertyWaitStoreMsgOK: "false"}))
	if err != nil || r.Status != PutOK {
		t.Fatalf("WAIT=false: %+v %v", r, err)
	}
}

func TestSyncFlushConcurrentWriters(t *testing.T) {
	cfg := smallConfig(t)
	cfg.FlushDiskType = SyncFlush
	s := openStore(t, cfg, testOptions(t))
	var wg sync.WaitGroup
	var mu sync.Mutex
	var puts []putRecord
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < 25; i++ {
				body := fmt.Sprintf("w%d-%d", w, i)
				m := testMessage("T", int32(w%2), body, map[string]string{message.PropertyTags: "TagA"})
				res, err := s.PutMessage(context.Background(), m)
				if err != nil || res.Status != PutOK {
					t.Errorf("put: %+v %v", res, err)
					return
				}
				if res.PhysicalOffset+int64(res.WroteBytes) > s.commitLog.q.flushedWhere.Load() {
					t.Errorf("PutOK before the flush covered the record")
				}
				mu.Lock()
				puts = append(puts, putRecord{"T", int32(w % 2), body, "TagA", res})
				mu.Unlock()
			}
		}(w)
	}
	wg.Wait()
	waitDispatched(t, s)
	// Queue order is put order within each queue: sort by queue offset.
	byQueue := map[int32]map[int64]putRecord{}
	for _, p := range puts {
		if byQueue[p.queue] == nil {
			byQueue[p.queue] = map[int64]putRecord{}
		}
		byQueue[p.queue][p.res.QueueOffset] = p
	}
	for q, m := range byQueue {
		got := readQueue(t, s, "T", q)
		if len(got) != len(m) {
			t.Fatalf("queue %d: %d messages, want %d", q, len(got), len(m))
		}
		for _, g := range got {
			if string(g.Body) != m[g.QueueOffset].body {
				t.Fatalf("queue %d offset %d: %q, want %q", q, g.QueueOffset, g.Body, m[g.QueueOffset].body)
			}
		}
	}
}

// With SYNC_FLUSH a put leaves its record staged: nothing reads it until the flusher has
// written it to the file, and the put is acknowledged only after that write was flushed.
func TestSyncFlushStagedRecordsVisibleAfterFlush(t *testing.T) {
	cfg := smallConfig(t)
	cfg.FlushDiskType = SyncFlush
	s, ctx := openUnstarted(t, cfg, testOptions(t))
	done := make(chan PutResult, 1)
	s.PutMessageAsync(testMessage("T", 0, "staged", nil), func(r PutResult, err error) {
		if err != nil {
			t.Errorf("put: %v", err)
		}
		done <- r
	})
	if got := s.MaxPhyOffset(); got != 0 {
		t.Fatalf("MaxPhyOffset %d before the flusher ran, want 0", got)
	}
	if _, err := s.LookMessageByOffset(0); !errors.Is(err, ErrNotFound) {
		t.Fatalf("staged record readable: %v", err)
	}
	s.goService(ctx, "groupCommit", s.runGroupCommit)
	r := <-done
	if r.Status != PutOK || s.commitLog.q.flushedWhere.Load() < int64(r.WroteBytes) {
		t.Fatalf("status %v, flushed %d of %d", r.Status, s.commitLog.q.flushedWhere.Load(), r.WroteBytes)
	}
	if m, err := s.LookMessageByOffset(0); err != nil || string(m.Body) != "staged" {
		t.Fatalf("after the flush: %v %v", m, err)
	}
}

// A staged record that cannot be written fails its put with FLUSH_DISK_TIMEOUT and turns the
// store read-only.
func TestSyncFlushStagedWriteFailure(t *testing.T) {
	cfg := smallConfig(t)
	cfg.FlushDiskType = SyncFlush
	s := openStore(t, cfg, testOptions(t))
	mustPut(t, s, testMessage("T", 0, "first", nil))
	f := s.commitLog.q.last()
	readOnly, err := os.Open(f.path)
	if err != nil {
		t.Fatal(err)
	}
	// Writes through a read-only descriptor fail; the real one is put back for Close.
	s.commitLog.putMu.Lock()
	rw := f.file
	f.file = readOnly
	s.commitLog.putMu.Unlock()
	r, err := s.PutMessage(context.Background(), testMessage("T", 0, "second", nil))
	if err != nil || r.Status != PutFlushDiskTimeout {
		t.Fatalf("put with a failing write: %+v %v", r, err)
	}
	if s.Stats().Writable {
		t.Fatal("store still writable after a failed write")
	}
	if _, err := s.PutMessage(context.Background(), testMessage("T", 0, "third", nil)); !errors.Is(err, ErrNotWritable) {
		t.Fatalf("put after the failure: %v", err)
	}
	s.commitLog.stager.mu.Lock()
	f.file = rw
	s.commitLog.stager.mu.Unlock()
	readOnly.Close()
}
