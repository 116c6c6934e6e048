package remoting

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"testing"
)

// chunkReader returns its data in pieces whose sizes come from a seeded generator, so that frames arrive split
// at arbitrary points, as TCP may deliver them.
type chunkReader struct {
	data []byte
	rng  *rand.Rand
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := 1 + r.rng.IntN(min(len(r.data), len(p), 64))
	copy(p, r.data[:n])
	r.data = r.data[n:]
	return n, nil
}

// fuzzMaxFrame keeps the fuzzer's allocations small; the limit logic is the same at any size.
const fuzzMaxFrame = 1 << 16

// FuzzDecode feeds a byte stream, split at random points, through the stream reader and the decoder. Nothing may
// panic; every frame read must respect the size limit; every command that decodes must encode again, and that
// encoding must be stable (decode and encode it once more: the same bytes).
func FuzzDecode(f *testing.F) {
	for _, c := range []*Command{exampleRequest(SerializeJSON), exampleRequest(SerializeRocketMQ), sendLikeRequest(),
		{Code: 17, Flag: 1, Remark: "r\u00e9\n\"", ExtFields: map[string]string{"a": "", "b": "\x01\x02"},
			SerializeType: SerializeRocketMQ, Body: []byte{0, 1}}} {
		frame, err := EncodeFrame(nil, c)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(frame, uint64(1))
		f.Add(append(bytes.Clone(frame), frame...), uint64(7))
	}
	f.Add(jsonFrame(`{"code":1,"x":[{"a":[]},null,true],"extFields":{"k":null,"n":-1.5e+3},"language":9}`, ""),
		uint64(3))
	f.Add(jsonFrame(`{"remark":"\ud83d\ude00\u00e9\\"}`, "body"), uint64(5))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff}, uint64(0))
	f.Add([]byte{0, 0, 0, 4, 1, 0, 0, 0}, uint64(2))

	f.Fuzz(func(t *testing.T, stream []byte, seed uint64) {
		r := bufio.NewReaderSize(&chunkReader{data: stream, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b9))}, 16)
		for {
			frame, err := ReadFrame(r, fuzzMaxFrame, nil)
			if err != nil {
				if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) &&
					!errors.Is(err, ErrFrameTooLarge) && !errors.Is(err, ErrBadFrame) {
					t.Fatalf("unexpected read error %v", err)
				}
				return
			}
			if len(frame) > fuzzMaxFrame || len(frame) > len(stream) {
				t.Fatalf("frame of %d bytes from a stream of %d", len(frame), len(stream))
			}
			c, err := DecodeFrame(frame)
			if err != nil {
				if !errors.Is(err, ErrBadFrame) {
					t.Fatalf("decode error %v does not match ErrBadFrame", err)
				}
				continue
			}
			checkStableEncoding(t, c)
		}
	})
}

func checkStableEncoding(t *testing.T, c *Command) {
	t.Helper()
	e1, err := EncodeFrame(nil, c)
	if err != nil {
		t.Fatalf("decoded %v does not encode: %v", c, err)
	}
	c2, err := DecodeFrame(e1[4:])
	if err != nil {
		t.Fatalf("our own encoding %q does not decode: %v", e1, err)
	}
	e2, err := EncodeFrame(nil, c2)
	if err != nil || !bytes.Equal(e1, e2) {
		t.Fatalf("unstable encoding:\n%q\n%q (%v)", e1, e2, err)
	}
}
