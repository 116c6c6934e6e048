package store

import (
	"fmt"
	"log/slog"
	"sync"

	"golang.org/x/sys/unix"
)

// transientPool is RocketMQ's TransientStorePool: off-heap buffers, one CommitLog file long
// each, that take the CommitLog writes so the writer never faults on the file's pages; the
// commit service copies them into the file. Buffers are mlock'ed when RLIMIT_MEMLOCK allows
// it; otherwise the pool logs that once and works unlocked.
type transientPool struct {
	bufSize int64
	log     *slog.Logger

	mu struct {
		sync.Mutex
		free [][]byte
		all  [][]byte
	}
}

func newTransientPool(n int, bufSize int64, log *slog.Logger) (*transientPool, error) {
	p := &transientPool{bufSize: bufSize, log: log}
	lockFailed := false
	for i := 0; i < n; i++ {
		b, err := unix.Mmap(-1, 0, int(bufSize), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
		if err != nil {
			p.close()
			return nil, fmt.Errorf("store: transient store pool: map buffer %d of %d bytes: %w", i, bufSize, err)
		}
		if err := unix.Mlock(b); err != nil && !lockFailed {
			lockFailed = true
			log.Warn("transient store pool: mlock failed, buffers stay unlocked (raise RLIMIT_MEMLOCK to lock them)",
				"bufferBytes", bufSize, "buffers", n, "err", err)
		}
		p.mu.all = append(p.mu.all, b)
		p.mu.free = append(p.mu.free, b)
	}
	return p, nil
}

// get borrows a buffer, or returns nil when all are in use.
func (p *transientPool) get() []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := len(p.mu.free)
	if n == 0 {
		return nil
	}
	b := p.mu.free[n-1]
	p.mu.free = p.mu.free[:n-1]
	return b
}

// put gives a buffer back.
func (p *transientPool) put(b []byte) {
	p.mu.Lock()
	p.mu.free = append(p.mu.free, b)
	p.mu.Unlock()
}

// available is the number of free buffers.
func (p *transientPool) available() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.mu.free)
}

// close unmaps every buffer; no file may still use one.
func (p *transientPool) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, b := range p.mu.all {
		_ = unix.Munlock(b)
		_ = unix.Munmap(b)
	}
	p.mu.all, p.mu.free = nil, nil
}
