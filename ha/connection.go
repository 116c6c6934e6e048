package ha

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// connection is one slave on the master (RocketMQ HAConnection): a reader of the slave's 8-byte
// reports and a writer of transfer frames, each on its own goroutine. Whichever stops first
// closes the socket, which stops the other.
type connection struct {
	s    *Service
	nc   net.Conn
	addr string

	// requestOffset is the slave's first report, where the writer starts; ackOffset its last.
	requestOffset atomic.Int64
	ackOffset     atomic.Int64
	requested     chan struct{} // closed at the first report
	// ctx ends when the connection closes (or the service does).
	ctx       context.Context
	cancel    context.CancelFunc
	closeOnce sync.Once
}

func newConnection(ctx context.Context, s *Service, nc net.Conn) *connection {
	c := &connection{s: s, nc: nc, addr: nc.RemoteAddr().String(), requested: make(chan struct{})}
	c.ctx, c.cancel = context.WithCancel(ctx)
	c.requestOffset.Store(-1)
	c.ackOffset.Store(-1)
	return c
}

// close shuts the connection once, with the reason in the log.
func (c *connection) close(reason string, args ...any) {
	c.closeOnce.Do(func() {
		c.cancel()
		_ = c.nc.Close()
		if c.requestOffset.Load() >= 0 {
			c.s.reporting.Add(-1)
		}
		c.s.removeConnection(c)
		c.s.log.Info("HA connection closed: "+reason, append([]any{"slave", c.addr, "ackOffset", c.ackOffset.Load()}, args...)...)
	})
}

// readLoop reads the slave's reports. As RocketMQ's ReadSocketService it uses the last complete
// 8-byte value of what arrived; unlike RocketMQ (#3015) it refuses the first report too when it
// lies beyond the master's max offset.
func (c *connection) readLoop() {
	var buf [512]byte
	have := 0
	housekeeping := c.s.cfg.housekeeping()
	for {
		_ = c.nc.SetReadDeadline(time.Now().Add(housekeeping))
		n, err := c.nc.Read(buf[have:])
		have += n
		if have >= ReportSize {
			end := have - have%ReportSize
			off := int64(binary.BigEndian.Uint64(buf[end-ReportSize : end]))
			have = copy(buf[:], buf[end:have])
			if !c.report(off) {
				return
			}
		}
		if err != nil {
			switch {
			case c.ctx.Err() != nil:
				c.close("HA service closing")
			case errors.Is(err, os.ErrDeadlineExceeded):
				c.close("housekeeping: nothing read for haHousekeepingInterval", "interval", housekeeping)
			case errors.Is(err, io.EOF):
				c.close("slave closed the connection")
			default:
				c.close("read failed", "err", err)
			}
			return
		}
	}
}

// report takes one slave report; false means the connection was closed for it.
func (c *connection) report(off int64) bool {
	if maxOff := c.s.cl.MaxPhyOffset(); off < 0 || off > maxOff {
		c.s.log.Warn("slave reported an offset beyond the master's CommitLog; closing the connection (a peer that lies gets nothing)",
			"slave", c.addr, "reported", off, "masterMaxOffset", maxOff)
		c.close("bad report", "reported", off)
		return false
	}
	c.ackOffset.Store(off)
	if c.requestOffset.CompareAndSwap(-1, off) {
		c.s.reporting.Add(1)
		c.s.log.Info("slave requests replication", "slave", c.addr, "offset", off)
		close(c.requested)
	}
	c.s.noteAck(off)
	return true
}

// writeLoop is RocketMQ's WriteSocketService: from the slave's first report on, it sends the
// CommitLog in frames of at most haTransferBatchSize bytes that never cross a file, straight from
// the mapped file, and an empty frame when nothing was sent for haSendHeartbeatInterval.
func (c *connection) writeLoop() {
	select {
	case <-c.requested:
	case <-c.ctx.Done():
		c.close("HA service closing")
		return
	}
	next := c.startOffset()
	heartbeat := c.s.cfg.heartbeat()
	batch := c.s.cfg.HATransferBatchSize
	var hdr [HeaderSize]byte
	lastWrite := time.Time{} // the first frame goes out at once, data or heartbeat
	loggedGap := false
	for c.ctx.Err() == nil {
		data, release, err := c.s.cl.ReadCommitLog(next, batch)
		if err != nil && !loggedGap {
			loggedGap = true
			c.s.log.Error("cannot read the CommitLog where the slave needs it; it will only get heartbeats (wipe the slave's store to resync it)",
				"slave", c.addr, "offset", next, "masterMinOffset", c.s.cl.MinPhyOffset(), "err", err)
		}
		if len(data) > 0 {
			putHeader(hdr[:], next, len(data))
			err := c.write(hdr[:], data)
			release()
			if err != nil {
				c.close("write failed", "err", err)
				return
			}
			next += int64(len(data))
			lastWrite = time.Now()
			continue
		}
		if release != nil {
			release()
		}
		wait := heartbeat - time.Since(lastWrite)
		if wait <= 0 {
			putHeader(hdr[:], next, 0)
			if err := c.write(hdr[:], nil); err != nil {
				c.close("heartbeat write failed", "err", err)
				return
			}
			lastWrite = time.Now()
			wait = heartbeat
		}
		if err := c.waitForData(next, wait, err != nil); err != nil {
			c.close("the CommitLog closed", "err", err)
			return
		}
	}
	c.close("HA service closing")
}

// waitForData parks the writer until the CommitLog passes next, wait passes or the connection
// closes; after a read error (heartbeatsOnly) only time or the close end it. An error means the
// store closed.
func (c *connection) waitForData(next int64, wait time.Duration, heartbeatsOnly bool) error {
	ctx, cancel := context.WithTimeout(c.ctx, wait)
	defer cancel()
	if heartbeatsOnly {
		<-ctx.Done()
		return nil
	}
	_, err := c.s.cl.WaitForNewData(ctx, next)
	if err != nil && ctx.Err() != nil {
		return nil // the heartbeat is due, or the connection closed
	}
	return err
}

// startOffset is where streaming starts: the slave's report, or for an empty slave (0) the start
// of the master's last CommitLog file.
func (c *connection) startOffset() int64 {
	req := c.requestOffset.Load()
	start := req
	if req == 0 {
		maxOff := c.s.cl.MaxPhyOffset()
		start = maxOff - maxOff%c.s.fileSize
	}
	c.s.log.Info("master transfers data to the slave", "slave", c.addr, "from", start, "slaveRequested", req)
	return start
}

// write sends header and body in one writev, within haHousekeepingInterval.
func (c *connection) write(hdr, body []byte) error {
	_ = c.nc.SetWriteDeadline(time.Now().Add(c.s.cfg.housekeeping()))
	bufs := net.Buffers{hdr}
	if len(body) > 0 {
		bufs = append(bufs, body)
	}
	_, err := bufs.WriteTo(c.nc)
	return err
}
