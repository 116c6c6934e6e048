package faultnet

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"
)

// Mode is what a proxy does with the bytes of its connections.
type Mode int

// The modes (see the package doc).
const (
	Pass Mode = iota
	Blackhole
	Delay
)

func (m Mode) String() string {
	switch m {
	case Pass:
		return "pass"
	case Blackhole:
		return "blackhole"
	case Delay:
		return "delay"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// Proxy forwards TCP connections from its listener to a target address.
type Proxy struct {
	name   string
	ln     net.Listener
	target string
	log    *slog.Logger
	wg     sync.WaitGroup

	mu struct {
		sync.Mutex
		mode   Mode
		delay  time.Duration
		gate   chan struct{} // closed while bytes may flow; replaced when a blackhole starts
		conns  map[net.Conn]struct{}
		closed bool
	}
}

// Listen starts a proxy named name (for logs) on a free 127.0.0.1 port that forwards to target.
func Listen(name, target string, log *slog.Logger) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("faultnet: proxy %s: %w", name, err)
	}
	p := &Proxy{name: name, ln: ln, target: target, log: log.With("proxy", name, "target", target)}
	p.mu.conns = map[net.Conn]struct{}{}
	p.mu.gate = make(chan struct{})
	close(p.mu.gate)
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the proxy's listening address, host:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Name is the proxy's name.
func (p *Proxy) Name() string { return p.name }

// Target is the address the proxy forwards to.
func (p *Proxy) Target() string { return p.target }

// Mode returns the current mode and, for Delay, the delay.
func (p *Proxy) Mode() (Mode, time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mu.mode, p.mu.delay
}

// Blackhole stops every byte both ways until Heal (see the package doc).
func (p *Proxy) Blackhole() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.mode != Blackhole {
		p.mu.gate = make(chan struct{})
	}
	p.mu.mode, p.mu.delay = Blackhole, 0
	p.log.Info("blackhole")
}

// SetDelay delays every chunk by d (one way) until Heal.
func (p *Proxy) SetDelay(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.openGateLocked()
	p.mu.mode, p.mu.delay = Delay, d
	p.log.Info("delay", "delay", d)
}

// Heal returns to Pass; bytes held by a blackhole flow again.
func (p *Proxy) Heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.openGateLocked()
	p.mu.mode, p.mu.delay = Pass, 0
	p.log.Info("heal")
}

// openGateLocked lets held bytes through. Lock should be held.
func (p *Proxy) openGateLocked() {
	select {
	case <-p.mu.gate:
	default:
		close(p.mu.gate)
	}
}

// Cut closes every open connection; new ones are accepted as the mode allows.
func (p *Proxy) Cut() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for c := range p.mu.conns {
		_ = c.Close()
		n++
	}
	p.log.Info("cut", "connections", n/2)
	return n / 2
}

// Close stops the proxy: no more connections, every open one closed, goroutines waited for.
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.mu.closed = true
	p.openGateLocked()
	for c := range p.mu.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	err := p.ln.Close()
	p.wg.Wait()
	return err
}

// state returns what a pipe needs to forward its next chunk: the gate to wait on and the delay.
func (p *Proxy) state() (gate <-chan struct{}, delay time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mu.gate, p.mu.delay
}

func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.closed {
		return false
	}
	p.mu.conns[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.mu.conns, c)
	p.mu.Unlock()
	_ = c.Close()
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.wg.Add(1)
		go p.serve(client)
	}
}

// serve connects client to the target and runs both directions until either side ends.
func (p *Proxy) serve(client net.Conn) {
	defer p.wg.Done()
	if !p.track(client) {
		_ = client.Close()
		return
	}
	defer p.untrack(client)
	gate, _ := p.state()
	<-gate // a partitioned link does not even connect
	server, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil {
		p.log.Debug("dial target", "err", err)
		return
	}
	if !p.track(server) {
		_ = server.Close()
		return
	}
	defer p.untrack(server)
	var wg sync.WaitGroup
	wg.Go(func() { p.pipe(server, client) })
	wg.Go(func() { p.pipe(client, server) })
	wg.Wait()
}

// chunk is bytes read at a time, to be written at due.
type chunk struct {
	b   []byte
	due time.Time
}

// pipe copies src to dst through the mode: a reader goroutine that waits at the gate before each read and
// stamps each chunk with its due time, and this goroutine writing chunks when due. When either side ends,
// both connections are closed, which ends the other direction too.
func (p *Proxy) pipe(dst, src net.Conn) {
	defer dst.Close()
	defer src.Close()
	chunks := make(chan chunk, 64)
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(chunks)
		for {
			gate, _ := p.state()
			<-gate
			buf := make([]byte, 32<<10)
			n, err := src.Read(buf)
			if n > 0 {
				_, delay := p.state() // the mode when the bytes arrived
				chunks <- chunk{b: buf[:n], due: time.Now().Add(delay)}
			}
			if err != nil {
				if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
					p.log.Debug("read", "err", err)
				}
				return
			}
		}
	})
	defer wg.Wait()
	for c := range chunks {
		if d := time.Until(c.due); d > 0 {
			t := time.NewTimer(d)
			<-t.C
		}
		gate, _ := p.state()
		<-gate // a blackhole also holds what was read before it started
		if _, err := dst.Write(c.b); err != nil {
			_ = src.Close() // ends the reader
			for range chunks {
			}
			return
		}
	}
}
