package ha

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

// CheckRequestCode is the remoting request code of the tail check, a private request of this
// broker (outside every range RocketMQ uses: 10..3010 and 200050..200151). A slave sends it to
// its master's remoting port before each HA connection; a RocketMQ master answers
// REQUEST_CODE_NOT_SUPPORTED and the slave then streams without the check, as RocketMQ 4.x does.
// Wire format: never change.
const CheckRequestCode = 61000

// maxProbes bounds the probes of one tail check.
const maxProbes = 1024

// Probe names a byte range of the slave's CommitLog and the CRC-32 (IEEE) of its bytes.
type Probe struct {
	Offset int64
	Size   int32
	CRC    uint32
}

// CheckRequest is the tail check a slave sends: its max offset and probes of its tail.
type CheckRequest struct {
	SlaveMaxOffset int64
	Probes         []Probe
}

// CheckResponse is the master's answer: its CommitLog bounds and, per probe, whether it holds
// exactly the same bytes at the same offsets.
type CheckResponse struct {
	MasterMaxOffset int64
	MasterMinOffset int64
	Match           []bool
}

// ErrCheckUnsupported says the master does not answer tail checks (a RocketMQ master).
var ErrCheckUnsupported = errors.New("ha: the master does not answer tail checks")

// TailChecker sends a tail check to the master (over the broker's remoting port) and returns its
// answer; ErrCheckUnsupported (wrapped) when the master does not know the request, or when the
// master's remoting address is not known yet.
type TailChecker interface {
	CheckTail(ctx context.Context, req CheckRequest) (CheckResponse, error)
}

const (
	checkRequestHead  = 12 // slave max offset int64, probe count int32
	checkProbeSize    = 16 // offset int64, size int32, crc uint32
	checkResponseHead = 20 // master max int64, master min int64, count int32
)

// Encode is the request body (drawn in doc.go).
func (r CheckRequest) Encode() []byte {
	b := make([]byte, checkRequestHead+checkProbeSize*len(r.Probes))
	binary.BigEndian.PutUint64(b, uint64(r.SlaveMaxOffset))
	binary.BigEndian.PutUint32(b[8:], uint32(len(r.Probes)))
	for i, p := range r.Probes {
		o := b[checkRequestHead+i*checkProbeSize:]
		binary.BigEndian.PutUint64(o, uint64(p.Offset))
		binary.BigEndian.PutUint32(o[8:], uint32(p.Size))
		binary.BigEndian.PutUint32(o[12:], p.CRC)
	}
	return b
}

// DecodeCheckRequest parses a request body.
func DecodeCheckRequest(b []byte) (CheckRequest, error) {
	if len(b) < checkRequestHead {
		return CheckRequest{}, fmt.Errorf("%w: tail check request of %d bytes, want at least %d", errBadFrame, len(b), checkRequestHead)
	}
	r := CheckRequest{SlaveMaxOffset: int64(binary.BigEndian.Uint64(b))}
	n := int(int32(binary.BigEndian.Uint32(b[8:])))
	if n < 0 || n > maxProbes || len(b) != checkRequestHead+n*checkProbeSize {
		return CheckRequest{}, fmt.Errorf("%w: tail check request of %d bytes with %d probes (at most %d)", errBadFrame, len(b), n, maxProbes)
	}
	r.Probes = make([]Probe, n)
	for i := range r.Probes {
		o := b[checkRequestHead+i*checkProbeSize:]
		r.Probes[i] = Probe{Offset: int64(binary.BigEndian.Uint64(o)), Size: int32(binary.BigEndian.Uint32(o[8:])), CRC: binary.BigEndian.Uint32(o[12:])}
	}
	return r, nil
}

// Encode is the response body (drawn in doc.go).
func (r CheckResponse) Encode() []byte {
	b := make([]byte, checkResponseHead+len(r.Match))
	binary.BigEndian.PutUint64(b, uint64(r.MasterMaxOffset))
	binary.BigEndian.PutUint64(b[8:], uint64(r.MasterMinOffset))
	binary.BigEndian.PutUint32(b[16:], uint32(len(r.Match)))
	for i, m := range r.Match {
		if m {
			b[checkResponseHead+i] = 1
		}
	}
	return b
}

// DecodeCheckResponse parses a response body to a request of probes probes.
func DecodeCheckResponse(b []byte, probes int) (CheckResponse, error) {
	if len(b) < checkResponseHead {
		return CheckResponse{}, fmt.Errorf("%w: tail check response of %d bytes, want at least %d", errBadFrame, len(b), checkResponseHead)
	}
	r := CheckResponse{MasterMaxOffset: int64(binary.BigEndian.Uint64(b)), MasterMinOffset: int64(binary.BigEndian.Uint64(b[8:]))}
	n := int(int32(binary.BigEndian.Uint32(b[16:])))
	if n != probes || len(b) != checkResponseHead+n {
		return CheckResponse{}, fmt.Errorf("%w: tail check response of %d bytes with %d answers for %d probes", errBadFrame, len(b), n, probes)
	}
	r.Match = make([]bool, n)
	for i := range r.Match {
		r.Match[i] = b[checkResponseHead+i] == 1
	}
	return r, nil
}

// AnswerCheck is the master's side of the tail check: which probes name bytes it holds exactly.
func AnswerCheck(cl CommitLog, req CheckRequest) CheckResponse {
	r := CheckResponse{MasterMaxOffset: cl.MaxPhyOffset(), MasterMinOffset: cl.MinPhyOffset(), Match: make([]bool, len(req.Probes))}
	for i, p := range req.Probes {
		if p.Offset < r.MasterMinOffset || p.Size <= 0 || p.Offset+int64(p.Size) > r.MasterMaxOffset {
			continue
		}
		crc, ok := rangeCRC(cl, p.Offset, int(p.Size))
		r.Match[i] = ok && crc == p.CRC
	}
	return r
}

// rangeCRC is the CRC-32 of size bytes at offset, read in pieces (a range never crosses a file
// when it is a record, but a slave may name any range).
func rangeCRC(cl CommitLog, offset int64, size int) (uint32, bool) {
	var crc uint32
	for size > 0 {
		data, release, err := cl.ReadCommitLog(offset, size)
		if err != nil || len(data) == 0 {
			if release != nil {
				release()
			}
			return 0, false
		}
		crc = crc32.Update(crc, crc32.IEEETable, data)
		offset += int64(len(data))
		size -= len(data)
		release()
	}
	return crc, true
}
