package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os/exec"
	"strings"
	"time"
)

// The hop probe measures what one request and its answer between two processes cost on this
// machine at its current load, with no broker in the way: this process writes Size bytes to an
// echo process it started, which reads them and writes them back. Both wait in the kernel
// between rounds, so a round is two wake-ups and two loopback deliveries, as a Raft follower's
// append and the leader's read of its answer are (raftlog/stats.go, the quorum part of the
// replicate stage). scripts/bench-compare.sh runs it beside a row (HOP=1) to tell the cost of
// the machine's scheduling from the cost of our code.

// HopConfig configures RunHop.
type HopConfig struct {
	// Every is the time from one round's start to the next one's (a round that takes longer
	// is followed at once).
	Every time.Duration
	// Duration is how long to probe; Size the bytes each way.
	Duration time.Duration
	Size     int
}

// DefaultHopConfig is one 64-byte round per millisecond for 20 s.
func DefaultHopConfig() HopConfig {
	return HopConfig{Every: time.Millisecond, Duration: 20 * time.Second, Size: 64}
}

// Validate names the flag that is out of range.
func (c *HopConfig) Validate() error {
	var errs []error
	if c.Every <= 0 {
		errs = append(errs, fmt.Errorf("--every %v: must be above 0", c.Every))
	}
	if c.Duration <= 0 {
		errs = append(errs, fmt.Errorf("--duration %v: must be above 0", c.Duration))
	}
	if c.Size < 1 || c.Size > 1<<20 {
		errs = append(errs, fmt.Errorf("-s %d: must be 1 to %d bytes", c.Size, 1<<20))
	}
	return errors.Join(errs...)
}

// RunHop starts echo (a process that runs ServeEcho: its first line of output is the address
// it listens on, and it ends when its input closes), then measures round trips to it for
// cfg.Duration or until ctx ends. The summary's Latency holds the round trips, Messages their
// number.
func RunHop(ctx context.Context, cfg HopConfig, echo *exec.Cmd, opts Options) (*Summary, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	stdin, err := echo.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := echo.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := echo.Start(); err != nil {
		return nil, fmt.Errorf("start the echo process: %w", err)
	}
	defer func() {
		_ = stdin.Close() // the echo process ends on its input's end
		_ = echo.Wait()
	}()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		return nil, fmt.Errorf("the echo process printed no address: %w", err)
	}
	addr := strings.TrimSpace(line)
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, fmt.Errorf("dial the echo process at %q: %w", addr, err)
	}
	defer conn.Close()

	h := newHist()
	out, in := make([]byte, cfg.Size), make([]byte, cfg.Size)
	ctx, cancel := context.WithTimeout(ctx, cfg.Duration)
	defer cancel()
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Now()) })
	defer stop()
	start := time.Now()
	next := start
	for ctx.Err() == nil {
		if wait := time.Until(next); wait > 0 {
			select {
			case <-time.After(wait):
			case <-ctx.Done():
			}
			if ctx.Err() != nil {
				break
			}
		}
		next = next.Add(cfg.Every)
		t0 := time.Now()
		if _, err := conn.Write(out); err != nil {
			if ctx.Err() != nil {
				break
			}
			return nil, fmt.Errorf("write to the echo process: %w", err)
		}
		if _, err := io.ReadFull(conn, in); err != nil {
			if ctx.Err() != nil {
				break
			}
			return nil, fmt.Errorf("read from the echo process: %w", err)
		}
		record(h, time.Since(t0))
	}
	secs := time.Since(start).Seconds()
	p := percentiles(h)
	return &Summary{Role: roleHop, Client: "tcp", Threads: 1, MessageSize: cfg.Size, Messages: p.Count,
		Bytes: 2 * p.Count * int64(cfg.Size), Seconds: secs, MsgsPerSec: float64(p.Count) / secs, Latency: &p}, nil
}

// ServeEcho listens on 127.0.0.1 (a free port), prints the address as one line to out, and writes
// back whatever the one connection RunHop makes sends, until in ends (its parent closed it or
// ended) or ctx does.
func ServeEcho(ctx context.Context, in io.Reader, out io.Writer) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer ln.Close()
	if _, err := fmt.Fprintln(out, ln.Addr().String()); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		_, _ = io.Copy(io.Discard, in)
		cancel()
	}()
	stopAccept := context.AfterFunc(ctx, func() { _ = ln.Close() })
	defer stopAccept()
	c, err := ln.Accept()
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	defer c.Close()
	stopEcho := context.AfterFunc(ctx, func() { _ = c.Close() })
	defer stopEcho()
	echoConn(c)
	return nil
}

// echoConn writes back what c sends, one read and one write at a time as a server answering a
// request would (io.Copy would splice between the sockets inside the kernel).
func echoConn(c net.Conn) {
	buf := make([]byte, 64<<10)
	for {
		n, err := c.Read(buf)
		if n > 0 {
			if _, werr := c.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}
