package remoting

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
)

// Listener is an extra listening address of a Server (Server.Listen): connections accepted through it are
// served like those of the main listener (same routes, pools, limits and TLS mode), and Close ends all of
// them at once. The broker's Raft mode listens on the master's virtual address with one while it is master.
type Listener struct {
	s        *Server
	ln       net.Listener
	stop     chan struct{} // closed by stopAccepting: ends the accept loop's back-off wait
	done     chan struct{} // closed when the accept loop returns
	stopOnce sync.Once
	// closed is guarded by s.mu: set by Close, after which no connection accepted through it is served.
	closed bool
}

// Listen starts accepting on addr (host:port) next to the main listener. The server must be started and not
// closed. The error wraps the one of net.Listen (errors.Is(err, syscall.EADDRINUSE) when another socket
// holds addr). StopAccepting and Close of the server close the returned listener too.
func (s *Server) Listen(addr string) (*Listener, error) {
	s.mu.Lock()
	ready := s.mu.ln != nil && !s.mu.closing
	s.mu.Unlock()
	if !ready {
		return nil, errors.New("remoting: Listen on a server not started or closed")
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("remoting: listen on %q: %w", addr, err)
	}
	l := &Listener{s: s, ln: ln, stop: make(chan struct{}), done: make(chan struct{})}
	s.mu.Lock()
	if s.mu.closing {
		s.mu.Unlock()
		_ = ln.Close()
		return nil, errors.New("remoting: Listen on a closed server")
	}
	s.mu.listeners[l] = struct{}{}
	s.mu.Unlock()
	s.logger.Info("remoting: listening (extra address)", append([]any{"addr", ln.Addr().String()}, s.guardAttrs()...)...)
	s.tr.Go(func() {
		defer close(l.done)
		s.acceptLoop(ln, l, l.stop)
	})
	return l, nil
}

// Addr is the address the listener is bound to.
func (l *Listener) Addr() net.Addr { return l.ln.Addr() }

// ConnCount is the number of open connections accepted through the listener.
func (l *Listener) ConnCount() int {
	l.s.mu.Lock()
	defer l.s.mu.Unlock()
	n := 0
	for _, c := range l.s.mu.conns {
		if c.via == l {
			n++
		}
	}
	return n
}

// Close stops accepting, waits for the accept loop, and closes every connection accepted through the listener
// (their peers see the connection end at once; a handler's later answer on one is dropped). It returns the
// number of connections it closed. Safe to call more than once and concurrently with the server's Close.
func (l *Listener) Close() (int, error) {
	err := l.stopAccepting()
	l.s.mu.Lock()
	if l.closed { // a connection closed by the first Close may not have left the table yet
		l.s.mu.Unlock()
		return 0, err
	}
	l.closed = true
	delete(l.s.mu.listeners, l)
	var conns []*Conn
	for _, c := range l.s.mu.conns {
		if c.via == l {
			conns = append(conns, c)
		}
	}
	l.s.mu.Unlock()
	for _, c := range conns {
		c.closeWith("its listener "+l.ln.Addr().String()+" closed", slog.LevelDebug)
	}
	if len(conns) > 0 {
		l.s.logger.Info("remoting: extra listener closed with its connections", "addr", l.ln.Addr().String(),
			"conns", len(conns))
	}
	return len(conns), err
}

// stopAccepting closes the socket and waits for the accept loop; connections stay open.
func (l *Listener) stopAccepting() error {
	l.stopOnce.Do(func() { close(l.stop) })
	err := l.ln.Close()
	<-l.done
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}
