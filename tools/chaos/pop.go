package chaos

import (
	"context"
	"hash/fnv"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rocketraft/rocketraft/client"
	"github.com/rocketraft/rocketraft/message"
)

// The pop consumer: RocketMQ 5's way of consuming (POP_MESSAGE and BATCH_ACK_MESSAGE, what the gRPC
// endpoint does for a 5.x SimpleConsumer) beside the pulling consumers, so every fault also hits messages
// popped and not acked yet, check points in the broker's merge buffer and acks of them. Every delivery is
// recorded (pops.jsonl); the checker asks that every message stored is delivered, and that a message left
// unacked comes back.

// PopsFile holds a PopRecord per message delivered to the pop consumer.
const PopsFile = "pops.jsonl"

// popGroup is the pop consumer's group.
const popGroup = "chaos_pop"

// popInvisible is how long a popped message stays hidden: short, so held messages come back within the run.
const popInvisible = 3 * time.Second

// popHeldEvery: one message in this many (by its id) is left unacked on a delivery of attempt 1 while the
// pop consumer never acked it. A message acked once is consumed: a delivery of it again (at least once: an
// ack or an offset lost to a fault) is acked, never held, for nothing obliges a broker to bring back a
// duplicate of a consumed message (a master whose pop offset passed it in an earlier term does not).
const popHeldEvery = 16

// PopRecord is one delivery to the pop consumer. Time is Unix microseconds.
type PopRecord struct {
	Time    int64  `json:"t"`
	Node    string `json:"node"`
	ID      string `json:"id"`
	Attempt int32  `json:"attempt"` // the broker's delivery count (reconsume times + 1)
	// Held: left unacked on purpose; the message must be delivered again.
	Held bool `json:"held,omitempty"`
	// Acked: the ack of this delivery answered OK; AckError otherwise (and not Held).
	Acked    bool   `json:"acked,omitempty"`
	AckError string `json:"ack_error,omitempty"`
}

// held reports whether id is one of the ids whose delivery of attempt 1 the pop consumer leaves unacked.
func held(id string) bool {
	h := fnv.New32a()
	h.Write([]byte(id))
	return h.Sum32()%popHeldEvery == 0
}

// popConsumer pops the topic from the routed master (through its client proxy) with Workers goroutines of
// one group, 32 a pop, and acks each pop's messages in one BATCH_ACK_MESSAGE, but for the held ones.
type popConsumer struct {
	cfg    *RunConfig
	wire   *client.Client
	routes *routes
	nodes  nodeSet
	pops   *recorder
	log    *slog.Logger
	read   atomic.Int64

	mu struct {
		sync.Mutex
		seen    map[string]bool  // ids delivered
		acked   map[string]bool  // ids of a delivery acked OK
		pending map[string]int64 // held ids not delivered again yet, and when held
	}
}

func newPopConsumer(cfg *RunConfig, wire *client.Client, rt *routes, nodes nodeSet, pops *recorder, log *slog.Logger) *popConsumer {
	c := &popConsumer{cfg: cfg, wire: wire, routes: rt, nodes: nodes, pops: pops, log: log}
	c.mu.seen, c.mu.acked, c.mu.pending = map[string]bool{}, map[string]bool{}, map[string]int64{}
	return c
}

func (c *popConsumer) run(ctx context.Context) {
	var wg sync.WaitGroup
	for range c.cfg.PopWorkers {
		wg.Go(func() {
			for ctx.Err() == nil {
				if !c.once(ctx) {
					_ = sleepCtx(ctx, 100*time.Millisecond)
				}
			}
		})
	}
	wg.Wait()
}

// once pops and acks once; false after an error.
func (c *popConsumer) once(ctx context.Context) bool {
	addr := c.routes.master()
	if addr == "" {
		return false
	}
	node := c.nodes[addr]
	dial, name := addr, addr
	if node != nil {
		dial, name = node.Client.Addr(), node.Name
	}
	res, err := c.wire.PopMessage(ctx, dial, &client.Pop{Group: popGroup, Topic: c.cfg.Topic, BrokerName: brokerName,
		QueueID: -1, MaxNums: 32, Invisible: popInvisible, Poll: time.Second, FromStart: true})
	if err != nil {
		if ctx.Err() == nil {
			c.log.Debug("pop", "node", name, "err", err)
			c.wire.CloseAddr(dial)
		}
		return false
	}
	if res.Status != client.PopFound {
		return true
	}
	now := micros(time.Now())
	recs := make([]PopRecord, len(res.Msgs))
	var handles []string
	var acked []int
	for i, m := range res.Msgs {
		id, _ := message.PropertyString(m.Properties, message.PropertyKeys)
		recs[i] = PopRecord{Time: now, Node: name, ID: id, Attempt: m.Attempt}
		if m.Attempt == 1 && held(id) && !c.ackedOnce(id) {
			recs[i].Held = true
			continue
		}
		handles = append(handles, m.ReceiptHandle)
		acked = append(acked, i)
	}
	if len(handles) > 0 {
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.cfg.SendTimeout)
		errs, err := c.wire.BatchAck(actx, dial, popGroup, c.cfg.Topic, handles)
		cancel()
		for k, i := range acked {
			e := err
			if e == nil {
				e = errs[k]
			}
			if e != nil {
				recs[i].AckError = e.Error()
			} else {
				recs[i].Acked = true
			}
		}
	}
	c.mu.Lock()
	for _, r := range recs {
		c.mu.seen[r.ID] = true
		if r.Acked {
			c.mu.acked[r.ID] = true
		}
		delete(c.mu.pending, r.ID)
		if r.Held {
			c.mu.pending[r.ID] = r.Time
		}
	}
	c.mu.Unlock()
	for _, r := range recs {
		c.pops.add(r)
	}
	c.read.Add(int64(len(recs)))
	return true
}

// ackedOnce reports whether a delivery of id was acked OK.
func (c *popConsumer) ackedOnce(id string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mu.acked[id]
}

// drained reports whether every id of want was delivered and every held message delivered again.
func (c *popConsumer) drained(want func(yield func(string) bool)) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.mu.pending) > 0 {
		return false
	}
	for id := range want {
		if !c.mu.seen[id] {
			return false
		}
	}
	return true
}
