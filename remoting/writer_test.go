package remoting

import (
	"bytes"
	"io"
	"net"
	"strconv"
	"testing"
)

// countingConn is a net.Conn whose writes go to a buffer, counted; the batch writer sees a TCP-like
// connection (net.Buffers.WriteTo falls back to one Write per vector on it).
type countingConn struct {
	net.Conn
	out     bytes.Buffer
	writes  int
	maxSeen int
}

func (c *countingConn) Write(p []byte) (int, error) {
	c.writes++
	c.maxSeen = max(c.maxSeen, len(p))
	return c.out.Write(p)
}

// TestWriteBatchBoundsItsBuffer: a batch of thousands of small answers queued for a peer that reads
// slowly is written in pieces of about batchFlushAt copied bytes, so the batch buffer stays near that size
// (it grew to hold the whole batch: megabytes on every slow connection), and every frame arrives whole and
// in order.
func TestWriteBatchBoundsItsBuffer(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	cc := &countingConn{Conn: a}
	c := &Conn{nc: cc, logger: testLogger(t, nil)}
	const n = 5000
	batch := make([]*Command, n)
	for i := range batch {
		resp := NewResponse(Success, "")
		resp.Opaque = int32(i)
		resp.Body = bytes.Repeat([]byte{byte(i)}, 300)
		batch[i] = resp
	}
	var w batchWriter
	grew := 0
	for _, cmd := range batch { // what the buffer would grow to without the flushes
		_ = w.add(cmd)
		grew = max(grew, cap(w.buf))
	}
	w.reset()
	if err := c.writeBatch(&w, batch); err != nil {
		t.Fatal(err)
	}
	const most = 256 << 10 // the batch is 1.7 MB
	if cc.maxSeen > most || cap(w.buf) > most || grew <= most {
		t.Fatalf("a write of %d bytes, buffer kept at %d: want at most %d (one batch buffer would be %d)",
			cc.maxSeen, cap(w.buf), most, grew)
	}
	rd := bytes.NewReader(cc.out.Bytes())
	for i := range n {
		frame, err := ReadFrame(rd, MaxFrameSize, nil)
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		cmd, err := DecodeFrame(frame)
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if cmd.Opaque != int32(i) || !bytes.Equal(cmd.Body, batch[i].Body) {
			t.Fatalf("frame %d: opaque %d, body %d bytes", i, cmd.Opaque, len(cmd.Body))
		}
	}
	if _, err := ReadFrame(rd, MaxFrameSize, nil); err != io.EOF {
		t.Fatalf("after %s frames: %v", strconv.Itoa(n), err)
	}
}
