// Package pop is RocketMQ 5's pop consumption on a broker's master: the broker, not the client, tracks what
// a consumer group has in hand. Pops, acks, changes of invisible time, the revive service that redelivers
// what was not acked in time, and ordered pops. The broker's handlers (broker/pop.go) check the requests and
// call an Engine; the Engine reaches the store, the consumer offsets and the put path only through the
// interfaces of engine.go (Store, Offsets, PutFunc) and the callbacks of Options, never the broker. It runs
// while the broker is master: Start when it becomes one, Close when it stops being one (the broker's master
// services); each Start begins a term with a new state.
//
// Files: engine.go (the Engine, pops), state.go (what is in flight), cursor.go (where pops read, the pop
// offset), buffer.go (the merge buffer), ack.go (acks, batch acks, changes of invisible time), reviver.go
// (the revive service), revive.go (the revive log's records), load.go (reading the revive log when a term
// begins), order.go (ordered pops), metrics.go (the pop series), config.go (the keys).
//
//	pop        reads from where the group's last pop of the queue stopped (the queue's cursor), keeps a
//	           check point (CK: queue, start offset, offsets popped, pop time, invisible time) in the merge
//	           buffer (below), moves the cursor past the messages and answers; every message's receipt handle
//	           names that CK. Without the buffer (enablePopBufferMerge=false, or it is full) the CK is written
//	           at once as a message to a queue of rmq_sys_REVIVE_LOG_<cluster> and recorded from the put's
//	           result. A group's retry topic %RETRY%<group>_<topic> is read too
//	           (popFromRetryProbability first, else when the topic had fewer than asked), its messages sent as
//	           the topic popped with the handle in POP_CK.
//	ack        checks the handle against the CKs in flight (in memory): a CK in the buffer is acked there,
//	           one with a record gets an ack record in its revive queue; a handle not in flight (acked,
//	           redelivered, replaced) is NO_MESSAGE. BATCH_ACK_MESSAGE acks each entry (a pop) that way, one
//	           record at most, and answers which offsets it skipped (protocol.BatchAckResultBody, ours).
//	change     CHANGE_MESSAGE_INVISIBLETIME writes the message's CK first if it is in the buffer (and the
//	           queue's pops before it), then a new CK for the one message (pop time now), then an ack of it
//	           in the old one: the old handle is retired, the answer carries the new pop time.
//	revive     every reviveInterval: for every CK whose pop time + invisible time passed, copy each message
//	           in flight to the retry topic with reconsumeTimes + 1 (FIRST_POP_TIME kept), or, once it was
//	           delivered retryMaxTimes + 1 times, to %DLQ%<group>; then ack them in the CK (one batch ack
//	           record when it has a record; in memory when it is in the buffer). Write the CKs that stayed
//	           popCkStayBufferTime in the buffer. Each revive queue's revive offset (ReviveGroup's consumer
//	           offset of the queue) follows its oldest CK in flight with a record.
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
// # The merge buffer
//
// RocketMQ 5's PopBufferMergeService keeps CKs and acks in memory and writes to the revive topic only what
// is still unacked after a short stay; ours does the same in its own way (buffer.go). A pop's CK stays in
// memory, without a record, for up to popCkStayBufferTime (10 s): consumers usually ack within it, and then
// the pop costs the revive log nothing (an AckMessage of a receive of 32 costs no record at all). A CK still
// in flight after its stay is written, in pop order with the queue's other buffered CKs, and what was acked
// of it meanwhile in one ack record after it; from then on it is like a CK written at once. A CK whose
// invisible time passes in the buffer has its messages redelivered from memory. The buffer holds at most
// popCkMaxBufferSize CKs; beyond, and for a pop that starts below a CK of its queue with a record (after an
// offset reset back), the queue's buffered CKs are written, then the new one. Close writes the buffer (for
// at most 5 s) so that the next term, here or on the new master, finds its CKs.
//
// # The pop offset
//
// A pop reads from the queue's cursor, in memory. The offset table holds the group's committed pop offset,
// which passes a pop only once the pop and every pop before it on that queue are settled: each of its
// messages acked, or its CK in the revive log (cursor.go). So the committed offset is never past a CK that
// is neither acked nor written. A value in the table the engine did not commit (an administrator's offset
// reset) moves the cursor there.
//
// # What survives what
//
// CKs and acks with records are messages, flushed by the flush policy and replicated by the role (the
// slave's CommitLog, the Raft log); pop offsets and revive offsets are consumer offsets (persisted, synced
// to slaves, proposed through Raft about once a second). When a term begins (a restart, or the node that
// becomes master) the engine reads each revive queue from its revive offset and lifts each group's pop
// offset past every CK read, so that a message in flight is not handed out again from its queue; the
// revive service then redelivers the messages of those CKs that are not acked.
//
// No message popped and not acked is lost by a crash (process, machine, or the master's; a SEND_OK of a
// CK put means what the flush and replication policy promise, as any message's):
//
//   - A message of a CK that has a record comes back from the revive log: the record is durable before
//     the pop offset passes it (the put answered), and the revive offset never passes a CK in flight nor
//     one being written (state.go: reviveState.writing), so the load reads it.
//   - A message of a CK in the buffer comes back from its queue: the committed pop offset never passed
//     it (cursor.go), whatever the table kept (a table persisted earlier is only further back), and the
//     lift of a load does not pass it either. The lift moves a pop offset only to the end of a CK read,
//     and a CK of a queue gets its record only after every earlier pop of the queue that is not acked has
//     its record: records are written in pop order (buffer.go: storeBuffered), a pop that would be
//     written at once writes the queue's buffered CKs first, a pop below a written CK of its queue (an
//     offset reset) is written at once, and a change of invisible time, whose new single-message CK
//     lies inside its pop's range, writes that pop and the ones before it first. A buffered pop before a
//     written one is therefore either written too or fully acked, and lifting past it loses nothing.
//   - A message acked while its CK was in the buffer may come back after a crash (at least once): the ack
//     was in memory only, and the CK is read again from the queue, unless the pop offset had passed it
//     (acked pops at the head of the queue settle at once). An ack of a CK being written is recorded
//     after its CK record; a crash between the two delivers the message once more.
//   - A redelivery's put and its ack record are not atomic: a crash between them delivers twice.
//   - Pop offsets reach a new master by the offset sync (about once a second), so after a failover it may
//     hand out from its queue messages the old master saw acked (at least once). Such a duplicate is a
//     pop of the new term like any other; but if it is not acked and the master after that starts from
//     offsets that already passed it (the first master's), it does not come back: the message was
//     consumed, its acked delivery stands.
//
// Replaying the revive log is idempotent (a CK is kept once, an ack sets bits), so a load that reads
// records the previous term already read, or a crash in the middle of writing the buffer, changes
// nothing. Ordered pops' blocks are in memory: after a restart or failover the queue delivers again from
// the group's offset, the first message not acked (a message acked within the last offset sync before a
// Raft failover comes again).
package pop
