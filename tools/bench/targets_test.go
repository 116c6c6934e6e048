package bench

import (
	"strings"
	"testing"

	"github.com/rocketraft/rocketraft/client"
	"github.com/rocketraft/rocketraft/protocol"
)

func TestProducerTopics(t *testing.T) {
	c := DefaultProducerConfig()
	c.Topic = "Scale"
	if got := c.Topics(); len(got) != 1 || got[0] != "Scale" {
		t.Errorf("one topic: %v, want [Scale]", got)
	}
	c.TopicCount = 3
	if got := strings.Join(c.Topics(), " "); got != "Scale_0 Scale_1 Scale_2" {
		t.Errorf("three topics: %q", got)
	}
	if err := c.Validate(); err != nil {
		t.Errorf("three topics: %v", err)
	}
	for _, tc := range []struct {
		mutate func(*ProducerConfig)
		want   string
	}{
		{func(c *ProducerConfig) { c.TopicCount = 0 }, "--topics: 0 is not within 1..10000"},
		{func(c *ProducerConfig) { c.TopicCount = 10_001 }, "--topics: 10001 is not within"},
		{func(c *ProducerConfig) { c.TopicCount, c.Mode = 2, ModeOneway }, "--topics: oneway runs"},
		{func(c *ProducerConfig) { c.TopicCount, c.Client = 2, ClientOfficial }, "--topics: only the native client"},
		{func(c *ProducerConfig) { c.TopicCount, c.Topic = 2, strings.Repeat("T", 126) }, "--topics: the topic name"},
	} {
		c := DefaultProducerConfig()
		tc.mutate(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want one naming %q", c, err, tc.want)
		}
	}
}

func TestInterleaveTargets(t *testing.T) {
	q := func(id int32) client.Queue {
		return client.Queue{MessageQueue: protocol.MessageQueue{BrokerName: "b", QueueID: id}, Addr: "B:1"}
	}
	got := interleaveTargets([]string{"A", "B", "C"}, [][]client.Queue{{q(0), q(1)}, {q(0)}, {q(0), q(1), q(2)}})
	var parts []string
	for _, tg := range got {
		parts = append(parts, tg.topic+":"+tg.q.String())
	}
	if s, want := strings.Join(parts, " "), "A:b/0 B:b/0 C:b/0 A:b/1 C:b/1 C:b/2"; s != want {
		t.Errorf("targets %q, want %q", s, want)
	}
	if qs := targetQueues(got, "C"); len(qs) != 3 || qs[2].QueueID != 2 {
		t.Errorf("queues of C: %v", qs)
	}
}
