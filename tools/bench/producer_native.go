package bench

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/rocketraft/rocketraft/client"
	"github.com/rocketraft/rocketraft/remoting"
)

// nativeProducer sends through our own remoting.Client: SEND_MESSAGE_V2 (short header keys, as RocketMQ's
// benchmark with sendSmartMsg) or SEND_BATCH_MESSAGE, spread round robin over the write queues of the topics.
type nativeProducer struct {
	cfg    *ProducerConfig
	c      *client.Client
	queues []target
	body   []byte
}

// newNativeProducer sends to queues (the write queues of cfg.Topics()) over a client of its own.
func newNativeProducer(cfg *ProducerConfig, queues []target, log *slog.Logger) *nativeProducer {
	ser := remoting.SerializeRocketMQ
	if cfg.Serialize == "json" {
		ser = remoting.SerializeJSON
	}
	log.Info("native producer", "topic", cfg.Topic, "topics", cfg.TopicCount, "queues", len(queues), "mode", cfg.Mode)
	return &nativeProducer{cfg: cfg, c: newClient(cfg.Common, ser, log), queues: queues, body: newBody(cfg.MessageSize)}
}

func (p *nativeProducer) close() error { return p.c.Close() }

func (p *nativeProducer) worker(i int, m *Meter) producerWorker {
	// Goroutines start evenly spread over the queues (with one topic of 8 queues and 16 goroutines: two per
	// queue).
	return &nativeProducerWorker{p: p, m: m, next: i * len(p.queues) / p.cfg.Threads}
}

type nativeProducerWorker struct {
	p    *nativeProducer
	m    *Meter
	next int // round-robin position over p.queues
}

// request builds the SEND_MESSAGE_V2 (or SEND_BATCH_MESSAGE) request for n messages to t.
func (w *nativeProducerWorker) request(t target, n int, now time.Time) *remoting.Command {
	p := w.p
	props := p.cfg.propsAt(now)
	s := &client.Send{Group: p.cfg.Group, Topic: t.topic, BrokerName: t.q.BrokerName, QueueID: t.q.QueueID, Born: now,
		Body: p.body}
	if p.cfg.Mode == ModeBatch {
		s.Batch = true
		// A new body per request: after a timeout the writer may still hold the previous one.
		body := make([]byte, 0, n*(22+len(p.body)+64))
		var pb []byte
		for range n {
			pb = props.encode(pb[:0], client.NewUniqID())
			body = client.AppendBatchRecord(body, p.body, pb)
		}
		s.Body = body
	} else {
		s.Properties = string(props.encode(nil, client.NewUniqID()))
	}
	return p.c.SendCommand(s)
}

func (w *nativeProducerWorker) send(ctx context.Context, n int, done func()) bool {
	p := w.p
	t := p.queues[w.next%len(p.queues)]
	w.next++
	q := t.q
	start := time.Now()
	req := w.request(t, n, start)
	return sendByMode(p.cfg.Mode, w.m, n, p.cfg.MessageSize, start, done,
		func(cb func(*remoting.Command, error)) error { return p.c.InvokeAsync(ctx, q.Addr, req, cb) },
		func() error { return p.c.InvokeOneway(ctx, q.Addr, req) },
		func() (*remoting.Command, error) { return p.c.Invoke(ctx, q.Addr, req) },
		func(resp *remoting.Command, err error) bool { return w.outcome(n, start, resp, err) })
}

// outcome records a send's answer: SUCCESS counts the messages; any other code (FLUSH_DISK_TIMEOUT too: the
// durability asked for was not met) counts a rejection.
func (w *nativeProducerWorker) outcome(n int, start time.Time, resp *remoting.Command, err error) bool {
	switch {
	case err != nil:
		w.m.Failed(err)
		return false
	case resp.Code != int32(remoting.Success):
		w.m.Rejected(fmt.Sprintf("%s (%d) %s", remoting.ResponseCode(resp.Code), resp.Code, resp.Remark))
		return false
	default:
		w.m.Sent(n, w.p.cfg.MessageSize, time.Since(start))
		return true
	}
}
