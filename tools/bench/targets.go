package bench

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/rocketraft/rocketraft/client"
)

// target is one queue of one topic a producer sends to.
type target struct {
	topic string
	q     client.Queue
}

// ensureTargets creates the topics that are missing (ensureTopic, one after the other) and lists the write
// queues of all of them, interleaved: queue 0 of every topic, then queue 1 of every topic, and so on, so that
// consecutive sends of a goroutine go to different topics. An error names the topic.
func ensureTargets(ctx context.Context, c *client.Client, topics []string, queues int, log *slog.Logger) ([]target, error) {
	start := time.Now()
	perTopic := make([][]client.Queue, len(topics))
	for i, t := range topics {
		route, err := c.EnsureTopic(ctx, t, queues, log)
		if err != nil {
			return nil, err
		}
		perTopic[i] = client.RouteQueues(route, t, "", true)
		if len(perTopic[i]) == 0 {
			return nil, fmt.Errorf("topic %s has no writable queue on a broker master", t)
		}
	}
	out := interleaveTargets(topics, perTopic)
	if len(topics) > 1 {
		log.Info("topics ready", "topics", len(topics), "queues", len(out), "elapsed", time.Since(start))
	}
	return out, nil
}

// interleaveTargets lists perTopic[i] (the queues of topics[i]) queue 0 of every topic first, then queue 1 of
// every topic that has one, and so on.
func interleaveTargets(topics []string, perTopic [][]client.Queue) []target {
	most := 0
	for _, qs := range perTopic {
		most = max(most, len(qs))
	}
	var out []target
	for j := range most {
		for i, qs := range perTopic {
			if j < len(qs) {
				out = append(out, target{topic: topics[i], q: qs[j]})
			}
		}
	}
	return out
}

// targetQueues is the queues of topic among targets, in their order.
func targetQueues(targets []target, topic string) []client.Queue {
	var qs []client.Queue
	for _, t := range targets {
		if t.topic == topic {
			qs = append(qs, t.q)
		}
	}
	return qs
}
