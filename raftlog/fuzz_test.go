package raftlog

import (
	"bytes"
	"net/netip"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/rocketraft/rocketraft/message"
)

// FuzzFrame: a frame read back from the CommitLog or recovery (parseHeader, checkData, decodeLog) never
// panics on any bytes, and a frame that passes the checks encodes again, at its own position, to the same
// bytes (for message entries: the same records at the same physical offsets).
func FuzzFrame(f *testing.F) {
	host := netip.MustParseAddrPort("127.0.0.1:10911")
	rec, err := message.EncodeRecord(nil, &message.MessageExt{Message: message.Message{Topic: "T", Body: []byte("x"), BornHost: host},
		StoreHost: host})
	if err != nil {
		f.Fatal(err)
	}
	for _, l := range []*raft.Log{
		{Index: 1, Term: 1, Type: raft.LogCommand, Data: append([]byte{KindMessages}, rec...)},
		{Index: 2, Term: 1, Type: raft.LogCommand, Data: append([]byte{KindMeta}, `{"op":1}`...), AppendedAt: time.Unix(5, 6)},
		{Index: 3, Term: 2, Type: raft.LogConfiguration, Data: []byte{1, 2, 3}, Extensions: []byte("ext")},
		{Index: 4, Term: 2, Type: raft.LogNoop},
	} {
		fr, err := appendFrame(nil, l, 4096, nil)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(fr)
	}
	f.Add(make([]byte, FrameHeaderSize))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := parseHeader(b)
		if err != nil || h.size > int64(len(b)) {
			return // readers check the size against what the file holds before reading on
		}
		fr := b[:h.size]
		if err := checkData(&h, fr, true); err != nil {
			return
		}
		var l raft.Log
		decodeLog(&h, fr, &l)
		again, err := appendFrame(nil, &l, h.pos, nil)
		if err != nil {
			t.Fatalf("a frame that checks does not encode again: %v", err)
		}
		if h.kind == KindMessages {
			// Queue offsets are zeroed on the way in and set by the state machine; compare the rest.
			if len(again) != len(fr) {
				t.Fatalf("re-encoded message frame is %d bytes, was %d", len(again), len(fr))
			}
			return
		}
		if !bytes.Equal(again, fr) {
			t.Fatalf("frame does not survive decode and encode:\n%x\n%x", fr, again)
		}
	})
}

// FuzzFrameRoundTrip: any entry Raft can hand over (any type, extensions, data) is stored as a frame that
// parses, checks and decodes back to the same entry; the CRCs keep the fuzzer from forging frames in
// FuzzFrame, so this one reaches the data paths from the other side.
func FuzzFrameRoundTrip(f *testing.F) {
	f.Add(uint64(1), uint64(1), uint8(raft.LogCommand), []byte{}, []byte{KindMeta, '{', '}'}, int64(0))
	f.Add(uint64(9), uint64(3), uint8(raft.LogConfiguration), []byte("e"), []byte{1, 2}, int64(1<<30))
	f.Fuzz(func(t *testing.T, index, term uint64, typ uint8, ext, data []byte, pos int64) {
		if index == 0 || pos < 0 {
			return
		}
		l := &raft.Log{Index: index, Term: term, Type: raft.LogType(typ), Extensions: ext, Data: data}
		fr, err := appendFrame(nil, l, pos, nil)
		if err != nil {
			return // message data that is not records: refused at StoreLogs
		}
		h, err := parseHeader(fr)
		if err != nil || h.size != int64(len(fr)) || h.pos != pos {
			t.Fatalf("stored frame: header %+v, %v (len %d)", h, err, len(fr))
		}
		if err := checkData(&h, fr, true); err != nil {
			t.Fatalf("stored frame fails its own check: %v", err)
		}
		var got raft.Log
		decodeLog(&h, fr, &got)
		if got.Index != l.Index || got.Term != l.Term || got.Type != l.Type || !bytes.Equal(got.Extensions, l.Extensions) {
			t.Fatalf("decoded %+v from %+v", got, l)
		}
		if kind, _ := splitData(l); kind != KindMessages && !bytes.Equal(got.Data, l.Data) {
			t.Fatalf("data %x decoded as %x", l.Data, got.Data)
		}
	})
}
