package remoting

import (
	"fmt"
	"log/slog"
	"net"
	"time"
)

// segment is one piece of a batch: a range of the batch buffer, or an outside slice (a large Body or a
// BodyParts slice) handed to writev without copying.
type segment struct {
	start, end int
	ext        []byte
}

// batchWriter gathers the frames of one wake-up. Its buffers are reused from batch to batch.
type batchWriter struct {
	buf  []byte
	segs []segment
	iov  net.Buffers
	// out is what WriteTo consumes: iov's vectors, in the writer (not in a local whose address WriteTo
	// takes, which would put a slice header on the heap for every batch).
	out net.Buffers
}

// add encodes cmd's head (and a small Body) into the buffer and notes its outside slices.
func (w *batchWriter) add(cmd *Command) error {
	start := len(w.buf)
	var err error
	w.buf, err = appendFrameHead(w.buf, cmd)
	if err != nil {
		return err
	}
	if len(cmd.Body) <= inlineBodyMax {
		w.buf = append(w.buf, cmd.Body...)
		w.inline(start)
	} else {
		w.inline(start)
		w.segs = append(w.segs, segment{ext: cmd.Body})
	}
	for _, p := range cmd.BodyParts {
		if len(p) > 0 {
			w.segs = append(w.segs, segment{ext: p})
		}
	}
	return nil
}

// inline records buf[start:] as a segment, merged with the previous one when they touch.
func (w *batchWriter) inline(start int) {
	if n := len(w.segs); n > 0 && w.segs[n-1].ext == nil && w.segs[n-1].end == start {
		w.segs[n-1].end = len(w.buf)
		return
	}
	w.segs = append(w.segs, segment{start: start, end: len(w.buf)})
}

// vectors returns the batch as writev vectors; valid until the next reset.
func (w *batchWriter) vectors() net.Buffers {
	w.iov = w.iov[:0]
	for _, s := range w.segs {
		if s.ext != nil {
			w.iov = append(w.iov, s.ext)
		} else {
			w.iov = append(w.iov, w.buf[s.start:s.end])
		}
	}
	return w.iov
}

// maxRetainedBatchBuffer: a batch buffer grown beyond this is dropped after use rather than kept.
const maxRetainedBatchBuffer = 1 << 20

func (w *batchWriter) reset() {
	if cap(w.buf) > maxRetainedBatchBuffer {
		w.buf = nil
	}
	w.buf = w.buf[:0]
	clear(w.segs)
	w.segs = w.segs[:0]
	clear(w.iov)
	w.out = nil
}

// writeLoop sends queued frames until the connection closes. Every frame's Release is called once, after it
// was written or when it is dropped.
func (c *Conn) writeLoop() {
	var (
		w     batchWriter
		batch []*Command
	)
	for {
		select {
		case <-c.wake:
		case <-c.closed:
			c.mu.Lock()
			rest := c.mu.queue
			c.mu.queue = nil
			c.mu.Unlock()
			releaseAll(rest)
			return
		}
		c.mu.Lock()
		batch, c.mu.queue = c.mu.queue, batch[:0]
		c.mu.writing = len(batch) > 0
		c.mu.Unlock()
		if len(batch) == 0 {
			continue
		}
		if err := c.writeBatch(&w, batch); err != nil {
			c.closeWith("write: "+err.Error(), slog.LevelInfo)
		}
		releaseAll(batch)
		clear(batch)
		c.mu.Lock()
		c.mu.writing = false
		c.mu.Unlock()
	}
}

// batchFlushAt: once this much is copied into the batch buffer, what is gathered is written before the
// rest of the batch is encoded. A peer that reads slowly leaves thousands of small answers queued; copied
// into one buffer, they grew it by doubling to megabytes on every connection (23% of a name server's CPU
// in memmove at 50,000 route queries/s, and most of its 958 MB of RSS at 17,000/s).
const batchFlushAt = 64 << 10

// writeBatch encodes and writes one batch, in writes of about batchFlushAt copied bytes at most. A frame
// that does not encode is dropped with a log line, and a request among them fails its pending call.
func (c *Conn) writeBatch(w *batchWriter, batch []*Command) error {
	defer w.reset()
	for _, cmd := range batch {
		if err := w.add(cmd); err != nil {
			c.logger.Error("remoting: dropped a frame that does not encode", "code", cmd.Code, "opaque", cmd.Opaque,
				"err", err)
			if !cmd.IsResponse() {
				if cl := c.takePending(cmd.Opaque, nil); cl != nil {
					c.finish(cl, nil, fmt.Errorf("remoting: request code %d not sent: %w", cmd.Code, err))
				}
			}
		}
		if len(w.buf) >= batchFlushAt {
			if err := c.writeGathered(w); err != nil {
				return err
			}
			w.reset()
		}
	}
	return c.writeGathered(w)
}

// writeGathered writes the frames gathered in w (nothing when there are none).
func (c *Conn) writeGathered(w *batchWriter) error {
	if len(w.segs) == 0 {
		return nil
	}
	if c.cfg.writeTimeout > 0 {
		_ = c.nc.SetWriteDeadline(time.Now().Add(c.cfg.writeTimeout))
	}
	w.out = w.vectors()
	if c.tlsw != nil {
		if _, err := w.out.WriteTo(c.tlsw); err != nil {
			return err
		}
		return c.tlsw.Flush()
	}
	_, err := w.out.WriteTo(c.nc) // consumes w.out, not w.iov; one writev on a TCP connection
	return err
}

func releaseAll(cmds []*Command) {
	for _, cmd := range cmds {
		release(cmd)
	}
}
