package ha

import (
	"bytes"
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rocketraft/rocketraft/store"
)

// rawPeer is a hand-driven HA client: it writes reports and reads whatever the master sends.
type rawPeer struct {
	t  testing.TB
	nc net.Conn
}

func dialPeer(t testing.TB, svc *Service) *rawPeer {
	t.Helper()
	nc, err := net.Dial("tcp", svc.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	p := &rawPeer{t: t, nc: nc}
	t.Cleanup(p.close)
	return p
}

func (p *rawPeer) report(off int64) {
	var b [ReportSize]byte
	putReport(b[:], off)
	if _, err := p.nc.Write(b[:]); err != nil {
		p.t.Fatalf("report %d: %v", off, err)
	}
}

func (p *rawPeer) close() { _ = p.nc.Close() }

// readAll reads until the master closes the connection (failing after timeout).
func (p *rawPeer) readAll(timeout time.Duration) []byte {
	p.t.Helper()
	_ = p.nc.SetReadDeadline(time.Now().Add(timeout))
	b, err := io.ReadAll(p.nc)
	if err != nil {
		p.t.Fatalf("the master did not close the connection: %v (read %d bytes)", err, len(b))
	}
	return b
}

// TestLyingPeerGetsNothing (#1155, #3015): a peer whose report, first or later, lies beyond the
// master's max offset is disconnected, receives no byte, and acknowledges nothing.
func TestLyingPeerGetsNothing(t *testing.T) {
	master := newMemLog(testFileSize)
	master.putRecords(20, 1)
	sink, log := newLogSink(t)
	svc := startService(t, testConfig(), master, testFileSize, log)

	liar := dialPeer(t, svc)
	liar.report(master.MaxPhyOffset() + 1<<30)
	if got := liar.readAll(10 * time.Second); len(got) != 0 {
		t.Fatalf("a peer whose first report lies received %d bytes", len(got))
	}
	if svc.AckedOffset() != 0 || svc.IsSlaveOK(master.MaxPhyOffset()) {
		t.Fatalf("a lying first report counted: acked %d", svc.AckedOffset())
	}
	if got := waitStatus(t, svc, master.MaxPhyOffset()); got != store.PutSlaveNotAvailable {
		t.Fatalf("put after a lying peer: %v, want SLAVE_NOT_AVAILABLE", got)
	}

	// A later report that lies: the connection closes and the acknowledgement stays the honest one.
	late := dialPeer(t, svc)
	late.report(100)
	eventually(t, 10*time.Second, func() bool { return svc.AckedOffset() == 100 }, "honest report seen")
	late.report(master.MaxPhyOffset() + 1)
	late.readAll(10 * time.Second)
	if svc.AckedOffset() != 100 {
		t.Fatalf("acked %d after a lying report, want 100", svc.AckedOffset())
	}
	if sink.Count("a peer that lies gets nothing") != 2 {
		t.Fatalf("want both lies logged")
	}
}

// TestHousekeepingClosesSilentPeer: a peer that never reports is disconnected after
// haHousekeepingInterval.
func TestHousekeepingClosesSilentPeer(t *testing.T) {
	cfg := testConfig()
	cfg.HAHousekeepingInterval = 300
	sink, log := newLogSink(t)
	svc := startService(t, cfg, newMemLog(testFileSize), testFileSize, log)
	peer := dialPeer(t, svc)
	peer.readAll(30 * time.Second)
	eventually(t, 10*time.Second, func() bool { return sink.Count("housekeeping") == 1 }, "the close logged as housekeeping")
}

// TestMasterHeartbeatsAnIdleSlave: with nothing to send, the master keeps sending empty frames at
// the slave's offset, so an idle connection stays up.
func TestMasterHeartbeatsAnIdleSlave(t *testing.T) {
	cfg := testConfig()
	cfg.HASendHeartbeatInterval = 20
	master := newMemLog(testFileSize)
	master.putRecords(5, 2)
	_, log := newLogSink(t)
	svc := startService(t, cfg, master, testFileSize, log)
	peer := dialPeer(t, svc)
	peer.report(master.MaxPhyOffset())
	var hdr [HeaderSize]byte
	for i := range 30 {
		_ = peer.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.ReadFull(peer.nc, hdr[:]); err != nil {
			t.Fatalf("heartbeat %d: %v", i, err)
		}
		off, size, err := parseHeader(hdr[:])
		if err != nil || off != master.MaxPhyOffset() || size != 0 {
			t.Fatalf("heartbeat %d: offset %d size %d err %v, want offset %d size 0", i, off, size, err, master.MaxPhyOffset())
		}
		peer.report(master.MaxPhyOffset()) // the slave's keep-alive
	}
}

// cutProxy forwards TCP between a listener and target and can cut every connection at once.
type cutProxy struct {
	ln     net.Listener
	target string
	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	// cutAfter, when positive, cuts a connection after it forwarded that many bytes from the
	// target (the master) and draws a new limit for the next one.
	cutAfter atomic.Int64
	cuts     atomic.Int64
}

func startProxy(t testing.TB, target string) *cutProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

func (p *cutProxy) accept() {
	defer p.wg.Done()
	for {
		in, err := p.ln.Accept()
		if err != nil {
			return
		}
		out, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = in.Close()
			continue
		}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			_ = in.Close()
			_ = out.Close()
			return
		}
		p.conns[in], p.conns[out] = struct{}{}, struct{}{}
		p.wg.Add(2)
		p.mu.Unlock()
		limit := p.cutAfter.Load()
		go p.pipe(in, out, limit) // master -> slave, counted
		go p.pipe(out, in, 0)
	}
}

func (p *cutProxy) pipe(dst, src net.Conn, limit int64) {
	defer p.wg.Done()
	defer func() { _ = src.Close(); _ = dst.Close() }()
	buf := make([]byte, 4096)
	var sent int64
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if limit > 0 && sent+int64(n) > limit {
				n = int(limit - sent) // forward part of the frame, then cut mid-frame
				_, _ = dst.Write(buf[:n])
				p.cuts.Add(1)
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
			sent += int64(n)
		}
		if err != nil {
			return
		}
	}
}

func (p *cutProxy) close() {
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	_ = p.ln.Close()
	p.wg.Wait()
}

// TestConnectionCutRepeatedly: the HA connection is cut mid-frame again and again while the
// master takes writes; once the cuts stop the logs are identical.
func TestConnectionCutRepeatedly(t *testing.T) {
	master := newMemLog(testFileSize)
	sink, log := newLogSink(t)
	svc := startService(t, testConfig(), master, testFileSize, log.With("side", "master"))
	proxy := startProxy(t, svc.Addr().String())
	proxy.cutAfter.Store(10 << 10)
	slave := newMemLog(testFileSize)
	startClient(t, testConfig(), slave, testFileSize, proxy.ln.Addr().String(), localChecker{master}, log.With("side", "slave"))

	rng := rand.New(rand.NewPCG(7, 7))
	for proxy.cuts.Load() < 20 {
		master.putRecords(20, rng.Uint64())
		proxy.cutAfter.Store(int64(1 + rng.IntN(16<<10)))
		cuts := proxy.cuts.Load()
		eventually(t, 20*time.Second, func() bool {
			return proxy.cuts.Load() > cuts || slave.MaxPhyOffset() == master.MaxPhyOffset()
		}, "a cut or a caught-up slave")
	}
	proxy.cutAfter.Store(0)
	master.putRecords(50, 99)
	waitIdentical(t, master, slave)
	if sink.Count("diverged") != 0 {
		t.Fatal("cuts alone made the slave truncate")
	}
	t.Logf("%d cuts, %d bytes replicated", proxy.cuts.Load(), slave.MaxPhyOffset())
}

// TestFramesStayWithinAFile: transfer frames are contiguous, at most haTransferBatchSize, never cross
// a CommitLog file, and carry the master's bytes.
func TestFramesStayWithinAFile(t *testing.T) {
	master := newMemLog(testFileSize)
	master.putRecords(300, 3) // about three files
	_, log := newLogSink(t)
	cfg := testConfig()
	svc := startService(t, cfg, master, testFileSize, log)
	peer := dialPeer(t, svc)
	peer.report(1) // streaming starts where the slave says, here inside the first record
	_, want := master.bytes()
	next := int64(1)
	var hdr [HeaderSize]byte
	for next < master.MaxPhyOffset() {
		_ = peer.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.ReadFull(peer.nc, hdr[:]); err != nil {
			t.Fatal(err)
		}
		off, size, err := parseHeader(hdr[:])
		if err != nil || off != next {
			t.Fatalf("frame at %d size %d (%v), want it at %d", off, size, err, next)
		}
		if size > cfg.HATransferBatchSize || (size > 0 && off/testFileSize != (off+int64(size)-1)/testFileSize) {
			t.Fatalf("frame %d+%d is larger than %d or crosses a file", off, size, cfg.HATransferBatchSize)
		}
		body := make([]byte, size)
		if _, err := io.ReadFull(peer.nc, body); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(body, want[off:off+int64(size)]) {
			t.Fatalf("frame at %d does not carry the master's bytes", off)
		}
		next += int64(size)
	}
}
