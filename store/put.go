package store

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/rocketraft/rocketraft/message"
)

// The put path: PutMessage and PutMessages (the caller waits) and their Async forms (a
// callback answers), the batch checks, and the wait for what SYNC_FLUSH and a SYNC_MASTER
// promise; commitLog.putMessages (commitlog.go) writes the records.

// PutMessage stores one message. With SYNC_FLUSH it waits for the group commit (or
// syncFlushTimeout, or ctx) unless the message's WAIT property is "false"; a message written
// but not confirmed durable returns Status PutFlushDiskTimeout and no error. An error means
// nothing was written.
func (s *Store) PutMessage(ctx context.Context, m *message.Message) (PutResult, error) {
	one := [1]*message.Message{m}
	return s.putAndWait(ctx, one[:])
}

// PutMessages stores a batch for one topic and queue: consecutive queue offsets, one lock
// hold, all or nothing. Flush waiting is as for PutMessage (the first message's WAIT).
func (s *Store) PutMessages(ctx context.Context, msgs []*message.Message) (PutResult, error) {
	if err := checkBatch(msgs); err != nil {
		return PutResult{}, err
	}
	return s.putAndWait(ctx, msgs)
}

func (s *Store) putAndWait(ctx context.Context, msgs []*message.Message) (PutResult, error) {
	if err := ctx.Err(); err != nil {
		return PutResult{}, err
	}
	res, err := s.put(msgs)
	if err != nil {
		return res, err
	}
	flush, repl := s.waitsFor(msgs[0])
	if !flush && !repl {
		return res, nil
	}
	ch := make(chan PutResult, 1)
	var flushed *atomic.Bool // set once the flush step is over (SYNC_MASTER only)
	if repl {
		flushed = new(atomic.Bool)
	}
	s.awaitDurable(res, flush, repl, flushed, func(r PutResult, _ error) { ch <- r })
	select {
	case r := <-ch:
		return r, nil
	case <-ctx.Done():
		res.Status = PutFlushDiskTimeout
		if repl && (!flush || flushed.Load()) {
			res.Status = PutFlushSlaveTimeout
		}
		return res, nil
	}
}

// PutMessageAsync stores one message and calls done exactly once: at once for ASYNC_FLUSH
// or on error, from the flusher for SYNC_FLUSH (from the Replicator on a SYNC_MASTER).
// done must not block.
func (s *Store) PutMessageAsync(m *message.Message, done func(PutResult, error)) {
	one := [1]*message.Message{m}
	s.putAsync(one[:], done)
}

// PutMessagesAsync is PutMessages with a callback, as PutMessageAsync.
func (s *Store) PutMessagesAsync(msgs []*message.Message, done func(PutResult, error)) {
	if err := checkBatch(msgs); err != nil {
		done(PutResult{}, err)
		return
	}
	s.putAsync(msgs, done)
}

func (s *Store) putAsync(msgs []*message.Message, done func(PutResult, error)) {
	res, err := s.put(msgs)
	if err != nil {
		done(res, err)
		return
	}
	flush, repl := s.waitsFor(msgs[0])
	if !flush && !repl {
		done(res, nil)
		return
	}
	s.awaitDurable(res, flush, repl, nil, done)
}

// awaitDurable calls done once the put res is flushed (flush) and then acknowledged by a
// slave (repl: the Replicator decides the status); a failed flush skips the slave wait.
// flushed, when not nil, is set once the flush step is over.
func (s *Store) awaitDurable(res PutResult, flush, repl bool, flushed *atomic.Bool, done func(PutResult, error)) {
	next := done
	if repl {
		next = func(r PutResult, err error) {
			if flushed != nil {
				flushed.Store(true)
			}
			if err != nil || r.Status != PutOK {
				done(r, err)
				return
			}
			s.replicator.Wait(r.PhysicalOffset+int64(r.WroteBytes), func(st PutStatus) {
				r.Status = st
				done(r, nil)
			})
		}
	}
	if flush {
		s.group.add(s, res, next)
	} else {
		next(res, nil)
	}
}

func checkBatch(msgs []*message.Message) error {
	if len(msgs) == 0 {
		return fmt.Errorf("%w: empty batch", ErrBatchMismatch)
	}
	for i, m := range msgs {
		if m == nil {
			return fmt.Errorf("%w: message %d is nil", ErrBatchMismatch, i)
		}
		if m.Topic != msgs[0].Topic || m.QueueID != msgs[0].QueueID {
			return fmt.Errorf("%w: message %d is for %s/%d, the batch for %s/%d",
				ErrBatchMismatch, i, m.Topic, m.QueueID, msgs[0].Topic, msgs[0].QueueID)
		}
		if isTransactionSkipped(m.SysFlag) && len(msgs) > 1 {
			return fmt.Errorf("%w: message %d is a prepared or rolled-back transaction message", ErrBatchMismatch, i)
		}
	}
	return nil
}

// waitsFor reports whether a put of m waits for the group commit (SYNC_FLUSH) and for a
// slave (SYNC_MASTER with a Replicator): both unless the message's WAIT property is "false",
// and then the flusher is woken so the record is flushed soon anyway.
func (s *Store) waitsFor(m *message.Message) (flush, repl bool) {
	if s.group == nil && s.replicator == nil {
		return false, false
	}
	if v, ok := message.PropertyValue([]byte(m.Properties), message.PropertyWaitStoreMsgOK); ok && string(v) == "false" {
		if s.group != nil {
			s.group.wakeup()
		}
		return false, false
	}
	return s.group != nil, s.replicator != nil
}

// put writes msgs and wakes the services that follow the CommitLog.
func (s *Store) put(msgs []*message.Message) (PutResult, error) {
	if err := s.checkWritable(); err != nil {
		return PutResult{}, err
	}
	start := time.Now()
	res, err := s.commitLog.putMessages(msgs)
	if err != nil {
		s.stats.putFailures.Add(1)
		if errors.Is(err, errWriteFault) {
			s.markNotWritable(err)
			return PutResult{}, fmt.Errorf("%w: %v", ErrNotWritable, err)
		}
		return PutResult{}, err
	}
	s.stats.recordPut(res.Count, res.WroteBytes, time.Since(start))
	switch {
	case s.pool != nil:
		wake(s.wakeCommit) // the commit wakes dispatch
	case s.group == nil:
		s.reput.wakeup()
	}
	if s.pool == nil && !s.commitLog.staged {
		s.newData.notify() // readable now; otherwise once committed
	}
	// With SYNC_FLUSH the flusher wakes dispatch once per flush (when it has written the
	// staged records, before it waits for the disk): one dispatch run for the whole batch
	// instead of a context switch per put.
	return res, nil
}
