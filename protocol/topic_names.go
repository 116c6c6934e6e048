package protocol

import "strings"

// System topic and group names, as RocketMQ spells them (TopicValidator, MixAll, PopAckConstants): the
// broker, the ACL, the pop records and the tools (mqadmin, the console) share these declarations.
const (
	TopicAutoCreate    = "TBW102"                      // the default topic clients create topics from
	TopicSelfTest      = "SELF_TEST_TOPIC"             // the broker's self test
	TopicOffsetMoved   = "OFFSET_MOVED_EVENT"          // offset-moved events
	TopicBenchmark     = "BenchmarkTest"               // the benchmark's default topic
	TopicSchedule      = "SCHEDULE_TOPIC_XXXX"         // delayed messages, a queue per delay level
	TopicTimer         = "rmq_sys_wheel_timer"         // timed messages (RocketMQ 5's timer)
	TopicTrace         = "RMQ_SYS_TRACE_TOPIC"         // message traces
	TopicTransHalf     = "RMQ_SYS_TRANS_HALF_TOPIC"    // transactional half messages
	TopicTransOpHalf   = "RMQ_SYS_TRANS_OP_HALF_TOPIC" // the commits and rollbacks of half messages
	TopicTransCheckMax = "TRANS_CHECK_MAX_TIME_TOPIC"  // half messages given up after transactionCheckMax checks
	// TopicReplySuffix follows a cluster's name in its reply topic (MixAll.REPLY_TOPIC_POSTFIX).
	TopicReplySuffix = "_REPLY_TOPIC"
	// RetryGroupTopicPrefix starts every retry topic (%RETRY%<group> of 4.x, %RETRY%<group>_<topic> of pop).
	// A permission on such a topic is a permission on the group.
	RetryGroupTopicPrefix = "%RETRY%"
	// DLQGroupTopicPrefix starts every dead-letter topic (%DLQ%<group>).
	DLQGroupTopicPrefix = "%DLQ%"
)

// SystemTopics is RocketMQ's set of its own topics (TopicValidator.SYSTEM_TOPIC_SET with the default and
// benchmark topics); the topics with a system prefix (HasSystemTopicPrefix) are system topics as well.
var SystemTopics = map[string]bool{
	TopicAutoCreate: true, TopicSelfTest: true, TopicOffsetMoved: true, TopicBenchmark: true, TopicSchedule: true,
	TopicTimer: true, TopicTrace: true, TopicTransHalf: true, TopicTransOpHalf: true, TopicTransCheckMax: true,
}

// HasSystemTopicPrefix reports whether topic starts with rmq_sys_ or RMQ_SYS_, the prefixes of RocketMQ's
// system topics (TopicValidator.isSystemTopic).
func HasSystemTopicPrefix(topic string) bool {
	return strings.HasPrefix(topic, "rmq_sys_") || strings.HasPrefix(topic, "RMQ_SYS_")
}
