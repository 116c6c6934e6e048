package bench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/rocketraft/rocketraft/client"
	"github.com/rocketraft/rocketraft/proxy/v2pb"
)

// The gRPC client (--client grpc): RocketMQ 5's protocol, apache.rocketmq.v2.MessagingService, against the
// endpoint at --endpoint (a broker's own, enableProxy: local mode; or mqproxy's: cluster mode), with the
// generated stubs, as a 5.x client speaks it: a producer's SendMessage of one message at a time, a
// SimpleConsumer's ReceiveMessage of up to --pull-batch messages followed by one AckMessage of them. Every
// goroutine shares one connection (HTTP/2 streams), as a 5.x client does.

// grpcInvisible is how long a received message stays hidden: far longer than a receive and its ack take.
const grpcInvisible = 30 * time.Second

// grpcLongPolling is how long an empty receive waits for a message.
const grpcLongPolling = 5 * time.Second

// dialGRPC connects to the endpoint and returns the stub and a context carrying the client's headers.
func dialGRPC(endpoint, role string) (*grpc.ClientConn, v2pb.MessagingServiceClient, context.Context, error) {
	conn, err := grpc.NewClient(endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, nil, nil, fmt.Errorf("--endpoint %s: %w", endpoint, err)
	}
	md := metadata.AppendToOutgoingContext(context.Background(), "x-mq-client-id", instanceName(role),
		"x-mq-protocol", "v2", "x-mq-language", "GOLANG")
	return conn, v2pb.NewMessagingServiceClient(conn), md, nil
}

// grpcProducer sends with SendMessage, one message a request, from every goroutine over one connection.
type grpcProducer struct {
	cfg  *ProducerConfig
	conn *grpc.ClientConn
	rpc  v2pb.MessagingServiceClient
	md   context.Context
	body []byte
}

func newGRPCProducer(cfg *ProducerConfig, log *slog.Logger) (*grpcProducer, error) {
	conn, rpc, md, err := dialGRPC(cfg.Endpoint, "producer")
	if err != nil {
		return nil, err
	}
	log.Info("gRPC producer", "endpoint", cfg.Endpoint, "topic", cfg.Topic)
	return &grpcProducer{cfg: cfg, conn: conn, rpc: rpc, md: md, body: newBody(cfg.MessageSize)}, nil
}

func (p *grpcProducer) close() error { return p.conn.Close() }

func (p *grpcProducer) worker(_ int, m *Meter) producerWorker { return &grpcProducerWorker{p: p, m: m} }

type grpcProducerWorker struct {
	p *grpcProducer
	m *Meter
}

func (w *grpcProducerWorker) send(ctx context.Context, n int, done func()) bool {
	defer done()
	p := w.p
	start := time.Now()
	props := p.cfg.propsAt(start)
	sp := &v2pb.SystemProperties{MessageId: client.NewUniqID(), MessageType: v2pb.MessageType_NORMAL,
		BornTimestamp: timestamppb.New(start)}
	if props.tag != "" {
		sp.Tag = &props.tag
	}
	if props.keys != "" {
		sp.Keys = []string{props.keys}
	}
	ctx = metadata.NewOutgoingContext(ctx, mdOf(p.md))
	r, err := p.rpc.SendMessage(ctx, &v2pb.SendMessageRequest{Messages: []*v2pb.Message{{
		Topic: &v2pb.Resource{Name: p.cfg.Topic}, Body: p.body, SystemProperties: sp}}})
	switch {
	case err != nil:
		w.m.Failed(err)
		return false
	case r.GetStatus().GetCode() != v2pb.Code_OK:
		w.m.Rejected(fmt.Sprintf("%s %s", r.GetStatus().GetCode(), r.GetStatus().GetMessage()))
		return false
	}
	w.m.Sent(n, p.cfg.MessageSize, time.Since(start))
	return true
}

// mdOf is the outgoing headers of ctx.
func mdOf(ctx context.Context) metadata.MD {
	md, _ := metadata.FromOutgoingContext(ctx)
	return md
}

// grpcConsumer is cfg.Threads SimpleConsumers of one group over one connection: each receives up to
// cfg.PullBatch messages of the topic's queues on the endpoint's brokers and acks them in one AckMessage.
type grpcConsumer struct {
	cfg     *ConsumerConfig
	conn    *grpc.ClientConn
	rpc     v2pb.MessagingServiceClient
	md      context.Context
	brokers []string
	stats   *Stats
	prog    *progress
	log     *slog.Logger
}

func newGRPCConsumer(cfg *ConsumerConfig, queues []client.Queue, stats *Stats, prog *progress, log *slog.Logger) (*grpcConsumer, error) {
	conn, rpc, md, err := dialGRPC(cfg.Endpoint, "consumer")
	if err != nil {
		return nil, err
	}
	c := &grpcConsumer{cfg: cfg, conn: conn, rpc: rpc, md: md, stats: stats, prog: prog, log: log}
	seen := map[string]bool{}
	for _, q := range queues {
		if !seen[q.BrokerName] {
			seen[q.BrokerName] = true
			c.brokers = append(c.brokers, q.BrokerName)
		}
	}
	if len(c.brokers) == 0 {
		_ = conn.Close()
		return nil, fmt.Errorf("topic %s has no readable queue on a broker master", cfg.Topic)
	}
	log.Info("gRPC consumer", "endpoint", cfg.Endpoint, "topic", cfg.Topic, "group", cfg.Group, "brokers", c.brokers)
	return c, nil
}

func (c *grpcConsumer) run(ctx context.Context) error {
	var wg sync.WaitGroup
	for i := range c.cfg.Threads {
		m := c.stats.NewMeter()
		wg.Go(func() {
			broker := c.brokers[i%len(c.brokers)]
			for ctx.Err() == nil {
				if err := c.receive(ctx, m, broker); err != nil && ctx.Err() == nil {
					m.Failed(err)
					pause(ctx, failurePause)
				}
			}
		})
	}
	wg.Wait()
	return c.conn.Close()
}

// receive receives once from broker's queues and acks what came.
func (c *grpcConsumer) receive(ctx context.Context, m *Meter, broker string) error {
	rctx := metadata.NewOutgoingContext(ctx, mdOf(c.md))
	stream, err := c.rpc.ReceiveMessage(rctx, &v2pb.ReceiveMessageRequest{Group: &v2pb.Resource{Name: c.cfg.Group},
		MessageQueue:     &v2pb.MessageQueue{Topic: &v2pb.Resource{Name: c.cfg.Topic}, Id: -1, Broker: &v2pb.Broker{Name: broker}},
		FilterExpression: &v2pb.FilterExpression{Type: v2pb.FilterType_TAG, Expression: "*"},
		BatchSize:        int32(c.cfg.PullBatch), InvisibleDuration: durationpb.New(grpcInvisible),
		LongPollingTimeout: durationpb.New(grpcLongPolling)})
	if err != nil {
		return err
	}
	ack := &v2pb.AckMessageRequest{Group: &v2pb.Resource{Name: c.cfg.Group}, Topic: &v2pb.Resource{Name: c.cfg.Topic}}
	now := time.Now()
	nowMs := now.UnixMilli()
	var status *v2pb.Status
	var sizes []int
	var born, stored []int64
	for {
		r, err := stream.Recv()
		if err != nil {
			break
		}
		switch ct := r.Content.(type) {
		case *v2pb.ReceiveMessageResponse_Status:
			status = ct.Status
		case *v2pb.ReceiveMessageResponse_Message:
			sp := ct.Message.GetSystemProperties()
			ack.Entries = append(ack.Entries, &v2pb.AckMessageEntry{MessageId: sp.GetMessageId(), ReceiptHandle: sp.GetReceiptHandle()})
			sizes = append(sizes, len(ct.Message.GetBody()))
			born = append(born, sp.GetBornTimestamp().AsTime().UnixMilli())
			stored = append(stored, sp.GetStoreTimestamp().AsTime().UnixMilli())
		}
	}
	if len(ack.Entries) == 0 {
		if status != nil && status.Code != v2pb.Code_OK && status.Code != v2pb.Code_MESSAGE_NOT_FOUND {
			return fmt.Errorf("receive: %s %s", status.Code, status.Message)
		}
		return nil
	}
	r, err := c.rpc.AckMessage(rctx, ack)
	if err == nil && r.GetStatus().GetCode() != v2pb.Code_OK {
		err = fmt.Errorf("ack: %s %s", r.GetStatus().GetCode(), r.GetStatus().GetMessage())
	}
	if err != nil {
		return errors.Join(errors.New("messages received but not acked (they come back)"), err)
	}
	taken := c.prog.take(len(sizes))
	for i := range taken {
		m.Consumed(sizes[i], ms(nowMs-born[i]), ms(nowMs-stored[i]), now)
	}
	return nil
}
