package chaos

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rocketraft/rocketraft/client"
	"github.com/rocketraft/rocketraft/message"
	"github.com/rocketraft/rocketraft/protocol"
	"github.com/rocketraft/rocketraft/remoting"
)

// routes keeps the broker group's id -> address table as the name server routes the topic, refreshed every
// routeEvery, as a client's route poll would (faster: the suite measures failover, not the poll period).
type routes struct {
	wire  *client.Client
	topic string
	group string
	mu    sync.Mutex
	addrs map[int64]string
}

const routeEvery = 200 * time.Millisecond

func (r *routes) run(ctx context.Context) {
	t := time.NewTicker(routeEvery)
	defer t.Stop()
	for {
		rctx, cancel := context.WithTimeout(ctx, time.Second)
		route, err := r.wire.Route(rctx, r.topic)
		cancel()
		if err == nil {
			r.set(addrsOf(route, r.group))
		} else if ctx.Err() == nil {
			r.set(nil) // a topic the name server no longer routes: no broker to go to
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func addrsOf(route *protocol.TopicRouteData, group string) map[int64]string {
	out := map[int64]string{}
	for _, bd := range route.BrokerDatas {
		if bd.BrokerName != group {
			continue
		}
		maps.Copy(out, bd.BrokerAddrs)
	}
	return out
}

func (r *routes) set(m map[int64]string) {
	r.mu.Lock()
	r.addrs = m
	r.mu.Unlock()
}

// master is the address routed as brokerId 0, or "".
func (r *routes) master() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.addrs[protocol.MasterID]
}

// readable is where a consumer pulls: the master when routed, else the lowest-numbered slave (RocketMQ's
// clients do the same when the master is gone from the route).
func (r *routes) readable() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return client.ReadAddr(r.addrs)
}

// nodeSet maps routed broker addresses to the nodes and the proxies clients reach them through.
type nodeSet map[string]*Node

func newNodeSet(nodes []*Node) nodeSet {
	m := nodeSet{}
	for _, n := range nodes {
		m[n.Addr] = n
	}
	return m
}

// producer sends unique messages from Workers goroutines: worker w sends ids w<w>-<seq> in seq order to
// queue w % queues, one at a time, each retried up to retries more times when it is not acknowledged, and
// records every attempt.
type producer struct {
	cfg    *RunConfig
	wire   *client.Client
	routes *routes
	nodes  nodeSet
	sends  *recorder
	log    *slog.Logger
	acked  atomic.Int64
	ids    sync.Map // ids acknowledged: the pop consumer's drain waits for them
}

func (p *producer) run(ctx context.Context) {
	var wg sync.WaitGroup
	interval := time.Duration(float64(time.Second) * float64(p.cfg.Workers) / p.cfg.Rate)
	for w := range p.cfg.Workers {
		wg.Go(func() { p.worker(ctx, w, interval) })
	}
	wg.Wait()
}

func (p *producer) worker(ctx context.Context, w int, interval time.Duration) {
	queue := int32(w % p.cfg.Queues)
	next := time.Now()
	for seq := int64(1); ctx.Err() == nil; seq++ {
		id := fmt.Sprintf("w%02d-%08d", w, seq)
		for attempt := 1; attempt <= 1+p.cfg.Retries && ctx.Err() == nil; attempt++ {
			addr := p.waitMaster(ctx)
			if addr == "" {
				return
			}
			if p.send(ctx, w, seq, attempt, id, queue, addr) {
				break
			}
			_ = sleepCtx(ctx, p.cfg.RetryPause)
		}
		next = next.Add(interval)
		if d := time.Until(next); d > 0 {
			_ = sleepCtx(ctx, d)
		} else {
			next = time.Now() // behind (an outage): no burst to catch up
		}
	}
}

// waitMaster returns the routed master's address, waiting while none is routed; "" when ctx ends.
func (p *producer) waitMaster(ctx context.Context) string {
	for {
		if a := p.routes.master(); a != "" {
			return a
		}
		if sleepCtx(ctx, routeEvery/2) != nil {
			return ""
		}
	}
}

// send makes one attempt and records it; true when acknowledged.
func (p *producer) send(ctx context.Context, w int, seq int64, attempt int, id string, queue int32, addr string) bool {
	node := p.nodes[addr]
	dial, name := addr, addr
	if node != nil {
		dial, name = node.Client.Addr(), node.Name
	}
	body := make([]byte, p.cfg.Size)
	copy(body, id)
	start := time.Now()
	req := p.wire.SendCommand(&client.Send{Group: "chaos_producer", Topic: p.cfg.Topic, BrokerName: brokerName,
		QueueID: queue, Born: start, Properties: message.EncodeProperties(map[string]string{message.PropertyKeys: id}),
		Body: body})
	// A send in flight is not cut short by the end of the run: its outcome is what the checker needs.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), p.cfg.SendTimeout)
	resp, err := p.wire.Invoke(rctx, dial, req)
	cancel()
	rec := SendRecord{ID: id, Worker: w, Seq: seq, Attempt: attempt, Queue: queue, Node: name,
		Start: micros(start), End: micros(time.Now())}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		rec.Status, rec.Error = SendTimeout, err.Error()
	case err != nil:
		rec.Status, rec.Error = SendFailed, err.Error()
		p.wire.CloseAddr(dial) // a fresh connection next time
	case resp.Code != int32(remoting.Success):
		rec.Status, rec.Code = SendRejected, resp.Code
		rec.Error = fmt.Sprintf("%s %s", remoting.ResponseCode(resp.Code), resp.Remark)
	default:
		rec.Status = SendOK
		rec.Offset, _ = resp.ExtInt64("queueOffset")
		p.acked.Add(1)
		p.ids.Store(id, true)
	}
	p.sends.add(rec)
	return rec.Status == SendOK
}

// consumer pulls one queue from wherever the route says (the master, else a slave) and records every
// message read.
type consumer struct {
	cfg    *RunConfig
	wire   *client.Client
	routes *routes
	nodes  nodeSet
	reads  *recorder
	log    *slog.Logger
	read   atomic.Int64
	// next offsets by queue, for the drain at the end; the map is made by the consumer's creator
	mu   sync.Mutex
	next map[int32]int64
}

func (c *consumer) run(ctx context.Context) {
	var wg sync.WaitGroup
	for q := range int32(c.cfg.Queues) {
		wg.Go(func() { c.queue(ctx, q) })
	}
	wg.Wait()
}

func (c *consumer) offset(q int32) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.next[q]
}

func (c *consumer) queue(ctx context.Context, q int32) {
	var offset int64
	for ctx.Err() == nil {
		addr := c.routes.readable()
		if addr == "" {
			_ = sleepCtx(ctx, routeEvery/2)
			continue
		}
		next, err := pullOnce(ctx, c.wire, c.nodes, addr, c.cfg.Topic, q, offset, time.Second, PhaseRun, 0, c.reads, &c.read)
		if err != nil {
			c.log.Debug("pull", "queue", q, "offset", offset, "node", addr, "err", err)
			_ = sleepCtx(ctx, 100*time.Millisecond)
			continue
		}
		offset = next
		c.mu.Lock()
		c.next[q] = offset
		c.mu.Unlock()
	}
}

// pullOnce pulls queue q from offset at addr (through the node's client proxy when it has one), held up to
// suspend when there is nothing new, records what it read under phase, and returns the offset to go on from.
func pullOnce(ctx context.Context, w *client.Client, nodes nodeSet, addr, topic string, q int32, offset int64,
	suspend time.Duration, phase string, fault int, reads *recorder, count *atomic.Int64) (int64, error) {
	node := nodes[addr]
	dial, name := addr, addr
	if node != nil && phase == PhaseRun {
		dial = node.Client.Addr()
	}
	if node != nil {
		name = node.Name
	}
	req := w.PullCommand(&client.Pull{Group: "chaos_consumer", Topic: topic, BrokerName: brokerName, QueueID: q,
		Offset: offset, MaxNums: 32, LongPoll: true, Suspend: suspend, CommitOffset: offset})
	rctx, cancel := context.WithTimeout(ctx, suspend+3*time.Second)
	resp, err := w.Invoke(rctx, dial, req)
	cancel()
	if err != nil {
		if ctx.Err() == nil {
			w.CloseAddr(dial) // a fresh connection next time (not when the consumer is being stopped)
		}
		return offset, err
	}
	res, err := client.ParsePull(name, resp)
	if res == nil {
		return offset, fmt.Errorf("pull queue %d at %d: %w", q, offset, err)
	}
	if res.Status != client.PullFound {
		if res.NextBegin < 0 {
			return offset, nil
		}
		return res.NextBegin, nil
	}
	if err != nil {
		return offset, fmt.Errorf("decode a pull of queue %d: %w", q, err)
	}
	now := micros(time.Now())
	qoff := offset
	for _, m := range res.Msgs {
		qoff = m.QueueOffset
		id := message.ParseProperties(m.Properties)[message.PropertyKeys]
		reads.add(ReadRecord{Time: now, Phase: phase, Fault: fault, Node: name, Queue: q, Offset: m.QueueOffset, ID: id})
		if count != nil {
			count.Add(1)
		}
	}
	if res.NextBegin < 0 {
		return qoff + 1, nil
	}
	return res.NextBegin, nil
}

// newWire is a client of the name server at ns, with binary request headers.
func newWire(ns string, timeout time.Duration, log *slog.Logger) *client.Client {
	return client.New(client.Config{Namesrvs: []string{ns}, Timeout: timeout, Serialize: remoting.SerializeRocketMQ,
		Log: log.With("component", "chaos-client")})
}

// queueAt is queue q of topic on the chaos broker group, at addr.
func queueAt(addr, topic string, q int32) client.Queue {
	return client.Queue{MessageQueue: protocol.MessageQueue{Topic: topic, BrokerName: brokerName, QueueID: q}, Addr: addr}
}

// maxOffset asks the node at addr for the max offset of queue q of topic.
func maxOffset(ctx context.Context, w *client.Client, addr, topic string, q int32) (int64, error) {
	return w.QueueOffset(ctx, remoting.GetMaxOffset, queueAt(addr, topic, q), 0)
}

// scan reads every queue of topic on node from its min offset to the max offset it reports now, recording
// each message under phase (the final reads, the reads of a slave while its master is down). It talks to
// the node directly, not through its client proxy.
func scan(ctx context.Context, w *client.Client, node *Node, topic string, queues int, phase string, fault int, reads *recorder) (int64, error) {
	var n atomic.Int64
	nodes := nodeSet{node.Addr: node}
	for q := range int32(queues) {
		from, err := w.QueueOffset(ctx, remoting.GetMinOffset, queueAt(node.Addr, topic, q), 0)
		if err != nil {
			return n.Load(), fmt.Errorf("scan %s: %w", node.Name, err)
		}
		to, err := maxOffset(ctx, w, node.Addr, topic, q)
		if err != nil {
			return n.Load(), fmt.Errorf("scan %s: %w", node.Name, err)
		}
		for off := from; off < to; {
			next, err := pullOnce(ctx, w, nodes, node.Addr, topic, q, off, 0, phase, fault, reads, &n)
			if err != nil {
				return n.Load(), fmt.Errorf("scan %s: %w", node.Name, err)
			}
			if next <= off {
				return n.Load(), fmt.Errorf("scan %s: queue %d does not advance past %d (max %d)", node.Name, q, off, to)
			}
			off = next
		}
	}
	return n.Load(), nil
}
