package proxy_test

import (
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/rocketraft/rocketraft/app/cluster"
	"github.com/rocketraft/rocketraft/proxy"
	"github.com/rocketraft/rocketraft/proxy/v2pb"
)

func durationOf(d time.Duration) *durationpb.Duration { return durationpb.New(d) }

// TestQueryRouteClusterMode: two broker groups behind one proxy; every queue of both, with its permission and
// the accepted message types, at the proxy's advertised endpoint.
func TestQueryRouteClusterMode(t *testing.T) {
	e := start(t, envOptions{cluster: cluster.Options{Brokers: 2}, proxy: func(o *proxy.Options) { o.Advertise = "proxy.example:8081" }})
	e.topic(t, "TR", 2)
	r, err := e.rpc.QueryRoute(e.ctx(t), &v2pb.QueryRouteRequest{Topic: res("TR")})
	if err != nil {
		t.Fatal(err)
	}
	if r.Status.Code != v2pb.Code_OK || len(r.MessageQueues) != 4 {
		t.Fatalf("route: %v", r)
	}
	want := []struct {
		broker string
		id     int32
	}{{"broker-a", 0}, {"broker-a", 1}, {"broker-b", 0}, {"broker-b", 1}}
	for i, mq := range r.MessageQueues {
		if mq.Broker.Name != want[i].broker || mq.Id != want[i].id || mq.Permission != v2pb.Permission_READ_WRITE {
			t.Errorf("queue %d: %v", i, mq)
		}
		ep := mq.Broker.Endpoints.GetAddresses()
		if len(ep) != 1 || ep[0].Host != "proxy.example" || ep[0].Port != 8081 || mq.Broker.Endpoints.Scheme != v2pb.AddressScheme_DOMAIN_NAME {
			t.Errorf("queue %d endpoints: %v", i, mq.Broker.Endpoints)
		}
		if len(mq.AcceptMessageTypes) != 4 {
			t.Errorf("queue %d accepts %v", i, mq.AcceptMessageTypes)
		}
	}
	r, err = e.rpc.QueryRoute(e.ctx(t), &v2pb.QueryRouteRequest{Topic: res("NO_SUCH_TOPIC")})
	if err != nil || r.Status.Code != v2pb.Code_TOPIC_NOT_FOUND {
		t.Fatalf("unknown topic: %v %v", r, err)
	}
	r, err = e.rpc.QueryRoute(e.ctx(t), &v2pb.QueryRouteRequest{Topic: res("bad topic!")})
	if err != nil || r.Status.Code != v2pb.Code_ILLEGAL_TOPIC {
		t.Fatalf("bad topic: %v %v", r, err)
	}

	a, err := e.rpc.QueryAssignment(e.ctx(t), &v2pb.QueryAssignmentRequest{Topic: res("TR"), Group: res("G")})
	if err != nil || a.Status.Code != v2pb.Code_OK || len(a.Assignments) != 2 {
		t.Fatalf("assignment: %v %v", a, err)
	}
	for i, b := range []string{"broker-a", "broker-b"} {
		if mq := a.Assignments[i].MessageQueue; mq.Broker.Name != b || mq.Id != -1 {
			t.Errorf("assignment %d: %v", i, mq)
		}
	}
}

// TestQueryRouteLocalMode: in local mode only the local broker group's queues are offered, at the endpoint
// the client dialled.
func TestQueryRouteLocalMode(t *testing.T) {
	e := start(t, envOptions{cluster: cluster.Options{Brokers: 2}, local: "broker-a"})
	e.topic(t, "TL", 3)
	asked := &v2pb.Endpoints{Scheme: v2pb.AddressScheme_IPv4, Addresses: []*v2pb.Address{{Host: "127.0.0.1", Port: 8081}}}
	r, err := e.rpc.QueryRoute(e.ctx(t), &v2pb.QueryRouteRequest{Topic: res("TL"), Endpoints: asked})
	if err != nil || r.Status.Code != v2pb.Code_OK || len(r.MessageQueues) != 3 {
		t.Fatalf("route: %v %v", r, err)
	}
	for _, mq := range r.MessageQueues {
		if mq.Broker.Name != "broker-a" || mq.Broker.Endpoints.Addresses[0].Port != 8081 {
			t.Errorf("queue %v", mq)
		}
	}
}
