package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/rocketraft/rocketraft/message"
)

// slaveConfig is a SLAVE store with the same file sizes as smallConfig.
func slaveConfig(t *testing.T) Config {
	cfg := smallConfig(t)
	cfg.BrokerRole = RoleSlave
	return cfg
}

// copyLog appends master's CommitLog to slave from slave's end, chunk bytes at a time (a
// chunk never crosses a file; records may be split), as an HA client does.
func copyLog(t *testing.T, master, slave *Store, chunk int) {
	t.Helper()
	copyLogFrom(t, master, slave, slave.MaxPhyOffset(), chunk)
}

// copyLogFrom is copyLog from offset from (an empty slave starting at a master's file).
func copyLogFrom(t *testing.T, master, slave *Store, from int64, chunk int) {
	t.Helper()
	for off := from; off < master.MaxPhyOffset(); {
		data, release, err := master.ReadCommitLog(off, chunk)
		if err != nil {
			t.Fatalf("ReadCommitLog(%d): %v", off, err)
		}
		if len(data) == 0 {
			t.Fatalf("ReadCommitLog(%d) empty before the end %d", off, master.MaxPhyOffset())
		}
		err = slave.AppendCommitLog(off, data)
		release()
		if err != nil {
			t.Fatalf("AppendCommitLog(%d, %d bytes): %v", off, len(data), err)
		}
		off += int64(len(data))
		if got := slave.MaxPhyOffset(); got != off {
			t.Fatalf("slave ends at %d after appending up to %d", got, off)
		}
	}
}

// sameFiles checks that both stores hold byte-identical CommitLog files from the slave's
// first file on.
func sameFiles(t *testing.T, master, slave *Store) {
	t.Helper()
	files := slave.commitLog.q.snapshot()
	if len(files) == 0 {
		t.Fatal("slave has no commitlog file")
	}
	for _, f := range files {
		mine, err := os.ReadFile(f.path)
		if err != nil {
			t.Fatal(err)
		}
		mf := master.commitLog.q.find(f.from)
		if mf == nil {
			t.Fatalf("master has no file at %d", f.from)
		}
		theirs, err := os.ReadFile(mf.path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(mine, theirs) {
			i := 0
			for i < len(mine) && i < len(theirs) && mine[i] == theirs[i] {
				i++
			}
			t.Fatalf("file %s differs from the master's at byte %d", f.fileName(), i)
		}
	}
}

// sameQueueOffsets checks that the slave would give the next put of each queue it holds
// records of the offset the master would.
func sameQueueOffsets(t *testing.T, master, slave *Store) {
	t.Helper()
	master.commitLog.putMu.Lock()
	want := make(map[queueKey]int64, len(master.commitLog.putMu.queueOffsets))
	for k, v := range master.commitLog.putMu.queueOffsets {
		want[k] = *v
	}
	master.commitLog.putMu.Unlock()
	slave.commitLog.putMu.Lock()
	defer slave.commitLog.putMu.Unlock()
	for k, v := range want {
		if slave.MaxOffsetInQueue(k.topic, k.queueID) == 0 {
			continue
		}
		var got int64
		if p := slave.commitLog.putMu.queueOffsets[k]; p != nil {
			got = *p
		}
		if got != v {
			t.Errorf("%s/%d: slave's next queue offset %d, master's %d", k.topic, k.queueID, got, v)
		}
	}
}

func TestReplicaRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		flush string
		chunk int
	}{{AsyncFlush, 1000}, {SyncFlush, 1000}, {AsyncFlush, 32 << 10}, {SyncFlush, 32 << 10}} {
		t.Run(fmt.Sprintf("%s/chunk=%d", tc.flush, tc.chunk), func(t *testing.T) {
			mcfg, scfg := smallConfig(t), slaveConfig(t)
			mcfg.FlushDiskType, scfg.FlushDiskType = tc.flush, tc.flush
			master := openStore(t, mcfg, testOptions(t))
			slave := openStore(t, scfg, testOptions(t))
			puts := putMixed(t, master, 150)
			copyLog(t, master, slave, tc.chunk)
			puts = append(puts, putMixed(t, master, 150)...)
			copyLog(t, master, slave, tc.chunk)
			if n := len(slave.commitLog.q.snapshot()); n < 5 {
				t.Fatalf("only %d files: the test must cross file boundaries", n)
			}
			waitDispatched(t, slave)
			checkAll(t, slave, puts)
			sameFiles(t, master, slave)
			sameQueueOffsets(t, master, slave)
			if err := slave.Flush(); err != nil {
				t.Fatal(err)
			}
			if got := slave.FlushedPhyOffset(); got != slave.MaxPhyOffset() {
				t.Fatalf("flushed %d of %d", got, slave.MaxPhyOffset())
			}
			// A restarted slave resumes from its own end.
			if err := slave.Close(); err != nil {
				t.Fatal(err)
			}
			slave = openStore(t, scfg, testOptions(t))
			puts = append(puts, putMixed(t, master, 20)...)
			copyLog(t, master, slave, tc.chunk)
			waitDispatched(t, slave)
			checkAll(t, slave, puts)
			sameFiles(t, master, slave)
		})
	}
}

// A new slave starts at the master's current file, as RocketMQ's master sends a slave that
// reports offset 0.
func TestReplicaStartsAtMasterFile(t *testing.T) {
	mcfg := smallConfig(t)
	master := openStore(t, mcfg, testOptions(t))
	puts := putMixed(t, master, 100)
	end := master.MaxPhyOffset()
	start := end - end%mcfg.MappedFileSizeCommitLog
	if start == 0 {
		t.Fatal("the master must fill more than one file")
	}
	slave := openStore(t, slaveConfig(t), testOptions(t))
	if err := slave.AppendCommitLog(start+1, []byte{0}); !errors.Is(err, ErrOffsetMismatch) {
		t.Fatalf("unaligned first chunk: %v", err)
	}
	copyLogFrom(t, master, slave, start, 32<<10)
	if slave.MinPhyOffset() != start || slave.MaxPhyOffset() != end {
		t.Fatalf("slave holds [%d, %d), want [%d, %d)", slave.MinPhyOffset(), slave.MaxPhyOffset(), start, end)
	}
	waitDispatched(t, slave)
	var kept []putRecord
	for _, p := range puts {
		if p.res.PhysicalOffset >= start {
			kept = append(kept, p)
		}
	}
	for _, p := range kept {
		r, err := slave.GetMessage("g", p.topic, p.queue, p.res.QueueOffset, 1, 1<<20, nil)
		if err != nil || r.Status != Found {
			t.Fatalf("%s/%d offset %d: %v %v", p.topic, p.queue, p.res.QueueOffset, r.Status, err)
		}
		m, err := message.DecodeMessage(r.Records[0], true)
		r.Release()
		if err != nil || string(m.Body) != p.body {
			t.Fatalf("%s/%d offset %d: %v", p.topic, p.queue, p.res.QueueOffset, err)
		}
	}
	sameFiles(t, master, slave)
	sameQueueOffsets(t, master, slave)
}

func TestAppendCommitLogErrors(t *testing.T) {
	cfg := smallConfig(t)
	master := openStore(t, cfg, testOptions(t))
	putMixed(t, master, 30)
	slave := openStore(t, slaveConfig(t), testOptions(t))
	copyLog(t, master, slave, 700)
	end := slave.MaxPhyOffset()
	var mis *OffsetMismatchError
	err := slave.AppendCommitLog(end+10, []byte("x"))
	if !errors.As(err, &mis) || !mis.Gap() || mis.Offset != end+10 || mis.End != end || !errors.Is(err, ErrOffsetMismatch) {
		t.Fatalf("gap: %v", err)
	}
	err = slave.AppendCommitLog(end-10, []byte("x"))
	if !errors.As(err, &mis) || mis.Gap() || mis.Offset != end-10 || mis.End != end {
		t.Fatalf("overlap: %v", err)
	}
	left := cfg.MappedFileSizeCommitLog - end%cfg.MappedFileSizeCommitLog
	if err := slave.AppendCommitLog(end, make([]byte, left+1)); !errors.Is(err, ErrChunkCrossesFile) {
		t.Fatalf("chunk crossing the file end: %v", err)
	}
	if got := slave.MaxPhyOffset(); got != end {
		t.Fatalf("a refused chunk moved the end from %d to %d", end, got)
	}
	if _, _, err := master.ReadCommitLog(master.MaxPhyOffset()+1, 10); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read past the end: %v", err)
	}
	if data, release, err := master.ReadCommitLog(master.MaxPhyOffset(), 10); err != nil || len(data) != 0 {
		t.Fatalf("read at the end: %d bytes, %v", len(data), err)
	} else {
		release()
	}
	if err := slave.TruncateCommitLog(end + 1); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("truncate past the end: %v", err)
	}
	if _, err := master.PutMessage(context.Background(), testMessage("T", 0, "x", nil)); err != nil {
		t.Fatal(err)
	}
	if _, err := slave.PutMessage(context.Background(), testMessage("T", 0, "x", nil)); !errors.Is(err, ErrNotWritable) {
		t.Fatalf("put on a slave: %v", err)
	}
}

// truncationPoints picks one offset of each kind in the log of puts: a record boundary
// mid-file, a file start, the start of a blank filler, a byte inside one, a byte inside a
// record.
func truncationPoints(t *testing.T, fileSize int64, puts []putRecord) map[string]int64 {
	t.Helper()
	points := map[string]int64{}
	for i := 1; i+1 < len(puts); i++ {
		p, next := puts[i].res, puts[i+1].res
		end := p.PhysicalOffset + int64(p.WroteBytes)
		sameFile := p.PhysicalOffset/fileSize == next.PhysicalOffset/fileSize
		if _, ok := points["record boundary mid-file"]; !ok && sameFile && p.PhysicalOffset%fileSize != 0 && i > len(puts)/2 {
			points["record boundary mid-file"] = p.PhysicalOffset
			points["inside a record"] = p.PhysicalOffset + int64(p.WroteBytes)/2
		}
		if _, ok := points["blank start"]; !ok && !sameFile && end%fileSize != 0 && fileSize-end%fileSize > 200 && i > len(puts)/3 {
			points["blank start"] = end
			points["inside a blank header"] = end + 5
			points["inside a blank"] = end + 100
			points["file start"] = next.PhysicalOffset
		}
	}
	if len(points) != 6 {
		t.Fatalf("found only %v in the log", points)
	}
	return points
}

// kept are the puts whose records lie whole before offset.
func kept(puts []putRecord, offset int64) []putRecord {
	var out []putRecord
	for _, p := range puts {
		if p.res.PhysicalOffset+int64(p.res.WroteBytes) <= offset {
			out = append(out, p)
		}
	}
	return out
}

// waitDispatchedThrough waits until dispatch passed the last of puts.
func waitDispatchedThrough(t *testing.T, s *Store, puts []putRecord) {
	t.Helper()
	if len(puts) == 0 {
		return
	}
	last := puts[len(puts)-1].res
	waitFor(t, "dispatch to pass the kept records", func() bool {
		return s.reput.from.Load() >= last.PhysicalOffset+int64(last.WroteBytes)
	})
}

// checkDropped checks that nothing of the dropped puts is left in queues or index.
func checkDropped(t *testing.T, s *Store, puts []putRecord, keep int) {
	t.Helper()
	for i, p := range puts[keep:] {
		r, err := s.QueryMessage(p.topic, fmt.Sprintf("key-%d", keep+i), 32, 0, 1<<62)
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Records) != 0 {
			t.Fatalf("key-%d of a dropped record still found", keep+i)
		}
		r.Release()
	}
}

// A slave truncated at every kind of position keeps exactly the records before it, in its
// queues and index, durably (a crash right after changes nothing), and then takes the
// master's bytes again from there until the files are identical.
func TestTruncateCommitLogPositions(t *testing.T) {
	mcfg := smallConfig(t)
	master := openStore(t, mcfg, testOptions(t))
	puts := putMixed(t, master, 150)
	for name, offset := range truncationPoints(t, mcfg.MappedFileSizeCommitLog, puts) {
		t.Run(name, func(t *testing.T) {
			scfg := slaveConfig(t)
			slave := openStore(t, scfg, testOptions(t))
			copyLog(t, master, slave, 1000)
			waitDispatched(t, slave)
			if err := slave.TruncateCommitLog(offset); err != nil {
				t.Fatal(err)
			}
			if got := slave.MaxPhyOffset(); got != offset {
				t.Fatalf("ends at %d after truncating at %d", got, offset)
			}
			survivors := kept(puts, offset)
			waitDispatchedThrough(t, slave, survivors)
			checkAll(t, slave, survivors)
			checkDropped(t, slave, puts, len(survivors))

			crash(t, slave)
			slave = openStore(t, scfg, testOptions(t))
			waitDispatchedThrough(t, slave, survivors)
			checkAll(t, slave, survivors)
			checkDropped(t, slave, puts, len(survivors))

			copyLog(t, master, slave, 1000)
			waitDispatched(t, slave)
			checkAll(t, slave, puts)
			sameFiles(t, master, slave)
			sameQueueOffsets(t, master, slave)
		})
	}
}

// A master truncated at a record boundary gives its next puts the queue offsets of the
// records it dropped; with SYNC_FLUSH the staged records are written first.
func TestTruncateCommitLogOnMaster(t *testing.T) {
	forEachFlush(t, func(t *testing.T, cfg Config) {
		s := openStore(t, cfg, testOptions(t))
		puts := putMixed(t, s, 90)
		waitDispatched(t, s)
		cut := puts[60].res.PhysicalOffset
		if err := s.TruncateCommitLog(cut); err != nil {
			t.Fatal(err)
		}
		survivors := puts[:60]
		checkAll(t, s, survivors)
		checkDropped(t, s, puts, 60)
		more := putMixed(t, s, 30)
		if more[0].res.PhysicalOffset != cut {
			t.Fatalf("first put after the truncation at %d, want %d", more[0].res.PhysicalOffset, cut)
		}
		waitDispatched(t, s)
		// putMixed cycles through the same queues, so the new records take the dropped
		// records' queue offsets.
		checkAll(t, s, append(survivors, more...))
	})
}

func TestWaitForNewData(t *testing.T) {
	forEachFlush(t, func(t *testing.T, cfg Config) {
		s := openStore(t, cfg, testOptions(t))
		mustPut(t, s, testMessage("T", 0, "first", nil))
		after := s.MaxPhyOffset()
		if got, err := s.WaitForNewData(context.Background(), after-1); err != nil || got != after {
			t.Fatalf("data already there: %d %v", got, err)
		}
		type result struct {
			end int64
			err error
		}
		got := make(chan result, 1)
		go func() {
			end, err := s.WaitForNewData(context.Background(), after)
			got <- result{end, err}
		}()
		res := mustPut(t, s, testMessage("T", 0, "second", nil))
		if r := <-got; r.err != nil || r.end < res.PhysicalOffset+int64(res.WroteBytes) {
			t.Fatalf("woke with %d, %v; the put ends at %d", r.end, r.err, res.PhysicalOffset+int64(res.WroteBytes))
		}

		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			_, err := s.WaitForNewData(ctx, s.MaxPhyOffset())
			got <- result{err: err}
		}()
		cancel()
		if r := <-got; !errors.Is(r.err, context.Canceled) {
			t.Fatalf("cancelled wait: %v", r.err)
		}
		go func() {
			_, err := s.WaitForNewData(context.Background(), s.MaxPhyOffset())
			got <- result{err: err}
		}()
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if r := <-got; !errors.Is(r.err, ErrServiceNotAvailable) {
			t.Fatalf("wait across Close: %v", r.err)
		}
	})
}

// On a SYNC_MASTER a put waits for its flush, then for the Replicator, whose status it
// returns; other roles and WAIT=false puts never reach the Replicator.
func TestReplicatorOnSyncMaster(t *testing.T) {
	for _, tc := range []struct {
		role, flush string
		reply       PutStatus
		calls       bool
	}{
		{RoleSyncMaster, SyncFlush, PutOK, true},
		{RoleSyncMaster, SyncFlush, PutSlaveNotAvailable, true},
		{RoleSyncMaster, AsyncFlush, PutFlushSlaveTimeout, true},
		{RoleAsyncMaster, SyncFlush, PutSlaveNotAvailable, false},
	} {
		t.Run(fmt.Sprintf("%s/%s/%s", tc.role, tc.flush, tc.reply), func(t *testing.T) {
			cfg := smallConfig(t)
			cfg.BrokerRole, cfg.FlushDiskType = tc.role, tc.flush
			opts := testOptions(t)
			var s *Store
			var offsets []int64
			opts.Replicator = ReplicatorFunc(func(offset int64, done func(PutStatus)) {
				if tc.flush == SyncFlush && s.FlushedPhyOffset() < offset {
					t.Errorf("Wait(%d) before the flush (flushed %d)", offset, s.FlushedPhyOffset())
				}
				offsets = append(offsets, offset)
				go done(tc.reply)
			})
			s = openStore(t, cfg, opts)
			want := PutOK
			if tc.calls {
				want = tc.reply
			}
			res, err := s.PutMessage(context.Background(), testMessage("T", 0, "sync", nil))
			if err != nil || res.Status != want {
				t.Fatalf("PutMessage: %v %v, want %v", res.Status, err, want)
			}
			async := make(chan PutResult, 1)
			s.PutMessageAsync(testMessage("T", 0, "async", nil), func(r PutResult, err error) {
				if err != nil {
					t.Error(err)
				}
				async <- r
			})
			if r := <-async; r.Status != want {
				t.Fatalf("PutMessageAsync: %v, want %v", r.Status, want)
			}
			r, err := s.PutMessage(context.Background(), testMessage("T", 0, "nowait", map[string]string{message.PropertyWaitStoreMsgOK: "false"}))
			if err != nil || r.Status != PutOK {
				t.Fatalf("WAIT=false: %v %v", r.Status, err)
			}
			if !tc.calls {
				if len(offsets) != 0 {
					t.Fatalf("Replicator called on %s", tc.role)
				}
				return
			}
			if len(offsets) != 2 || offsets[0] != res.PhysicalOffset+int64(res.WroteBytes) {
				t.Fatalf("Replicator offsets %v, want 2 starting at %d", offsets, res.PhysicalOffset+int64(res.WroteBytes))
			}
		})
	}
}

// A put whose slave never answers returns FLUSH_SLAVE_TIMEOUT when its context ends.
func TestReplicatorContextTimeout(t *testing.T) {
	cfg := smallConfig(t)
	cfg.BrokerRole, cfg.FlushDiskType = RoleSyncMaster, SyncFlush
	opts := testOptions(t)
	waiting := make(chan struct{})
	opts.Replicator = ReplicatorFunc(func(int64, func(PutStatus)) { close(waiting) })
	s := openStore(t, cfg, opts)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-waiting
		cancel()
	}()
	r, err := s.PutMessage(ctx, testMessage("T", 0, "x", nil))
	if err != nil || r.Status != PutFlushSlaveTimeout {
		t.Fatalf("%v %v", r.Status, err)
	}
}

// A replica too far behind (its offset no longer on the master) empties itself and starts
// again at the master's current file.
func TestReplicaRestartsFarBehind(t *testing.T) {
	mcfg := smallConfig(t)
	master := openStore(t, mcfg, testOptions(t))
	slave := openStore(t, slaveConfig(t), testOptions(t))
	putMixed(t, master, 20)
	copyLog(t, master, slave, 4096)
	puts := putMixed(t, master, 100)
	end := master.MaxPhyOffset()
	start := end - end%mcfg.MappedFileSizeCommitLog
	waitDispatched(t, slave)
	if err := slave.TruncateCommitLog(slave.MinPhyOffset()); err != nil {
		t.Fatal(err)
	}
	if slave.MaxPhyOffset() != 0 || slave.MaxOffsetInQueue("TopicA", 0) != 0 {
		t.Fatalf("not empty: end %d, TopicA/0 max %d", slave.MaxPhyOffset(), slave.MaxOffsetInQueue("TopicA", 0))
	}
	copyLogFrom(t, master, slave, start, 32<<10)
	waitDispatched(t, slave)
	for _, p := range puts {
		if p.res.PhysicalOffset < start {
			continue
		}
		if u, err := slave.CommitLogOffsetInQueue(p.topic, p.queue, p.res.QueueOffset); err != nil || u != p.res.PhysicalOffset {
			t.Fatalf("%s/%d offset %d: %d %v, want %d", p.topic, p.queue, p.res.QueueOffset, u, err, p.res.PhysicalOffset)
		}
	}
	sameFiles(t, master, slave)
	sameQueueOffsets(t, master, slave)
}
