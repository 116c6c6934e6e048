package protocol

import "testing"

func TestSystemTopicNames(t *testing.T) {
	for topic, want := range map[string]bool{
		TopicAutoCreate: true, TopicTimer: true, TopicTransCheckMax: true, TopicBenchmark: true,
		"rmq_sys_REVIVE_LOG_DefaultCluster": true, "RMQ_SYS_anything": true,
		"TopicTest": false, RetryGroupTopicPrefix + "g": false, "rmq_sysx": false,
	} {
		if got := SystemTopics[topic] || HasSystemTopicPrefix(topic); got != want {
			t.Errorf("%s: system %v, want %v", topic, got, want)
		}
	}
	if !HasSystemTopicPrefix(ReviveTopicPrefix + "c") {
		t.Errorf("the revive topic %s has no system prefix", ReviveTopicPrefix+"c")
	}
}
