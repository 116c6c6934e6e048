package raftlog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/raft"
)

// The append wire's frames (append_transport.go): a 4-byte big-endian length, then the body. A
// request body is an AppendEntriesRequest, a response body an error text and an
// AppendEntriesResponse, each field a uvarint or a uvarint length and its bytes, in the order
// below. A Log's Data in a decoded request is a slice of the frame it came in (one copy, the
// read); nothing reuses a frame's buffer.

// maxAppendWireFrame bounds one frame (MaxAppendEntries 256 entries of at most a 4 MiB put each
// stays far below it); a longer length is a corrupt or hostile peer, and the connection is
// dropped.
const maxAppendWireFrame = 1 << 30

var errAppendWire = errors.New("raftlog: malformed append frame")

func appendBytes(b, p []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(p)))
	return append(b, p...)
}

func appendHeader(b []byte, h raft.RPCHeader) []byte {
	b = binary.AppendUvarint(b, uint64(h.ProtocolVersion))
	b = appendBytes(b, h.ID)
	return appendBytes(b, h.Addr)
}

// encodeAppendRequest appends req's frame (length and body) to b.
func encodeAppendRequest(b []byte, req *raft.AppendEntriesRequest) []byte {
	start := len(b)
	b = append(b, 0, 0, 0, 0)
	b = appendHeader(b, req.RPCHeader)
	b = binary.AppendUvarint(b, req.Term)
	b = appendBytes(b, req.Leader)
	b = binary.AppendUvarint(b, req.PrevLogEntry)
	b = binary.AppendUvarint(b, req.PrevLogTerm)
	b = binary.AppendUvarint(b, req.LeaderCommitIndex)
	b = binary.AppendUvarint(b, uint64(len(req.Entries)))
	for _, e := range req.Entries {
		b = binary.AppendUvarint(b, e.Index)
		b = binary.AppendUvarint(b, e.Term)
		b = append(b, byte(e.Type))
		b = appendBytes(b, e.Data)
		b = appendBytes(b, e.Extensions)
		var at int64
		if !e.AppendedAt.IsZero() {
			at = e.AppendedAt.UnixNano()
		}
		b = binary.AppendVarint(b, at)
	}
	binary.BigEndian.PutUint32(b[start:], uint32(len(b)-start-4))
	return b
}

// encodeAppendResponse appends the frame of resp, or of the error rpcErr, to b.
func encodeAppendResponse(b []byte, resp *raft.AppendEntriesResponse, rpcErr error) []byte {
	start := len(b)
	b = append(b, 0, 0, 0, 0)
	var msg []byte
	if rpcErr != nil {
		msg = []byte(rpcErr.Error())
	}
	b = appendBytes(b, msg)
	if resp == nil {
		resp = &raft.AppendEntriesResponse{}
	}
	b = appendHeader(b, resp.RPCHeader)
	b = binary.AppendUvarint(b, resp.Term)
	b = binary.AppendUvarint(b, resp.LastLog)
	var flags byte
	if resp.Success {
		flags |= 1
	}
	if resp.NoRetryBackoff {
		flags |= 2
	}
	b = append(b, flags)
	binary.BigEndian.PutUint32(b[start:], uint32(len(b)-start-4))
	return b
}

// frameReader takes fields off a frame's body; the first failure sticks.
type frameReader struct {
	b   []byte
	err error
}

func (r *frameReader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = errAppendWire
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *frameReader) varint() int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.err = errAppendWire
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *frameReader) byte1() byte {
	if r.err != nil {
		return 0
	}
	if len(r.b) == 0 {
		r.err = errAppendWire
		return 0
	}
	v := r.b[0]
	r.b = r.b[1:]
	return v
}

// bytes returns the next field as a slice of the frame (nil when empty, as msgpack gives).
func (r *frameReader) bytes() []byte {
	n := r.uvarint()
	if r.err != nil {
		return nil
	}
	if n > uint64(len(r.b)) {
		r.err = errAppendWire
		return nil
	}
	if n == 0 {
		return nil
	}
	v := r.b[:n:n]
	r.b = r.b[n:]
	return v
}

func (r *frameReader) header() raft.RPCHeader {
	return raft.RPCHeader{ProtocolVersion: raft.ProtocolVersion(r.uvarint()), ID: r.bytes(), Addr: r.bytes()}
}

func (r *frameReader) done() error {
	if r.err == nil && len(r.b) != 0 {
		r.err = fmt.Errorf("%w: %d bytes after the last field", errAppendWire, len(r.b))
	}
	return r.err
}

// decodeAppendRequest reads a request body; the entries' Data and Extensions alias body.
func decodeAppendRequest(body []byte) (*raft.AppendEntriesRequest, error) {
	r := frameReader{b: body}
	req := &raft.AppendEntriesRequest{RPCHeader: r.header()}
	req.Term = r.uvarint()
	req.Leader = r.bytes()
	req.PrevLogEntry = r.uvarint()
	req.PrevLogTerm = r.uvarint()
	req.LeaderCommitIndex = r.uvarint()
	n := r.uvarint()
	// Each entry takes at least 6 bytes, so a count beyond that is a lie, refused before any
	// allocation.
	if r.err == nil && n > uint64(len(r.b))/6 {
		return nil, fmt.Errorf("%w: %d entries in %d bytes", errAppendWire, n, len(r.b))
	}
	if n > 0 {
		logs := make([]raft.Log, n)
		req.Entries = make([]*raft.Log, n)
		for i := range logs {
			e := &logs[i]
			e.Index = r.uvarint()
			e.Term = r.uvarint()
			e.Type = raft.LogType(r.byte1())
			e.Data = r.bytes()
			e.Extensions = r.bytes()
			if at := r.varint(); at != 0 {
				e.AppendedAt = time.Unix(0, at)
			}
			req.Entries[i] = e
		}
	}
	if err := r.done(); err != nil {
		return nil, err
	}
	return req, nil
}

// decodeAppendResponse reads a response body into resp and returns the error the peer sent.
func decodeAppendResponse(body []byte, resp *raft.AppendEntriesResponse) (rpcErr error, err error) {
	r := frameReader{b: body}
	msg := r.bytes()
	resp.RPCHeader = r.header()
	resp.Term = r.uvarint()
	resp.LastLog = r.uvarint()
	flags := r.byte1()
	resp.Success = flags&1 != 0
	resp.NoRetryBackoff = flags&2 != 0
	if err := r.done(); err != nil {
		return nil, err
	}
	if len(msg) > 0 {
		return errors.New(string(msg)), nil
	}
	return nil, nil
}
