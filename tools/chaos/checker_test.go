package chaos

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// hist builds hand-made histories: a SYNC_MASTER + SYNC_FLUSH run with a master and a slave.
type hist struct{ h History }

func newHist() *hist {
	return &hist{h: History{Info: RunInfo{Mode: "masterslave", Role: "SYNC_MASTER", Flush: "SYNC_FLUSH",
		Durable: true, Replicated: true, Writer: "master", Drained: true}}}
}

func idOf(w int, seq int64) string { return fmt.Sprintf("w%02d-%08d", w, seq) }

// send records one attempt of worker w's message seq to queue q, at time t (µs), acknowledged at offset
// off when status is SendOK.
func (b *hist) send(w int, seq int64, attempt int, q int32, t int64, status string, off int64) *hist {
	b.h.Sends = append(b.h.Sends, SendRecord{ID: idOf(w, seq), Worker: w, Seq: seq, Attempt: attempt, Queue: q,
		Node: "master", Start: t, End: t + 10, Status: status, Offset: off})
	return b
}

func (b *hist) read(phase, node string, q int32, off int64, id string, fault int) *hist {
	b.h.Reads = append(b.h.Reads, ReadRecord{Phase: phase, Node: node, Queue: q, Offset: off, ID: id, Fault: fault})
	return b
}

// stored records (q, off, id) in the final scans of both brokers and in the consumers' reads.
func (b *hist) stored(q int32, off int64, id string) *hist {
	return b.read(PhaseRun, "master", q, off, id, 0).read(PhaseFinal, "master", q, off, id, 0).read(PhaseFinal, "slave", q, off, id, 0)
}

// clean is worker 0 sending seqs 1..n to queue 0, each acknowledged and stored at offset seq-1.
func clean(n int64) *hist {
	b := newHist()
	for seq := int64(1); seq <= n; seq++ {
		b.send(0, seq, 1, 0, seq*1000, SendOK, seq-1).stored(0, seq-1, idOf(0, seq))
	}
	return b
}

// popped adds a pop consumer to b that got worker 0's seqs, each acked, and drained.
func popped(b *hist, seqs ...int64) *hist {
	b.h.Info.PopRan, b.h.Info.PopDrained = true, true
	for i, seq := range seqs {
		b.h.Pops = append(b.h.Pops, PopRecord{Time: int64(i), Node: "master", ID: idOf(0, seq), Attempt: 1, Acked: true})
	}
	return b
}

func TestCheckCleanHistoryPasses(t *testing.T) {
	r := Check(&clean(5).h)
	if f := r.Failures(); len(f) > 0 {
		t.Fatalf("failures %v\n%s", f, r)
	}
	if r.Acked != 5 || r.IDs != 5 || !strings.HasPrefix(r.Summary(), "PASS ") {
		t.Fatalf("acked %d ids %d summary %q", r.Acked, r.IDs, r.Summary())
	}
	if !strings.HasSuffix(r.String(), r.Summary()+"\n") {
		t.Fatalf("the report does not end with the summary line:\n%s", r)
	}
}

// TestCheckDetectsEachViolation: each case breaks a clean history in one way; the checker must count it
// in its own field and fail the run (or not, for what is allowed) with a reason naming it.
func TestCheckDetectsEachViolation(t *testing.T) {
	cases := []struct {
		name  string
		build func() *hist
		count func(*Report) int
		fails string // a substring of the failure; "" when the finding must not fail the run
	}{
		{"lost", func() *hist {
			b := clean(3)
			return b.send(0, 4, 1, 0, 9000, SendOK, 3) // acknowledged, never stored
		}, func(r *Report) int { return len(r.Lost) }, "acknowledged messages lost"},
		{"lost in an ASYNC mode is reported, not failed", func() *hist {
			b := clean(3)
			b.h.Info.Role, b.h.Info.Flush, b.h.Info.Durable, b.h.Info.Replicated = "ASYNC_MASTER", "ASYNC_FLUSH", false, false
			b.h.Info.Drained = false
			return b.send(0, 4, 1, 0, 9000, SendOK, 3)
		}, func(r *Report) int { return len(r.Lost) }, ""},
		{"duplicate of a retried send", func() *hist {
			b := clean(2)
			b.send(0, 3, 1, 0, 5000, SendTimeout, 0).send(0, 3, 2, 0, 6000, SendOK, 3)
			return b.stored(0, 2, idOf(0, 3)).stored(0, 3, idOf(0, 3))
		}, func(r *Report) int { return r.Duplicates }, ""},
		{"duplicate of a send made once", func() *hist {
			return clean(2).stored(0, 2, idOf(0, 2))
		}, func(r *Report) int { return len(r.BadDuplicates) }, "duplicates of messages sent once"},
		{"order", func() *hist {
			b := newHist()
			b.send(0, 1, 1, 0, 1000, SendOK, 1).send(0, 2, 1, 0, 2000, SendOK, 0)
			return b.stored(0, 0, idOf(0, 2)).stored(0, 1, idOf(0, 1))
		}, func(r *Report) int { return len(r.OrderViolations) }, "order violations"},
		{"offset read with two ids", func() *hist {
			b := clean(2)
			return b.read(PhaseKill, "slave", 0, 1, idOf(0, 1), 0)
		}, func(r *Report) int { return len(r.OffsetConflicts) }, "queue offsets used twice"},
		{"two acknowledgements of one offset", func() *hist {
			b := clean(2)
			b.h.Sends[1].Offset = 0
			return b
		}, func(r *Report) int { return len(r.OffsetConflicts) }, "queue offsets used twice"},
		{"phantom", func() *hist {
			return clean(2).stored(0, 2, "w99-00000001")
		}, func(r *Report) int { return len(r.Phantoms) }, "never sent"},
		{"an acknowledged message never popped", func() *hist {
			return popped(clean(3), 1, 2) // w00-00000003 never
		}, func(r *Report) int { return len(r.Pop.Missing) }, "pop consumer never got"},
		{"a held message that never came back", func() *hist {
			b := popped(clean(3), 1, 2, 3)
			b.h.Pops[1].Held, b.h.Pops[1].Acked = true, false
			return b
		}, func(r *Report) int { return len(r.Pop.NotBack) }, "did not come back"},
		{"the pop consumer did not drain", func() *hist {
			b := popped(clean(3), 1, 2, 3)
			b.h.Info.PopDrained = false
			return b
		}, func(r *Report) int { return 1 }, "pop consumer did not get every"},
		{"popped, never sent", func() *hist {
			return popped(clean(1), 1, 7)
		}, func(r *Report) int { return len(r.Pop.Phantoms) }, "popped that were never sent"},
		{"popped again after an ack (at least once)", func() *hist {
			return popped(clean(2), 1, 2, 2)
		}, func(r *Report) int { return r.Pop.AfterAcked }, ""},
		{"unacknowledged but stored", func() *hist {
			b := clean(2)
			return b.send(0, 3, 1, 0, 5000, SendTimeout, 0).stored(0, 2, idOf(0, 3))
		}, func(r *Report) int { return r.UnackedStored }, ""},
		{"never consumed", func() *hist {
			b := clean(2)
			b.send(0, 3, 1, 0, 5000, SendOK, 2)
			return b.read(PhaseFinal, "master", 0, 2, idOf(0, 3), 0).read(PhaseFinal, "slave", 0, 2, idOf(0, 3), 0)
		}, func(r *Report) int { return len(r.NotConsumed) }, "never read"},
		{"replicas differ", func() *hist {
			b := clean(2)
			b.send(0, 3, 1, 0, 5000, SendOK, 2)
			return b.read(PhaseRun, "master", 0, 2, idOf(0, 3), 0).read(PhaseFinal, "master", 0, 2, idOf(0, 3), 0)
		}, func(r *Report) int { return len(r.Diverged) }, "differ between replicas"},
		{"follower lacks an acknowledged message at the writer's kill", func() *hist {
			b := clean(3)
			b.h.Faults = append(b.h.Faults, FaultRecord{Index: 0, Kind: KillWriter, Target: "master", Start: 3500, Healed: 8000, Scanned: true})
			return b.read(PhaseKill, "slave", 0, 0, idOf(0, 1), 0) // seq 2 and 3 were acknowledged before 3500
		}, func(r *Report) int { return r.replicaLost() }, "not on any follower"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := Check(&tc.build().h)
			if n := tc.count(r); n == 0 {
				t.Fatalf("not detected:\n%s", r)
			}
			f := strings.Join(r.Failures(), "; ")
			switch {
			case tc.fails == "" && f != "":
				t.Fatalf("allowed finding failed the run: %s", f)
			case tc.fails != "" && !strings.Contains(f, tc.fails):
				t.Fatalf("failures %q, want one naming %q", f, tc.fails)
			case tc.fails != "" && !strings.HasPrefix(r.Summary(), "FAIL "):
				t.Fatalf("summary %q", r.Summary())
			}
		})
	}
}

// TestCheckReplicaLossInAsyncModeIsReported: ASYNC_MASTER promises nothing at a kill of the master.
func TestCheckReplicaLossInAsyncModeIsReported(t *testing.T) {
	b := clean(3)
	b.h.Info.Role, b.h.Info.Durable, b.h.Info.Replicated = "ASYNC_MASTER", false, false
	b.h.Faults = append(b.h.Faults, FaultRecord{Index: 0, Kind: KillWriter, Target: "master", Start: 3500, Healed: 8000, Scanned: true})
	r := Check(&b.h)
	if r.replicaLost() != 3 || len(r.Failures()) > 0 { // the slave held none of the three
		t.Fatalf("replica lost %d, failures %v", r.replicaLost(), r.Failures())
	}
}

// TestCheckReplicaLossAfterPowerLossOfEveryNode: with ASYNC_FLUSH a power loss of every node may lose
// acknowledged messages (reported, not failed); at a later kill of the writer the follower cannot hold
// them, and that is not a replica's loss. One acknowledged after that power loss and missing at the kill
// still fails the run.
func TestCheckReplicaLossAfterPowerLossOfEveryNode(t *testing.T) {
	build := func(lateMissing bool) *hist {
		b := newHist()
		b.h.Info.Flush = "ASYNC_FLUSH"
		b.send(0, 1, 1, 0, 1000, SendOK, 0) // lost in the power loss of every node (2000..2500)
		b.send(0, 2, 1, 0, 3000, SendOK, 0).stored(0, 0, idOf(0, 2))
		b.send(0, 3, 1, 0, 3200, SendOK, 1).stored(0, 1, idOf(0, 3))
		b.h.Faults = append(b.h.Faults,
			FaultRecord{Index: 0, Kind: PowerLossAll, Target: "all", Start: 2000, Healed: 2500},
			FaultRecord{Index: 1, Kind: KillWriter, Target: "master", Start: 3500, Healed: 8000, Scanned: true})
		b.read(PhaseKill, "slave", 0, 0, idOf(0, 2), 1)
		if !lateMissing {
			b.read(PhaseKill, "slave", 0, 1, idOf(0, 3), 1)
		}
		return b
	}
	r := Check(&build(false).h)
	if f := r.Failures(); len(f) > 0 || r.replicaLost() != 0 || len(r.Lost) != 1 || r.ReplicaLost[0].LostBefore != 1 {
		t.Fatalf("failures %v, replica lost %d, lost %v, outage %+v", f, r.replicaLost(), r.Lost, r.ReplicaLost)
	}
	r = Check(&build(true).h)
	if f := strings.Join(r.Failures(), "; "); r.replicaLost() != 1 || !strings.Contains(f, "not on any follower") {
		t.Fatalf("the message acknowledged after the power loss and missing at the kill: failures %q, replica lost %d", f, r.replicaLost())
	}
}

// TestCheckReplicaLossAfterPowerLossOfTheMaster: with ASYNC_FLUSH a power loss of the master may lose what its
// slave held (the slave then follows the master's shorter CommitLog); a later kill of the writer does not
// count those as missing on the followers. In Raft mode the power loss of one node explains no loss.
func TestCheckReplicaLossAfterPowerLossOfTheMaster(t *testing.T) {
	build := func(mode string) *hist {
		b := newHist()
		b.h.Info.Mode = mode
		b.h.Info.Flush = "ASYNC_FLUSH"
		b.send(0, 1, 1, 0, 1000, SendOK, 0) // on the slave at fault 0, lost with the master's page cache
		b.send(0, 2, 1, 0, 3000, SendOK, 0).stored(0, 0, idOf(0, 2))
		b.h.Faults = append(b.h.Faults,
			FaultRecord{Index: 0, Kind: PowerLossWriter, Target: "master", Start: 2000, Healed: 2500, Scanned: true},
			FaultRecord{Index: 1, Kind: KillWriter, Target: "master", Start: 3500, Healed: 8000, Scanned: true})
		b.read(PhaseKill, "slave", 0, 0, idOf(0, 1), 0)
		b.read(PhaseKill, "slave", 0, 0, idOf(0, 2), 1)
		return b
	}
	r := Check(&build(ModeMasterSlave).h)
	if f := r.Failures(); len(f) > 0 || r.replicaLost() != 0 || len(r.Lost) != 1 || r.ReplicaLost[1].LostBefore != 1 {
		t.Fatalf("failures %v, replica lost %d, lost %v, outage %+v", f, r.replicaLost(), r.Lost, r.ReplicaLost)
	}
	if !strings.Contains(r.String(), "1 lost before, to a power loss") {
		t.Fatalf("the report does not name the earlier loss:\n%s", r.String())
	}
	r = Check(&build(ModeRaft).h)
	if f := strings.Join(r.Failures(), "; "); r.replicaLost() != 1 || !strings.Contains(f, "not on any follower") {
		t.Fatalf("raft: failures %q, replica lost %d", f, r.replicaLost())
	}
}

// TestCheckFaultTiming: the first acknowledgement begun after a fault's start, and the longest gap between
// acknowledgements until the first one after the heal.
func TestCheckFaultTiming(t *testing.T) {
	b := newHist()
	// acks end at 1010, 2010, then none until 9010 and 10010; the fault runs 2500..8000.
	for i, start := range []int64{1000, 2000, 9000, 10000} {
		b.send(0, int64(i+1), 1, 0, start, SendOK, int64(i)).stored(0, int64(i), idOf(0, int64(i+1)))
	}
	b.send(0, 5, 1, 0, 3000, SendFailed, 0) // a failure inside the fault is not an ack
	b.h.Faults = append(b.h.Faults, FaultRecord{Index: 0, Kind: KillWriter, Target: "master", Start: 2500, Healed: 8000, Scanned: true})
	b.read(PhaseKill, "slave", 0, 0, idOf(0, 1), 0).read(PhaseKill, "slave", 0, 1, idOf(0, 2), 0)
	r := Check(&b.h)
	ft := r.Faults[0]
	if ft.FirstAck != (9010-2500)*time.Microsecond || ft.MaxGap != (9010-2500)*time.Microsecond {
		t.Fatalf("first ack %v, max gap %v", ft.FirstAck, ft.MaxGap)
	}
	// 1010 -> 2010 is the only gap outside the fault (2500 until the first ack after the heal, 9010).
	if r.QuietMaxGap != 1000*time.Microsecond {
		t.Fatalf("quiet gap %v", r.QuietMaxGap)
	}
	if d, ok := r.maxFailover(); !ok || d != ft.FirstAck || !strings.Contains(r.Summary(), "quiet-gap=1ms failover-max=7ms") {
		t.Fatalf("failover %v %v, summary %q", d, ok, r.Summary())
	}
	if len(r.Failures()) > 0 {
		t.Fatalf("failures %v", r.Failures())
	}
}

// TestHistoryFilesRoundTrip: what the recorders write, LoadHistory reads and CheckDir checks.
func TestHistoryFilesRoundTrip(t *testing.T) {
	dir := t.TempDir()
	b := clean(3)
	if err := writeJSON(filepath.Join(dir, RunFile), b.h.Info); err != nil {
		t.Fatal(err)
	}
	for _, x := range []struct {
		file string
		recs []any
	}{{SendsFile, anys(b.h.Sends)}, {ReadsFile, anys(b.h.Reads)}} {
		rec, err := newRecorder(filepath.Join(dir, x.file))
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range x.recs {
			rec.add(v)
		}
		if err := rec.Close(); err != nil {
			t.Fatal(err)
		}
	}
	r, err := CheckDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if r.Acked != 3 || len(r.Failures()) > 0 {
		t.Fatalf("acked %d failures %v", r.Acked, r.Failures())
	}
}

func anys[T any](s []T) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

// TestCheckUnscannedKillIsNotCompared: a kill whose survivors were not scanned (a Raft group, a failed
// scan) has no outage reads to compare; it must not count every acknowledged message as missing.
func TestCheckUnscannedKillIsNotCompared(t *testing.T) {
	b := clean(3)
	b.h.Info.Mode, b.h.Info.Role = ModeRaft, "raft"
	b.h.Faults = append(b.h.Faults, FaultRecord{Index: 0, Kind: KillWriter, Target: "n0", Start: 3500, Healed: 8000})
	r := Check(&b.h)
	if len(r.ReplicaLost) != 0 || len(r.Failures()) > 0 {
		t.Fatalf("replica lost %v, failures %v", r.ReplicaLost, r.Failures())
	}
}

// powerLossHist is clean(3) through a power loss of every broker at 3500 µs that lost seq 3 (acknowledged
// at offset 2), whose offset seq 4 then took: what an ASYNC_FLUSH group may do.
func powerLossHist(flush string) *hist {
	b := newHist()
	b.h.Info.Flush = flush
	for seq := int64(1); seq <= 2; seq++ {
		b.send(0, seq, 1, 0, seq*1000, SendOK, seq-1).stored(0, seq-1, idOf(0, seq))
	}
	b.send(0, 3, 1, 0, 3000, SendOK, 2).read(PhaseRun, "master", 0, 2, idOf(0, 3), 0)
	b.h.Faults = append(b.h.Faults, FaultRecord{Index: 0, Kind: PowerLossAll, Target: "all", Start: 3500, Healed: 8000})
	// The consumers had read seq 3 at offset 2 and moved on: seq 4, stored there, is never consumed.
	return b.send(0, 4, 1, 0, 9000, SendOK, 2).read(PhaseFinal, "master", 0, 2, idOf(0, 4), 0).
		read(PhaseFinal, "slave", 0, 2, idOf(0, 4), 0)
}

// TestCheckPowerLoss: after a power loss, SYNC_FLUSH must have lost nothing acknowledged (a loss, and the
// offset the lost message had taken by another, fail the run); ASYNC_FLUSH reports both apart and passes.
func TestCheckPowerLoss(t *testing.T) {
	r := Check(&powerLossHist("SYNC_FLUSH").h)
	f := strings.Join(r.Failures(), "; ")
	if len(r.Lost) != 1 || !strings.Contains(f, "acknowledged messages lost") || !strings.Contains(f, "queue offsets used twice") {
		t.Fatalf("SYNC_FLUSH: lost %v, failures %q\n%s", r.Lost, f, r)
	}
	if !strings.Contains(r.Summary(), "power-losses=1") || strings.Contains(r.Summary(), "offsets-reused") {
		t.Fatalf("SYNC_FLUSH summary %q", r.Summary())
	}

	b := powerLossHist("ASYNC_FLUSH")
	b.h.Info.Mode, b.h.Info.Role = ModeRaft, "raft" // Durable: a majority holds every acknowledgement
	r = Check(&b.h)
	if len(r.Lost) != 1 || len(r.OffsetsReused) != 2 || len(r.OffsetConflicts) != 0 || len(r.Failures()) != 0 {
		t.Fatalf("ASYNC_FLUSH: lost %v, reused %v, conflicts %v, failures %v\n%s", r.Lost, r.OffsetsReused,
			r.OffsetConflicts, r.Failures(), r)
	}
	if !strings.Contains(r.Summary(), "lost=1 ") || !strings.Contains(r.Summary(), "power-losses=1 offsets-reused=2") ||
		!strings.Contains(r.Summary(), "not-consumed=0 ") {
		t.Fatalf("ASYNC_FLUSH summary %q", r.Summary())
	}
	if len(r.Faults) != 1 || r.Faults[0].Lost != 1 || r.Faults[0].LostSpan != 490*time.Microsecond ||
		!strings.Contains(r.String(), "1 acknowledged lost") {
		t.Fatalf("loss not given to the power loss: %+v", r.Faults)
	}
	// A conflict between two messages that were not lost still fails it.
	b.read(PhaseFinal, "slave", 0, 1, idOf(0, 4), 0)
	if r = Check(&b.h); !strings.Contains(strings.Join(r.Failures(), "; "), "queue offsets used twice") {
		t.Fatalf("a conflict of messages not lost passed: %v", r.Failures())
	}
}

// TestCheckPowerLossTookAnUnacknowledgedCopy: with ASYNC_FLUSH, a send whose first attempt failed was
// stored at offset 2 and read there, a power loss took that copy, the retry was acknowledged at offset 3
// and another message took offset 2. The offset read with two ids is the loss's doing, reported apart; the
// same reads without a power loss between them fail the run.
func TestCheckPowerLossTookAnUnacknowledgedCopy(t *testing.T) {
	build := func(powerLoss bool) *hist {
		b := clean(2)
		b.h.Info.Mode, b.h.Info.Role, b.h.Info.Flush = ModeRaft, "raft", "ASYNC_FLUSH"
		b.send(0, 3, 1, 0, 3000, SendFailed, 0)
		b.h.Reads = append(b.h.Reads, ReadRecord{Phase: PhaseRun, Node: "master", Queue: 0, Offset: 2, ID: idOf(0, 3), Time: 3100})
		kind := KillFollower
		if powerLoss {
			kind = PowerLossWriter
		}
		b.h.Faults = append(b.h.Faults, FaultRecord{Index: 0, Kind: kind, Target: "master", Start: 3500, Healed: 8000})
		b.send(0, 3, 2, 0, 9000, SendOK, 3).stored(0, 3, idOf(0, 3))
		b.send(1, 1, 1, 0, 9100, SendOK, 2)
		b.h.Reads = append(b.h.Reads, ReadRecord{Phase: PhaseFinal, Node: "master", Queue: 0, Offset: 2, ID: idOf(1, 1), Time: 9500},
			ReadRecord{Phase: PhaseFinal, Node: "slave", Queue: 0, Offset: 2, ID: idOf(1, 1), Time: 9500})
		return b
	}
	r := Check(&build(true).h)
	if len(r.OffsetsReused) != 1 || len(r.OffsetConflicts) != 0 || len(r.Failures()) != 0 {
		t.Fatalf("after a power loss: reused %v, conflicts %v, failures %v", r.OffsetsReused, r.OffsetConflicts, r.Failures())
	}
	r = Check(&build(false).h)
	if len(r.OffsetConflicts) != 1 || !strings.Contains(strings.Join(r.Failures(), "; "), "queue offsets used twice") {
		t.Fatalf("without a power loss: conflicts %v, failures %v", r.OffsetConflicts, r.Failures())
	}
}

// TestCheckDiskFailure: a failed disk (disk-eio-*) drops what its node had not synced, as a power loss does:
// under ASYNC_FLUSH the unacknowledged copy it took and the offset that went to another message are reported
// apart, not failed; a failed writer's disk counts as losing the writer (failover-max); the summary counts
// the disk faults.
func TestCheckDiskFailure(t *testing.T) {
	b := clean(2)
	b.h.Info.Mode, b.h.Info.Role, b.h.Info.Flush = ModeRaft, "raft", "ASYNC_FLUSH"
	b.send(0, 3, 1, 0, 3000, SendFailed, 0)
	b.h.Reads = append(b.h.Reads, ReadRecord{Phase: PhaseRun, Node: "master", Queue: 0, Offset: 2, ID: idOf(0, 3), Time: 3100})
	b.h.Faults = append(b.h.Faults, FaultRecord{Index: 0, Kind: DiskEIOWriter, Target: "master", Start: 3500, Healed: 8000},
		FaultRecord{Index: 1, Kind: DiskSlowFollower, Target: "slave", Start: 8500, Healed: 8600})
	b.send(0, 3, 2, 0, 9000, SendOK, 3).stored(0, 3, idOf(0, 3))
	b.send(1, 1, 1, 0, 9100, SendOK, 2)
	b.h.Reads = append(b.h.Reads, ReadRecord{Phase: PhaseFinal, Node: "master", Queue: 0, Offset: 2, ID: idOf(1, 1), Time: 9500},
		ReadRecord{Phase: PhaseFinal, Node: "slave", Queue: 0, Offset: 2, ID: idOf(1, 1), Time: 9500})
	r := Check(&b.h)
	if len(r.OffsetsReused) != 1 || len(r.OffsetConflicts) != 0 || len(r.Failures()) != 0 {
		t.Fatalf("after a failed disk: reused %v, conflicts %v, failures %v", r.OffsetsReused, r.OffsetConflicts, r.Failures())
	}
	if d, ok := r.maxFailover(); !ok || d != 5510*time.Microsecond {
		t.Fatalf("failover after the writer's disk failed: %v %v, want 5.51ms", d, ok)
	}
	if s := r.Summary(); !strings.Contains(s, " disk-faults=2 offsets-reused=1 ") || strings.Contains(s, "power-losses") {
		t.Fatalf("summary %q", s)
	}
	// Under SYNC_FLUSH the same history fails: nothing promised that copy, but the offset used twice is
	// what a consumer that read it would skip.
	b.h.Info.Flush = "SYNC_FLUSH"
	if r = Check(&b.h); !strings.Contains(strings.Join(r.Failures(), "; "), "queue offsets used twice") {
		t.Fatalf("SYNC_FLUSH: failures %v", r.Failures())
	}
}

// TestCheckTailCutFromTheSlave: under SYNC_MASTER + SYNC_FLUSH the master wrote a message it never
// acknowledged and sent it to the slave; its disk failed before it synced it; the slave's scan at the
// failure read it at 0/2; the master came back without it, the slave was cut back, and another message took
// 0/2. Reported as a tail cut, not failed. The same reads fail the run when the writer had been read with
// it too, when it had been acknowledged, or without a fault of the writer that drops unsynced bytes.
func TestCheckTailCutFromTheSlave(t *testing.T) {
	build := func(kind string, readOnMaster, acked bool) *hist {
		b := clean(2)
		status := SendRejected
		if acked {
			status = SendOK
		}
		b.send(0, 3, 1, 0, 3000, status, 2)
		b.h.Reads = append(b.h.Reads, ReadRecord{Phase: PhaseKill, Node: "slave", Queue: 0, Offset: 2, ID: idOf(0, 3), Time: 5000})
		if readOnMaster {
			b.h.Reads = append(b.h.Reads, ReadRecord{Phase: PhaseRun, Node: "master", Queue: 0, Offset: 2, ID: idOf(0, 3), Time: 3100})
		}
		b.h.Faults = append(b.h.Faults, FaultRecord{Index: 0, Kind: kind, Target: "master", Start: 3500, Healed: 8000})
		b.send(1, 1, 1, 0, 9000, SendOK, 2)
		b.h.Reads = append(b.h.Reads, ReadRecord{Phase: PhaseRun, Node: "master", Queue: 0, Offset: 2, ID: idOf(1, 1), Time: 9500},
			ReadRecord{Phase: PhaseFinal, Node: "master", Queue: 0, Offset: 2, ID: idOf(1, 1), Time: 9600},
			ReadRecord{Phase: PhaseFinal, Node: "slave", Queue: 0, Offset: 2, ID: idOf(1, 1), Time: 9600})
		return b
	}
	r := Check(&build(DiskEIOWriter, false, false).h)
	if len(r.TailCut) != 1 || len(r.OffsetConflicts) != 0 || len(r.Failures()) != 0 || !strings.Contains(r.Summary(), " tail-cut=1") {
		t.Fatalf("tail cut: %v, conflicts %v, failures %v, summary %q", r.TailCut, r.OffsetConflicts, r.Failures(), r.Summary())
	}
	for name, b := range map[string]*hist{
		"read on the master too": build(DiskEIOWriter, true, false),
		"acknowledged":           build(DiskEIOWriter, false, true),
		"no unsynced bytes lost": build(KillWriter, false, false),
	} {
		if r := Check(&b.h); len(r.TailCut) != 0 || !strings.Contains(strings.Join(r.Failures(), "; "), "queue offsets used twice") {
			t.Errorf("%s: tail cut %v, failures %v", name, r.TailCut, r.Failures())
		}
	}
}
