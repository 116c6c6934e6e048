package remoting

import (
	"sync"
	"sync/atomic"
	"time"
)

// Pool is a named set of worker goroutines with a bounded queue of tasks. The server runs every request's
// handler on the pool registered for its code, so that a slow family (sends waiting on disk) never holds up
// another (heartbeats). A task offered to a full queue is refused at once: the server answers SYSTEM_BUSY.
type Pool struct {
	name     string
	tasks    chan func()
	done     chan struct{}
	once     sync.Once
	wg       sync.WaitGroup
	rejected atomic.Int64
	loggedAt atomic.Int64 // unix nanoseconds of the last refusal logged (logRefusal)
	draining atomic.Bool  // Drain: run the queued tasks before the workers exit

	// The enqueue times of the queued tasks, for HeadWait: task number n (counting from 0 in queue order)
	// was queued at enqueued[n % len]; in counts the tasks queued, out those taken by a worker. submitMu
	// makes a task's number its place in the queue.
	submitMu sync.Mutex
	enqueued []atomic.Int64 // unix nanoseconds
	in, out  atomic.Uint64
}

// NewPool starts workers goroutines (at least 1) that take tasks from a queue of queue slots (at least 0; with
// 0 a task is accepted only when a worker is idle). Close stops them.
func NewPool(name string, workers, queue int) *Pool {
	p := &Pool{name: name, tasks: make(chan func(), max(queue, 0)), done: make(chan struct{}),
		enqueued: make([]atomic.Int64, max(queue, 1))}
	for range max(workers, 1) {
		p.wg.Add(1)
		go p.work()
	}
	return p
}

func (p *Pool) work() {
	defer p.wg.Done()
	for {
		select {
		case <-p.done:
			for p.draining.Load() {
				select {
				case task := <-p.tasks:
					p.out.Add(1)
					task()
				default:
					return
				}
			}
			return
		case task := <-p.tasks:
			p.out.Add(1)
			task()
		}
	}
}

// Submit queues task without blocking. It returns false when the queue is full or the pool is closed; the task
// then never runs. A task queued when Close is called may not run either. Tasks must not panic (the server's
// tasks recover their handler's panics).
func (p *Pool) Submit(task func()) bool {
	select {
	case <-p.done:
		return false
	default:
	}
	p.submitMu.Lock()
	defer p.submitMu.Unlock()
	select {
	case p.tasks <- task:
		n := p.in.Load()
		p.enqueued[n%uint64(len(p.enqueued))].Store(time.Now().UnixNano())
		p.in.Store(n + 1)
		return true
	default:
		p.rejected.Add(1)
		return false
	}
}

// Drain stops taking new tasks, runs every task already queued, and waits for the workers (a graceful stop:
// requests a client already sent are answered). It may be called more than once, and before Close.
func (p *Pool) Drain() {
	p.draining.Store(true)
	p.once.Do(func() { close(p.done) })
	p.wg.Wait()
}

// Stopped reports whether Drain or Close was called: Submit refuses every task from then on.
func (p *Pool) Stopped() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Close stops the workers once their current task returns, drops the queued tasks and waits for the workers.
// It may be called more than once.
func (p *Pool) Close() {
	p.once.Do(func() { close(p.done) })
	p.wg.Wait()
}

// Name returns the pool's name.
func (p *Pool) Name() string { return p.name }

// Capacity returns how many tasks the queue holds.
func (p *Pool) Capacity() int { return cap(p.tasks) }

// Queued returns how many tasks wait in the queue.
func (p *Pool) Queued() int { return len(p.tasks) }

// HeadWait is how long the task at the head of the queue has waited for a worker (RocketMQ's
// ThreadPoolQueueHeadWaitTimeMills), 0 when the queue is empty. A worker may take the head between the two
// loads; the figure is then that of the next task, never a time the queue did not wait.
func (p *Pool) HeadWait() time.Duration {
	out, in := p.out.Load(), p.in.Load()
	if out >= in {
		return 0
	}
	at := p.enqueued[out%uint64(len(p.enqueued))].Load()
	if at == 0 {
		return 0
	}
	return max(time.Duration(time.Now().UnixNano()-at), 0)
}

// logRefusal reports whether a refusal at now is to be logged: the first, then at most one a second (a pool
// refuses at the rate requests come when it is full; a line for each cost 8% of a saturated name server's
// CPU and flooded its log).
func (p *Pool) logRefusal(now time.Time) bool {
	last := p.loggedAt.Load()
	if last != 0 && now.UnixNano()-last < int64(time.Second) {
		return false
	}
	return p.loggedAt.CompareAndSwap(last, now.UnixNano())
}

// Rejected returns how many tasks Submit refused because the queue was full.
func (p *Pool) Rejected() int64 { return p.rejected.Load() }

// tracker runs goroutines that its owner's Close waits for. Go refuses new work after closeAndWait has begun,
// so a WaitGroup is never added to while it is waited on.
type tracker struct {
	mu     sync.Mutex
	closed bool
	wg     sync.WaitGroup
}

// Go runs f in a tracked goroutine; once the tracker is closed it runs f in the caller's goroutine instead.
func (t *tracker) Go(f func()) {
	if !t.tryGo(f) {
		f()
	}
}

// tryGo is Go that refuses (false) instead of running f inline once the tracker is closed.
func (t *tracker) tryGo(f func()) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return false
	}
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		f()
	}()
	return true
}

func (t *tracker) closeAndWait() {
	t.mu.Lock()
	t.closed = true
	t.mu.Unlock()
	t.wg.Wait()
}
