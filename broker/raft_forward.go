package broker

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"

	"github.com/rocketraft/rocketraft/raftlog"
	"github.com/rocketraft/rocketraft/remoting"
)

// Forwarding to the master (Raft mode). The official clients send to the address the name server routed
// as the group's master and re-read routes only every 30 s, so after a leadership change (a transfer, a
// preferred-leader move, a kill) they keep sending to a node that is no longer the master. Such a node
// forwards the write to the group's master and relays the answer unchanged instead of refusing it:
//
//   - Which requests: SEND_MESSAGE, SEND_MESSAGE_V2, SEND_BATCH_MESSAGE, SEND_REPLY_MESSAGE(_V2) (a
//     reply is stored like a send; the master pushes it to the requester it knows), CONSUMER_SEND_MSG_BACK,
//     END_TRANSACTION (the half message was stored through the master, its end must be too) and
//     UPDATE_CONSUMER_OFFSET (offsets are committed on the master and reach the group through its
//     offsets entries, raft_offsets.go; a follower's own table is overwritten by them). Reads (pulls,
//     offset queries) are served by every node and never forwarded.
//   - Where to: every master proposes a metaLeader entry (its dLegerSelfId, its client-facing broker
//     address and its term) once it is master; every node applies it in log order. A node forwards to
//     the announced address only while Raft names the announced node as leader in the announced term,
//     so it never forwards to a master of an older term (whose announcement stays in the log) nor to a
//     leader that has not passed its barrier. Until then it waits (polling Raft's view and woken by
//     every announcement), within dLegerForwardTimeoutMs; if this node becomes master meanwhile it
//     serves the request itself.
//   - The request goes out with the client's code, version, serialization, header fields and body as
//     they came (a fresh opaque, since one connection carries many clients' requests), the client's
//     address in the remark (the master's bornHost) and remoting.FlagForwarded set. The answer goes back
//     to the client with the client's opaque and the master's code, remark, header fields (msgId,
//     queueId, queueOffset, ...) and body.
//   - Loops: a request with FlagForwarded is never forwarded again. A node that is not the master (or whose
//     put Raft refused with ErrNotLeader: nothing proposed) answers it SERVICE_NOT_AVAILABLE naming the
//     leader it knows, marked extNotMaster; the first node then forwards it once more, only to a master of a
//     later term, within the same dLegerForwardTimeoutMs (a transfer caught the request on its way), and
//     relays the refusal past that. So a request makes at most one hop per master term, and never a cycle.
//   - Bounds: the bytes of forwarded requests awaiting an answer (body plus header fields) are at most
//     dLegerForwardMaxInflightBytes (SYSTEM_BUSY naming the key past it; 0 turns forwarding off); each
//     request's wait plus the master's answer is at most dLegerForwardTimeoutMs (SERVICE_NOT_AVAILABLE
//     naming the key past it). A forward whose answer is lost (timeout, connection closed) may still have
//     been stored by the master: the client's retry may store the message twice (at least once, as any
//     send whose answer is lost).
//   - ACL: a forwarded request is checked twice and must pass both. The forwarding node's interceptor
//     checked it as it checks every request, with the client's own address (white lists), signature and
//     permissions, before the handler got it; the master checks it again as any request, and the
//     signature still verifies because neither the header fields nor the body are changed (the flag,
//     the opaque and the remark are not signed). The master's address white lists see the forwarding
//     node's address, but only requests the forwarding node already admitted with the client's address
//     arrive that way, and a client that sets FlagForwarded itself only turns forwarding off for its own
//     request. Keep plain_acl.yml the same on every node of a group (the Ansible role deploys one file).

// leaderAnnouncement is a master's metaLeader entry: node ID (dLegerSelfId) is master of Term and
// clients reach it at BrokerAddr.
type leaderAnnouncement struct {
	ID         string `json:"id"`
	BrokerAddr string `json:"brokerAddr"`
	Term       uint64 `json:"term"`
}

// raftForwarder forwards writes from a node that is not the master to the master (see above).
type raftForwarder struct {
	b      *Broker
	client *remoting.Client // no credentials: requests go out signed by their client, unchanged

	inflight      atomic.Int64 // bytes of forwarded requests awaiting their answer
	forwarded     atomic.Uint64
	forwardFailed atomic.Uint64

	mu      sync.Mutex
	leader  leaderAnnouncement // guarded by mu: the announcement of the highest term applied
	changed chan struct{}      // guarded by mu: closed and replaced on every announcement and role change
}

func newRaftForwarder(b *Broker, client *remoting.Client) *raftForwarder {
	return &raftForwarder{b: b, client: client, changed: make(chan struct{})}
}

// forwardedCodes are the requests only the master serves, which another node forwards to it.
var forwardedCodes = map[remoting.RequestCode]bool{
	remoting.SendMessage: true, remoting.SendMessageV2: true, remoting.SendBatchMessage: true,
	remoting.SendReplyMessage: true, remoting.SendReplyMessageV2: true, remoting.ConsumerSendMsgBack: true,
	remoting.EndTransaction: true, remoting.UpdateConsumerOffset: true,
}

// announced takes a master's announcement (FSM goroutine, or a snapshot restore): kept when its term is
// at least the one held.
func (f *raftForwarder) announced(a leaderAnnouncement) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if a.Term >= f.leader.Term {
		f.leader = a
	}
	close(f.changed)
	f.changed = make(chan struct{})
}

// wake wakes the requests waiting for a master (this node's role changed).
func (f *raftForwarder) wake() {
	f.mu.Lock()
	defer f.mu.Unlock()
	close(f.changed)
	f.changed = make(chan struct{})
}

// lastAnnouncement is the announcement held (nil when none), for snapshots.
func (f *raftForwarder) lastAnnouncement() *leaderAnnouncement {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.leader.ID == "" {
		return nil
	}
	a := f.leader
	return &a
}

// target is the master to forward to: the last announcement, when Raft's view of the leader and its term
// match it, the leader is another node, and its term is above minTerm (the term of a master that refused
// the request as not master any more; 0 for none).
func (f *raftForwarder) target(minTerm uint64) (leaderAnnouncement, bool) {
	st := f.b.raft.node.Status()
	f.mu.Lock()
	a := f.leader
	f.mu.Unlock()
	if a.BrokerAddr == "" || a.ID != st.LeaderID || a.Term != st.Term || a.ID == f.b.cfg.Raft.DLegerSelfId || a.Term <= minTerm {
		return leaderAnnouncement{}, false
	}
	return a, true
}

// extNotMaster, set to "true" in the answer to a forwarded request, says the receiver refused it as not
// (or not any more) the master, having stored nothing: the forwarding node forwards it again to the next
// master within dLegerForwardTimeoutMs instead of relaying the refusal. Responses are not signed.
const extNotMaster = "rocketraftNotMaster"

// masterServed wraps the handler of a request that only the master serves (forwardedCodes): unchanged on
// the master; elsewhere the request is forwarded, or refused when it was forwarded already. With
// dLegerForwardMaxInflightBytes=0 h is returned unchanged (refuseWrite answers a send on a follower).
func (r *raftRole) masterServed(h remoting.HandlerFunc) remoting.HandlerFunc {
	b := r.b
	if b.cfg.Raft.DLegerForwardMaxInflightBytes == 0 {
		return h
	}
	return func(ctx context.Context, conn *remoting.Conn, req *remoting.Command) *remoting.Command {
		if b.servesWrites() {
			return h(ctx, conn, req)
		}
		if req.Flag&remoting.FlagForwarded != 0 {
			return b.refuseForwarded(conn, req)
		}
		return r.forward.forward(conn, req, h)
	}
}

// servesWrites reports whether this node serves writes itself: it is master and Raft still has it
// leading (between Raft losing leadership and the role event, the master flag is still set).
func (b *Broker) servesWrites() bool {
	return b.raft.master.Load() && b.raft.node.Raft() != nil && b.raft.node.Raft().State() == raft.Leader
}

// forwardRefusedPut forwards a send whose put the Raft node refused with ErrNotLeader (nothing was
// proposed: leadership moved, or a transfer runs, after the send passed masterServed) and reports
// whether it took the request over; the caller answers it otherwise.
func (r *raftRole) forwardRefusedPut(conn *remoting.Conn, req *remoting.Command, err error) bool {
	if r.b.cfg.Raft.DLegerForwardMaxInflightBytes == 0 || !errors.Is(err, raftlog.ErrNotLeader) {
		return false
	}
	if req.Flag&remoting.FlagForwarded != 0 {
		r.forward.reply(conn, req, r.b.refuseForwarded(conn, req))
		return true
	}
	if resp := r.forward.forward(conn, req, nil); resp != nil {
		r.forward.reply(conn, req, resp)
	}
	return true
}

// refuseForwarded answers a forwarded request that reached a node which is not the master.
func (b *Broker) refuseForwarded(conn *remoting.Conn, req *remoting.Command) *remoting.Command {
	st := b.raft.node.Status()
	return errResponse(remoting.ServiceNotAvailable, "%s forwarded by %s not served: broker %s is not the master of Raft group %s "+
		"(node %s is %s, leader %q) and does not forward a forwarded request; send again",
		remoting.RequestCode(req.Code), conn.RemoteAddr(), b.addr, b.cfg.raftGroup(), b.cfg.Raft.DLegerSelfId, st.Role, st.LeaderID).
		SetExt(extNotMaster, "true")
}

// requestBytes is what a request counts against dLegerForwardMaxInflightBytes.
func requestBytes(req *remoting.Command) int64 {
	n := int64(len(req.Body)) + int64(len(req.Remark)) + 64
	for k, v := range req.ExtFields {
		n += int64(len(k) + len(v))
	}
	return n
}

// forward sends req to the master now, or from a goroutine once a master is known; it answers the
// client itself (nil) unless it refuses at once. h serves the request here if this node becomes the
// master meanwhile; nil: forward only (the request was refused here already).
func (f *raftForwarder) forward(conn *remoting.Conn, req *remoting.Command, h remoting.HandlerFunc) *remoting.Command {
	b := f.b
	size := requestBytes(req)
	if limit := b.cfg.Raft.DLegerForwardMaxInflightBytes; f.inflight.Add(size) > limit {
		f.inflight.Add(-size)
		f.forwardFailed.Add(1)
		return errResponse(remoting.SystemBusy, "[FORWARD]broker %s is not the master of Raft group %s and forwards writes to it, "+
			"but %d bytes are being forwarded already: this request of %d bytes would pass dLegerForwardMaxInflightBytes (%d); send again",
			b.addr, b.cfg.raftGroup(), f.inflight.Load(), size, limit)
	}
	deadline := time.Now().Add(ms(b.cfg.Raft.DLegerForwardTimeoutMs))
	if to, ok := f.target(0); ok {
		f.send(conn, req, to, deadline, size)
		return nil
	}
	go f.await(conn, req, h, deadline, size, 0)
	return nil
}

// await waits until a master of a term above minTerm is known (forward to it) or this node is the master
// (serve the request here, unless h is nil), within the deadline.
func (f *raftForwarder) await(conn *remoting.Conn, req *remoting.Command, h remoting.HandlerFunc, deadline time.Time, size int64, minTerm uint64) {
	b := f.b
	timeout := time.NewTimer(time.Until(deadline))
	defer timeout.Stop()
	poll := time.NewTicker(20 * time.Millisecond) // Raft's leader view changes without a notification
	defer poll.Stop()
	for {
		f.mu.Lock()
		changed := f.changed
		f.mu.Unlock()
		if h != nil && b.servesWrites() {
			f.inflight.Add(-size)
			if resp := h(conn.Context(), conn, req); resp != nil {
				f.reply(conn, req, resp)
			}
			return
		}
		if to, ok := f.target(minTerm); ok {
			f.send(conn, req, to, deadline, size)
			return
		}
		select {
		case <-changed:
		case <-poll.C:
		case <-timeout.C:
			f.inflight.Add(-size)
			f.forwardFailed.Add(1)
			st := b.raft.node.Status()
			f.reply(conn, req, errResponse(remoting.ServiceNotAvailable, "broker %s is not the master of Raft group %s and found no master "+
				"to forward the %s to within dLegerForwardTimeoutMs (%d ms) (node %s is %s, leader %q): send again",
				b.addr, b.cfg.raftGroup(), remoting.RequestCode(req.Code), b.cfg.Raft.DLegerForwardTimeoutMs, b.cfg.Raft.DLegerSelfId, st.Role, st.LeaderID))
			return
		case <-b.stop:
			f.inflight.Add(-size)
			f.forwardFailed.Add(1)
			f.reply(conn, req, errResponse(remoting.ServiceNotAvailable, "broker %s is shutting down and is not the master of Raft group %s: send again",
				b.addr, b.cfg.raftGroup()))
			return
		}
	}
}

// send forwards req to the master to and relays its answer.
func (f *raftForwarder) send(conn *remoting.Conn, req *remoting.Command, to leaderAnnouncement, deadline time.Time, size int64) {
	b := f.b
	addr := to.BrokerAddr
	out := remoting.NewRequest(remoting.RequestCode(req.Code), req.ExtFields, req.Body)
	out.Language, out.Version, out.SerializeType = req.Language, req.Version, req.SerializeType
	out.Flag = remoting.FlagForwarded
	out.Remark = conn.RemoteAddr()
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	if req.IsOneway() {
		out.MarkOneway()
		err := f.client.InvokeOneway(ctx, addr, out)
		cancel()
		f.inflight.Add(-size)
		if err != nil {
			f.forwardFailed.Add(1)
			b.log.Warn("raft: forwarding a oneway request to the master failed", "code", remoting.RequestCode(req.Code), "master", addr, "err", err)
			return
		}
		f.forwarded.Add(1)
		return
	}
	err := f.client.InvokeAsync(ctx, addr, out, func(resp *remoting.Command, err error) {
		cancel()
		f.inflight.Add(-size)
		if (err == nil && resp.ExtFields[extNotMaster] == "true" || neverSent(err)) && time.Now().Before(deadline) {
			// That master handed over meanwhile and stored nothing, or it could not be reached (gone:
			// its successor is elected in a later term): on to the next one.
			f.inflight.Add(size)
			go f.await(conn, req, nil, deadline, size, to.Term)
			return
		}
		f.relay(conn, req, addr, resp, err)
	})
	if err != nil {
		cancel()
		if neverSent(err) && time.Now().Before(deadline) {
			go f.await(conn, req, nil, deadline, size, to.Term)
			return
		}
		f.inflight.Add(-size)
		f.relay(conn, req, addr, nil, err)
	}
}

// neverSent reports whether err says the request never reached the master (the dial failed), so that
// forwarding it again elsewhere cannot store it twice.
func neverSent(err error) bool {
	var ce *remoting.ConnectError
	return errors.As(err, &ce)
}

// relay answers the client with the master's answer, or with SERVICE_NOT_AVAILABLE when there is none.
func (f *raftForwarder) relay(conn *remoting.Conn, req *remoting.Command, addr string, resp *remoting.Command, err error) {
	b := f.b
	if err != nil {
		f.forwardFailed.Add(1)
		key := ""
		if errors.Is(err, remoting.ErrTimeout) {
			key = " within dLegerForwardTimeoutMs (" + itoa(b.cfg.Raft.DLegerForwardTimeoutMs) + " ms)"
		}
		f.reply(conn, req, errResponse(remoting.ServiceNotAvailable, "broker %s is not the master of Raft group %s; forwarding the %s to the master at %s "+
			"got no answer%s: %v; the message may or may not be stored: send again", b.addr, b.cfg.raftGroup(), remoting.RequestCode(req.Code), addr, key, err))
		return
	}
	f.forwarded.Add(1)
	f.reply(conn, req, &remoting.Command{Code: resp.Code, Language: resp.Language, Version: resp.Version, Flag: remoting.FlagResponse,
		Remark: resp.Remark, ExtFields: resp.ExtFields, Body: resp.Body})
}

func (f *raftForwarder) reply(conn *remoting.Conn, req, resp *remoting.Command) {
	if err := conn.Reply(req, resp); err != nil {
		f.b.log.Debug("raft: answer to a forwarded request", "client", conn.RemoteAddr(), "err", err)
	}
}

// announceLeader proposes this master's announcement (metaLeader) for term, retried while this node is
// still master, so the other nodes can forward to it. It runs on its own goroutine: it waits for a commit,
// which the role callback must not. Bounded: every proposal ends within dLegerMaxWaitAckTimeMs, and
// proposals fail at once when the node closes or loses leadership.
func (b *Broker) announceLeader(term uint64) {
	cmd := &metaCmd{Op: metaLeader, Name: b.cfg.Raft.DLegerSelfId, BrokerAddr: b.addr, Term: term}
	go func() {
		for b.raft.master.Load() && b.raft.node.Status().Term == term {
			_, err := b.raft.proposeMeta(cmd)
			if err == nil {
				return
			}
			if errors.Is(err, raftlog.ErrNotLeader) || errors.Is(err, raftlog.ErrShutdown) {
				return
			}
			b.log.Warn("raft: announcing this master's broker address failed; retrying", "term", term, "err", err)
			select {
			case <-b.stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
}

// clientAddr is the address of the client that sent req: the connection's peer or, for a request another
// node of the Raft group forwarded, the client address that node put in the remark. It is for bornHost
// only, never for a check: anyone may set the flag.
func (r *raftRole) clientAddr(conn *remoting.Conn, req *remoting.Command) string {
	if req.Flag&remoting.FlagForwarded != 0 && req.Remark != "" {
		return req.Remark
	}
	return conn.RemoteAddr()
}

// masterAddr is the broker address of the last announcement ("" when none).
func (f *raftForwarder) masterAddr() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.leader.BrokerAddr
}
