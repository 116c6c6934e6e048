package stats

import "sync/atomic"

// The counters as the broker's metrics endpoint reads them at scrape time. Each reader calls f once per
// series (in no particular order) with the counters as they are then; one given exists first forgets the
// counters of the topics exists says are gone, so that their series end (a topic created again starts from
// zero, which Prometheus reads as a counter reset).

// Histogram is a histogram's counts at one time: Counts[i] counts the values in (Bounds[i-1], Bounds[i]],
// the last the values above every bound (not cumulative); Sum adds them all.
type Histogram struct {
	Bounds []float64
	Counts []int64
	Sum    int64
}

// read is the histogram now, its buckets bounded by bounds (at most 10 of them).
func (h *valueHistogram) read(bounds []float64) Histogram {
	out := Histogram{Bounds: bounds, Counts: make([]int64, len(bounds)+1), Sum: h.sum.Load()}
	for i := range out.Counts {
		out.Counts[i] = h.counts[i].Load()
	}
	return out
}

// In reads the stored messages by topic and message type (a series starts with the first message of its
// type): their count, record bytes and size histogram (rocketmq_messages_in_total, _throughput_in_total,
// rocketmq_message_size). A topic exists denies is forgotten with its put items.
func (s *Stats) In(exists func(topic string) bool, f func(topic string, typ MessageType, msgs, bytes int64, size Histogram)) {
	s.items.topics.Range(func(topic string, p *topicPuts) bool {
		if !exists(topic) {
			s.items.topics.Delete(topic)
			return true
		}
		for typ := range numMessageTypes {
			t := &p.in[typ]
			if t.msgs.Load() == 0 {
				continue
			}
			f(topic, typ, t.msgs.Load(), t.bytes.Load(), t.size.read(messageSizeBounds))
		}
		return true
	})
}

// Out reads the messages handed to consumers by group and topic: their count and record bytes
// (rocketmq_messages_out_total, _throughput_out_total). The counters and pull offsets of a topic exists
// denies are forgotten.
func (s *Stats) Out(exists func(topic string) bool, f func(group, topic string, msgs, bytes int64)) {
	s.out.Range(func(k groupTopic, o *outStats) bool {
		if !exists(k.topic) {
			s.out.Delete(k)
			return true
		}
		f(k.group, k.topic, o.msgs.Load(), o.bytes.Load())
		return true
	})
	s.pulled.Range(func(k groupQueue, _ *atomic.Int64) bool {
		if !exists(k.topic) {
			s.pulled.Delete(k)
		}
		return true
	})
}

// DLQ reads the messages moved to a dead letter queue by group and original topic
// (rocketmq_send_to_dlq_messages_total).
func (s *Stats) DLQ(f func(group, topic string, n int64)) {
	s.dlq.Range(func(k groupTopic, n *atomic.Int64) bool {
		f(k.group, k.topic, n.Load())
		return true
	})
}

// TopicCreates reads the topic creation times in milliseconds by outcome and whether the topic is a
// system one (rocketmq_topic_create_execution_time).
func (s *Stats) TopicCreates(f func(ok, system bool, h Histogram)) {
	s.topicCreate.Range(func(k createKey, h *valueHistogram) bool {
		f(k.ok, k.system, h.read(createTimeBounds))
		return true
	})
}

// GroupCreates reads the subscription group creation times in milliseconds by outcome
// (rocketmq_consumer_group_create_execution_time).
func (s *Stats) GroupCreates(f func(ok bool, h Histogram)) {
	s.groupCreate.Range(func(k createKey, h *valueHistogram) bool {
		f(k.ok, h.read(createTimeBounds))
		return true
	})
}

// RPC reads the answer latencies in milliseconds (rocketmq_rpc_latency).
func (s *Stats) RPC(f func(k RPCKey, h Histogram)) {
	s.rpc.Range(func(k RPCKey, h *valueHistogram) bool {
		f(k, h.read(rpcLatencyBounds))
		return true
	})
}

// Counter names a table of counts by topic.
type Counter int

const (
	HalfMessages  Counter = iota // half messages stored and not yet ended (may go below 0 after a restart)
	Commits                      // transactions committed
	Rollbacks                    // transactions rolled back
	TimerEnqueued                // messages parked in the timer
	TimerDequeued                // messages the timer delivered
)

// Counts reads the counts of c by topic; with exists, a topic it denies is forgotten first.
func (s *Stats) Counts(c Counter, exists func(topic string) bool, f func(topic string, n int64)) {
	table := [...]*topicCounts{HalfMessages: &s.half, Commits: &s.commits, Rollbacks: &s.rollbacks,
		TimerEnqueued: &s.timerIn, TimerDequeued: &s.timerOut}[c]
	table.Range(func(topic string, n *atomic.Int64) bool {
		if exists != nil && !exists(topic) {
			table.Delete(topic)
			return true
		}
		f(topic, n.Load())
		return true
	})
}

// TopicHistogram names a table of histograms by topic.
type TopicHistogram int

const (
	FinishLatency TopicHistogram = iota // seconds from a half message's birth to its commit
	DelayLatency                        // seconds from a timer message's birth to its delivery time
)

// Histograms reads the histograms of h by topic.
func (s *Stats) Histograms(h TopicHistogram, f func(topic string, h Histogram)) {
	table, bounds := &s.finish, finishLatencyBounds
	if h == DelayLatency {
		table, bounds = &s.timerSet, delayLatencyBounds
	}
	table.Range(func(topic string, v *valueHistogram) bool {
		f(topic, v.read(bounds))
		return true
	})
}
