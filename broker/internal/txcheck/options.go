package txcheck

import (
	"context"
	"errors"
	"log/slog"
	"net/netip"
	"time"

	"github.com/rocketraft/rocketraft/message"
	"github.com/rocketraft/rocketraft/store"
)

// Options is what a Checker is built with.
type Options struct {
	Store     store.QueueReader // reads the half and op queues and their records
	Put       PutFunc           // appends as it is (no delay rewriting): a half message put back, one given up
	Offsets   Offsets           // where the walks of the half and op queues resume
	Producers Producers         // the producers to ask
	// EnsureTopic creates topic (TRANS_CHECK_MAX_TIME_TOPIC) with queues queues and perm unless it exists.
	// Safe from any goroutine.
	EnsureTopic func(topic string, queues, perm int32) error
	Clock       interface{ Now() time.Time } // the broker's steady clock (doc.go "Clocks")
	Log         *slog.Logger                 // tagged service=transaction-check here
	StoreHost   netip.AddrPort               // the storeHost of the records sent with a check
	Interval    time.Duration                // transactionCheckInterval
	Timeout     time.Duration                // transactionTimeOut: a half message younger than this is not checked
	CheckMax    int                          // transactionCheckMax
}

// PutFunc stores m as it is and returns once the store's durability policy (and, in the Raft mode, the
// commit) answered, or ctx ended. Safe from any goroutine; m is the callee's once called.
type PutFunc func(ctx context.Context, m *message.Message) (store.PutResult, error)

// Offsets is the consumer-offset table the Checker keeps its places in (group CID_RMQ_SYS_TRANS). Both
// methods are safe from any goroutine.
type Offsets interface {
	// Query is the committed offset, or -1 when the group never committed one for the queue.
	Query(group, topic string, queueID int32) int64
	// Commit stores offset for group on topic/queue (the last commit wins).
	Commit(group, topic string, queueID int32, offset int64)
}

// Producers reaches the producers a check asks. Both methods are safe from any goroutine.
type Producers interface {
	// Connected reports whether a producer of group is connected now.
	Connected(group string) bool
	// Ask sends CHECK_TRANSACTION_STATE about c one way to one producer of c.Group, picked at random, and
	// returns that producer's address (for the log) and the send's error; ErrNoProducer when none of the
	// group is connected. It does not wait for an answer: the producer answers with END_TRANSACTION.
	Ask(c Check) (producer string, err error)
}

// ErrNoProducer is Producers.Ask's answer when no producer of the group is connected.
var ErrNoProducer = errors.New("txcheck: no producer of the group is connected")

// Check is what CHECK_TRANSACTION_STATE asks a producer about: the copy of a half message the Checker put
// back (its answer, END_TRANSACTION, names the copy by its offsets).
type Check struct {
	Group                string // the producer group (PGROUP)
	TranStateTableOffset int64  // the copy's queue offset in the half queue
	CommitLogOffset      int64  // the copy's CommitLog offset
	MsgID                string // UNIQ_KEY
	TransactionID        string // __transactionId__, else UNIQ_KEY
	OffsetMsgID          string // the copy's offset message id
	Topic                string // the real topic
	Record               []byte // the copy as a stored-message record, with its real topic and queue
}
