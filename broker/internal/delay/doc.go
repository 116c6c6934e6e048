// Package delay delivers the messages the broker parked until a later time: delay-level messages (the
// DELAY property, RocketMQ's ScheduleMessageService: Schedule, schedule.go) and timed messages (a delivery
// time in TIMER_DELIVER_MS, TIMER_DELAY_SEC, TIMER_DELAY_MS or __STARTDELIVERTIME, RocketMQ 5's timer:
// Timer, timer.go). The broker's put path (broker/put.go) parks them: a delay-level message in
// SCHEDULE_TOPIC_XXXX, queue level-1, a timed one in the timer topic rmq_sys_wheel_timer, each with its real
// topic and queue in REAL_TOPIC / REAL_QID; TagsCode (delay.go), the store's tag-code hook, makes each parked
// unit's ConsumeQueue tag code its delivery time. When a message is due the engine stores it again, in its
// real topic and queue, through the put function it was given (message.RestoreReal rebuilds it).
//
// Both are master services: the broker starts them when it becomes master (at start on a classic master, on
// leadership in the Raft mode) and closes them when it stops being one; a closed one may be started again.
// They reach the store, the put path and the clock only through the interfaces of delay.go (Store, PutFunc,
// Clock), never the broker; the broker's arrival listener tells them of new parked units (Arrived), and its
// replication reads and sets their progress (Schedule's offsets, Timer's checkpoint) through their methods.
//
//	Schedule  one loop per delay level reads its queue in order; the head message is due its level's delay
//	          after it arrived (below), and is then stored again and the level's offset moves past it. The
//	          offsets are delayOffset.json (protocol.DelayOffsetWrapper), persisted every persistEvery
//	          (flushDelayOffsetInterval) and at Close.
//	Timer     loads the timer queue into a min-heap ordered by delivery time and sleeps on one timer until
//	          the earliest is due: no timer per message. Everything due at one millisecond is delivered
//	          together, so a recall record (RECALL_MESSAGE's, TIMER_DEL_UNIQKEY set, stored due at its
//	          message's time) and its message meet and are both dropped. Its progress, the lowest queue offset
//	          not delivered and what was delivered above it, is timerCheckpoint.json
//	          (protocol.TimerCheckpoint), persisted every persistEvery and at Close.
//
// # What survives what
//
// An offset or the checkpoint moves only after the put of the due message answered, so a restart (or the
// next master) delivers again at most what was delivered since the last persist or, in the Raft mode, the
// last offsets entry: at least once, nothing lost. A record whose CommitLog file is gone (expired, or
// cleaned under disk pressure) is skipped with a warning; one not readable yet (Raft mode: its unit was
// dispatched before the state machine raised the read limit over it) is read again later, never skipped.
// A put that fails is retried after retryBackoff, behind what is due before then.
//
// # Clocks
//
// The engine reads the broker's steady clock (Clock): wall time as read once at the broker's start plus
// the monotonic time since. A delay-level message seen arriving (Schedule.Arrived) is due its level's delay
// after the arrival on the monotonic clock (Clock.Elapsed), whatever the wall clock did. One not seen
// arriving (stored before a restart or a leadership change, or beyond maxArrivals waiting in one level) is
// due by its tag code, the store's wall-clock store timestamp plus the delay, against the steady clock,
// bounded to [now, now + delay] when it reaches the head of its level (a store timestamp after a step back
// would otherwise hold the level for the step). A timed message is due once the steady clock's Now reaches
// its delivery time: a step of the wall clock delivers nothing early and stalls nothing.
package delay
