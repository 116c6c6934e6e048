package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"
)

// allocator is RocketMQ's AllocateMappedFileService: when the CommitLog asks for file N it
// also queues file N+1, so by the time N fills up the next file already exists (created,
// sized, mapped, warmed when configured (its head, or all of it, written with zeros and
// synced, see warmTo) and given
// a transient pool buffer) and the writer does not wait for the file system. Start also queues
// the file after the last one. Before Start and after Close it creates inline.
type allocator struct {
	dir         string
	fileSize    int64
	preallocate bool
	warm        bool
	// warmAhead is how much of the head of a new file is warmed (0: all of it); warmBytes,
	// when set, counts the zeros written (Stats.WarmBytes).
	warmAhead int64
	warmBytes *atomic.Int64
	pool      *transientPool
	fastFail  bool
	log       *slog.Logger
	wake      chan struct{}
	// made, when set, runs after each file is made (the store checks the disk).
	made func()

	mu struct {
		sync.Mutex
		running bool
		reqs    map[string]*allocRequest
		// making is the request run is making a file for (nil between files).
		making *allocRequest
	}
}

type allocRequest struct {
	path string
	from int64
	done chan struct{}
	mf   *mappedFile
	err  error
	// wanted marks the request a writer waits for; the others are made ahead.
	wanted bool
}

var errAllocatorStopped = errors.New("store: allocate service stopped")

func newAllocator(dir string, fileSize int64, preallocate, warm bool, warmAhead int64, pool *transientPool, fastFail bool, log *slog.Logger) *allocator {
	a := &allocator{dir: dir, fileSize: fileSize, preallocate: preallocate, warm: warm, warmAhead: warmAhead, pool: pool,
		fastFail: fastFail, log: log, wake: make(chan struct{}, 1)}
	a.mu.reqs = make(map[string]*allocRequest)
	return a
}

func (a *allocator) wakeup() {
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

// make creates, sizes and maps one file, attaches a pool buffer and warms it.
func (a *allocator) make(path string, from int64) (*mappedFile, error) {
	var buf []byte
	if a.pool != nil {
		if buf = a.pool.get(); buf == nil && a.fastFail {
			return nil, fmt.Errorf("store: transient store pool has no free buffer for %s", path)
		}
	}
	mf, err := createMappedFile(path, from, a.fileSize, a.preallocate)
	if err != nil {
		if buf != nil {
			a.pool.put(buf)
		}
		return nil, err
	}
	if a.warm {
		start := time.Now()
		n, err := mf.warmTo(warmTarget(0, a.warmAhead, mf.size))
		if a.warmBytes != nil {
			a.warmBytes.Add(n)
		}
		if err != nil {
			_ = mf.destroy(true)
			if buf != nil {
				a.pool.put(buf)
			}
			return nil, err
		}
		a.log.Debug("warmed commitlog file", "file", path, "bytes", n, "elapsed", time.Since(start))
	}
	if buf != nil {
		mf.writeBuf, mf.pool = buf, a.pool
	}
	if a.made != nil {
		a.made()
	}
	return mf, nil
}

// get returns the file that starts at from, made by the service (queuing the next one too),
// or inline when the service is not running. Called by the CommitLog writer only.
func (a *allocator) get(path string, from int64) (*mappedFile, error) {
	a.mu.Lock()
	if !a.mu.running {
		a.mu.Unlock()
		return a.make(path, from)
	}
	req := a.requestLocked(path, from)
	req.wanted = true
	a.requestLocked(filepath.Join(a.dir, offsetFileName(from+a.fileSize)), from+a.fileSize)
	a.mu.Unlock()
	a.wakeup()
	<-req.done
	a.mu.Lock()
	delete(a.mu.reqs, path)
	a.mu.Unlock()
	if errors.Is(req.err, errAllocatorStopped) {
		return a.make(path, from)
	}
	return req.mf, req.err
}

func (a *allocator) requestLocked(path string, from int64) *allocRequest {
	if r, ok := a.mu.reqs[path]; ok {
		return r
	}
	r := &allocRequest{path: path, from: from, done: make(chan struct{})}
	a.mu.reqs[path] = r
	return r
}

// nextPending is the lowest queued request not yet served; run makes it next.
func (a *allocator) nextPending() *allocRequest {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.mu.making = nil
	var next *allocRequest
	for _, r := range a.mu.reqs {
		select {
		case <-r.done:
			continue
		default:
		}
		if next == nil || r.from < next.from {
			next = r
		}
	}
	a.mu.making = next
	return next
}

// start makes get queue requests for run instead of creating files inline, and queues the
// file that starts at next (the one after the last file) so it is ready before it is needed.
func (a *allocator) start(next int64) {
	a.mu.Lock()
	a.mu.running = true
	if next >= 0 {
		a.requestLocked(filepath.Join(a.dir, offsetFileName(next)), next)
	}
	a.mu.Unlock()
	a.wakeup()
}

// run serves requests until ctx ends, then fails the queued ones and deletes the files made
// ahead that nobody took. start must have been called.
func (a *allocator) run(ctx context.Context) {
	defer a.stop()
	for {
		if req := a.nextPending(); req != nil {
			mf, err := a.make(req.path, req.from)
			if err != nil {
				a.log.Error("allocate mapped file", "file", req.path, "err", err)
			}
			a.mu.Lock()
			if a.mu.reqs[req.path] != req && mf != nil {
				// Discarded while being made (the CommitLog was cut before it).
				_ = mf.destroy(true)
				mf, err = nil, errAllocatorStopped
			}
			req.mf, req.err = mf, err
			close(req.done)
			a.mu.Unlock()
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-a.wake:
		}
	}
}

// discardFrom deletes the files made ahead that start at or after from, and forgets the
// requests for them: the CommitLog is being cut before them, so they would leave a gap in the
// folder. A file still being made is waited for (run deletes it when done), so none is left
// behind when discardFrom returns. The CommitLog writer must not be waiting for a file
// (TruncateCommitLog holds the put lock; making a file takes none of the store's locks).
func (a *allocator) discardFrom(from int64) {
	var making []*allocRequest
	a.mu.Lock()
	for path, r := range a.mu.reqs {
		if r.from < from {
			continue
		}
		select {
		case <-r.done:
			if r.mf != nil {
				_ = r.mf.destroy(true)
			}
		default:
			if r == a.mu.making { // run deletes it when done
				making = append(making, r)
			} else { // queued: run will not see it any more
				r.err = errAllocatorStopped
				close(r.done)
			}
		}
		delete(a.mu.reqs, path)
	}
	a.mu.Unlock()
	for _, r := range making {
		<-r.done
	}
}

func (a *allocator) stop() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.mu.running = false
	for path, r := range a.mu.reqs {
		select {
		case <-r.done:
			if !r.wanted && r.mf != nil {
				_ = r.mf.destroy(true)
			}
		default:
			r.err = errAllocatorStopped
			close(r.done)
		}
		delete(a.mu.reqs, path)
	}
}
