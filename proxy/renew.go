package proxy

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// renewer keeps the messages a push consumer received with auto_renew invisible: RocketMQ 5's proxy
// renews their receipt handles (a new invisible time once half of the old one has passed) until the client acks them,
// changes their invisible time, forwards them, leaves, or maxRenew passes. The client keeps using the handle
// it was given; the proxy maps it to the current one.
type renewer struct {
	pop       popper
	invisible time.Duration // each renewal's invisible time (Options.AutoRenewInvisible)
	maxRenew  time.Duration // how long a message is renewed at most
	log       *slog.Logger
	mu        sync.Mutex
	m         map[string]*renewal // by the handle the client holds; guarded by mu
	stop      chan struct{}
	done      chan struct{}
}

// renewal is one message held by auto renewal.
type renewal struct {
	client, group, topic, addr string
	current                    string // the broker's handle (extraInfo) in force
	phy                        int64  // the message's CommitLog offset
	due                        time.Time
	until                      time.Time
}

func newRenewer(pop popper, invisible time.Duration, log *slog.Logger) *renewer {
	return &renewer{pop: pop, invisible: invisible, maxRenew: time.Hour, log: log, m: map[string]*renewal{},
		stop: make(chan struct{}), done: make(chan struct{})}
}

// add renews the message of handle (the client's, extra the broker's) from now on.
func (r *renewer) add(handle string, rn *renewal) {
	now := time.Now()
	rn.due, rn.until = now.Add(r.invisible/2), now.Add(r.maxRenew)
	r.mu.Lock()
	r.m[handle] = rn
	r.mu.Unlock()
}

// take stops renewing the message of the client's handle and returns the broker's handle in force, or ""
// when the handle is not renewed here.
func (r *renewer) take(handle string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	rn := r.m[handle]
	if rn == nil {
		return ""
	}
	delete(r.m, handle)
	return rn.current
}

// dropClient stops renewing the messages of a client that left; they come back after their invisible time.
func (r *renewer) dropClient(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for h, rn := range r.m {
		if rn.client == id {
			delete(r.m, h)
		}
	}
}

func (r *renewer) start() { go r.loop() }

func (r *renewer) close() {
	select {
	case <-r.stop:
		return
	default:
	}
	close(r.stop)
	<-r.done
}

// loop renews what is due, every tick (a tenth of the invisible time, at most a second).
func (r *renewer) loop() {
	defer close(r.done)
	t := time.NewTicker(min(r.invisible/10, time.Second))
	defer t.Stop()
	for {
		select {
		case <-r.stop:
			return
		case <-t.C:
			r.renewDue()
		}
	}
}

func (r *renewer) renewDue() {
	now := time.Now()
	type job struct {
		handle string
		rn     renewal
	}
	var jobs []job
	r.mu.Lock()
	for h, rn := range r.m {
		if now.After(rn.until) {
			delete(r.m, h)
		} else if now.After(rn.due) {
			jobs = append(jobs, job{h, *rn})
		}
	}
	r.mu.Unlock()
	for _, j := range jobs {
		ctx, cancel := context.WithTimeout(context.Background(), r.invisible/3)
		next, err := r.pop.ChangeInvisibleTime(ctx, j.rn.addr, j.rn.group, j.rn.topic, j.rn.current, r.invisible)
		cancel()
		r.mu.Lock()
		if rn := r.m[j.handle]; rn != nil && rn.current == j.rn.current { // not taken meanwhile
			if err != nil {
				r.log.Warn("auto renewal of a received message failed; it comes back after its invisible time", "group", rn.group,
					"topic", rn.topic, "err", err)
				delete(r.m, j.handle)
			} else {
				rn.current, rn.due = next, time.Now().Add(r.invisible/2)
			}
		}
		r.mu.Unlock()
	}
}
