// Package pop is RocketMQ 5's pop consumption on a broker's master: pops, acks, changes of invisible time,
// the revive service that redelivers what was not acked in time, and ordered pops. The broker's handlers
// (broker/pop.go) check the requests and call an Engine; the Engine reaches the store, the consumer offsets
// and the put path only through the interfaces of engine.go (Store, Offsets, PutFunc) and the callbacks of
// Options, never the broker. It runs while the broker is master: Start when it becomes one, Close when it
// stops being one (the broker's master services).
//
// Files: engine.go (the Engine, pops), ack.go (acks, changes of invisible time, the revive loop), revive.go
// (the revive log), order.go (ordered pops), metrics.go (the pop series), config.go (the keys).
//
// RocketMQ 5's pop: the broker, not the client, tracks what a consumer group has in hand. pop.go checks the
// requests; the popService (pop_service.go: pops, pop_ack.go: acks, changes of invisible time and the
// revive loop, pop_revive.go: the revive log, pop_order.go: ordered pops) is a master service built with
// narrow interfaces (popStore, popOffsets, a put function, the clock, callbacks for topics and the
// dead-letter copy), never the broker.
//
//	pop        reads from the group's pop offset (a consumer offset like any other), writes a check point
//	           (CK: queue, start offset, offsets popped, pop time, invisible time) as a message to a queue
//	           of rmq_sys_REVIVE_LOG_<cluster>, waits until it is dispatched, moves the pop offset past the
//	           messages and answers; every message's receipt handle names that CK. A group's retry topic
//	           %RETRY%<group>_<topic> is read too (popFromRetryProbability first, else when the topic had
//	           fewer than asked), its messages sent as the topic popped with the handle in POP_CK.
//	ack        checks the handle against the revive queue's pending CKs (read from the log) and writes an
//	           ack record to the same revive queue; a handle not in flight (acked, redelivered, replaced)
//	           is NO_MESSAGE. BATCH_ACK_MESSAGE writes one batch ack per entry (a pop), skipping such
//	           handles, and answers which it skipped (protocol.BatchAckResultBody, ours).
//	change     CHANGE_MESSAGE_INVISIBLETIME writes a new CK for the one message (pop time now), then an
//	           ack of the old one: the old handle is retired, the answer carries the new pop time.
//	revive     every reviveInterval, per revive queue: read new records, and for every CK whose pop time +
//	           invisible time passed, copy each unacked message to the retry topic with reconsumeTimes + 1
//	           (FIRST_POP_TIME kept), or, once it was delivered retryMaxTimes + 1 times, to %DLQ%<group>;
//	           then write a batch ack for them. The revive offset (ReviveGroup's consumer offset of the
//	           revive queue) follows the oldest pending CK.
//	metrics    (metrics.go) the revive series; pop groups' inflight and lag in the consumer progress
//	           series and GET_CONSUME_STATS (consumerOffset at the first unacked message, pullOffset next).
//	ordered    (order.go) no CK: the group's offset stays at the first unacked message and the queue is
//	           blocked for the group while its last pop is neither acked nor past its invisible time.
//
// One mutex per revive queue is held while its records are read, while due CKs are redelivered, and while
// an ack or change is checked and its messages claimed; the claimed messages' records are written without
// it (acks of one revive queue share the store's group commit) and the revive loop leaves them alone, so an
// ack and a redelivery of one message never both succeed.
//
// What survives what: CKs and acks are messages, flushed by the flush policy, replicated by the role (the slave's CommitLog, the Raft log), so after a restart, or on the node that becomes master, the
// service reads each revive queue again from its revive offset and redelivers exactly the messages popped
// and not acked (at least once: a crash between a redelivery's put and its ack record delivers twice).
// Pop offsets and revive offsets are consumer offsets (persisted, synced to slaves, proposed through Raft
// about once a second); a pop offset that lags behind the log is lifted past every CK read. Ordered pops'
// blocks are in memory: after a restart or failover the queue delivers again from the group's offset, the
// first message not acked (a message acked within the last offset sync before a Raft failover comes again).
package pop
