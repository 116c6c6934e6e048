package message

import (
	"encoding/binary"
	"fmt"
)

// Runs of records: a CommitLog range that holds stored-message records back to back, as a
// Raft message entry does (raftlog places the records its proposer encoded, and recovery
// checks them where they lie).

// PatchRecords checks that b holds whole stored-message records back to back (framing only)
// and prepares them for a framed CommitLog at phy (the offset of b[0]): each record's
// physical offset is written, and its queue offset zeroed, as the store's dispatch assigns it
// later. It returns the number of records.
func PatchRecords(b []byte, phy int64) (int, error) { return PatchRecordsWith(b, phy, nil) }

// PatchRecordsWith is PatchRecords with each record's queue offset from queueOffset (called in
// order, after the record's framing was checked; nil writes 0). On an error the records
// before the bad one are patched.
func PatchRecordsWith(b []byte, phy int64, queueOffset func(v *RecordView) int64) (int, error) {
	n := 0
	for off := 0; off < len(b); n++ {
		v, err := ParseRecord(b[off:])
		if err != nil {
			return n, fmt.Errorf("record %d at %d: %w", n, phy+int64(off), err)
		}
		var qo int64
		if queueOffset != nil {
			qo = queueOffset(&v)
		}
		binary.BigEndian.PutUint64(b[off+OffPhysicalOffset:], uint64(phy+int64(off)))
		binary.BigEndian.PutUint64(b[off+OffQueueOffset:], uint64(qo))
		off += v.Size
	}
	return n, nil
}

// TakesQueueOffset reports whether a record with sysFlag takes a queue offset of its queue:
// every record but prepared and rolled-back transaction messages, which keep 0 (RocketMQ's
// rule; they get no ConsumeQueue unit).
func TakesQueueOffset(sysFlag int32) bool {
	t := sysFlag & SysFlagTransactionMask
	return t != SysFlagTransactionPrepared && t != SysFlagTransactionRollback
}

// CheckRecords checks that b holds whole stored-message records back to back, each carrying
// its own physical offset (phy is b[0]'s) and, with checkCRC, a matching body CRC: what a
// recovery accepts. Every error wraps ErrCorruptRecord. It returns the number of records.
func CheckRecords(b []byte, phy int64, checkCRC bool) (int, error) {
	n := 0
	for off := 0; off < len(b); n++ {
		v, err := ParseRecord(b[off:])
		if err != nil {
			return n, fmt.Errorf("record %d at %d: %w", n, phy+int64(off), err)
		}
		if at := phy + int64(off); v.PhysicalOffset != at {
			return n, fmt.Errorf("%w: record %d at %d has physical offset %d", ErrCorruptRecord, n, at, v.PhysicalOffset)
		}
		if checkCRC && BodyCRC(v.Body) != v.BodyCRC {
			return n, fmt.Errorf("%w: record %d at %d: body CRC 0x%08X, stored 0x%08X", ErrCorruptRecord, n,
				phy+int64(off), uint32(BodyCRC(v.Body)), uint32(v.BodyCRC))
		}
		off += v.Size
	}
	return n, nil
}
