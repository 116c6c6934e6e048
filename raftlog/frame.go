package raftlog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"time"

	"github.com/hashicorp/raft"
	"github.com/rocketraft/rocketraft/message"
)

// Frame layout (doc.go draws it). Wire format: never change.
const (
	// FrameMagic marks a framed Raft entry ("RAFT"); distinct from the stored-message magic
	// codes (0xDAA320A7, 0xDAA320AB) and the blank filler's (0xCBD43194).
	FrameMagic = int32(0x52414654)
	// FrameHeaderSize is the fixed header before the extensions and the data.
	FrameHeaderSize = 56

	fhTotalSize  = 0
	fhMagic      = 4
	fhIndex      = 8
	fhTerm       = 16
	fhPos        = 24
	fhAppendedAt = 32
	fhType       = 40
	fhKind       = 41
	fhExtLen     = 44
	fhDataCRC    = 48
	fhHeaderCRC  = 52

	// blankHeaderSize is the room a file keeps for the blank filler (size + magic).
	blankHeaderSize = 8
)

// Kinds of command data (the first byte of a LogCommand's Data, stored in the header and not in
// the data). Wire format: never change.
const (
	// KindRaw: anything else; the data is Data as it is.
	KindRaw byte = 0
	// KindMessages: stored-message records back to back (the broker's sends).
	KindMessages byte = 1
	// KindMeta: a metadata command (topics, subscription groups, offsets), applied by the
	// broker's state machine.
	KindMeta byte = 2
)

// castagnoli is the CRC32C table of the header and data checksums.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrCorruptFrame is wrapped by every error about bytes that do not form a valid frame.
var ErrCorruptFrame = errors.New("raftlog: corrupt frame")

// frameHeader is a decoded frame header.
type frameHeader struct {
	size       int64
	index      uint64
	term       uint64
	pos        int64
	appendedAt int64
	typ        raft.LogType
	kind       byte
	extLen     int64
	dataCRC    uint32
}

// dataOffset is where the data starts, from the frame start.
func (h *frameHeader) dataOffset() int64 { return FrameHeaderSize + h.extLen }

// end is the offset just after the frame.
func (h *frameHeader) end() int64 { return h.pos + h.size }

// splitData returns the kind and the stored data of a log: a command whose Data starts with
// a known kind stores the rest, anything else stores Data as it is.
func splitData(l *raft.Log) (byte, []byte) {
	if l.Type == raft.LogCommand && len(l.Data) > 0 && (l.Data[0] == KindMessages || l.Data[0] == KindMeta) {
		return l.Data[0], l.Data[1:]
	}
	return KindRaw, l.Data
}

// frameSize is the stored size of l.
func frameSize(l *raft.Log) int64 {
	_, data := splitData(l)
	return FrameHeaderSize + int64(len(l.Extensions)) + int64(len(data))
}

// appendFrame encodes l as a frame at pos to dst. Message records get their physical offsets
// and the queue offsets queueOffset gives them, 0 when it is nil (message.PatchRecordsWith).
func appendFrame(dst []byte, l *raft.Log, pos int64, queueOffset func(v *message.RecordView) int64) ([]byte, error) {
	kind, data := splitData(l)
	size := FrameHeaderSize + len(l.Extensions) + len(data)
	start := len(dst)
	dst = append(dst, make([]byte, FrameHeaderSize)...)
	dst = append(dst, l.Extensions...)
	dst = append(dst, data...)
	f := dst[start:]
	be := binary.BigEndian
	be.PutUint32(f[fhTotalSize:], uint32(size))
	be.PutUint32(f[fhMagic:], uint32(FrameMagic))
	be.PutUint64(f[fhIndex:], l.Index)
	be.PutUint64(f[fhTerm:], l.Term)
	be.PutUint64(f[fhPos:], uint64(pos))
	var at int64
	if !l.AppendedAt.IsZero() {
		at = l.AppendedAt.UnixNano()
	}
	be.PutUint64(f[fhAppendedAt:], uint64(at))
	f[fhType] = byte(l.Type)
	f[fhKind] = kind
	be.PutUint32(f[fhExtLen:], uint32(len(l.Extensions)))
	stored := f[FrameHeaderSize+len(l.Extensions):]
	var dataCRC uint32
	if kind == KindMessages {
		if _, err := message.PatchRecordsWith(stored, pos+int64(FrameHeaderSize+len(l.Extensions)), queueOffset); err != nil {
			return dst[:start], fmt.Errorf("raftlog: entry %d: message data: %w", l.Index, err)
		}
	} else {
		dataCRC = crc32.Checksum(stored, castagnoli)
	}
	be.PutUint32(f[fhDataCRC:], dataCRC)
	be.PutUint32(f[fhHeaderCRC:], crc32.Checksum(f[:fhHeaderCRC], castagnoli))
	return dst, nil
}

// parseHeader decodes and checks the header at the start of b (at least FrameHeaderSize
// bytes): magic, header CRC and the lengths.
func parseHeader(b []byte) (frameHeader, error) {
	var h frameHeader
	if len(b) < FrameHeaderSize {
		return h, fmt.Errorf("%w: %d bytes, a header needs %d", ErrCorruptFrame, len(b), FrameHeaderSize)
	}
	be := binary.BigEndian
	if magic := int32(be.Uint32(b[fhMagic:])); magic != FrameMagic {
		return h, fmt.Errorf("%w: magic 0x%08X", ErrCorruptFrame, uint32(magic))
	}
	if want, got := be.Uint32(b[fhHeaderCRC:]), crc32.Checksum(b[:fhHeaderCRC], castagnoli); want != got {
		return h, fmt.Errorf("%w: header CRC 0x%08X, stored 0x%08X", ErrCorruptFrame, got, want)
	}
	h = frameHeader{
		size:       int64(be.Uint32(b[fhTotalSize:])),
		index:      be.Uint64(b[fhIndex:]),
		term:       be.Uint64(b[fhTerm:]),
		pos:        int64(be.Uint64(b[fhPos:])),
		appendedAt: int64(be.Uint64(b[fhAppendedAt:])),
		typ:        raft.LogType(b[fhType]),
		kind:       b[fhKind],
		extLen:     int64(be.Uint32(b[fhExtLen:])),
		dataCRC:    be.Uint32(b[fhDataCRC:]),
	}
	if h.size < FrameHeaderSize+h.extLen || h.index == 0 {
		return h, fmt.Errorf("%w: size %d, extensions %d, index %d", ErrCorruptFrame, h.size, h.extLen, h.index)
	}
	return h, nil
}

// checkData checks the data of a whole frame f (header h): the data CRC, or the records of a
// message entry.
func checkData(h *frameHeader, f []byte, checkCRC bool) error {
	data := f[h.dataOffset():h.size]
	if h.kind == KindMessages {
		_, err := message.CheckRecords(data, h.pos+h.dataOffset(), checkCRC)
		return err
	}
	if got := crc32.Checksum(data, castagnoli); got != h.dataCRC {
		return fmt.Errorf("%w: data CRC 0x%08X, stored 0x%08X", ErrCorruptFrame, got, h.dataCRC)
	}
	return nil
}

// decodeLog fills l from the whole frame f, copying out of f.
func decodeLog(h *frameHeader, f []byte, l *raft.Log) {
	l.Index, l.Term, l.Type = h.index, h.term, h.typ
	l.AppendedAt = time.Time{}
	if h.appendedAt != 0 {
		l.AppendedAt = time.Unix(0, h.appendedAt)
	}
	l.Extensions = nil
	if h.extLen > 0 {
		l.Extensions = append([]byte(nil), f[FrameHeaderSize:h.dataOffset()]...)
	}
	data := f[h.dataOffset():h.size]
	switch {
	case h.kind != KindRaw:
		l.Data = make([]byte, 1+len(data))
		l.Data[0] = h.kind
		copy(l.Data[1:], data)
	case len(data) > 0:
		l.Data = append([]byte(nil), data...)
	default:
		l.Data = nil
	}
}
