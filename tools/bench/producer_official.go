package bench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
)

// officialProducer drives the official Go client: one producer instance shared by every goroutine, as
// RocketMQ's benchmark shares one DefaultMQProducer among its threads.
type officialProducer struct {
	cfg   *ProducerConfig
	p     rocketmq.Producer
	body  []byte
	first firstSendGate
	ids   *idLog // --ids
}

// instanceSeq gives every official client instance of the process its own instance name (the client keys its
// internal state by client id, which includes it).
var instanceSeq atomic.Int64

func instanceName(role string) string {
	return fmt.Sprintf("mqbench-%s-%d-%d", role, os.Getpid(), instanceSeq.Add(1))
}

func newOfficialProducer(cfg *ProducerConfig, log *slog.Logger) (*officialProducer, error) {
	p, err := rocketmq.NewProducer(
		producer.WithNsResolver(primitive.NewPassthroughResolver(cfg.NamesrvAddrs)),
		producer.WithGroupName(cfg.Group),
		producer.WithInstanceName(instanceName("producer")),
		producer.WithSendMsgTimeout(cfg.Timeout),
		producer.WithRetry(2),
		// RocketMQ's tool turns compression off by setting the threshold to the maximum; so does this one.
		producer.WithCompressMsgBodyOverHowmuch(math.MaxInt32),
	)
	if err != nil {
		return nil, fmt.Errorf("official producer: %w", err)
	}
	ids, err := openIDLog(cfg.IDs)
	if err != nil {
		return nil, err
	}
	if err := p.Start(); err != nil {
		_ = ids.close()
		return nil, fmt.Errorf("official producer start: %w", err)
	}
	log.Info("official producer", "topic", cfg.Topic, "mode", cfg.Mode)
	return &officialProducer{cfg: cfg, p: p, body: newBody(cfg.MessageSize), ids: ids}, nil
}

func (p *officialProducer) close() error { return errors.Join(p.p.Shutdown(), p.ids.close()) }

func (p *officialProducer) worker(i int, m *Meter) producerWorker {
	return &officialProducerWorker{p: p, m: m}
}

type officialProducerWorker struct {
	p *officialProducer
	m *Meter
}

// messages builds n new messages: the client writes its UNIQ_KEY into each, so none is reused.
func (w *officialProducerWorker) messages(n int, now time.Time) []*primitive.Message {
	props := w.p.cfg.propsAt(now)
	msgs := make([]*primitive.Message, n)
	for i := range msgs {
		m := primitive.NewMessage(w.p.cfg.Topic, w.p.body)
		if props.keys != "" {
			m.WithKeys([]string{props.keys})
		}
		if props.tag != "" {
			m.WithTag(props.tag)
		}
		msgs[i] = m
	}
	return msgs
}

func (w *officialProducerWorker) send(ctx context.Context, n int, done func()) bool {
	start := time.Now()
	msgs := w.messages(n, start)
	p := w.p.p
	return w.p.first.do(func() bool {
		return sendByMode(w.p.cfg.Mode, w.m, n, w.p.cfg.MessageSize, start, done,
			func(cb func(*primitive.SendResult, error)) error {
				return p.SendAsync(ctx, func(_ context.Context, res *primitive.SendResult, err error) { cb(res, err) }, msgs...)
			},
			func() error { return p.SendOneWay(ctx, msgs...) },
			func() (*primitive.SendResult, error) { return p.SendSync(ctx, msgs...) },
			func(res *primitive.SendResult, err error) bool { return w.outcome(n, start, res, err) })
	})
}

// outcome records a send's result as the native producer does: a broker error or a status other than
// SEND_OK counts a rejection, any other error a failure.
func (w *officialProducerWorker) outcome(n int, start time.Time, res *primitive.SendResult, err error) bool {
	switch {
	case isBrokerAnswer(err):
		w.m.Rejected(err.Error())
		return false
	case err != nil:
		w.m.Failed(err)
		return false
	case res.Status != primitive.SendOK:
		w.m.Rejected(fmt.Sprintf("send status %v", res.Status))
		return false
	default:
		w.m.Sent(n, w.p.cfg.MessageSize, time.Since(start))
		if w.p.ids != nil && res != nil {
			w.p.ids.add(strings.Split(res.MsgID, ",")...)
		}
		return true
	}
}

// isBrokerAnswer tells an error code answered by the broker from a transport failure: the client returns the
// former as primitive.MQBrokerErr or as a plain error "CODE: n, DESC: remark".
func isBrokerAnswer(err error) bool {
	var brokerErr primitive.MQBrokerErr
	return err != nil && (errors.As(err, &brokerErr) || strings.HasPrefix(err.Error(), "CODE: "))
}
