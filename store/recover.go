package store

import (
	"encoding/binary"
	"fmt"
	"os"

	"github.com/rocketraft/rocketraft/message"
	"golang.org/x/sys/unix"
)

// normalRecoveryFiles is how many of the last CommitLog files a normal recovery checks
// (RocketMQ recoverNormally starts at the third file from the end).
const normalRecoveryFiles = 3

// recover loads the files and makes them consistent:
//
//  1. ConsumeQueues: each is cut at its first invalid unit (files of the wrong size are
//     resized and marked damaged).
//  2. CommitLog: records are checked (magic, size, fields, body CRC, physical offset) from the
//     third-last file after a clean close, or from the file holding the checkpoint's safe
//     point after a crash (abort file present, or checkpoint missing); the log is truncated at
//     the first bad or torn record and the tail of that file is zeroed.
//  3. ConsumeQueue units and index entries past the new end are dropped, and the last index
//     file's slots are replayed from its entries since the last index flush (index_slots.go).
//  4. Dispatch re-runs from the earliest point anything may be missing (idempotently) up to
//     the end, then the next queue offsets are taken from the ConsumeQueues.
func (s *Store) recover() error {
	cl := s.commitLog
	if _, err := cl.q.load(loadOptions{repairLast: true}); err != nil {
		return err
	}
	if err := s.cqs.load(); err != nil {
		return err
	}
	if s.index != nil {
		if err := s.index.load(); err != nil {
			return err
		}
	}
	cp := s.checkpoint.snapshot()
	abnormal := !s.lastExitOK || !s.checkpoint.existed
	files := cl.q.snapshot()
	var scanStart, end int64
	var reason string
	if len(files) > 0 {
		start := max(len(files)-normalRecoveryFiles, 0)
		if abnormal {
			safe := int64(0)
			if s.checkpoint.existed {
				safe = cp.safeOffset(s.cfg.MessageIndexSafe)
			}
			start = 0
			for i, f := range files {
				if f.from <= safe {
					start = i
				}
			}
		}
		scanStart = files[start].from
		end, reason = s.scanCommitLog(scanStart)
		if reason != "" {
			s.log.Warn("commitlog recovery truncates at the first bad record", "at", cl.describeOffset(end), "reason", reason)
		}
	}
	s.log.Info("recovering store", "abnormal", abnormal, "lastExitOK", s.lastExitOK,
		"checkpoint", s.checkpoint.existed, "scanFrom", scanStart, "commitlogEnd", end)
	// After a clean Close the scan ends at the zeros that follow the last record; after a
	// crash, or a bad record, stale bytes may lie anywhere past the end and are zeroed.
	if err := cl.q.truncateTo(end, abnormal || reason != ""); err != nil {
		return err
	}
	cl.q.flushedWhere.Store(end)
	cl.q.committedWhere.Store(end)
	for _, cq := range s.cqs.all() {
		if err := cq.truncateAbove(end); err != nil {
			return err
		}
	}
	if s.index != nil {
		s.index.truncateAbove(end)
		s.repairIndexSlots()
	}
	if abnormal {
		// What the crashed process left in the page cache is not known to be on disk yet.
		if err := syncFileSystems(s.cfg.StorePathRootDir, s.cfg.commitLogDir()); err != nil {
			return err
		}
		s.reportAllSynced()
	}
	s.reput.from.Store(s.reputStart(abnormal, scanStart, end))
	if err := withFaultPanics(func() error { s.doReput(false); return nil }); err != nil {
		return err
	}
	if from := s.reput.from.Load(); from < end {
		return fmt.Errorf("store: recovery dispatch stopped at %s before the commitlog end %d", cl.describeOffset(from), end)
	}
	minPhy := max(cl.q.minOffset(), 0)
	for _, cq := range s.cqs.all() {
		cl.setQueueOffset(queueKey{cq.topic, cq.queueID}, cq.maxOffset(), false)
		cq.correctMinOffset(minPhy)
	}
	s.checkpoint.update(func(d *checkpointData) {
		d.physicFlushedOffset = end
		d.confirmPhyOffset = max(d.confirmPhyOffset, 0)
	})
	errFlush := s.flushConsumeQueues(0)
	if errFlush != nil {
		return errFlush
	}
	return nil
}

// scanCommitLog checks records from offset and returns the end of the last good one, with
// the reason it stopped unless it reached a clean end (zeros, or the end of the files).
func (s *Store) scanCommitLog(offset int64) (int64, string) {
	q := s.commitLog.q
	checkCRC := s.cfg.CheckCRCOnRecover
	for {
		f := q.find(offset)
		if f == nil {
			return offset, ""
		}
		pos := offset - f.from
		if pos+8 > f.size {
			return offset, fmt.Sprintf("%d bytes left in the file, too few for a record header", f.size-pos)
		}
		size := int64(int32(binary.BigEndian.Uint32(f.data[pos:])))
		magic := int32(binary.BigEndian.Uint32(f.data[pos+4:]))
		if magic == message.BlankMagicCode {
			if size != f.size-pos {
				return offset, fmt.Sprintf("blank record of %d bytes does not reach the file end (%d bytes left)", size, f.size-pos)
			}
			offset = f.from + f.size
			continue
		}
		if size == 0 && magic == 0 {
			return offset, ""
		}
		v, err := message.ParseRecord(f.data[pos:f.size])
		if err != nil {
			return offset, err.Error()
		}
		if v.PhysicalOffset != offset {
			return offset, fmt.Sprintf("physical offset field %d does not match the record's position", v.PhysicalOffset)
		}
		if checkCRC {
			if crc := message.BodyCRC(v.Body); crc != v.BodyCRC {
				return offset, fmt.Sprintf("body CRC 0x%08X does not match the stored 0x%08X", uint32(crc), uint32(v.BodyCRC))
			}
		}
		offset += int64(v.Size)
	}
}

// reputStart is where dispatch must restart so nothing is missing: after the last unit of
// the ConsumeQueues (their furthest end; dispatch runs in CommitLog order), lowered to the
// scan start after a crash, to the end of any damaged queue, and to the index's progress.
// Dispatching from earlier is harmless: existing units and entries are skipped.
func (s *Store) reputStart(abnormal bool, scanStart, end int64) int64 {
	minPhy := max(s.commitLog.q.minOffset(), 0)
	from := int64(-1)
	for _, cq := range s.cqs.all() {
		from = max(from, cq.maxPhysicOffset.Load())
	}
	if from < 0 {
		from = minPhy
	}
	if abnormal {
		from = min(from, scanStart)
	}
	for _, cq := range s.cqs.all() {
		if cq.damaged {
			e := cq.maxPhysicOffset.Load()
			if e < 0 {
				e = minPhy
			}
			s.log.Warn("rebuilding a damaged consume queue from the commitlog", "topic", cq.topic, "queueId", cq.queueID, "from", e)
			from = min(from, e)
		}
	}
	if s.index != nil {
		if t := s.index.indexedThrough; t < 0 {
			from = minPhy
		} else {
			from = min(from, t)
		}
	}
	return min(max(from, minPhy), end)
}

// repairIndexSlots replays into the last index file's slots its entries from the checkpoint's index flush on
// (all of them without a checkpoint): what a process that died had only in memory (index_slots.go).
func (s *Store) repairIndexSlots() {
	flushed := int64(-1)
	if s.checkpoint.existed {
		flushed = s.checkpoint.snapshot().indexFlushedOffset
	}
	s.index.repairSlots(flushed)
}

// syncFileSystems flushes the file systems holding the folders (syncfs).
func syncFileSystems(dirs ...string) error {
	for _, dir := range dirs {
		d, err := os.Open(dir)
		if err != nil {
			return fmt.Errorf("store: open %s: %w", dir, err)
		}
		err = unix.Syncfs(int(d.Fd()))
		d.Close()
		if err != nil {
			return fmt.Errorf("store: syncfs %s: %w", dir, err)
		}
	}
	return nil
}
