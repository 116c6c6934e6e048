package namesrv

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/admin"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/rlog"
)

// The official Go client reads our routes and topic lists and deletes topics through its admin API.
func TestOfficialGoClientAdmin(t *testing.T) {
	rlog.SetLogLevel("error")
	f := newFixture(t, nil)
	master := brokerA
	slave := broker{cluster: master.cluster, name: master.name, addr: "10.0.0.6:10911", id: 1}
	f.register(f.cl, master)
	f.register(f.cl, slave)
	f.register(f.cl, broker{cluster: "c2", name: "broker-b", addr: "10.0.0.7:10911", topics: topicsOf("TopicTest")})

	adm, err := admin.NewAdmin(admin.WithResolver(primitive.NewPassthroughResolver([]string{f.addr})))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	queues, err := adm.FetchPublishMessageQueues(ctx, "TopicTest")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, q := range queues {
		got = append(got, q.BrokerName)
	}
	if len(queues) != 8 || slices.Index(got, "broker-a") < 0 || slices.Index(got, "broker-b") < 0 {
		t.Fatalf("publish queues %v", got)
	}
	clusters, err := adm.FetchClusterList("TopicTest")
	if err != nil || !slices.Contains(clusters, "c2") {
		t.Fatalf("cluster list %v %v", clusters, err)
	}
	list, err := adm.FetchAllTopicList(ctx)
	if err != nil || !slices.Equal(list.TopicList, []string{"TBW102", "TopicTest"}) {
		t.Fatalf("topic list %+v %v", list, err)
	}
	// DeleteTopic asks the broker first (here the name server, which does not support it: the client ignores
	// the code), then every name server.
	err = adm.DeleteTopic(ctx, admin.WithTopicDelete("TopicTest"), admin.WithBrokerAddrDelete(f.addr),
		admin.WithNameSrvAddr([]string{f.addr}))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, ok := f.route("TopicTest"); ok {
		t.Fatal("route after the admin deleted the topic")
	}
}
