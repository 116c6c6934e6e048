package proxy

import (
	"testing"
	"time"

	"github.com/rocketraft/rocketraft/client"
	"github.com/rocketraft/rocketraft/proxy/v2pb"
)

// A client silent past the idle time is forgotten unless its Telemetry stream is open; a producer's topics
// leave with it.
func TestRegistryExpiresSilentClients(t *testing.T) {
	r := newRegistry()
	r.heartbeat("silent", v2pb.ClientType_SIMPLE_CONSUMER, "G")
	producer := v2pb.ClientType_PRODUCER
	r.setSettings("streaming", &v2pb.Settings{ClientType: &producer, PubSub: &v2pb.Settings_Publishing{
		Publishing: &v2pb.Publishing{Topics: []*v2pb.Resource{{Name: "T"}}}}})
	r.attach("streaming", make(chan *v2pb.TelemetryCommand))
	r.mu.Lock()
	for _, cs := range r.m {
		cs.seen = time.Now().Add(-time.Hour)
	}
	r.mu.Unlock()
	if gone := r.expire(time.Minute); len(gone) != 1 || gone[0] != "silent" {
		t.Fatalf("expired %v, want [silent]", gone)
	}
	if got := r.producerTopics(); len(got) != 1 || got[0] != "T" {
		t.Fatalf("topics %v after expiry", got)
	}
	r.detach("streaming", nil) // not its stream: kept attached
	if r.producerStream("T") == nil {
		t.Fatal("the streaming producer lost its stream")
	}
}

// A server closed without ever serving returns (its services never started).
func TestCloseWithoutServe(t *testing.T) {
	c := client.New(client.Config{Namesrvs: []string{"127.0.0.1:1"}})
	defer c.Close()
	s, err := New(Options{Client: c})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}
