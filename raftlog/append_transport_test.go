package raftlog

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

func newTestAppendTransport(t *testing.T) *appendTransport {
	t.Helper()
	tc := raft.NetworkTransportConfig{Logger: NewHCLogger(slog.New(slog.DiscardHandler)), MaxPool: 3, MaxRPCsInFlight: 2, Timeout: 5 * time.Second}
	ft, err := newAppendTransport("127.0.0.1:0", tc, newNodeStats(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ft.Close() })
	return ft
}

// answerRPCs plays Raft on ft's consumer: an AppendEntries is answered Success with LastLog its
// last entry's index and Term the request's (an entry whose data is "fail" is answered with an
// error), a RequestVote granted. It stops at the test's end.
func answerRPCs(t *testing.T, ft raft.Transport, votes *atomic.Int32) {
	done := make(chan struct{})
	t.Cleanup(func() { close(done) })
	go func() {
		for {
			select {
			case rpc := <-ft.Consumer():
				switch req := rpc.Command.(type) {
				case *raft.AppendEntriesRequest:
					resp := &raft.AppendEntriesResponse{Term: req.Term, Success: true, RPCHeader: raft.RPCHeader{ID: []byte("b")}}
					if n := len(req.Entries); n > 0 {
						resp.LastLog = req.Entries[n-1].Index
						if string(req.Entries[0].Data) == "fail" {
							rpc.Respond(nil, errors.New("refused by the test"))
							continue
						}
					}
					rpc.Respond(resp, nil)
				case *raft.RequestVoteRequest:
					votes.Add(1)
					rpc.Respond(&raft.RequestVoteResponse{Term: req.Term, Granted: true}, nil)
				default:
					rpc.Respond(nil, fmt.Errorf("unexpected %T", req))
				}
			case <-done:
				return
			}
		}
	}()
}

func entriesFrom(first uint64, n int) []*raft.Log {
	var es []*raft.Log
	for i := 0; i < n; i++ {
		es = append(es, &raft.Log{Index: first + uint64(i), Term: 3, Type: raft.LogCommand, Data: bytes.Repeat([]byte{byte(i)}, 1000+i)})
	}
	return es
}

// TestAppendTransportCarriesEveryRPC drives two transports over TCP: a plain AppendEntries, 200
// pipelined ones answered in order, an error answer, a heartbeat through the handler, and a
// RequestVote through the NetworkTransport behind the same listener.
func TestAppendTransportCarriesEveryRPC(t *testing.T) {
	a, b := newTestAppendTransport(t), newTestAppendTransport(t)
	var votes atomic.Int32
	answerRPCs(t, b, &votes)
	target := b.LocalAddr()

	var resp raft.AppendEntriesResponse
	req := &raft.AppendEntriesRequest{Term: 3, PrevLogEntry: 9, PrevLogTerm: 2, LeaderCommitIndex: 8, Entries: entriesFrom(10, 3),
		RPCHeader: raft.RPCHeader{ID: []byte("a"), Addr: []byte(a.LocalAddr())}}
	if err := a.AppendEntries("b", target, req, &resp); err != nil {
		t.Fatal(err)
	}
	if !resp.Success || resp.LastLog != 12 || resp.Term != 3 || string(resp.ID) != "b" {
		t.Fatalf("response %+v", resp)
	}
	failing := &raft.AppendEntriesRequest{Term: 3, Entries: []*raft.Log{{Index: 1, Data: []byte("fail")}}}
	if err := a.AppendEntries("b", target, failing, &resp); err == nil || err.Error() != "refused by the test" {
		t.Fatalf("error answer: %v", err)
	}

	p, err := a.AppendEntriesPipeline("b", target)
	if err != nil {
		t.Fatal(err)
	}
	const n = 200
	got := make(chan uint64, n)
	go func() {
		for i := 0; i < n; i++ {
			f := <-p.Consumer()
			if err := f.Error(); err != nil {
				t.Errorf("pipelined %d: %v", i, err)
			}
			got <- f.Response().LastLog
		}
	}()
	for i := 0; i < n; i++ {
		r := &raft.AppendEntriesRequest{Term: 3, Entries: entriesFrom(uint64(100+i*2), 2)}
		if _, err := p.AppendEntries(r, &raft.AppendEntriesResponse{}); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < n; i++ {
		if last := <-got; last != uint64(101+i*2) {
			t.Fatalf("pipelined answer %d: LastLog %d, want %d", i, last, 101+i*2)
		}
	}
	_ = p.Close()
	// The times of the appends (stats.go): every request with entries timed on both sides (the
	// one answered with an error only on the follower's), every entry's send and answer marked.
	if as, bs := a.stats.snapshot(), b.stats.snapshot(); as.AppendSeconds[AppendLeader].Count() != n+1 ||
		bs.AppendSeconds[AppendFollower].Count() != n+2 || as.AppendSeconds[AppendFollower].Count() != 0 {
		t.Errorf("append times: leader side %d, follower side %d (and %d on the sender), want %d and %d",
			as.AppendSeconds[AppendLeader].Count(), bs.AppendSeconds[AppendFollower].Count(),
			as.AppendSeconds[AppendFollower].Count(), n+1, n+2)
	}
	for _, idx := range []uint64{10, 12, 100, 299} {
		sent, ok1 := a.stats.sentAt.get(idx)
		acked, ok2 := a.stats.ackedAt.get(idx)
		if !ok1 || !ok2 || acked.Before(sent) {
			t.Errorf("entry %d: sent %v (%v), answered %v (%v)", idx, sent, ok1, acked, ok2)
		}
	}
	if _, ok := a.stats.ackedAt.get(1); ok {
		t.Error("the entry answered with an error is marked answered")
	}

	beats := make(chan *raft.AppendEntriesRequest, 1)
	b.SetHeartbeatHandler(func(rpc raft.RPC) {
		beats <- rpc.Command.(*raft.AppendEntriesRequest)
		rpc.Respond(&raft.AppendEntriesResponse{Term: 4, Success: true}, nil)
	})
	hb := &raft.AppendEntriesRequest{Term: 4, RPCHeader: raft.RPCHeader{Addr: []byte(a.LocalAddr())}}
	if err := a.AppendEntries("b", target, hb, &resp); err != nil || resp.Term != 4 {
		t.Fatalf("heartbeat: %v %+v", err, resp)
	}
	select {
	case got := <-beats:
		if got.Term != 4 {
			t.Fatalf("heartbeat handler saw %+v", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the heartbeat did not reach the heartbeat handler")
	}

	var vr raft.RequestVoteResponse
	if err := a.RequestVote("b", target, &raft.RequestVoteRequest{Term: 5}, &vr); err != nil || !vr.Granted {
		t.Fatalf("vote: %v %+v", err, vr)
	}
	if votes.Load() != 1 {
		t.Fatalf("votes seen %d", votes.Load())
	}
}

// TestAppendTransportDropsBadPeers: a append connection sending garbage or a frame over the limit is
// closed, and the transport goes on serving others; a closed transport fails what is in flight.
func TestAppendTransportDropsBadPeers(t *testing.T) {
	a, b := newTestAppendTransport(t), newTestAppendTransport(t)
	var votes atomic.Int32
	answerRPCs(t, b, &votes)
	for _, garbage := range [][]byte{
		{0, 0, 0, 3, 0xff, 0xff, 0xff}, // a uvarint that never ends
		{0xff, 0xff, 0xff, 0xff},       // a frame over maxAppendWireFrame
		{0, 0, 0, 2, 0, 0},             // a body cut short
	} {
		c, err := net.Dial("tcp", string(b.LocalAddr()))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Write(append([]byte{appendWireMagic}, garbage...)); err != nil {
			t.Fatal(err)
		}
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		ack := make([]byte, 1)
		if _, err := io.ReadFull(c, ack); err != nil || ack[0] != appendWireMagic {
			t.Fatalf("handshake answer %x, %v", ack, err)
		}
		if n, err := c.Read(make([]byte, 1)); err != io.EOF {
			t.Fatalf("garbage %x: read %d, %v; want the connection closed", garbage, n, err)
		}
		_ = c.Close()
	}
	var resp raft.AppendEntriesResponse
	if err := a.AppendEntries("b", b.LocalAddr(), &raft.AppendEntriesRequest{Term: 1, Entries: entriesFrom(1, 1)}, &resp); err != nil || resp.LastLog != 1 {
		t.Fatalf("after the bad peers: %v %+v", err, resp)
	}

	p, err := a.AppendEntriesPipeline("b", b.LocalAddr())
	if err != nil {
		t.Fatal(err)
	}
	_ = b.Close()
	var failed bool
	for i := 0; i < 4 && !failed; i++ {
		f, err := p.AppendEntries(&raft.AppendEntriesRequest{Term: 1, Entries: entriesFrom(1, 1)}, &raft.AppendEntriesResponse{})
		if err != nil {
			failed = true
			break
		}
		failed = (<-p.Consumer()).Error() != nil || f.Error() != nil
	}
	if !failed {
		t.Fatal("a pipeline to a closed transport kept answering")
	}
	_ = p.Close()
}

// TestAppendTransportFallsBackForOlderPeers: a peer running hashicorp/raft's NetworkTransport (a
// node of an older version) hangs up on the handshake; the transport then sends it msgpack, on
// plain calls and pipelines alike.
func TestAppendTransportFallsBackForOlderPeers(t *testing.T) {
	a := newTestAppendTransport(t)
	tc := &raft.NetworkTransportConfig{Logger: NewHCLogger(slog.New(slog.DiscardHandler)), MaxPool: 3, MaxRPCsInFlight: 2, Timeout: 5 * time.Second}
	old, err := raft.NewTCPTransportWithConfig("127.0.0.1:0", nil, tc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = old.Close() })
	var votes atomic.Int32
	answerRPCs(t, old, &votes)
	var resp raft.AppendEntriesResponse
	if err := a.AppendEntries("old", old.LocalAddr(), &raft.AppendEntriesRequest{Term: 2, Entries: entriesFrom(5, 2)}, &resp); err != nil || resp.LastLog != 6 {
		t.Fatalf("plain call: %v %+v", err, resp)
	}
	if !a.legacyPeer("old", old.LocalAddr()) {
		t.Fatal("the older peer is not remembered")
	}
	p, err := a.AppendEntriesPipeline("old", old.LocalAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, err := p.AppendEntries(&raft.AppendEntriesRequest{Term: 2, Entries: entriesFrom(7, 1)}, &raft.AppendEntriesResponse{}); err != nil {
		t.Fatal(err)
	}
	f := <-p.Consumer()
	if err := f.Error(); err != nil || f.Response().LastLog != 7 {
		t.Fatalf("pipelined: %v %+v", err, f.Response())
	}
}

// TestMixedGroupFramedAndMsgpack: a group in the middle of a rolling upgrade, n1 running
// hashicorp/raft's msgpack transport only (FramedAppends false, as an older version). Under load,
// leadership goes to n1 and back to a framed node; every acknowledged put is where its answer said
// and the three logs end identical, and the framed leader remembers n1 as a msgpack peer.
func TestMixedGroupFramedAndMsgpack(t *testing.T) {
	c := newCluster(t, clusterOptions{tcp: true, sync: true, tune: func(cfg *Config) {
		cfg.FramedAppends = cfg.SelfID != "n1"
	}})
	l := startLoad(c, 4)
	defer l.stop()
	l.progress("at the start", 30)
	c.transfer("n1")
	l.progress("with n1 (msgpack) leading", 30)
	c.transfer("n2")
	l.progress("with n2 (frames) leading", 30)
	l.stopAndCheck()

	at, ok := c.nodes[c.leader()].n.trans.(*pipelineGuard).Transport.(*appendTransport)
	if !ok {
		t.Fatalf("the leader's transport is %T, want the framed one", c.nodes[c.leader()].n.trans.(*pipelineGuard).Transport)
	}
	if !at.legacyPeer("n1", raft.ServerAddress(c.nodes[1].addr)) {
		t.Fatal("the framed leader does not send n1 msgpack")
	}
	if _, ok := c.nodes[1].n.trans.(*pipelineGuard).Transport.(*appendTransport); ok {
		t.Fatal("n1 runs the framed transport")
	}
}
