package raftlog

import (
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// pipelineGuard wraps the network transport to keep hashicorp/raft's pipelined replication from
// hanging for good.
//
// The hang (hashicorp/raft v1.8.0, net_transport.go and replication.go, with MaxRPCsInFlight 2, when
// the pipeline's channels have no buffer): the leader's pipeline decoder for a follower stops (a
// response with a newer term, a failed append), so the transport's response reader blocks handing it
// the next response, and the replication goroutine, still sending the rest of a batch, blocks in
// AppendEntries handing the reader its next request. Only the pipeline's Close frees them, and that
// Close is deferred in the very goroutine that is blocked: the follower gets no more entries from this
// leader, and raft.Shutdown (which waits for every replication goroutine) never returns.
//
// The guard closes a pipeline whose AppendEntries has not returned within stuckAfter (far above the
// transport's own I/O timeout, which bounds a healthy one): AppendEntries then fails with
// ErrPipelineShutdown and Raft falls back to plain AppendEntries and starts a new pipeline, as after
// any pipeline error. Closing a pipeline never loses an entry: Raft resends from the follower's
// nextIndex. Close (at node shutdown) closes every pipeline at once and refuses new ones.
type pipelineGuard struct {
	raft.Transport
	stuckAfter time.Duration
	lg         *slog.Logger
	// clamp, when set, caps the commit index an AppendEntries carries (leader_sync.go rule 2).
	clamp func(commit uint64) uint64

	mu     sync.Mutex
	pipes  map[*guardedPipeline]struct{}
	closed bool

	// hashicorp/raft answers heartbeats on the transport's connection goroutines
	// (SetHeartbeatHandler), outside the goroutines Raft's Shutdown waits for, and a heartbeat
	// with a newer term saves the term in the stable store: one that arrived while Close had
	// closed that store panicked the node ("failed to save current term: database not open",
	// seen in tools/admin's tests beside two CPU-bound processes). The guard runs the handler
	// under hb's read lock; closeHeartbeats (Close, after Raft's shutdown, before the stores
	// close) takes the write lock, so it waits for a heartbeat being handled and the later ones
	// are refused with raft.ErrRaftShutdown.
	hb       sync.RWMutex
	hbClosed bool
}

// errGuardClosed refuses a pipeline after closePipelines: Raft replicates without one.
var errGuardClosed = errors.New("raftlog: the node is shutting down: no new replication pipeline")

func newPipelineGuard(t raft.Transport, stuckAfter time.Duration, lg *slog.Logger) *pipelineGuard {
	return &pipelineGuard{Transport: t, stuckAfter: stuckAfter, lg: lg, pipes: map[*guardedPipeline]struct{}{}}
}

// AppendEntriesPipeline hands out the transport's pipeline, tracked.
func (g *pipelineGuard) AppendEntriesPipeline(id raft.ServerID, target raft.ServerAddress) (raft.AppendPipeline, error) {
	g.mu.Lock()
	closed := g.closed
	g.mu.Unlock()
	if closed {
		return nil, errGuardClosed
	}
	p, err := g.Transport.AppendEntriesPipeline(id, target)
	if err != nil {
		return nil, err
	}
	gp := &guardedPipeline{AppendPipeline: p, g: g, peer: string(id)}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		_ = p.Close()
		return nil, errGuardClosed
	}
	g.pipes[gp] = struct{}{}
	return gp, nil
}

// AppendEntries sends one AppendEntries (outside a pipeline), its commit index clamped.
func (g *pipelineGuard) AppendEntries(id raft.ServerID, target raft.ServerAddress, args *raft.AppendEntriesRequest,
	resp *raft.AppendEntriesResponse) error {
	return g.Transport.AppendEntries(id, target, g.clampCommit(args), resp)
}

// clampCommit returns args, or a copy whose LeaderCommitIndex is at most what the leader holds
// durably. Raft reads only the entries of a request back after the answer, never its commit
// index, so the copy changes nothing else.
func (g *pipelineGuard) clampCommit(args *raft.AppendEntriesRequest) *raft.AppendEntriesRequest {
	if g.clamp == nil {
		return args
	}
	if c := g.clamp(args.LeaderCommitIndex); c < args.LeaderCommitIndex {
		cp := *args
		cp.LeaderCommitIndex = c
		return &cp
	}
	return args
}

// SetHeartbeatHandler installs cb on the wrapped transport, run under the heartbeat lock.
func (g *pipelineGuard) SetHeartbeatHandler(cb func(rpc raft.RPC)) {
	if cb == nil {
		g.Transport.SetHeartbeatHandler(nil)
		return
	}
	g.Transport.SetHeartbeatHandler(func(rpc raft.RPC) {
		g.hb.RLock()
		defer g.hb.RUnlock()
		if g.hbClosed {
			rpc.Respond(nil, raft.ErrRaftShutdown)
			return
		}
		cb(rpc)
	})
}

// closeHeartbeats waits for a heartbeat being handled and refuses the later ones (Close, once
// Raft is shut down, before the log and stable stores close).
func (g *pipelineGuard) closeHeartbeats() {
	g.hb.Lock()
	g.hbClosed = true
	g.hb.Unlock()
}

// closePipelines closes every pipeline handed out and refuses new ones (node shutdown).
func (g *pipelineGuard) closePipelines() {
	g.mu.Lock()
	g.closed = true
	pipes := make([]*guardedPipeline, 0, len(g.pipes))
	for p := range g.pipes {
		pipes = append(pipes, p)
	}
	clear(g.pipes)
	g.mu.Unlock()
	for _, p := range pipes {
		_ = p.AppendPipeline.Close()
	}
}

// Close closes the wrapped transport (raft.WithClose).
func (g *pipelineGuard) Close() error {
	if c, ok := g.Transport.(raft.WithClose); ok {
		return c.Close()
	}
	return nil
}

// RequestPreVote passes pre-vote on (raft.WithPreVote); the guard wraps only transports that have it
// (newNodeTransport).
func (g *pipelineGuard) RequestPreVote(id raft.ServerID, target raft.ServerAddress, args *raft.RequestPreVoteRequest,
	resp *raft.RequestPreVoteResponse) error {
	return g.Transport.(raft.WithPreVote).RequestPreVote(id, target, args, resp)
}

type guardedPipeline struct {
	raft.AppendPipeline
	g    *pipelineGuard
	peer string
}

// AppendEntries closes the pipeline when the call has not returned within stuckAfter.
func (p *guardedPipeline) AppendEntries(args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) (raft.AppendFuture, error) {
	t := time.AfterFunc(p.g.stuckAfter, func() {
		p.g.lg.Warn("raft: a replication pipeline stuck in AppendEntries; closing it (Raft resends from the follower's next index)",
			"peer", p.peer, "after", p.g.stuckAfter)
		_ = p.AppendPipeline.Close()
	})
	f, err := p.AppendPipeline.AppendEntries(p.g.clampCommit(args), resp)
	t.Stop()
	return f, err
}

// Close closes the pipeline and forgets it.
func (p *guardedPipeline) Close() error {
	p.g.mu.Lock()
	delete(p.g.pipes, p)
	p.g.mu.Unlock()
	return p.AppendPipeline.Close()
}
