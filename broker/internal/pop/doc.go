// Package pop is RocketMQ 5's pop consumption on a broker's master: the broker, not the client, tracks what
// a consumer group has in hand. Pops, acks, changes of invisible time, the revive service that redelivers
// what was not acked in time, and ordered pops. The broker's handlers (broker/pop.go) check the requests and
// call an Engine; the Engine reaches the store, the consumer offsets and the put path only through the
// interfaces of engine.go (Store, Offsets, PutFunc) and the callbacks of Options, never the broker. It runs
// while the broker is master: Start when it becomes one, Close when it stops being one (the broker's master
// services); each Start begins a term with a new state.
//
// Files: engine.go (the Engine, pops), state.go (what is in flight), cursor.go (where pops read, the pop
// offset), ack.go (acks, batch acks, changes of invisible time), reviver.go (the revive service), revive.go
// (the revive log's records), load.go (reading the revive log when a term begins), order.go (ordered
// pops), metrics.go (the pop series), config.go (the keys).
//
//	pop        reads from where the group's last pop of the queue stopped (the queue's cursor), writes a
//	           check point (CK: queue, start offset, offsets popped, pop time, invisible time) as a message
//	           to a queue of rmq_sys_REVIVE_LOG_<cluster>, records it in memory from the put's result, moves
//	           the cursor and the pop offset past the messages and answers; every message's receipt handle
//	           names that CK. A group's retry topic %RETRY%<group>_<topic> is read too
//	           (popFromRetryProbability first, else when the topic had fewer than asked), its messages sent as
//	           the topic popped with the handle in POP_CK.
//	ack        checks the handle against the CKs in flight (in memory) and writes an ack record to the CK's
//	           revive queue; a handle not in flight (acked, redelivered, replaced) is NO_MESSAGE.
//	           BATCH_ACK_MESSAGE writes one batch ack record per entry (a pop) for the entry's messages in
//	           flight and answers which it skipped (protocol.BatchAckResultBody, ours).
//	change     CHANGE_MESSAGE_INVISIBLETIME writes a new CK for the one message (pop time now), then an
//	           ack of it in the old one: the old handle is retired, the answer carries the new pop time.
//	revive     every reviveInterval: for every CK whose pop time + invisible time passed, copy each message
//	           in flight to the retry topic with reconsumeTimes + 1 (FIRST_POP_TIME kept), or, once it was
//	           delivered retryMaxTimes + 1 times, to %DLQ%<group>; then write one batch ack of them. Each
//	           revive queue's revive offset (ReviveGroup's consumer offset of the queue) follows its oldest
//	           CK in flight.
//	metrics    (metrics.go) the revive series; pop groups' inflight and lag in the consumer progress
//	           series and GET_CONSUME_STATS (consumerOffset at the first unacked message, pullOffset next).
//	ordered    (order.go) no CK: the group's offset stays at the first unacked message and the queue is
//	           blocked for the group while its last pop is neither acked nor past its invisible time.
//
// # State
//
// What is in flight is kept in memory (state.go): every CK not fully acked, by the key an ack names it
// with, with bits for its messages acked, claimed (an ack, change or redelivery of it being written) and
// acked in the log; and where it is in its revive queue, from the put's result. The revive log is read only
// when a term begins (load.go: on start, and on the node that becomes master after a failover), from each
// revive queue's revive offset, once the store has dispatched what its CommitLog held then; a pop or ack
// of the term waits for that read. Reading a record again changes nothing (a CK is kept once, an ack sets
// bits), so the read is idempotent. Nothing waits for a record to be dispatched.
//
// One mutex (state.mu) guards the state; it is never held while the store is read or a record written. A
// message is claimed under it before its record is written, and released after: the revive service leaves
// claimed messages alone and a second ack finds them taken, so an ack and a redelivery of one message never
// both succeed. A queue's pops run one at a time (queueState.pop, RocketMQ's queueLockManager).
//
// # The pop offset
//
// A pop reads from the queue's cursor, in memory. The offset table holds the group's committed pop offset,
// which passes a pop only once the pop and every pop before it on that queue are settled: each of its
// messages acked, or its CK in the revive log (cursor.go). A value in the table the engine did not commit
// (an administrator's offset reset) moves the cursor there.
//
// # What survives what
//
// CKs and acks are messages, flushed by the flush policy and replicated by the role (the slave's CommitLog,
// the Raft log), so after a restart, or on the node that becomes master, the engine reads each revive queue
// again from its revive offset and redelivers exactly the messages popped and not acked (at least once: a
// crash between a redelivery's put and its ack record delivers twice). Pop offsets and revive offsets are
// consumer offsets (persisted, synced to slaves, proposed through Raft about once a second); a pop offset
// that lags behind the log is lifted past every CK read, so a message in flight is not handed out again.
// A revive offset never passes a CK being written. Ordered pops' blocks are in memory: after a restart or
// failover the queue delivers again from the group's offset, the first message not acked (a message acked
// within the last offset sync before a Raft failover comes again).
package pop
