package proxy

import (
	"context"
	"time"

	"github.com/rocketraft/rocketraft/client"
	"github.com/rocketraft/rocketraft/protocol"
	"github.com/rocketraft/rocketraft/remoting"
)

// Local is the broker a local-mode Server runs in (Options.Local), called in process on the data path:
// sends, pops, acks, changes of invisible time and offsets go to its handlers' own code, with no connection,
// no request header and no copy of a message body. The broker implements it (broker/grpc_local.go). Every
// method is safe for concurrent use. A refusal is a *client.ResponseError with the remoting code the
// broker answers the same request with over remoting (its Addr is "local"), so both paths answer the
// client alike.
type Local interface {
	// Serving reports whether the broker takes the calls below now: it is its group's master. When it is
	// not (a Raft follower, a slave), the Server reaches the master over remoting as in cluster mode.
	Serving() bool
	// SendMessage stores s (to s.QueueID, or a queue of the broker's choice when it is -1) as
	// SEND_MESSAGE_V2 does and answers once the store's durability policy did.
	SendMessage(ctx context.Context, s *client.Send) (*client.SendResult, error)
	// PopMessage is POP_MESSAGE of p, held up to p.Poll when nothing is found. A FOUND result's Release
	// must be called once its messages are used (their bodies point into the store).
	PopMessage(ctx context.Context, p *client.Pop) (*client.PopResult, error)
	// BatchAck acks the messages of handles (popped by group from topic) and answers one error per
	// handle, a NO_MESSAGE ResponseError for one no longer in flight; the error alone fails them all.
	BatchAck(ctx context.Context, group, topic string, handles []protocol.ExtraInfo) ([]error, error)
	// ChangeInvisibleTime hides the message of handle for invisible from now and returns its new handle.
	ChangeInvisibleTime(ctx context.Context, group, topic string, handle protocol.ExtraInfo, invisible time.Duration) (string, error)
	// QueryConsumerOffset is the group's committed offset of a queue (found false: none), as
	// QUERY_CONSUMER_OFFSET answers it.
	QueryConsumerOffset(ctx context.Context, group, topic string, queueID int32) (offset int64, found bool, err error)
	// UpdateConsumerOffset commits the group's offset of a queue (UPDATE_CONSUMER_OFFSET).
	UpdateConsumerOffset(ctx context.Context, group, topic string, queueID int32, offset int64) error
	// QueueOffset is a queue's min (GET_MIN_OFFSET), max (GET_MAX_OFFSET) or by-time
	// (SEARCH_OFFSET_BY_TIMESTAMP, of ts in ms) offset.
	QueueOffset(ctx context.Context, code remoting.RequestCode, topic string, queueID int32, ts int64) (int64, error)
}

// brokers reaches a broker group's master on the data path: in process (Local) for the local broker while
// it serves, else over remoting through the native client. It is the popper of the calls and renewals.
type brokers struct {
	c     *client.Client
	local Local  // nil in cluster mode
	name  string // the local broker's name
}

var _ popper = (*brokers)(nil)

// localFor is the in-process broker when brokerName is the local one and it serves now, else nil.
func (d *brokers) localFor(brokerName string) Local {
	if d.local != nil && brokerName == d.name && d.local.Serving() {
		return d.local
	}
	return nil
}

// SendMessage sends s to the broker at addr, or in process to the local one. The in-process send adds no
// timer of its own, as the broker's SEND_MESSAGE handler (send.go, putAsync) adds none: every put is
// answered, stored or refused, with a timeout status where it waits for a flush or a replica
// (FLUSH_DISK_TIMEOUT, FLUSH_SLAVE_TIMEOUT), in Raft mode when its entry commits or the node loses its
// leadership; and the call's context ends the wait when the client's deadline passes (grpc-timeout, which
// RocketMQ 5's clients send with every call) or the client goes away. A context.WithTimeout per send was
// 4.5 % of a local-mode broker's CPU under mqbench's sends (doc.go "Speed").
func (d *brokers) SendMessage(ctx context.Context, addr string, s *client.Send) (*client.SendResult, error) {
	if l := d.localFor(s.BrokerName); l != nil {
		return l.SendMessage(ctx, s)
	}
	return d.c.SendMessage(ctx, addr, s)
}

func (d *brokers) PopMessage(ctx context.Context, addr string, p *client.Pop) (*client.PopResult, error) {
	if l := d.localFor(p.BrokerName); l != nil {
		ctx, cancel := context.WithTimeout(ctx, p.Poll+d.c.Timeout())
		defer cancel()
		return l.PopMessage(ctx, p)
	}
	return d.c.PopMessage(ctx, addr, p)
}

func (d *brokers) AckMessage(ctx context.Context, addr, group, topic, handle string) error {
	info, err := protocol.ParseExtraInfo(handle)
	if err != nil {
		return err
	}
	errs, err := d.BatchAckInfos(ctx, addr, group, topic, []protocol.ExtraInfo{info})
	if err != nil {
		return err
	}
	return errs[0]
}

func (d *brokers) BatchAckInfos(ctx context.Context, addr, group, topic string, handles []protocol.ExtraInfo) ([]error, error) {
	if len(handles) > 0 {
		if l := d.localFor(handles[0].BrokerName); l != nil {
			ctx, cancel := context.WithTimeout(ctx, d.c.Timeout())
			defer cancel()
			return l.BatchAck(ctx, group, topic, handles)
		}
	}
	return d.c.BatchAckInfos(ctx, addr, group, topic, handles)
}

func (d *brokers) ChangeInvisibleTime(ctx context.Context, addr, group, topic, handle string, invisible time.Duration) (string, error) {
	info, err := protocol.ParseExtraInfo(handle)
	if err != nil {
		return "", err
	}
	if l := d.localFor(info.BrokerName); l != nil {
		ctx, cancel := context.WithTimeout(ctx, d.c.Timeout())
		defer cancel()
		return l.ChangeInvisibleTime(ctx, group, topic, info, invisible)
	}
	return d.c.ChangeInvisibleTime(ctx, addr, group, topic, handle, invisible)
}

func (d *brokers) QueryConsumerOffset(ctx context.Context, group string, q client.Queue) (int64, bool, error) {
	if l := d.localFor(q.BrokerName); l != nil {
		return l.QueryConsumerOffset(ctx, group, q.Topic, q.QueueID)
	}
	return d.c.QueryConsumerOffset(ctx, group, q)
}

func (d *brokers) UpdateConsumerOffset(ctx context.Context, group string, q client.Queue, offset int64) error {
	if l := d.localFor(q.BrokerName); l != nil {
		return l.UpdateConsumerOffset(ctx, group, q.Topic, q.QueueID, offset)
	}
	return d.c.UpdateConsumerOffset(ctx, group, q, offset)
}

func (d *brokers) QueueOffset(ctx context.Context, code remoting.RequestCode, q client.Queue, ts int64) (int64, error) {
	if l := d.localFor(q.BrokerName); l != nil {
		return l.QueueOffset(ctx, code, q.Topic, q.QueueID, ts)
	}
	return d.c.QueueOffset(ctx, code, q, ts)
}
