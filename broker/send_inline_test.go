package broker

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/rocketraft/rocketraft/client"
	"github.com/rocketraft/rocketraft/internal/testutil"
	"github.com/rocketraft/rocketraft/protocol"
	"github.com/rocketraft/rocketraft/remoting"
)

// TestSendToAnExistingTopicAnsweredInline: with the send pool's only worker held, a send to an existing topic
// is stored and answered (on the connection's reader: sendInline), while a send that creates its topic waits
// in the pool's queue and is answered once the worker is free.
func TestSendToAnExistingTopicAnsweredInline(t *testing.T) {
	b := newLoopbackBroker(t, func(cfg *Config) {
		cfg.SendMessageThreadPoolNums = 1
		cfg.AutoCreateTopicEnable = true
	})
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.topics.changes.createTopic(&protocol.TopicConfig{TopicName: "Existing", ReadQueueNums: 4,
		WriteQueueNums: 4, Perm: protocol.PermRead | protocol.PermWrite}); err != nil {
		t.Fatal(err)
	}
	var send *remoting.Pool
	for _, p := range b.pools {
		if p.Name() == "send" {
			send = p
		}
	}
	hold, held := make(chan struct{}), make(chan struct{})
	if !send.Submit(func() { close(held); <-hold }) {
		t.Fatal("the send pool refused the holding task")
	}
	<-held
	released := false
	release := func() {
		if !released {
			released = true
			close(hold)
		}
	}
	defer release()

	c := client.New(client.Config{Timeout: time.Minute})
	defer c.Close()
	ctx := context.Background()
	res, err := c.SendMessage(ctx, b.addr, &client.Send{Group: "G", Topic: "Existing", BrokerName: b.cfg.BrokerName,
		QueueID: 1, Body: []byte("inline")})
	if err != nil || res.SendStatus != "SEND_OK" {
		t.Fatalf("send to an existing topic while the send pool is held: %+v, %v", res, err)
	}

	created := make(chan error, 1)
	go func() {
		_, err := c.SendMessage(ctx, b.addr, &client.Send{Group: "G", Topic: "MadeOnFirstSend", BrokerName: b.cfg.BrokerName,
			QueueID: 0, Body: []byte("pool")})
		created <- err
	}()
	testutil.WaitFor(t, time.Minute, "the creating send to wait in the send pool's queue", func() bool { return send.Queued() == 1 })
	release()
	if err := <-created; err != nil {
		t.Fatalf("send that creates its topic: %v", err)
	}
	if _, ok := b.topics.lookup("MadeOnFirstSend"); !ok {
		t.Fatal("the topic was not created")
	}
}

// newLoopbackBroker is a broker (not started) on 127.0.0.1 with free ports, a temporary store, no metrics
// and no name server, its configuration changed by tune; closed at cleanup.
func newLoopbackBroker(t *testing.T, tune func(*Config)) *Broker {
	t.Helper()
	cfg := DefaultConfig()
	cfg.StorePathRootDir = t.TempDir()
	cfg.BrokerIP1 = "127.0.0.1"
	cfg.ListenPort = testutil.FreePort(t)
	cfg.Replication.HAListenPort = testutil.FreePort(t)
	cfg.MetricsPort = 0
	tune(&cfg)
	b, err := New(cfg, Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}
