package raftlog

import (
	"errors"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// stuckPipeline's AppendEntries blocks until Close, as hashicorp/raft's netPipeline does when its
// response reader is blocked (pipeline.go).
type stuckPipeline struct {
	once   sync.Once
	closed chan struct{}
}

func (p *stuckPipeline) AppendEntries(*raft.AppendEntriesRequest, *raft.AppendEntriesResponse) (raft.AppendFuture, error) {
	<-p.closed
	return nil, raft.ErrPipelineShutdown
}
func (p *stuckPipeline) Consumer() <-chan raft.AppendFuture { return nil }
func (p *stuckPipeline) Close() error {
	p.once.Do(func() { close(p.closed) })
	return nil
}

type stuckTransport struct {
	raft.Transport // nil: only the pipeline is used
	mu             sync.Mutex
	made           []*stuckPipeline
}

func (t *stuckTransport) AppendEntriesPipeline(raft.ServerID, raft.ServerAddress) (raft.AppendPipeline, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	p := &stuckPipeline{closed: make(chan struct{})}
	t.made = append(t.made, p)
	return p, nil
}

// TestPipelineGuardFreesStuckAppend: an AppendEntries stuck past stuckAfter is freed by closing its
// pipeline (it returns ErrPipelineShutdown, and Raft starts over); closePipelines frees one at once
// however long stuckAfter is, and refuses new pipelines.
func TestPipelineGuardFreesStuckAppend(t *testing.T) {
	lg := slog.New(slog.NewTextHandler(io.Discard, nil))
	g := newPipelineGuard(&stuckTransport{}, 20*time.Millisecond, lg)
	p, err := g.AppendEntriesPipeline("n1", "127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.AppendEntries(&raft.AppendEntriesRequest{}, &raft.AppendEntriesResponse{}); !errors.Is(err, raft.ErrPipelineShutdown) {
		t.Fatalf("a stuck AppendEntries returned %v, want ErrPipelineShutdown", err)
	}

	g = newPipelineGuard(&stuckTransport{}, time.Hour, lg)
	p, err = g.AppendEntriesPipeline("n1", "127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := p.AppendEntries(&raft.AppendEntriesRequest{}, &raft.AppendEntriesResponse{})
		done <- err
	}()
	g.closePipelines()
	if err := <-done; !errors.Is(err, raft.ErrPipelineShutdown) {
		t.Fatalf("AppendEntries after closePipelines returned %v, want ErrPipelineShutdown", err)
	}
	if _, err := g.AppendEntriesPipeline("n2", "127.0.0.1:2"); !errors.Is(err, errGuardClosed) {
		t.Fatalf("a pipeline after closePipelines: %v, want errGuardClosed", err)
	}
	if len(g.pipes) != 0 {
		t.Fatalf("%d pipelines still tracked", len(g.pipes))
	}
}

// heartbeatCapture is a transport that keeps the heartbeat handler it is given.
type heartbeatCapture struct {
	raft.Transport
	cb func(rpc raft.RPC)
}

func (h *heartbeatCapture) SetHeartbeatHandler(cb func(rpc raft.RPC)) { h.cb = cb }

// TestGuardClosesHeartbeats: hashicorp/raft handles heartbeats on the transport's goroutines,
// which its Shutdown does not wait for; a heartbeat with a newer term then saved the term in a
// stable store Close had closed, and the node panicked. closeHeartbeats waits for the heartbeat
// being handled, and a heartbeat after it is answered raft.ErrRaftShutdown without reaching Raft.
func TestGuardClosesHeartbeats(t *testing.T) {
	inner := &heartbeatCapture{}
	g := newPipelineGuard(inner, time.Minute, slog.New(slog.DiscardHandler))
	entered, release := make(chan struct{}), make(chan struct{})
	var handled, calls atomic.Int32
	g.SetHeartbeatHandler(func(rpc raft.RPC) {
		if calls.Add(1) == 1 {
			close(entered)
			<-release
		}
		handled.Add(1)
		rpc.Respond(&raft.AppendEntriesResponse{Success: true}, nil)
	})
	heartbeat := func() (raft.RPC, chan raft.RPCResponse) {
		resp := make(chan raft.RPCResponse, 1)
		return raft.RPC{Command: &raft.AppendEntriesRequest{}, RespChan: resp}, resp
	}
	first, firstResp := heartbeat()
	go inner.cb(first)
	<-entered
	closed := make(chan int32)
	go func() {
		g.closeHeartbeats()
		closed <- handled.Load()
	}()
	close(release)
	if n := <-closed; n != 1 {
		t.Fatalf("closeHeartbeats returned with %d heartbeats handled, want it to wait for the one being handled", n)
	}
	if r := <-firstResp; r.Error != nil {
		t.Fatalf("the heartbeat handled before the close was answered %v", r.Error)
	}
	late, lateResp := heartbeat()
	inner.cb(late)
	if r := <-lateResp; !errors.Is(r.Error, raft.ErrRaftShutdown) {
		t.Fatalf("a heartbeat after the close was answered %v, want raft.ErrRaftShutdown", r.Error)
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("Raft's handler ran %d times, want 1 (none after the close)", n)
	}
}
