package ha

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"

	"github.com/rocketraft/rocketraft/internal/peertls"
	"github.com/rocketraft/rocketraft/store"
)

// ServiceOptions are the master's collaborators, things that are not config keys.
type ServiceOptions struct {
	// Logger receives the service's logs; nil discards them.
	Logger *slog.Logger
	// ListenAddr is host:port to accept slaves on (the broker passes brokerIP1:haListenPort, or
	// ":port" for every interface).
	ListenAddr string
	// FileSize is mappedFileSizeCommitLog: a slave that reports 0 is sent the log from the start
	// of the master's last file, as RocketMQ does.
	FileSize int64
	// PeerTLS, when set (peerTlsMode=enforcing), requires every slave to pass a mutual TLS
	// handshake first (tls.go); nil: plain TCP.
	PeerTLS *peertls.Material
}

// Service is the master side of classic replication (RocketMQ 4.x HAService): it accepts slaves
// on the HA port, streams CommitLog bytes to each (connection.go), and parks SYNC_MASTER puts
// until a slave acknowledges them (transfer.go).
//
// Lock order: mu alone; the group transfer's lock is never held while taking mu.
type Service struct {
	cfg      Config
	log      *slog.Logger
	addr     string
	fileSize int64
	cl       CommitLog
	transfer *groupTransfer
	peerTLS  *peertls.Material

	// acked is RocketMQ's push2SlaveMaxOffset: the best offset any slave reported on a
	// connection of this service (only ever grows).
	acked atomic.Int64
	// reporting counts the connections that sent a valid report: only they make a slave "OK".
	reporting atomic.Int32

	ln     net.Listener
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu struct {
		sync.Mutex
		conns   map[*connection]struct{}
		started bool
		closed  bool
	}
}

// NewService validates cfg and builds a master service over cl. Nothing listens until Start.
func NewService(cfg Config, cl CommitLog, opts ServiceOptions) (*Service, error) {
	log, err := checkArgs("NewService", cfg, cl, opts.FileSize, opts.Logger)
	if err != nil {
		return nil, err
	}
	s := &Service{cfg: cfg, log: log.With("component", "ha-master"), addr: opts.ListenAddr, fileSize: opts.FileSize, cl: cl,
		peerTLS: opts.PeerTLS}
	s.transfer = newGroupTransfer(cfg.slaveTimeout(), s.acked.Load)
	s.mu.conns = map[*connection]struct{}{}
	return s, nil
}

// Start listens on the HA port and starts the accept and group transfer services.
func (s *Service) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.started || s.mu.closed {
		return errors.New("ha: Start called twice or after Close")
	}
	ln, err := net.Listen("tcp", s.addr)
	if err != nil {
		return fmt.Errorf("ha: listen on %s (haListenPort): %w", s.addr, err)
	}
	s.ln = ln
	s.mu.started = true
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	s.wg.Add(2)
	go func() {
		defer s.wg.Done()
		s.acceptLoop(ctx)
	}()
	go func() {
		defer s.wg.Done()
		s.transfer.run(ctx)
	}()
	s.log.Info("HA service listening", "addr", ln.Addr().String())
	return nil
}

// Addr is the address the service listens on (nil before Start).
func (s *Service) Addr() net.Addr {
	if s.ln == nil {
		return nil
	}
	return s.ln.Addr()
}

func (s *Service) acceptLoop(ctx context.Context) {
	for {
		nc, err := s.ln.Accept()
		if err != nil {
			if ctx.Err() == nil && !errors.Is(err, net.ErrClosed) {
				s.log.Error("HA accept failed; the service stops accepting slaves", "err", err)
			}
			return
		}
		s.log.Info("HA service accepted a connection", "slave", nc.RemoteAddr().String())
		if s.peerTLS != nil {
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				if tcp, ok := nc.(*net.TCPConn); ok {
					_ = tcp.SetNoDelay(true)
				}
				tc, err := acceptTLS(ctx, s.peerTLS, nc)
				if err != nil {
					if ctx.Err() == nil {
						s.log.Warn("HA: refused a peer connection", "remote", nc.RemoteAddr().String(), "stage", "tls handshake", "err", err)
					}
					return
				}
				s.serve(ctx, tc)
			}()
			continue
		}
		s.serve(ctx, nc)
	}
}

// serve starts the reader and writer of a new slave connection.
func (s *Service) serve(ctx context.Context, nc net.Conn) {
	if tc, ok := nc.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	c := newConnection(ctx, s, nc)
	s.mu.Lock()
	if s.mu.closed {
		s.mu.Unlock()
		_ = nc.Close()
		return
	}
	s.mu.conns[c] = struct{}{}
	s.wg.Add(2)
	s.mu.Unlock()
	go func() {
		defer s.wg.Done()
		c.readLoop()
	}()
	go func() {
		defer s.wg.Done()
		c.writeLoop()
	}()
}

// checkArgs validates what NewService and NewClient both take and returns the logger to use.
func checkArgs(fn string, cfg Config, cl CommitLog, fileSize int64, log *slog.Logger) (*slog.Logger, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cl == nil {
		return nil, fmt.Errorf("ha: %s needs a CommitLog", fn)
	}
	if fileSize <= 0 {
		return nil, fmt.Errorf("ha: %s needs the CommitLog file size (mappedFileSizeCommitLog), got %d", fn, fileSize)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return log, nil
}

// removeConnection forgets c (called once per connection, when it closes).
func (s *Service) removeConnection(c *connection) {
	s.mu.Lock()
	delete(s.mu.conns, c)
	s.mu.Unlock()
}

// noteAck raises the acknowledged offset and wakes the waiting puts (RocketMQ notifyTransferSome).
func (s *Service) noteAck(offset int64) {
	for {
		cur := s.acked.Load()
		if offset <= cur {
			return
		}
		if s.acked.CompareAndSwap(cur, offset) {
			s.transfer.wakeup()
			return
		}
	}
}

// IsSlaveOK is RocketMQ's isSlaveOK: some slave is connected and reporting, and the best
// acknowledgement is less than haSlaveFallbehindMax behind end.
func (s *Service) IsSlaveOK(end int64) bool {
	return s.reporting.Load() > 0 && end-s.acked.Load() < s.cfg.HASlaveFallbehindMax
}

// Wait is the group transfer hook of a SYNC_MASTER store, called after the local durability
// step of a put that ends at end: done gets PutSlaveNotAvailable at once when no slave is OK,
// else PutOK once a slave acknowledged end, or PutFlushSlaveTimeout after slaveTimeout. done
// runs exactly once and must not block.
func (s *Service) Wait(end int64, done func(store.PutStatus)) {
	if !s.IsSlaveOK(end) {
		done(store.PutSlaveNotAvailable)
		return
	}
	s.transfer.add(end, done)
}

// SlavesReporting is the number of slave connections that sent a valid report.
func (s *Service) SlavesReporting() int { return int(s.reporting.Load()) }

// AckedOffset is the best offset a slave acknowledged (push2SlaveMaxOffset).
func (s *Service) AckedOffset() int64 { return s.acked.Load() }

// ConnectionInfo describes one slave connection.
type ConnectionInfo struct {
	RemoteAddr    string
	RequestOffset int64 // the slave's first report, where streaming started from (-1 before it)
	AckOffset     int64 // the slave's last report (-1 before it)
}

// Connections lists the slave connections.
func (s *Service) Connections() []ConnectionInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]ConnectionInfo, 0, len(s.mu.conns))
	for c := range s.mu.conns {
		out = append(out, ConnectionInfo{RemoteAddr: c.addr, RequestOffset: c.requestOffset.Load(), AckOffset: c.ackOffset.Load()})
	}
	return out
}

// Close stops accepting, closes every slave connection, waits for every goroutine and completes
// the waiting puts (PUT_OK when acknowledged by then, else FLUSH_SLAVE_TIMEOUT). Safe to call
// more than once.
func (s *Service) Close() error {
	s.mu.Lock()
	if s.mu.closed {
		s.mu.Unlock()
		return nil
	}
	s.mu.closed = true
	conns := make([]*connection, 0, len(s.mu.conns))
	for c := range s.mu.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	var err error
	if s.ln != nil {
		err = s.ln.Close()
		s.cancel()
	}
	for _, c := range conns {
		c.close("HA service closing")
	}
	s.wg.Wait()
	s.transfer.close()
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}
