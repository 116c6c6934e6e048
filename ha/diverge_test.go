package ha

import (
	"strconv"
	"testing"
	"time"
)

// cloneLog returns a log holding the same bytes as l.
func cloneLog(t testing.TB, l *memLog) *memLog {
	t.Helper()
	c := newMemLog(l.fileSize)
	base, data := l.bytes()
	if len(data) > 0 {
		if err := c.AppendCommitLog(base, data); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// rewriteTail flips one payload byte in every record that starts at or after from: the same
// records, sizes and offsets, other bytes (a master that lost its tail and wrote new records).
func rewriteTail(t testing.TB, l *memLog, from int64) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for pos := int64(0); pos < int64(len(l.data)); {
		size := int64(int32(uint32(l.data[pos])<<24 | uint32(l.data[pos+1])<<16 | uint32(l.data[pos+2])<<8 | uint32(l.data[pos+3])))
		if pos+l.base >= from && size > 40 {
			l.data[pos+20] ^= 0xFF
			n++
		}
		pos += size
	}
	if n == 0 {
		t.Fatal("rewriteTail changed nothing")
	}
}

// TestDivergentSlaveTruncates covers the slave whose log parts from its master's (#323, where
// RocketMQ 4.x reconnects and fails forever): it truncates to the common offset, says so, and
// then holds exactly the master's log.
func TestDivergentSlaveTruncates(t *testing.T) {
	cases := []struct {
		name string
		// build returns master and slave logs and the offset at which they part.
		build func(t *testing.T) (master, slave *memLog, common int64)
	}{
		{"slave has a tail the master never had", func(t *testing.T) (*memLog, *memLog, int64) {
			m := newMemLog(testFileSize)
			m.putRecords(100, 1)
			s := cloneLog(t, m)
			s.putRecords(30, 2)
			return m, s, m.MaxPhyOffset()
		}},
		{"master restarted and rewrote the same offsets with other bytes", func(t *testing.T) (*memLog, *memLog, int64) {
			m := newMemLog(testFileSize)
			m.putRecords(60, 3)
			common := m.MaxPhyOffset()
			m.putRecords(40, 4)
			s := cloneLog(t, m)
			rewriteTail(t, s, common)
			return m, s, common
		}},
		{"master rewrote its tail and wrote past the slave", func(t *testing.T) (*memLog, *memLog, int64) {
			m := newMemLog(testFileSize)
			m.putRecords(60, 5)
			common := m.MaxPhyOffset()
			m.putRecords(20, 6)
			s := cloneLog(t, m)
			rewriteTail(t, s, common)
			m.putRecords(80, 7)
			return m, s, common
		}},
		{"the logs part one file before the slave's tail", func(t *testing.T) (*memLog, *memLog, int64) {
			m := newMemLog(testFileSize)
			m.putRecords(50, 8) // ~27 KiB, inside the first file
			common := m.MaxPhyOffset()
			s := cloneLog(t, m)
			m.putRecords(200, 9) // both tails run into the second file
			s.putRecords(220, 10)
			return m, s, common
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			master, slave, common := tc.build(t)
			before := slave.MaxPhyOffset()
			p := newPair(t, master, slave)
			waitIdentical(t, master, slave)
			if base, _ := slave.bytes(); base != 0 {
				t.Fatalf("slave starts at %d after truncating", base)
			}
			if p.logs.Count("diverged", "truncating", "from="+strconv.FormatInt(before, 10)) != 1 {
				t.Fatalf("the truncation from %d was not logged once", before)
			}
			if p.logs.Count("a peer that lies") != 0 {
				t.Fatal("the slave reported beyond the master's max: it should have truncated first")
			}
			t.Logf("slave ended at %d, the logs part at %d, master at %d", before, common, master.MaxPhyOffset())
		})
	}
}

// TestUnrelatedSlaveIsNotTruncated: a slave whose log shares nothing with the master's (a wrong
// master, or a slave behind the master's oldest file, #3388) keeps its data and says why it
// cannot replicate.
func TestUnrelatedSlaveIsNotTruncated(t *testing.T) {
	cases := []struct {
		name   string
		master func() *memLog
		want   string
	}{
		{"different logs", func() *memLog { m := newMemLog(testFileSize); m.putRecords(100, 11); return m }, "no probe"},
		{"slave behind the master's oldest file", func() *memLog {
			m := newMemLog(testFileSize)
			if err := m.AppendCommitLog(4*testFileSize, nil); err != nil {
				panic(err)
			}
			m.putRecords(100, 12)
			return m
		}, "before the master's oldest CommitLog file"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			slave := newMemLog(testFileSize)
			slave.putRecords(100, 13)
			_, want := slave.bytes()
			p := newPair(t, tc.master(), slave)
			eventually(t, 10*time.Second, func() bool { return p.logs.Count("shares no record", tc.want) >= 2 }, "the refusal logged twice")
			if _, got := slave.bytes(); string(got) != string(want) {
				t.Fatal("the slave's log changed")
			}
			if n := len(p.svc.Connections()); n != 0 {
				t.Fatalf("%d HA connections: the slave should not stream", n)
			}
		})
	}
}

// TestDivergentSlaveWithoutCheck: without the tail check (a RocketMQ master) a slave with a tail
// the master never had is refused on the HA port (its report lies beyond the master's max) and
// changes nothing, as in RocketMQ 4.x.
func TestDivergentSlaveWithoutCheck(t *testing.T) {
	master := newMemLog(testFileSize)
	master.putRecords(50, 14)
	slave := cloneLog(t, master)
	slave.putRecords(10, 15)
	before := slave.MaxPhyOffset()
	sink, log := newLogSink(t)
	svc := startService(t, testConfig(), master, testFileSize, log)
	startClient(t, testConfig(), slave, testFileSize, svc.Addr().String(), nil, log)
	eventually(t, 10*time.Second, func() bool { return sink.Count("a peer that lies gets nothing") >= 2 }, "the master refused the slave twice")
	if slave.MaxPhyOffset() != before || svc.AckedOffset() != 0 {
		t.Fatalf("slave at %d (was %d), master acknowledged %d", slave.MaxPhyOffset(), before, svc.AckedOffset())
	}
}
