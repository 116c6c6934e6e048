// Package txcheck is the broker's transaction check-back (RocketMQ's TransactionalMessageCheckService): it
// asks producers about the transactions they left open. A transactional send parks its half message in
// RMQ_SYS_TRANS_HALF_TOPIC queue 0 (the broker's send path, broker/transaction.go); END_TRANSACTION commits
// it (the real message, then an op record) or rolls it back (an op record only): an op record in
// RMQ_SYS_TRANS_OP_HALF_TOPIC whose body is the half message's queue offset says it is done.
//
// Every transactionCheckInterval the Checker walks the half queue from where it stopped:
//
//	done       a half message with an op record is skipped
//	young      one younger than transactionTimeOut (or its CHECK_IMMUNITY_TIME_IN_SECONDS) stops the walk:
//	           the ones after it are younger still
//	given up   one checked transactionCheckMax times is kept aside in TRANS_CHECK_MAX_TIME_TOPIC (never
//	           delivered)
//	checked    any other is put back at the end of the half queue with TRANSACTION_CHECK_TIMES raised (only
//	           when a producer of its group is connected: a check counts only when someone can be asked),
//	           and one producer of its group, picked at random, is asked CHECK_TRANSACTION_STATE about the
//	           copy; its answer (END_TRANSACTION) names the copy
//
// Where the walks resume is kept as consumer offsets of the group CID_RMQ_SYS_TRANS on the half and the op
// queue (so they are persisted, synced to slaves and proposed through Raft as any offset); the op queue's
// moves past the records of the half messages the walk passed. After a crash the walks done since the
// offsets were last persisted are done again: a producer may be asked about a transaction twice.
//
// The Checker is a master service: the broker starts it when it becomes master and closes it when it stops
// being one. It reaches the store, the put path, the offsets, the topics and the producers only through
// what Options gives it (store.QueueReader, PutFunc, Offsets, EnsureTopic, Producers), never the broker or
// the network: the broker's Producers builds the CHECK_TRANSACTION_STATE request from a Check.
//
// Clocks: a half message is checked once the broker's steady clock (wall time as read at the broker's start
// plus the monotonic time since) is transactionTimeOut past its born timestamp, the producer's wall time: a
// step of this node's clock neither asks every producer at once nor stops the checks.
package txcheck
