package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/rocketraft/rocketraft/app/cluster"
	"github.com/rocketraft/rocketraft/broker"
)

// TestHASlaveNotAvailableThroughClient: the official client sees SLAVE_NOT_AVAILABLE from a SYNC_MASTER
// whose slave is stopped, and SEND_OK again once the slave is back and caught up; every message, sent
// with either status, is consumed.
func TestHASlaveNotAvailableThroughClient(t *testing.T) {
	c := cluster.Start(t, cluster.Options{Slaves: 1, Configure: func(i int, cfg *broker.Config) {
		if cfg.BrokerRole != broker.RoleSlave {
			cfg.BrokerRole = broker.RoleSyncMaster
		}
		cfg.Replication.SlaveSynchronizeInterval = 200
	}})
	createTopic(t, c, "HAStatus", 2)
	p := newProducer(t, c, producer.WithRetry(0))
	send := func(body string) primitive.SendStatus {
		t.Helper()
		res, err := p.SendSync(context.Background(), primitive.NewMessage("HAStatus", []byte(body)))
		if err != nil {
			t.Fatalf("send %s: %v", body, err)
		}
		return res.Status
	}
	cluster.Eventually(t, 20*time.Second, func() bool { return send("warm") == primitive.SendOK }, "SEND_OK with the slave streaming")
	c.StopBroker(1)
	cluster.Eventually(t, 20*time.Second, func() bool { return send("gone") == primitive.SendSlaveNotAvailable }, "SLAVE_NOT_AVAILABLE with the slave stopped")
	c.StartBroker(1)
	cluster.Eventually(t, 20*time.Second, func() bool { return send("back") == primitive.SendOK }, "SEND_OK with the slave back")
	got := newReceived()
	startConsumer(t, c, "CG_ha_status", "HAStatus", consumer.MessageSelector{}, got, consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset))
	waitAll(t, got, []string{"warm", "gone", "back"}, 30*time.Second, "consumer")
}
