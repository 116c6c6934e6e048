package namesrv

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/rocketraft/rocketraft/protocol"
)

// routesOf is every topic's route as the tables give it, encoded, for comparing two managers.
func routesOf(m *RouteInfoManager, topics []string) []byte {
	var out bytes.Buffer
	for _, topic := range append(topics, "Unknown") {
		r, ok := m.PickupTopicRouteData(topic)
		b, _ := json.Marshal(r)
		fmt.Fprintf(&out, "%s %v %s\n", topic, ok, b)
	}
	return out.Bytes()
}

// TestPreparedTablesApplyAsWhole: the same random churn of every kind (routecache_test.go's churner) on two
// managers, one applying every table whole, the other applying the prepared differences (every table
// prepared, however small): after every step both route every topic alike, and the second's caches and
// indexes hold (churner.check).
func TestPreparedTablesApplyAsWhole(t *testing.T) {
	defer func(n int) { minDiffTopics = n }(minDiffTopics)
	for seed := range uint64(4) {
		whole, prepared := newChurner(seed), newChurner(seed)
		for i := range 800 {
			minDiffTopics = 1 << 30
			did := whole.step()
			minDiffTopics = 0
			if got := prepared.step(); got != did {
				t.Fatalf("seed %d step %d: the churners diverged: %s and %s", seed, i, did, got)
			}
			if a, b := routesOf(whole.m, whole.topics), routesOf(prepared.m, prepared.topics); !bytes.Equal(a, b) {
				t.Fatalf("seed %d step %d, after %s: routes applied whole\n%s\nprepared\n%s", seed, i, did, a, b)
			}
			if i%50 == 0 {
				prepared.check(t, did)
			}
		}
	}
}

// TestPreparedTableGoesStale: a difference prepared before another change of the broker name's queue data
// (a permission wiped, a topic deleted, another registration) is not used: the table is applied whole, as
// it is without a preparation.
func TestPreparedTableGoesStale(t *testing.T) {
	table := func(perm int32, extra string) map[string]*protocol.TopicConfig {
		tt := map[string]*protocol.TopicConfig{}
		for i := range 40 {
			n := fmt.Sprintf("T%d", i)
			tt[n] = &protocol.TopicConfig{TopicName: n, ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6}
		}
		tt["T0"].Perm = perm
		if extra != "" {
			tt[extra] = &protocol.TopicConfig{TopicName: extra, ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6}
		}
		return tt
	}
	req := func(counter int64, tt map[string]*protocol.TopicConfig) RegisterBrokerRequest {
		return RegisterBrokerRequest{ClusterName: "c", BrokerAddr: "10.0.0.1:10911", BrokerName: "b", BrokerID: 0, ConnID: 1,
			Body: protocol.RegisterBrokerBody{TopicConfigSerializeWrapper: protocol.TopicConfigSerializeWrapper{
				TopicConfigTable: tt, DataVersion: protocol.DataVersion{Counter: counter}}}}
	}
	var topics []string
	for i := range 40 {
		topics = append(topics, fmt.Sprintf("T%d", i))
	}
	topics = append(topics, "New")
	now := time.Unix(1700000000, 0)
	for _, between := range []struct {
		name string
		do   func(m *RouteInfoManager)
	}{
		{"write permission wiped", func(m *RouteInfoManager) { m.SetWritePerm("b", false) }},
		{"topic deleted", func(m *RouteInfoManager) { m.DeleteTopic("T5", "") }},
		{"another registration", func(m *RouteInfoManager) { m.RegisterBroker(req(2, table(4, "")), now) }},
	} {
		ref, m := newManager(time.Minute, false), newManager(time.Minute, false)
		for _, x := range []*RouteInfoManager{ref, m} {
			x.RegisterBroker(req(1, table(6, "")), now)
		}
		next := req(3, table(2, "New"))
		diff := m.prepareTable(&next)
		if diff == nil || len(diff.changed) != 2 {
			t.Fatalf("%s: prepared %+v, want T0 and New", between.name, diff)
		}
		between.do(m)
		var lg regLog
		m.registerBrokerWith(&next, diff, now, &lg)
		between.do(ref)
		ref.RegisterBroker(req(3, table(2, "New")), now)
		if a, b := routesOf(ref, topics), routesOf(m, topics); !bytes.Equal(a, b) {
			t.Fatalf("%s between the preparation and the registration: routes\n%s\nwant\n%s", between.name, b, a)
		}
	}
}

// BenchmarkWideTopicCreate: 100 broker names whose masters each hold the same 1,000 topics (a wide fleet);
// an op is one topic created on all of them: 100 master registrations of 1,001 topics at a new data
// version. Reports the write lock's mean hold per registration (lock-us/reg), with every table applied
// whole and with the prepared differences (tablediff.go).
func BenchmarkWideTopicCreate(b *testing.B) {
	defer func(n int) { minDiffTopics = n }(minDiffTopics)
	for _, mode := range []struct {
		name    string
		minDiff int
	}{{"whole", 1 << 30}, {"prepared", 32}} {
		b.Run(mode.name, func(b *testing.B) {
			minDiffTopics = mode.minDiff
			m := newManager(time.Minute, false)
			topics := map[string]*protocol.TopicConfig{}
			for i := range 1000 {
				n := fmt.Sprintf("Wide%d", i)
				topics[n] = &protocol.TopicConfig{TopicName: n, ReadQueueNums: 8, WriteQueueNums: 8, Perm: 6}
			}
			register := func(v int64) {
				for g := range 100 {
					m.RegisterBroker(RegisterBrokerRequest{ClusterName: "c", BrokerName: fmt.Sprintf("g%d", g),
						BrokerAddr: fmt.Sprintf("10.1.%d.1:10911", g), ConnID: uint64(g + 1),
						Body: protocol.RegisterBrokerBody{TopicConfigSerializeWrapper: protocol.TopicConfigSerializeWrapper{
							TopicConfigTable: topics, DataVersion: protocol.DataVersion{Counter: v}}}}, time.Now())
				}
			}
			register(1)
			before := m.LockHold()
			b.ResetTimer()
			for i := range b.N {
				n := fmt.Sprintf("New%d", i)
				topics[n] = &protocol.TopicConfig{TopicName: n, ReadQueueNums: 8, WriteQueueNums: 8, Perm: 6}
				register(int64(i + 2))
			}
			b.StopTimer()
			after := m.LockHold()
			var holds int64
			for i := range after.Counts {
				holds += after.Counts[i] - before.Counts[i]
			}
			b.ReportMetric(float64(after.Sum-before.Sum)/float64(time.Microsecond)/float64(holds), "lock-us/reg")
		})
	}
}

// TestSplitChunksArePrepared: the chunks of a split table at a new data version are all applied whole (rounds.go),
// so each is prepared, not only the first.
func TestSplitChunksArePrepared(t *testing.T) {
	chunk := func(from int, counter int64) RegisterBrokerRequest {
		tt := map[string]*protocol.TopicConfig{}
		for i := from; i < from+40; i++ {
			n := fmt.Sprintf("T%d", i)
			tt[n] = &protocol.TopicConfig{TopicName: n, ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6}
		}
		return RegisterBrokerRequest{ClusterName: "c", BrokerAddr: "10.0.0.1:10911", BrokerName: "b", BrokerID: 0, ConnID: 1,
			Body: protocol.RegisterBrokerBody{TopicConfigSerializeWrapper: protocol.TopicConfigSerializeWrapper{
				TopicConfigTable: tt, DataVersion: protocol.DataVersion{Counter: counter}}}}
	}
	m := newManager(time.Minute, false)
	now := time.Unix(1700000000, 0)
	for _, counter := range []int64{1, 2} {
		for _, from := range []int{0, 40} {
			req := chunk(from, counter)
			diff := m.prepareTable(&req)
			if diff == nil {
				t.Fatalf("version %d, chunk from T%d: not prepared", counter, from)
			}
			var lg regLog
			m.registerBrokerWith(&req, diff, now, &lg)
		}
	}
	if n := m.RoutedBrokerTopics()["b"]; n != 80 {
		t.Fatalf("b routes %d topics, want 80", n)
	}
}
