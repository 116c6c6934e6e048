package ha

import (
	"testing"
	"time"

	"github.com/rocketraft/rocketraft/store"
)

// TestReplicatesByteForByte: records put on the master while a slave is connected reach the
// slave at the same offsets, byte for byte, across several CommitLog files.
func TestReplicatesByteForByte(t *testing.T) {
	p := newPair(t, nil, nil)
	eventually(t, 10*time.Second, p.client.Connected, "slave connected")
	// One record streamed first: the master picks where an empty slave starts when the slave's
	// first report arrives (its last file's start), and must pick 0 here.
	p.master.putRecords(1, 1)
	waitIdentical(t, p.master, p.slave)
	p.master.putRecords(399, 1) // ~220 KiB in all: four 64 KiB files with blank tails
	waitIdentical(t, p.master, p.slave)
	if base, _ := p.slave.bytes(); base != 0 {
		t.Fatalf("slave starts at %d, want 0", base)
	}
	eventually(t, 10*time.Second, func() bool { return p.svc.AckedOffset() == p.master.MaxPhyOffset() }, "master saw the final acknowledgement")
}

// TestEmptySlaveStartsAtMastersLastFile: as RocketMQ, a slave reporting 0 gets the log from the
// start of the master's last file, not from offset 0.
func TestEmptySlaveStartsAtMastersLastFile(t *testing.T) {
	master := newMemLog(testFileSize)
	master.putRecords(300, 2)
	p := newPair(t, master, nil)
	waitIdentical(t, p.master, p.slave)
	last := master.MaxPhyOffset() - master.MaxPhyOffset()%testFileSize
	if base, _ := p.slave.bytes(); base != last {
		t.Fatalf("slave starts at %d, want the master's last file start %d", base, last)
	}
	p.master.putRecords(50, 3)
	waitIdentical(t, p.master, p.slave)
}

// TestSlaveRestartResumesFromItsMax: a slave stopped and started again on the same log reports
// its own max offset and the master streams from there.
func TestSlaveRestartResumesFromItsMax(t *testing.T) {
	p := newPair(t, nil, nil)
	p.master.putRecords(100, 4)
	waitIdentical(t, p.master, p.slave)
	if err := p.client.Close(); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, func() bool { return len(p.svc.Connections()) == 0 }, "master dropped the stopped slave")
	resumeAt := p.slave.MaxPhyOffset()
	p.master.putRecords(100, 5)
	if got := waitStatus(t, p.svc, p.master.MaxPhyOffset()); got != store.PutSlaveNotAvailable {
		t.Fatalf("Wait with no slave connected = %v, want SLAVE_NOT_AVAILABLE", got)
	}
	startClient(t, testConfig(), p.slave, testFileSize, p.svc.Addr().String(), localChecker{p.master}, p.log)
	eventually(t, 10*time.Second, func() bool { return len(p.svc.Connections()) == 1 && p.svc.Connections()[0].RequestOffset >= 0 }, "slave reconnected")
	if got := p.svc.Connections()[0].RequestOffset; got != resumeAt {
		t.Fatalf("restarted slave requested %d, want its own max offset %d", got, resumeAt)
	}
	waitIdentical(t, p.master, p.slave)
}

// TestSlaveAppendFailureReconnects: when the slave cannot append, it drops the connection and
// tries again; once appends work again it catches up.
func TestSlaveAppendFailureReconnects(t *testing.T) {
	slave := newMemLog(testFileSize)
	slave.failAt = 20 << 10
	p := newPair(t, nil, slave)
	p.master.putRecords(100, 6)
	eventually(t, 10*time.Second, func() bool { return p.logs.Count("HA connection to the master", "injected append failure") >= 2 },
		"the slave retried after failed appends")
	slave.mu.Lock()
	slave.failAt = 0
	slave.mu.Unlock()
	waitIdentical(t, p.master, p.slave)
}

// TestGroupTransfer: a SYNC_MASTER put is answered SLAVE_NOT_AVAILABLE with no slave, PUT_OK once
// a slave acknowledged it, FLUSH_SLAVE_TIMEOUT when the slave stops acknowledging, and
// SLAVE_NOT_AVAILABLE when the slave is haSlaveFallbehindMax behind.
func TestGroupTransfer(t *testing.T) {
	master := newMemLog(testFileSize)
	_, log := newLogSink(t)
	cfg := testConfig()
	cfg.SlaveTimeout = 300
	cfg.HASlaveFallbehindMax = 32 << 10
	svc := startService(t, cfg, master, testFileSize, log)
	master.putRecords(10, 7)
	if got := waitStatus(t, svc, master.MaxPhyOffset()); got != store.PutSlaveNotAvailable {
		t.Fatalf("no slave: %v, want SLAVE_NOT_AVAILABLE", got)
	}

	// A peer that reports once and then never again: it is "OK" but never acknowledges more.
	peer := dialPeer(t, svc)
	peer.report(master.MaxPhyOffset())
	eventually(t, 10*time.Second, func() bool { return svc.AckedOffset() == master.MaxPhyOffset() }, "first report seen")
	if got := waitStatus(t, svc, master.MaxPhyOffset()); got != store.PutOK {
		t.Fatalf("acknowledged put: %v, want PUT_OK", got)
	}
	master.putRecords(5, 8)
	if got := waitStatus(t, svc, master.MaxPhyOffset()); got != store.PutFlushSlaveTimeout {
		t.Fatalf("unacknowledged put: %v, want FLUSH_SLAVE_TIMEOUT", got)
	}
	master.putRecords(100, 9) // now far more than haSlaveFallbehindMax ahead of the peer
	if got := waitStatus(t, svc, master.MaxPhyOffset()); got != store.PutSlaveNotAvailable {
		t.Fatalf("slave far behind: %v, want SLAVE_NOT_AVAILABLE", got)
	}

	peer.close()
}

// TestParkedPutsCompleteTogether: puts parked while a slave streams are all answered PUT_OK as
// its acknowledgements arrive.
func TestParkedPutsCompleteTogether(t *testing.T) {
	p := newPair(t, nil, nil)
	eventually(t, 10*time.Second, func() bool { return p.svc.IsSlaveOK(0) }, "slave reporting")
	results := make(chan store.PutStatus, 200)
	for range 200 {
		p.master.putRecords(1, 10)
		p.svc.Wait(p.master.MaxPhyOffset(), func(s store.PutStatus) { results <- s })
	}
	for i := range 200 {
		if s := <-results; s != store.PutOK {
			t.Fatalf("put %d: %v, want PUT_OK", i, s)
		}
	}
}

// TestCloseCompletesParkedPuts: Close answers every parked put.
func TestCloseCompletesParkedPuts(t *testing.T) {
	master := newMemLog(testFileSize)
	_, log := newLogSink(t)
	cfg := testConfig()
	cfg.SlaveTimeout = 60000
	svc := startService(t, cfg, master, testFileSize, log)
	master.putRecords(3, 11)
	peer := dialPeer(t, svc)
	peer.report(0)
	eventually(t, 10*time.Second, func() bool { return svc.IsSlaveOK(master.MaxPhyOffset()) }, "peer reporting")
	ch := make(chan store.PutStatus, 1)
	svc.Wait(master.MaxPhyOffset(), func(s store.PutStatus) { ch <- s })
	eventually(t, 10*time.Second, func() bool { return svc.transfer.pendingCount() == 1 }, "put parked")
	if err := svc.Close(); err != nil {
		t.Fatal(err)
	}
	if got := <-ch; got != store.PutFlushSlaveTimeout {
		t.Fatalf("parked put at Close: %v, want FLUSH_SLAVE_TIMEOUT", got)
	}
	if got := waitStatus(t, svc, 1); got != store.PutSlaveNotAvailable {
		t.Fatalf("Wait after Close: %v, want SLAVE_NOT_AVAILABLE", got)
	}
}
