package broker_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/rocketraft/rocketraft/app/cluster"
	"github.com/rocketraft/rocketraft/broker"
	"github.com/rocketraft/rocketraft/remoting"
)

// routeOf asks a name server for topic's route; ok is false when it has none.
func routeOf(t *testing.T, ns *wire, topic string) (sysFlags []int, ok bool) {
	t.Helper()
	resp := ns.call(remoting.GetRouteInfoByTopic, map[string]string{"topic": topic}, nil)
	if resp.Code != int32(remoting.Success) {
		return nil, false
	}
	var route struct {
		QueueDatas []struct {
			TopicSysFlag int `json:"topicSysFlag"`
		} `json:"queueDatas"`
	}
	if err := json.Unmarshal(resp.Body, &route); err != nil {
		t.Fatalf("route of %s: %v", topic, err)
	}
	for _, qd := range route.QueueDatas {
		sysFlags = append(sysFlags, qd.TopicSysFlag)
	}
	return sysFlags, len(route.QueueDatas) > 0
}

// TestTopicRoutedWhenCreateAnswers: UPDATE_AND_CREATE_TOPIC answers once every name server routes the topic
// (RocketMQ registers before it answers), the registrations after each creation carry only the changed
// topic yet the name servers keep every earlier one, and a topic with a topicSysFlag keeps it in its route
// (the compressed body cannot carry it, so that registration goes as JSON).
func TestTopicRoutedWhenCreateAnswers(t *testing.T) {
	c := cluster.Start(t, cluster.Options{NameServers: 2, Configure: func(_ int, cfg *broker.Config) {
		cfg.RegisterNameServerPeriod = 3_600_000 // no periodic full registration during the test
	}})
	admin := newWire(t, c.Broker(0).Addr())
	nss := []*wire{newWire(t, c.NamesrvAddrs()[0]), newWire(t, c.NamesrvAddrs()[1])}
	const n = 40
	for i := range n {
		topic := fmt.Sprintf("Reg_%d", i)
		ext := map[string]string{"topic": topic, "readQueueNums": "8", "writeQueueNums": "8", "perm": "6"}
		if i == n-1 {
			ext["topicSysFlag"] = "1"
		}
		expectCode(t, "create "+topic, admin.call(remoting.UpdateAndCreateTopic, ext, nil), remoting.Success)
		for j, ns := range nss {
			if _, ok := routeOf(t, ns, topic); !ok {
				t.Fatalf("name server %d has no route for %s when its creation answered", j, topic)
			}
		}
	}
	for i := range n {
		topic := fmt.Sprintf("Reg_%d", i)
		for j, ns := range nss {
			flags, ok := routeOf(t, ns, topic)
			if !ok {
				t.Fatalf("name server %d lost the route of %s after later creations", j, topic)
			}
			want := 0
			if i == n-1 {
				want = 1
			}
			if flags[0] != want {
				t.Fatalf("name server %d routes %s with topicSysFlag %d, want %d", j, topic, flags[0], want)
			}
		}
	}
	for j, ns := range nss {
		if _, ok := routeOf(t, ns, "TBW102"); !ok {
			t.Fatalf("name server %d lost TBW102 (registered whole at start)", j)
		}
	}
}
