package raftlog

import (
	"encoding/binary"
	"fmt"

	"github.com/rocketraft/rocketraft/message"
)

// recover finds the valid entries of the CommitLog (see Open) and brings the index in line:
// slots of the entries scanned are rewritten, slots past the last entry cleared. dirty
// reports that the scan stopped at bytes that are not zeros (a torn or corrupt entry).
func (s *Store) recover(checkCRC bool) (st logState, dirty bool, err error) {
	minPhy := s.cl.MinPhyOffset()
	fileEnd := s.cl.CommitLogEnd()
	start := s.cl.RecoveryStart()
	sc := scanner{s: s, checkCRC: checkCRC, fileEnd: fileEnd}
	if start > minPhy && !sc.trustIndexBefore(start) {
		s.log.Warn("raft log index does not match the commitlog; scanning the whole log", "from", minPhy, "to", start)
		start = minPhy
	}
	if err := sc.scan(start); err != nil {
		return st, false, err
	}
	st = logState{last: sc.last, lastTerm: sc.lastTerm, end: sc.end}
	if sc.last != 0 {
		st.first = sc.first
		if start > minPhy {
			h, err := s.headerAt(minPhy)
			if err != nil {
				return st, false, fmt.Errorf("raftlog: first entry of the commitlog at %d: %w", minPhy, err)
			}
			st.first = h.index
		}
	}
	if err := s.idx.clearFrom(st.last + 1); err != nil {
		return st, false, err
	}
	if err := s.idx.sync(); err != nil {
		return st, false, err
	}
	if sc.reason != "" {
		s.log.Warn("raft log recovery cuts the log at the first bad entry", "offset", sc.end, "reason", sc.reason)
	}
	s.log.Info("recovered raft log", "first", st.first, "last", st.last, "lastTerm", st.lastTerm, "end", st.end, "scannedFrom", start)
	return st, sc.reason != "", nil
}

// scanner walks frames and fillers from a boundary, checking each frame.
type scanner struct {
	s        *Store
	checkCRC bool
	fileEnd  int64

	first, last, lastTerm uint64
	end                   int64
	// reason is why the scan stopped before the zeros or the end, "" otherwise.
	reason string
}

// trustIndexBefore reports whether the entry starting the file at start matches its index
// slot: the slots before it are then trusted (they were synced when that file began), and the
// scan carries on with the previous entry's term.
func (sc *scanner) trustIndexBefore(start int64) bool {
	h, err := sc.s.headerAt(start)
	if err != nil {
		return false
	}
	sl, ok := sc.s.idx.get(h.index)
	if !ok || sl.pos != start || sl.size != h.size || sl.term != h.term {
		return false
	}
	if prev, ok := sc.s.idx.get(h.index - 1); ok {
		sc.last, sc.lastTerm = h.index-1, prev.term
	}
	return true
}

// scan checks units from off to the first zeros, bad unit or the end of the files.
func (sc *scanner) scan(off int64) error {
	fs := sc.s.fileSize
	sc.end = off
	for off < sc.fileEnd {
		inFile := off % fs
		if fs-inFile < blankHeaderSize {
			sc.reason = fmt.Sprintf("%d bytes before the file end, too few for a unit", fs-inFile)
			return nil
		}
		head, release, err := sc.s.cl.ReadCommitLog(off, blankHeaderSize)
		if err != nil {
			return fmt.Errorf("raftlog: recovery read at %d: %w", off, err)
		}
		size := int64(binary.BigEndian.Uint32(head))
		magic := int32(binary.BigEndian.Uint32(head[4:]))
		release()
		switch {
		case size == 0 && magic == 0:
			return nil
		case magic == message.BlankMagicCode:
			if size != fs-inFile {
				sc.reason = fmt.Sprintf("blank filler of %d bytes at %d does not reach the file end", size, off)
				return nil
			}
			off += size
			sc.end = off
			continue
		}
		h, ok, err := sc.checkFrame(off, size)
		if err != nil {
			return err
		}
		if !ok {
			return nil
		}
		kind := h.kind
		if err := sc.s.idx.put(h.index, slot{pos: off, term: h.term, size: h.size, typ: uint8(h.typ), kind: kind}); err != nil {
			return err
		}
		if sc.first == 0 {
			sc.first = h.index
		}
		sc.last, sc.lastTerm = h.index, h.term
		off += h.size
		sc.end = off
	}
	return nil
}

// checkFrame checks the frame at off (size from its first word); ok=false sets the reason.
func (sc *scanner) checkFrame(off, size int64) (frameHeader, bool, error) {
	fs := sc.s.fileSize
	if size < FrameHeaderSize || off%fs+size+blankHeaderSize > fs {
		sc.reason = fmt.Sprintf("unit of %d bytes at %d does not fit its file", size, off)
		return frameHeader{}, false, nil
	}
	f, release, err := sc.s.cl.ReadCommitLog(off, int(size))
	if err != nil {
		return frameHeader{}, false, fmt.Errorf("raftlog: recovery read at %d: %w", off, err)
	}
	defer release()
	h, err := parseHeader(f)
	switch {
	case err != nil:
		sc.reason = err.Error()
	case h.pos != off || h.size != size:
		sc.reason = fmt.Sprintf("frame at %d says it is at %d, %d bytes", off, h.pos, h.size)
	case sc.last != 0 && h.index != sc.last+1:
		sc.reason = fmt.Sprintf("entry %d at %d follows entry %d", h.index, off, sc.last)
	case h.term < sc.lastTerm:
		sc.reason = fmt.Sprintf("entry %d at %d has term %d after term %d", h.index, off, h.term, sc.lastTerm)
	default:
		if err := checkData(&h, f, sc.checkCRC); err != nil {
			sc.reason = fmt.Sprintf("entry %d at %d: %v", h.index, off, err)
		}
	}
	return h, sc.reason == "", nil
}
