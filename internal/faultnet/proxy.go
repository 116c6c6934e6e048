package faultnet

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
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
	OneWay // one direction blackholed, the other passing
	Lossy  // stalls, jitter and resets standing in for packet loss and reordering (see the package doc)
)

func (m Mode) String() string {
	switch m {
	case Pass:
		return "pass"
	case Blackhole:
		return "blackhole"
	case Delay:
		return "delay"
	case OneWay:
		return "one-way"
	case Lossy:
		return "lossy"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// Direction is one way of a proxied connection.
type Direction int

// The directions of a connection through a proxy.
const (
	Forward Direction = iota // from the side that dialed the proxy to the target
	Back                     // from the target to the side that dialed the proxy
)

func (d Direction) String() string {
	if d == Forward {
		return "forward"
	}
	return "back"
}

// LossConfig is what a Lossy link does to each chunk it reads (a chunk is one read of the byte stream: a
// write of the sender, or several coalesced). Draws come from Seed, so a run can be repeated.
type LossConfig struct {
	Seed     uint64
	Stall    float64       // probability that a chunk is held, as by a lost segment's retransmission
	StallMin time.Duration // a held chunk waits a length drawn in [StallMin, StallMax]
	StallMax time.Duration
	Jitter   time.Duration // every chunk waits up to this much more (reordered segments TCP puts back in order)
	Reset    float64       // probability that a chunk resets the connection instead (loss outlasting the retries)
}

// Validate names the first bad field.
func (c LossConfig) Validate() error {
	switch {
	case c.Stall < 0 || c.Stall > 1 || c.Reset < 0 || c.Reset > 1:
		return fmt.Errorf("faultnet: loss: probabilities stall %v and reset %v must be within [0, 1]", c.Stall, c.Reset)
	case c.StallMin < 0 || c.StallMax < c.StallMin:
		return fmt.Errorf("faultnet: loss: stall [%v, %v] is not a range", c.StallMin, c.StallMax)
	case c.Jitter < 0:
		return fmt.Errorf("faultnet: loss: jitter %v < 0", c.Jitter)
	}
	return nil
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
		gate   [2]chan struct{} // per Direction: closed while bytes may flow that way; replaced when it is blackholed
		loss   LossConfig       // Lossy
		rng    *rand.Rand       // Lossy: draws from loss.Seed
		resets int              // Lossy: connections reset since SetLoss
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
	for d := range p.mu.gate {
		p.mu.gate[d] = make(chan struct{})
		close(p.mu.gate[d])
	}
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
	p.closeGateLocked(Forward)
	p.closeGateLocked(Back)
	p.mu.mode, p.mu.delay = Blackhole, 0
	p.log.Info("blackhole")
}

// BlackholeOneWay stops every byte going dir until Heal; the other direction passes (see the package doc).
func (p *Proxy) BlackholeOneWay(dir Direction) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.openGateLocked()
	p.closeGateLocked(dir)
	p.mu.mode, p.mu.delay = OneWay, 0
	p.log.Info("one-way blackhole", "direction", dir)
}

// SetDelay delays every chunk by d (one way) until Heal.
func (p *Proxy) SetDelay(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.openGateLocked()
	p.mu.mode, p.mu.delay = Delay, d
	p.log.Info("delay", "delay", d)
}

// SetLoss makes the link lossy until Heal (both directions; see the package doc).
func (p *Proxy) SetLoss(c LossConfig) error {
	if err := c.Validate(); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.openGateLocked()
	p.mu.mode, p.mu.delay = Lossy, 0
	p.mu.loss, p.mu.rng, p.mu.resets = c, rand.New(rand.NewPCG(c.Seed, 0x6c6f7373)), 0
	p.log.Info("lossy", "stall", c.Stall, "stallMin", c.StallMin, "stallMax", c.StallMax, "jitter", c.Jitter, "reset", c.Reset)
	return nil
}

// Resets is how many connections a Lossy mode has reset since the last SetLoss.
func (p *Proxy) Resets() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mu.resets
}

// Heal returns to Pass; bytes held by a blackhole flow again.
func (p *Proxy) Heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.openGateLocked()
	p.mu.mode, p.mu.delay = Pass, 0
	p.log.Info("heal")
}

// closeGateLocked holds the bytes going dir. Lock should be held.
func (p *Proxy) closeGateLocked(dir Direction) {
	select {
	case <-p.mu.gate[dir]:
		p.mu.gate[dir] = make(chan struct{})
	default: // already held
	}
}

// openGateLocked lets held bytes through, both ways. Lock should be held.
func (p *Proxy) openGateLocked() {
	for _, g := range p.mu.gate {
		select {
		case <-g:
		default:
			close(g)
		}
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

// gate is what bytes going dir wait on.
func (p *Proxy) gate(dir Direction) <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mu.gate[dir]
}

// fate is what happens to a chunk read now: how long it waits before it is written, or whether it resets
// the connection instead (Lossy).
func (p *Proxy) fate() (wait time.Duration, reset bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.mode != Lossy {
		return p.mu.delay, false
	}
	c, r := p.mu.loss, p.mu.rng
	if c.Reset > 0 && r.Float64() < c.Reset {
		p.mu.resets++
		return 0, true
	}
	if c.Jitter > 0 {
		wait += time.Duration(r.Int64N(int64(c.Jitter) + 1))
	}
	if c.Stall > 0 && r.Float64() < c.Stall {
		wait += c.StallMin
		if c.StallMax > c.StallMin {
			wait += time.Duration(r.Int64N(int64(c.StallMax-c.StallMin) + 1))
		}
	}
	return wait, false
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
	<-p.gate(Forward) // a partitioned link does not even connect: a handshake needs both ways
	<-p.gate(Back)
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
	wg.Go(func() { p.pipe(server, client, Forward) })
	wg.Go(func() { p.pipe(client, server, Back) })
	wg.Wait()
}

// chunk is bytes read at a time, to be written at due.
type chunk struct {
	b   []byte
	due time.Time
}

// pipe copies src to dst, direction dir, through the mode: a reader goroutine that waits at the gate before
// each read and stamps each chunk with its due time (never before the previous chunk's: a byte stream keeps
// its order), and this goroutine writing chunks when due. When either side ends, or a Lossy draw resets the
// connection, both connections are closed, which ends the other direction too.
func (p *Proxy) pipe(dst, src net.Conn, dir Direction) {
	defer dst.Close()
	defer src.Close()
	chunks := make(chan chunk, 64)
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(chunks)
		var last time.Time
		for {
			<-p.gate(dir)
			buf := make([]byte, 32<<10)
			n, err := src.Read(buf)
			if n > 0 {
				wait, reset := p.fate() // the mode when the bytes arrived
				if reset {
					p.log.Info("lossy: reset", "direction", dir)
					_ = src.Close()
					_ = dst.Close()
					return
				}
				due := time.Now().Add(wait)
				if due.Before(last) {
					due = last
				}
				last = due
				chunks <- chunk{b: buf[:n], due: due}
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
		<-p.gate(dir) // a blackhole also holds what was read before it started
		if _, err := dst.Write(c.b); err != nil {
			_ = src.Close() // ends the reader
			for range chunks {
			}
			return
		}
	}
}
