package e2e

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"

	"github.com/rocketraft/rocketraft/app/cluster"
	"github.com/rocketraft/rocketraft/broker"
	"github.com/rocketraft/rocketraft/internal/metrics"
	"github.com/rocketraft/rocketraft/namesrv"
)

// scrapeAt reads the /metrics endpoint on port of 127.0.0.1.
func scrapeAt(t *testing.T, port int) metrics.Families {
	t.Helper()
	f, err := metrics.Scrape(context.Background(), net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestMetricsAfterTraffic: the official Go client produces and consumes; the broker's /metrics counts exactly
// the messages sent and consumed, shows the group's lag rising with unconsumed messages and falling to zero as
// the consumer consumes, and the name server's /metrics shows the broker, the topic and the requests.
func TestMetricsAfterTraffic(t *testing.T) {
	var brokerPort, nsPort int
	c := cluster.Start(t, cluster.Options{
		Configure: func(_ int, cfg *broker.Config) {
			cfg.MetricsPort = cluster.FreePort(t)
			brokerPort = cfg.MetricsPort
		},
		ConfigureNamesrv: func(_ int, cfg *namesrv.Config) {
			cfg.MetricsPort = cluster.FreePort(t)
			nsPort = cfg.MetricsPort
		},
	})
	const topic, group, queues = "MetricsTopic", "MetricsGroup", 4
	nsBefore := scrapeAt(t, nsPort)
	createTopic(t, c, topic, queues)
	value := func(f metrics.Families, name string, labels ...string) float64 {
		t.Helper()
		v, ok := f.Value(name, labels...)
		if !ok {
			t.Fatalf("no sample %s%v", name, labels)
		}
		return v
	}
	lag := func() float64 {
		v, _ := scrapeAt(t, brokerPort).Value("rocketmq_consumer_lag_messages", "consumer_group", group, "topic", topic)
		return v
	}

	// Produce: the in counters equal what was sent.
	p := newProducer(t, c)
	sendN(t, p, topic, "first", 20)
	f := scrapeAt(t, brokerPort)
	if v := value(f, "rocketmq_messages_in_total", "topic", topic); v != 20 {
		t.Fatalf("rocketmq_messages_in_total{topic=%s} = %v after 20 sends", topic, v)
	}
	bytes20 := value(f, "rocketmq_throughput_in_total", "topic", topic)
	if bytes20 < 20*float64(len("first-0")) {
		t.Fatalf("rocketmq_throughput_in_total = %v for 20 messages", bytes20)
	}
	if v := value(f, "rocketmq_storage_put_latency_seconds"); v < 20 {
		t.Fatalf("the put latency histogram counts %v puts, want at least 20", v)
	}
	if v := value(f, "rocketmq_storage_disk_used_ratio"); v <= 0 || v > 1 {
		t.Fatalf("rocketmq_storage_disk_used_ratio = %v", v)
	}

	// Consume them all: out equals in, the lag is 0.
	first := newReceived()
	pc := newPushConsumer(t, c, group, consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset))
	if err := pc.Subscribe(topic, consumer.MessageSelector{}, first.handler()); err != nil {
		t.Fatal(err)
	}
	if err := pc.Start(); err != nil {
		t.Fatal(err)
	}
	first.waitDistinct(t, 20, 30*time.Second)
	seen := ""
	cluster.Eventually(t, 30*time.Second, func() bool {
		f := scrapeAt(t, brokerPort)
		v, ok := f.Value("rocketmq_consumer_lag_messages", "consumer_group", group, "topic", topic)
		n := f.Count("rocketmq_consumer_queue_lag_messages", "consumer_group", group, "topic", topic)
		if now := fmt.Sprintf("lag %v (%v) on %d queues", v, ok, n); now != seen {
			t.Log(now)
			seen = now
		}
		return ok && v == 0 && n == queues
	}, "the group's lag at 0 on all %d queues once it consumed everything", queues)
	if v := value(scrapeAt(t, brokerPort), "rocketmq_messages_out_total", "topic", topic); v != 20 {
		t.Fatalf("rocketmq_messages_out_total = %v after one consumer read 20 messages once", v)
	}
	// The idle consumer long-polls: its pulls are held.
	cluster.Eventually(t, 30*time.Second, func() bool {
		v, _ := scrapeAt(t, brokerPort).Value("rocketmq_pull_requests_held")
		return v >= 1
	}, "held pulls of the idle consumer")
	if err := pc.Shutdown(); err != nil {
		t.Fatal(err)
	}
	// Shutdown closes the consumer's connections (it has a client instance of its own, so the producer's
	// connection is another), but the broker learns it only when its reader sees the close: until then its
	// held pulls are still parked, and a message arriving first would wake one and be counted as handed out
	// (rocketmq_messages_out_total 51 against 50 in, seen once). The Go client sends no UNREGISTER_CLIENT: the
	// closed connection is all the broker gets. Wait for the broker to have dropped them.
	cluster.Eventually(t, 30*time.Second, func() bool {
		v, ok := scrapeAt(t, brokerPort).Value("rocketmq_pull_requests_held")
		return ok && v == 0
	}, "the stopped consumer's held pulls dropped with its connection")

	// Produce while nobody consumes: the lag is exactly what was sent since.
	sendN(t, p, topic, "second", 30)
	f = scrapeAt(t, brokerPort)
	if v := value(f, "rocketmq_messages_in_total", "topic", topic); v != 50 {
		t.Fatalf("rocketmq_messages_in_total = %v after 50 sends", v)
	}
	if v := value(f, "rocketmq_throughput_in_total", "topic", topic); v <= bytes20 {
		t.Fatalf("rocketmq_throughput_in_total did not move: %v", v)
	}
	// Dispatch to the ConsumeQueues follows the acknowledgement by a moment: the lag reaches 30 and stays.
	cluster.Eventually(t, 10*time.Second, func() bool {
		v, _ := scrapeAt(t, brokerPort).Value("rocketmq_consumer_lag_messages", "consumer_group", group, "topic", topic)
		return v == 30
	}, "lag 30 with 30 messages unconsumed")
	if v := scrapeAt(t, brokerPort).Sum("rocketmq_consumer_queue_lag_messages", "consumer_group", group, "topic", topic); v != 30 {
		t.Fatalf("per-queue lags add up to %v, want 30", v)
	}

	// A consumer of the group comes back: the lag falls to 0, and out equals in (the first consumer's held
	// pulls went with its connection).
	second := newReceived()
	startConsumer(t, c, group, topic, consumer.MessageSelector{}, second)
	second.waitDistinct(t, 30, 30*time.Second)
	last := lag()
	cluster.Eventually(t, 30*time.Second, func() bool {
		now := lag()
		if now > last {
			t.Fatalf("the lag rose from %v to %v while the consumer consumed", last, now)
		}
		last = now
		return now == 0
	}, "the lag falling to 0")
	f = scrapeAt(t, brokerPort)
	if in, out := value(f, "rocketmq_messages_in_total", "topic", topic), value(f, "rocketmq_messages_out_total", "topic", topic); out != in {
		t.Fatalf("rocketmq_messages_out_total = %v, rocketmq_messages_in_total = %v: everything was consumed once", out, in)
	}
	if value(f, "rocketmq_throughput_out_total", "topic", topic) < value(f, "rocketmq_throughput_in_total", "topic", topic) {
		t.Fatal("fewer bytes out than in although everything was consumed")
	}
	cluster.Eventually(t, 10*time.Second, func() bool {
		v, _ := scrapeAt(t, brokerPort).Value("rocketmq_storage_flush_latency_seconds")
		return v > 0
	}, "a CommitLog flush in the flush latency histogram")

	// The name server: the broker, the new topics, requests by code.
	nsAfter := scrapeAt(t, nsPort)
	if v := value(nsAfter, "rocketmq_namesrv_brokers", "cluster", "DefaultCluster", "role", "master"); v != 1 {
		t.Fatalf("rocketmq_namesrv_brokers{role=master} = %v", v)
	}
	// Two topics more: MetricsTopic and the group's retry topic, %RETRY%MetricsGroup.
	topicsBefore := value(nsBefore, "rocketmq_namesrv_topics")
	cluster.Eventually(t, 10*time.Second, func() bool {
		v, _ := scrapeAt(t, nsPort).Value("rocketmq_namesrv_topics")
		return v == topicsBefore+2
	}, "rocketmq_namesrv_topics at %v + 2", topicsBefore)
	for _, req := range []string{"REGISTER_BROKER", "GET_ROUTEINFO_BY_TOPIC"} {
		before, _ := nsBefore.Value("rocketmq_namesrv_requests_total", "request", req)
		if after := value(nsAfter, "rocketmq_namesrv_requests_total", "request", req); after <= before {
			t.Errorf("rocketmq_namesrv_requests_total{request=%s} did not move: %v -> %v", req, before, after)
		}
	}
}

// TestMetricsHASlaveLag: a master shows its slave's connection and a lag that is 0 once the slave holds
// everything sent; the slave shows its HA client connected; the stopped slave's series go away.
func TestMetricsHASlaveLag(t *testing.T) {
	ports := map[int]int{}
	c := cluster.Start(t, cluster.Options{Slaves: 1, Configure: func(i int, cfg *broker.Config) {
		cfg.MetricsPort = cluster.FreePort(t)
		ports[i] = cfg.MetricsPort
		cfg.Replication.HASendHeartbeatInterval = 200
	}})
	const topic = "MetricsHA"
	createTopic(t, c, topic, 2)
	sendN(t, newProducer(t, c), topic, "ha", 20)
	master := c.Broker(0).Store()
	cluster.Eventually(t, 20*time.Second, func() bool {
		f := scrapeAt(t, ports[0])
		conns, _ := f.Value("rocketmq_ha_slave_connections")
		lag, ok := f.Value("rocketmq_ha_slave_lag_bytes")
		return conns == 1 && ok && lag == 0 && c.Broker(1).Store().MaxPhyOffset() == master.MaxPhyOffset()
	}, "one slave with lag 0 once it holds the master's CommitLog")
	if v, ok := scrapeAt(t, ports[1]).Value("rocketmq_ha_master_connected"); !ok || v != 1 {
		t.Fatalf("the slave's rocketmq_ha_master_connected = %v, %v", v, ok)
	}
	c.StopBroker(1)
	cluster.Eventually(t, 20*time.Second, func() bool {
		f := scrapeAt(t, ports[0])
		conns, _ := f.Value("rocketmq_ha_slave_connections")
		return conns == 0 && f.Count("rocketmq_ha_slave_lag_bytes") == 0
	}, "no slave series once the slave stopped")
}
