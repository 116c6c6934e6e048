package ha

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rocketraft/rocketraft/internal/peertls"
)

// ClientOptions are the slave's collaborators, things that are not config keys.
type ClientOptions struct {
	// Logger receives the client's logs; nil discards them.
	Logger *slog.Logger
	// FileSize is mappedFileSizeCommitLog (the tail check walks one file at a time).
	FileSize int64
	// Checker runs the tail check against the master before each connection; nil skips it
	// (then a divergent slave is refused as by RocketMQ 4.x, and only logs the mismatch).
	Checker TailChecker
	// PeerTLS, when set (peerTlsMode=enforcing), dials the master with mutual TLS and checks
	// its certificate (tls.go); nil: plain TCP.
	PeerTLS *peertls.Material
}

// Backoff between failed connection attempts: it doubles from minRetry up to
// haSendHeartbeatInterval and starts again after a connection that carried data.
const minRetry = 100 * time.Millisecond

// dialTimeout bounds one connection attempt to the master.
const dialTimeout = 3 * time.Second

// Client is the slave side of classic replication (RocketMQ 4.x HAClient): it connects to the
// master's HA port, reports its CommitLog max offset at once, after every appended frame and
// every haSendHeartbeatInterval, and appends what the master sends at the same offsets; the
// store's own dispatch builds ConsumeQueue and IndexFile. After any failure it reconnects.
type Client struct {
	cfg      Config
	log      *slog.Logger
	cl       CommitLog
	fileSize int64
	checker  TailChecker
	peerTLS  *peertls.Material

	addrWake chan struct{}
	cancel   context.CancelFunc
	wg       sync.WaitGroup

	connected atomic.Bool
	reported  atomic.Int64 // last offset reported to the master

	mu struct {
		sync.Mutex
		masterAddr string
		started    bool
		closed     bool
	}
}

// NewClient validates cfg and builds a slave client over cl. It connects once Start ran and a
// master address is known (haMasterAddress, or SetMasterAddress).
func NewClient(cfg Config, cl CommitLog, opts ClientOptions) (*Client, error) {
	log, err := checkArgs("NewClient", cfg, cl, opts.FileSize, opts.Logger)
	if err != nil {
		return nil, err
	}
	c := &Client{cfg: cfg, log: log.With("component", "ha-slave"), cl: cl, fileSize: opts.FileSize, checker: opts.Checker, peerTLS: opts.PeerTLS,
		addrWake: make(chan struct{}, 1)}
	c.mu.masterAddr = cfg.HAMasterAddress
	c.reported.Store(-1)
	return c, nil
}

// SetMasterAddress sets the master's HA address (RocketMQ updateMasterAddress). A change wakes a
// client waiting to reconnect; a connection already up stays until it fails, as in RocketMQ.
func (c *Client) SetMasterAddress(addr string) {
	c.mu.Lock()
	old := c.mu.masterAddr
	c.mu.masterAddr = addr
	c.mu.Unlock()
	if old != addr {
		c.log.Info("master HA address updated", "old", old, "new", addr)
		wake(c.addrWake)
	}
}

// MasterAddress is the master's HA address the client uses ("" while unknown).
func (c *Client) MasterAddress() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mu.masterAddr
}

// Connected reports whether a connection to the master is up.
func (c *Client) Connected() bool { return c.connected.Load() }

// ReportedOffset is the last offset reported to the master (-1 before the first report).
func (c *Client) ReportedOffset() int64 { return c.reported.Load() }

// Start starts the client's goroutine.
func (c *Client) Start() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.started || c.mu.closed {
		return errors.New("ha: Start called twice or after Close")
	}
	c.mu.started = true
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		c.run(ctx)
	}()
	return nil
}

// Close stops the client, closing its connection, and waits for its goroutines.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.mu.closed {
		c.mu.Unlock()
		return nil
	}
	c.mu.closed = true
	cancel := c.cancel
	c.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	c.wg.Wait()
	return nil
}

func (c *Client) run(ctx context.Context) {
	retry := minRetry
	maxRetry := c.cfg.heartbeat()
	for ctx.Err() == nil {
		addr := c.MasterAddress()
		if addr == "" {
			select {
			case <-ctx.Done():
			case <-c.addrWake:
			}
			continue
		}
		progressed, err := c.session(ctx, addr)
		if ctx.Err() != nil {
			return
		}
		if progressed {
			retry = minRetry
			c.log.Info("HA connection to the master ended; reconnecting", "master", addr, "err", err)
		} else {
			c.log.Warn("HA connection to the master failed", "master", addr, "err", err, "retryIn", retry)
		}
		t := time.NewTimer(retry)
		select {
		case <-ctx.Done():
		case <-c.addrWake:
		case <-t.C:
		}
		t.Stop()
		if !progressed {
			retry = min(retry*2, maxRetry)
		}
	}
}

// session runs one connection: tail check, connect, report, then append frames until an error.
// progressed says whether the master sent anything usable.
func (c *Client) session(ctx context.Context, addr string) (progressed bool, err error) {
	if c.checker != nil {
		if _, err := c.reconcile(ctx); err != nil {
			if !errors.Is(err, ErrCheckUnsupported) {
				return false, fmt.Errorf("tail check: %w", err)
			}
			c.log.Debug("tail check skipped", "err", err)
		}
	}
	d := net.Dialer{Timeout: dialTimeout}
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return false, err
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	if c.peerTLS != nil {
		if nc, err = dialTLS(ctx, c.peerTLS, nc); err != nil {
			return false, fmt.Errorf("peer TLS with the master %s: %w", addr, err)
		}
	}
	s := &slaveSession{c: c, nc: nc, done: make(chan struct{})}
	c.connected.Store(true)
	defer c.connected.Store(false)
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		s.heartbeatLoop(ctx)
	}()
	err = s.readLoop()
	close(s.done)
	_ = nc.Close()
	return s.progressed, err
}

// slaveSession is one connection of the client to the master.
type slaveSession struct {
	c          *Client
	nc         net.Conn
	done       chan struct{}
	progressed bool

	writeMu    sync.Mutex
	lastReport time.Time // guarded by writeMu
}

// report sends the log's max offset (always when force, else only when it moved).
func (s *slaveSession) report(force bool) error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	off := s.c.cl.MaxPhyOffset()
	if !force && off == s.c.reported.Load() {
		return nil
	}
	var b [ReportSize]byte
	putReport(b[:], off)
	_ = s.nc.SetWriteDeadline(time.Now().Add(s.c.cfg.housekeeping()))
	if _, err := s.nc.Write(b[:]); err != nil {
		return fmt.Errorf("report offset %d: %w", off, err)
	}
	s.c.reported.Store(off)
	s.lastReport = time.Now()
	return nil
}

// heartbeatLoop reports every haSendHeartbeatInterval when nothing else was reported, and
// closes the socket when the client stops (which ends readLoop).
func (s *slaveSession) heartbeatLoop(ctx context.Context) {
	interval := s.c.cfg.heartbeat()
	t := time.NewTimer(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			_ = s.nc.Close()
			return
		case <-s.done:
			return
		case <-t.C:
		}
		s.writeMu.Lock()
		wait := interval - time.Since(s.lastReport)
		s.writeMu.Unlock()
		if wait <= 0 {
			if err := s.report(true); err != nil {
				_ = s.nc.Close() // readLoop sees it and ends the session
				return
			}
			wait = interval
		}
		t.Reset(wait)
	}
}

// readLoop reports at once, then reads transfer frames and appends them.
func (s *slaveSession) readLoop() error {
	if err := s.report(true); err != nil {
		return err
	}
	c := s.c
	r := bufio.NewReaderSize(s.nc, 64<<10)
	var hdr [HeaderSize]byte
	var body []byte
	housekeeping := c.cfg.housekeeping()
	for {
		_ = s.nc.SetReadDeadline(time.Now().Add(housekeeping))
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			return readErr(err, housekeeping)
		}
		offset, size, err := parseHeader(hdr[:])
		if err != nil {
			return err
		}
		if local := c.cl.MaxPhyOffset(); local != offset && local != 0 {
			// RocketMQ drops the connection here and fails again forever (#323); this client's
			// next attempt starts with the tail check, which finds the common offset.
			return fmt.Errorf("master pushed offset %d, not the slave's max offset %d", offset, local)
		}
		if cap(body) < size {
			body = make([]byte, size)
		}
		body = body[:size]
		if _, err := io.ReadFull(r, body); err != nil {
			return readErr(err, housekeeping)
		}
		s.progressed = true
		if size == 0 {
			continue
		}
		if err := c.cl.AppendCommitLog(offset, body); err != nil {
			return fmt.Errorf("append %d bytes at %d: %w", size, offset, err)
		}
		if err := s.report(false); err != nil {
			return err
		}
	}
}

func readErr(err error, housekeeping time.Duration) error {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return fmt.Errorf("housekeeping: nothing from the master for haHousekeepingInterval (%v)", housekeeping)
	}
	return err
}
