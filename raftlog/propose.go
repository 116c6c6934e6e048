package raftlog

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
	"github.com/rocketraft/rocketraft/message"
	"github.com/rocketraft/rocketraft/store"
)

// The proposer groups sends into Raft entries (group commit). A put encodes its records on
// the caller's goroutine (store.EncodeMessages: the leader's store host and clock) and queues
// them. The proposer goroutine takes an in-flight slot first (Config.MaxInFlight of them) and
// only then the queue: while every slot is in flight, replicated and synced, the puts that
// arrive queue up and go into the next entry together, so the entries grow with the load
// and the group pays one sync per node for each of them. With a slot in hand it lingers a
// little (linger) until as many puts are queued as the last entry carried, so that
// producers answered together by one entry land in the next one together rather than
// split over two; then it takes everything queued, up to Config.MaxEntryBytes and
// Config.MaxEntryMessages, as one message entry and hands it to raft.Apply. The waiter
// goroutine takes the entries in order as they are applied, gives their slots back and
// answers each put from what the state machine assigned to its records (physical and queue
// offsets): one put's records lie together in one entry, so a batch gets consecutive queue
// offsets, as a classic put gives it.
//
// Close: the proposer stops taking puts (queued ones fail with ErrShutdown), the waiter
// drains the entries in flight while Raft still runs (every Raft future resolves then: it is
// applied, or fails when leadership is lost or the follower loop refuses it), then Raft is
// shut down. The node's stop after a failed sync (node.go, Store.storeFailed) keeps the same
// order.

// proposal is one put waiting for its entry, or a metadata command (meta set), which is an
// entry of its own.
type proposal struct {
	recs      []byte // encoded records, or the metadata command
	count     int
	ts        int64 // store timestamp written into the records
	submitted time.Time
	done      func(store.PutResult, error)
	meta      func(any, error)
}

// fail answers the proposal with err.
func (pr *proposal) fail(err error) {
	if pr.meta != nil {
		pr.meta(nil, err)
		return
	}
	pr.done(store.PutResult{}, err)
}

// inflight is an entry handed to Raft with the puts it carries.
type inflight struct {
	fut      raft.ApplyFuture
	props    []*proposal
	proposed time.Time
}

type proposer struct {
	n *Node

	mu struct {
		sync.Mutex
		queue   []*proposal
		stopped bool
	}
	wake chan struct{} // capacity 1
	stop chan struct{}
	// slots holds a token for every entry in flight (capacity MaxInFlight): the proposer puts
	// one in before it takes the queue, the waiter takes it out once the entry is resolved.
	slots chan struct{}
	// inflight carries the entries to the waiter in order (capacity MaxInFlight, so a send
	// never blocks: slots bound what is in flight); closed by the proposer loop when it ends.
	inflight chan inflight
	wg       sync.WaitGroup

	// lastPuts is the number of puts the last message entry carried (proposer goroutine).
	lastPuts int
	// round is a moving average of the time from raft.Apply to the entry's answer, in ns
	// (written by the waiter, read by the proposer).
	round atomic.Int64
}

func newProposer(n *Node) *proposer {
	depth := max(n.cfg.MaxInFlight, 1)
	return &proposer{n: n, wake: make(chan struct{}, 1), stop: make(chan struct{}),
		slots: make(chan struct{}, depth), inflight: make(chan inflight, depth)}
}

func (p *proposer) start() {
	p.wg.Add(2)
	go p.proposeLoop()
	go p.waitLoop()
}

// close stops taking puts, fails the queued ones and waits until every entry in flight is
// answered. Raft must still run.
func (p *proposer) close() {
	p.mu.Lock()
	already := p.mu.stopped
	p.mu.stopped = true
	p.mu.Unlock()
	if !already {
		close(p.stop)
	}
	p.wg.Wait()
}

// submit queues a put, or answers it at once when the proposer is stopped.
func (p *proposer) submit(pr *proposal) {
	p.mu.Lock()
	if p.mu.stopped {
		p.mu.Unlock()
		pr.fail(fmt.Errorf("%w: proposal refused", ErrShutdown))
		return
	}
	pr.submitted = time.Now()
	p.mu.queue = append(p.mu.queue, pr)
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// take removes the next entry's proposals from the queue: a metadata command alone, or puts,
// at least one, then as many as fit the bounds.
func (p *proposer) take() ([]*proposal, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	q := p.mu.queue
	if len(q) == 0 {
		return nil, 0
	}
	bytes, msgs, k := len(q[0].recs), q[0].count, 1
	for ; k < len(q) && q[0].meta == nil; k++ {
		if q[k].meta != nil || bytes+len(q[k].recs) > p.n.maxEntryBytes() || msgs+q[k].count > p.n.cfg.MaxEntryMessages {
			break
		}
		bytes += len(q[k].recs)
		msgs += q[k].count
	}
	out := append([]*proposal(nil), q[:k]...)
	clear(q[:k])
	p.mu.queue = q[k:]
	if len(p.mu.queue) == 0 {
		p.mu.queue = q[:0]
	}
	return out, bytes
}

// enough reports whether the queue holds want puts, or a full entry, or a metadata command
// first (which goes alone).
func (p *proposer) enough(want int) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	q := p.mu.queue
	if len(q) >= want || len(q) > 0 && q[0].meta != nil {
		return true
	}
	bytes, msgs := 0, 0
	for _, pr := range q {
		bytes += len(pr.recs)
		msgs += pr.count
	}
	return bytes >= p.n.maxEntryBytes() || msgs >= p.n.cfg.MaxEntryMessages
}

// lingerFor is how long the proposer may wait for more puts once it holds a slot: a quarter
// of the recent round (Apply to answer), at most Config.MaxLinger. A quarter keeps what a
// put can lose to lingering small next to what it gains (not waiting a whole round for the
// next entry).
func (p *proposer) lingerFor() time.Duration {
	return min(time.Duration(p.round.Load())/4, p.n.cfg.MaxLinger)
}

// linger waits until the queue holds as many puts as the last entry carried (the producers
// that entry answered, coming back), a full entry, or lingerFor has passed. It returns false
// when the proposer is stopping.
func (p *proposer) linger(t *time.Timer) bool {
	want := p.lastPuts
	wait := p.lingerFor()
	if want <= 1 || wait <= 0 || p.enough(want) {
		return true
	}
	t.Reset(wait)
	defer t.Stop()
	for !p.enough(want) {
		select {
		case <-p.wake:
		case <-t.C:
			return true
		case <-p.stop:
			return false
		}
	}
	return true
}

func (p *proposer) proposeLoop() {
	defer p.wg.Done()
	defer close(p.inflight)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		select {
		case <-p.stop:
			p.failQueued()
			return
		case <-p.wake:
		}
		for {
			// The slot before the queue: while every slot is in flight, puts queue up.
			select {
			case p.slots <- struct{}{}:
			case <-p.stop:
				p.failQueued()
				return
			}
			if !p.linger(timer) {
				<-p.slots
				p.failQueued()
				return
			}
			props, size := p.take()
			if props == nil {
				<-p.slots
				break
			}
			data := make([]byte, 1, 1+size)
			data[0] = KindMessages
			if props[0].meta != nil {
				data[0] = KindMeta
			}
			msgs := 0
			for _, pr := range props {
				data = append(data, pr.recs...)
				msgs += pr.count
			}
			if err := p.n.leaderCheck(); err != nil {
				<-p.slots
				answerAll(props, err)
				continue
			}
			if data[0] == KindMessages {
				p.lastPuts = len(props)
				p.n.log.stats.entryMessages.observe(int64(msgs))
				p.n.log.stats.entryPuts.observe(int64(len(props)))
			}
			// Never blocks: the slot taken above bounds what is in flight. The waiter drains
			// what is in flight even when the proposer stops.
			proposed := time.Now()
			p.inflight <- inflight{fut: p.n.rf().Apply(data, 0), props: props, proposed: proposed}
		}
	}
}

// failQueued answers the puts still queued with ErrShutdown.
func (p *proposer) failQueued() {
	p.mu.Lock()
	q := p.mu.queue
	p.mu.queue = nil
	p.mu.Unlock()
	answerAll(q, fmt.Errorf("%w: put not proposed", ErrShutdown))
}

func answerAll(props []*proposal, err error) {
	for _, pr := range props {
		pr.fail(err)
	}
}

func (p *proposer) waitLoop() {
	defer p.wg.Done()
	host := p.n.cl.StoreHost()
	for e := range p.inflight {
		err := e.fut.Error()
		p.roundDone(time.Since(e.proposed))
		<-p.slots
		if err != nil {
			answerAll(e.props, p.n.proposalError(err))
			continue
		}
		if pr := e.props[0]; pr.meta != nil {
			pr.meta(e.fut.Response(), nil)
			continue
		}
		res, ok := e.fut.Response().(*MessagesResult)
		switch {
		case !ok:
			answerAll(e.props, fmt.Errorf("raftlog: entry %d: unexpected state machine response %T", e.fut.Index(), e.fut.Response()))
			continue
		case res.Err != nil:
			answerAll(e.props, fmt.Errorf("raftlog: entry %d was committed but not dispatched: %w", res.Index, res.Err))
			continue
		}
		offs := res.Offsets
		for _, pr := range e.props {
			if len(offs) < pr.count {
				pr.done(store.PutResult{}, fmt.Errorf("raftlog: entry %d: %d records dispatched, the puts carried more", res.Index, len(res.Offsets)))
				continue
			}
			p.recordStages(pr, e, res)
			pr.done(putResult(host, offs[:pr.count], pr.ts), nil)
			offs = offs[pr.count:]
		}
	}
}

// roundDone folds the time of one entry's round into the moving average (1/8 weight).
func (p *proposer) roundDone(d time.Duration) {
	old := p.round.Load()
	if old == 0 {
		p.round.Store(int64(d))
		return
	}
	p.round.Store(old + (int64(d)-old)/8)
}

// recordStages adds a put answered SEND_OK to the send stage histograms (stats.go).
func (p *proposer) recordStages(pr *proposal, e inflight, res *MessagesResult) {
	st := p.n.log.stats
	now := time.Now()
	obs := func(i int, from, to time.Time) { st.stages[i].observeDuration(to.Sub(from)) }
	obs(0, pr.submitted, e.proposed)
	if res.dispatchedAt.IsZero() {
		return
	}
	obs(1, e.proposed, res.dispatchedAt)
	if stored, ok := st.storedTime(res.Index); ok {
		obs(2, res.dispatchedAt, stored)
		obs(3, stored, res.applyStart)
		st.recordReplicate(res.Index, stored, res.applyStart)
	}
	obs(4, res.applyStart, res.applyEnd)
	obs(5, res.applyEnd, now)
}

// putResult is a put's answer as store.PutResult, from what its records got.
func putResult(host netip.AddrPort, offs []store.AssignedOffset, ts int64) store.PutResult {
	res := store.PutResult{Status: store.PutOK, PhysicalOffset: offs[0].PhysicalOffset, QueueOffset: offs[0].QueueOffset,
		Count: len(offs), StoreTimestamp: ts}
	if len(offs) == 1 {
		res.MsgID = message.CreateOffsetMsgID(host, offs[0].PhysicalOffset)
		res.WroteBytes = int(offs[0].Size)
		return res
	}
	var sb strings.Builder
	for i, o := range offs {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(message.CreateOffsetMsgID(host, o.PhysicalOffset))
		res.WroteBytes += int(o.Size)
	}
	res.MsgID = sb.String()
	return res
}

// proposalError maps what Raft says of an entry (or an Apply) to the package's errors.
func (n *Node) proposalError(err error) error {
	switch {
	case errors.Is(err, raft.ErrNotLeader), errors.Is(err, raft.ErrLeadershipTransferInProgress):
		return n.notLeader()
	case errors.Is(err, raft.ErrLeadershipLost), errors.Is(err, raft.ErrAbortedByRestore):
		return fmt.Errorf("%w (%v)", ErrLeadershipLost, err)
	case errors.Is(err, raft.ErrRaftShutdown):
		return fmt.Errorf("%w (%v)", ErrShutdown, err)
	}
	return fmt.Errorf("raftlog: proposal: %w", err)
}

// notLeader is a *NotLeaderError with the leader this node knows of.
func (n *Node) notLeader() error {
	addr, id := n.rf().LeaderWithID()
	return &NotLeaderError{LeaderID: string(id), LeaderAddr: string(addr)}
}

// leaderCheck fails fast when this node is not the leader (nothing is proposed then).
func (n *Node) leaderCheck() error {
	r := n.rf()
	if r == nil {
		return fmt.Errorf("%w: not started", ErrShutdown)
	}
	if n.closed.Load() {
		return fmt.Errorf("%w: node closed", ErrShutdown)
	}
	switch n.raftState() {
	case raft.Leader:
		return nil
	case raft.Shutdown:
		return fmt.Errorf("%w: raft is shut down", ErrShutdown)
	}
	return n.notLeader()
}

// maxEntryBytes bounds the records of one message entry: Config.MaxEntryBytes, and a frame
// must fit a CommitLog file with room for the blank filler.
func (n *Node) maxEntryBytes() int {
	return int(min(int64(n.cfg.MaxEntryBytes), n.cl.CommitLogFileSize()-FrameHeaderSize-blankHeaderSize-1))
}

// PutMessage proposes one message and waits until its entry is applied: the same contract
// as store.Store.PutMessage, with Raft's meaning of durable (committed by a majority: synced
// on each of them with Config.Sync, SYNC_FLUSH; in their memory without, ASYNC_FLUSH). The
// result's offsets are the ones every node assigned. Errors: ErrNotLeader (a
// *NotLeaderError), ErrLeadershipLost, ErrProposalTimeout (ctx ended while in flight),
// ErrShutdown, or the store's encoding errors (nothing proposed).
func (n *Node) PutMessage(ctx context.Context, m *message.Message) (store.PutResult, error) {
	one := [1]*message.Message{m}
	return n.PutMessages(ctx, one[:])
}

// PutMessages proposes a batch for one topic and queue (store.Store.PutMessages' rules) and
// waits as PutMessage: the batch lies in one entry with consecutive queue offsets.
func (n *Node) PutMessages(ctx context.Context, msgs []*message.Message) (store.PutResult, error) {
	if err := ctx.Err(); err != nil {
		return store.PutResult{}, err
	}
	type answer struct {
		res store.PutResult
		err error
	}
	ch := make(chan answer, 1)
	n.PutMessagesAsync(msgs, func(res store.PutResult, err error) { ch <- answer{res, err} })
	select {
	case a := <-ch:
		return a.res, a.err
	case <-ctx.Done():
		return store.PutResult{}, fmt.Errorf("%w: %w", ErrProposalTimeout, ctx.Err())
	}
}

// PutMessageAsync is PutMessage with a callback: done runs exactly once, on the caller's
// goroutine for an error found before proposing, else on the proposer's goroutines. done
// must not block.
func (n *Node) PutMessageAsync(m *message.Message, done func(store.PutResult, error)) {
	one := [1]*message.Message{m}
	n.PutMessagesAsync(one[:], done)
}

// PutMessagesAsync is PutMessages with a callback, as PutMessageAsync. Without a deadline:
// an entry in flight is answered once it is applied or Raft gives it up (a leader without a
// quorum steps down within LeaderLeaseTimeout, failing it with ErrLeadershipLost).
func (n *Node) PutMessagesAsync(msgs []*message.Message, done func(store.PutResult, error)) {
	if err := n.leaderCheck(); err != nil {
		done(store.PutResult{}, err)
		return
	}
	recs, ts, err := n.cl.EncodeMessages(nil, msgs)
	if err != nil {
		done(store.PutResult{}, err)
		return
	}
	if len(recs) > n.maxEntryBytes() {
		done(store.PutResult{}, fmt.Errorf("%w: %d bytes of records, a raft entry holds %d (maxEntryBytes, commitlog file size)",
			store.ErrMessageTooLarge, len(recs), n.maxEntryBytes()))
		return
	}
	n.prop.submit(&proposal{recs: recs, count: len(msgs), ts: ts, done: done})
}

// ProposeMeta proposes a metadata command (a kind 2 entry of its own; data without the kind
// byte, not retained) and returns what MetaApplier.ApplyMeta returned for it on this node.
// Commands and puts are proposed in the order they were submitted. Errors as PutMessage's.
func (n *Node) ProposeMeta(ctx context.Context, data []byte) (any, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := n.leaderCheck(); err != nil {
		return nil, err
	}
	if len(data) > n.maxEntryBytes() {
		return nil, fmt.Errorf("raftlog: metadata command of %d bytes, a raft entry holds %d", len(data), n.maxEntryBytes())
	}
	type answer struct {
		resp any
		err  error
	}
	ch := make(chan answer, 1)
	n.prop.submit(&proposal{recs: append([]byte(nil), data...), meta: func(resp any, err error) { ch <- answer{resp, err} }})
	select {
	case a := <-ch:
		return a.resp, a.err
	case <-ctx.Done():
		return nil, fmt.Errorf("%w: %w", ErrProposalTimeout, ctx.Err())
	}
}
