package broker

import (
	"context"
	"errors"

	"github.com/rocketraft/rocketraft/message"
	"github.com/rocketraft/rocketraft/raftlog"
	"github.com/rocketraft/rocketraft/remoting"
	"github.com/rocketraft/rocketraft/store"
)

// messagePutter is where the broker's puts go: the store in classic mode; in the Raft mode the Raft
// node's proposer (raftlog.Node), which groups concurrent puts into entries and answers each from what
// the state machine assigned (same result shape). Every put of the broker goes through it: sends,
// batches, retry and dead-letter messages, delay and timer deliveries, transactions' half and op
// messages.
type messagePutter interface {
	PutMessage(ctx context.Context, m *message.Message) (store.PutResult, error)
	PutMessages(ctx context.Context, msgs []*message.Message) (store.PutResult, error)
	PutMessageAsync(m *message.Message, done func(store.PutResult, error))
	PutMessagesAsync(msgs []*message.Message, done func(store.PutResult, error))
}

var (
	_ messagePutter = (*store.Store)(nil)
	_ messagePutter = (*raftlog.Node)(nil)
)

// raftPutErrorResponse maps a Raft proposal error to SERVICE_NOT_AVAILABLE, which the official clients
// retry (another queue, preferably another broker, with the route refreshed); nil for other errors.
// ErrLeadershipLost and ErrProposalTimeout leave the entry's fate unknown: a retry may store the message
// twice (at least once, as RocketMQ on DLedger).
func raftPutErrorResponse(err error, topic string) *remoting.Command {
	switch {
	case errors.Is(err, raftlog.ErrNotLeader):
		return errResponse(remoting.ServiceNotAvailable, "message to topic %s not stored: this broker is not the Raft leader of its group (%v); send to the master", topic, err)
	case errors.Is(err, raftlog.ErrLeadershipLost), errors.Is(err, raftlog.ErrProposalTimeout), errors.Is(err, raftlog.ErrShutdown):
		return errResponse(remoting.ServiceNotAvailable, "message to topic %s may not be stored: %v; send again", topic, err)
	}
	return nil
}
