package remoting

import (
	"testing"
	"time"
)

// HeadWait is 0 with an empty queue and grows with the time the oldest queued task has waited.
func TestPoolHeadWait(t *testing.T) {
	p := NewPool("t", 1, 4)
	defer p.Close()
	release := make(chan struct{})
	started := make(chan struct{})
	if !p.Submit(func() { close(started); <-release }) {
		t.Fatal("submit")
	}
	<-started // the worker is busy; what comes next waits in the queue
	if w := p.HeadWait(); w != 0 {
		t.Fatalf("empty queue: head wait %v", w)
	}
	before := time.Now()
	ran := make(chan struct{})
	if !p.Submit(func() { close(ran) }) {
		t.Fatal("submit")
	}
	deadline := time.Now().Add(10 * time.Second)
	for p.HeadWait() < 20*time.Millisecond {
		if time.Now().After(deadline) {
			t.Fatalf("head wait %v after %v", p.HeadWait(), time.Since(before))
		}
		time.Sleep(time.Millisecond)
	}
	if w := p.HeadWait(); w > time.Since(before) {
		t.Fatalf("head wait %v longer than the task has existed (%v)", w, time.Since(before))
	}
	close(release)
	<-ran
	if w := p.HeadWait(); w != 0 {
		t.Fatalf("drained queue: head wait %v", w)
	}
}
