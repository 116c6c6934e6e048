package remoting

import (
	"encoding/binary"
	"io"
)

// A connection's read buffer starts small and grows only while the peer keeps it full. A name server
// holds thousands of client connections that each send a small request now and then; with a fixed 64 KiB
// buffer each cost about 70 KiB, most of it the buffer. Here an idle connection holds minReadBuffer: a
// read that filled the whole buffer (the peer had more waiting: pipelined sends) doubles it before the next
// read, up to the configured ReadBufferSize, and after shrinkAfter reads in a row that used less than a
// quarter of it, it halves again. A frame larger than the buffer is read straight into the frame's own
// memory, and a fill whose bytes went on into such a frame does not count as full: a broker's connection
// to a name server, which carries its ~200 KB topic table every 30 s, kept its buffer at 4 KiB where it
// grew to 64 KiB in four rounds (a fleet's 300 brokers: 19 MB of garbage in one burst, which set off
// collections inside it, and 18 MB held).

const (
	minReadBuffer = 4 << 10
	shrinkAfter   = 32
)

// readBuffer is a buffered reader whose buffer follows the traffic (above). Not safe for concurrent use:
// the connection's reader owns it.
type readBuffer struct {
	rd    io.Reader
	buf   []byte
	r, w  int // buf[r:w] is buffered
	max   int // the largest the buffer grows to
	small int // reads in a row that used less than a quarter of the buffer
	// full: the last fill filled the buffer; bypassed: a read went past the buffer since (a large frame's)
	full, bypassed bool
}

func newReadBuffer(rd io.Reader, max int) *readBuffer {
	size := min(minReadBuffer, max)
	return &readBuffer{rd: rd, buf: make([]byte, size), max: max}
}

// Buffered is the number of bytes read from the connection and not consumed yet.
func (b *readBuffer) Buffered() int { return b.w - b.r }

// Read reads from the buffer, or refills it from the connection when it is empty; a read of at least the
// buffer's size into an empty buffer goes straight to p.
func (b *readBuffer) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if b.r == b.w {
		if len(p) >= len(b.buf) {
			b.bypassed = true
			return b.rd.Read(p)
		}
		if err := b.fill(); err != nil {
			return 0, err
		}
	}
	n := copy(p, b.buf[b.r:b.w])
	b.r += n
	return n, nil
}

// fill reads into the empty buffer, adjusting its size first to what the last reads needed.
func (b *readBuffer) fill() error {
	b.r, b.w = 0, 0
	switch {
	case b.full && !b.bypassed && len(b.buf) < b.max:
		b.buf = make([]byte, min(2*len(b.buf), b.max))
		b.small = 0
	case b.small >= shrinkAfter && len(b.buf) > minReadBuffer:
		b.buf = make([]byte, max(len(b.buf)/2, minReadBuffer))
		b.small = 0
	}
	b.full, b.bypassed = false, false
	n, err := b.rd.Read(b.buf)
	if n < 0 || n > len(b.buf) {
		return io.ErrNoProgress
	}
	b.w = n
	switch {
	case n == len(b.buf):
		b.full = true
		b.small = 0
	case n < len(b.buf)/4:
		b.small++
	default:
		b.small = 0
	}
	if n > 0 {
		return nil // an error comes back with the next read
	}
	if err == nil {
		err = io.ErrNoProgress
	}
	return err
}

// frameBuffered reports whether a whole frame is buffered, which the next readFrame takes without reading.
func (b *readBuffer) frameBuffered() bool {
	if b.w-b.r < lengthFieldSize {
		return false
	}
	return int64(binary.BigEndian.Uint32(b.buf[b.r:]))+lengthFieldSize <= int64(b.w-b.r)
}
