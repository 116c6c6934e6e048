package raftlog

import (
	"errors"
	"math/rand"
	"reflect"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

func randBytes(r *rand.Rand, max int) []byte {
	n := r.Intn(max + 1)
	if n == 0 {
		return nil
	}
	b := make([]byte, n)
	r.Read(b)
	return b
}

func randAppendRequest(r *rand.Rand) *raft.AppendEntriesRequest {
	req := &raft.AppendEntriesRequest{
		RPCHeader:         raft.RPCHeader{ProtocolVersion: raft.ProtocolVersion(r.Intn(4)), ID: randBytes(r, 8), Addr: randBytes(r, 20)},
		Term:              r.Uint64() >> uint(r.Intn(64)),
		Leader:            randBytes(r, 20),
		PrevLogEntry:      r.Uint64() >> uint(r.Intn(64)),
		PrevLogTerm:       r.Uint64() >> uint(r.Intn(64)),
		LeaderCommitIndex: r.Uint64() >> uint(r.Intn(64)),
	}
	for i := r.Intn(5); i > 0; i-- {
		e := &raft.Log{Index: r.Uint64(), Term: r.Uint64() >> 40, Type: raft.LogType(r.Intn(6)), Data: randBytes(r, 3000), Extensions: randBytes(r, 8)}
		if r.Intn(2) == 0 {
			e.AppendedAt = time.Unix(0, r.Int63())
		}
		req.Entries = append(req.Entries, e)
	}
	return req
}

// TestAppendWireRoundTrip: every field of random requests and responses comes back as sent, and
// every strict prefix of a frame's body is refused.
func TestAppendWireRoundTrip(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for i := 0; i < 500; i++ {
		req := randAppendRequest(r)
		frame := encodeAppendRequest([]byte{9, 9}, req)[2:]
		got, err := decodeAppendRequest(frame[4:])
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		// time.Time from UnixNano has no monotonic reading and a local location: compare instants.
		for j, e := range req.Entries {
			if !e.AppendedAt.Equal(got.Entries[j].AppendedAt) {
				t.Fatalf("request %d entry %d: AppendedAt %v, sent %v", i, j, got.Entries[j].AppendedAt, e.AppendedAt)
			}
			got.Entries[j].AppendedAt = e.AppendedAt
		}
		if !reflect.DeepEqual(req, got) {
			t.Fatalf("request %d: got %+v, sent %+v", i, got, req)
		}
		if r.Intn(10) == 0 {
			for cut := 0; cut < len(frame)-4; cut++ {
				if _, err := decodeAppendRequest(frame[4 : 4+cut]); !errors.Is(err, errAppendWire) {
					t.Fatalf("request %d cut to %d bytes: err %v, want errAppendWire", i, cut, err)
				}
			}
		}
		if _, err := decodeAppendRequest(append(frame[4:len(frame):len(frame)], 0)); !errors.Is(err, errAppendWire) {
			t.Fatalf("request %d with a trailing byte: err %v", i, err)
		}

		resp := &raft.AppendEntriesResponse{RPCHeader: req.RPCHeader, Term: req.Term, LastLog: req.PrevLogEntry,
			Success: r.Intn(2) == 0, NoRetryBackoff: r.Intn(2) == 0}
		var sent error
		if r.Intn(3) == 0 {
			sent = errors.New("rejected: " + string(rune('a'+r.Intn(26))))
		}
		rf := encodeAppendResponse(nil, resp, sent)
		var back raft.AppendEntriesResponse
		rpcErr, err := decodeAppendResponse(rf[4:], &back)
		if err != nil {
			t.Fatalf("response %d: %v", i, err)
		}
		if !reflect.DeepEqual(*resp, back) {
			t.Fatalf("response %d: got %+v, sent %+v", i, back, *resp)
		}
		if (sent == nil) != (rpcErr == nil) || (sent != nil && sent.Error() != rpcErr.Error()) {
			t.Fatalf("response %d: error %v, sent %v", i, rpcErr, sent)
		}
	}
}

// TestAppendWireRefusesLyingCounts: an entry count or a length beyond the frame is refused
// without allocating for it.
func TestAppendWireRefusesLyingCounts(t *testing.T) {
	req := &raft.AppendEntriesRequest{Term: 1, Entries: []*raft.Log{{Index: 1, Term: 1, Data: []byte("x")}}}
	frame := encodeAppendRequest(nil, req)[4:]
	// The header's fields: version 0, ID empty, Addr empty, term 1, leader empty, prev 0, prev
	// term 0, commit 0, then the count at offset 8.
	bad := append([]byte(nil), frame...)
	bad[8] = 0x7f // 127 entries in a few bytes
	if _, err := decodeAppendRequest(bad); !errors.Is(err, errAppendWire) {
		t.Fatalf("lying count: err %v", err)
	}
	bad = append([]byte(nil), frame...)
	bad[12] = 0x7f // the data length of the entry: 127 bytes in fewer
	if _, err := decodeAppendRequest(bad); !errors.Is(err, errAppendWire) {
		t.Fatalf("lying length: err %v", err)
	}
}

// FuzzAppendWire: any body either is refused with errAppendWire or decodes to a request that
// encodes back to the same bytes.
func FuzzAppendWire(f *testing.F) {
	r := rand.New(rand.NewSource(2))
	for i := 0; i < 8; i++ {
		f.Add(encodeAppendRequest(nil, randAppendRequest(r))[4:])
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := decodeAppendRequest(body)
		if err != nil {
			if !errors.Is(err, errAppendWire) {
				t.Fatalf("error %v is not errAppendWire", err)
			}
			return
		}
		// Uvarints have more than one spelling (trailing 0x80 groups), so compare the decoded
		// values: the re-encoding must decode to the same request.
		again, err := decodeAppendRequest(encodeAppendRequest(nil, req)[4:])
		if err != nil {
			t.Fatalf("re-encoded request refused: %v", err)
		}
		if !reflect.DeepEqual(req, again) {
			t.Fatalf("round trip changed the request: %+v then %+v", req, again)
		}
	})
}
