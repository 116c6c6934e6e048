package broker_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/rocketraft/rocketraft/app/cluster"
	"github.com/rocketraft/rocketraft/broker"
	"github.com/rocketraft/rocketraft/internal/testutil"
	"github.com/rocketraft/rocketraft/message"
	"github.com/rocketraft/rocketraft/remoting"
)

// TestEndTransactionCommitSyncFlush: on a SYNC_FLUSH broker, END_TRANSACTION commit is answered and the
// store keeps flushing. The commit's put completes on the store's flusher, and the op record written from
// there used to be a synchronous put waiting for that same flusher: the commit hung until syncFlushTimeout
// and every durable send with it (make soak found the SYNC_MASTER version, which hung for good).
func TestEndTransactionCommitSyncFlush(t *testing.T) {
	cfg := cluster.TestBrokerConfig(t, "127.0.0.1:1", "broker-tx-sync-flush")
	cfg.FlushDiskType = "SYNC_FLUSH"
	cfg.SyncFlushTimeout = 60_000 // past the commit's 30 s below, so the old code fails rather than recovers
	b := startBrokerWith(t, cfg, broker.Options{})
	w := newWire(t, b.Addr())
	const topic, group = "TxSyncFlush", "TxSyncFlushProducers"
	expectCode(t, "create", w.call(remoting.UpdateAndCreateTopic, map[string]string{"topic": topic, "readQueueNums": "1",
		"writeQueueNums": "1", "perm": "6"}, nil), remoting.Success)

	for i := range 3 {
		id := "half-" + strconv.Itoa(i)
		props := message.PropertyTransactionPrepared + "\x01true\x02" + message.PropertyProducerGroup + "\x01" + group + "\x02" +
			message.PropertyUniqKey + "\x01" + id + "\x02"
		half := w.call(remoting.SendMessage, map[string]string{
			"producerGroup": group, "topic": topic, "defaultTopic": "TBW102", "defaultTopicQueueNums": "4",
			"queueId": "0", "sysFlag": strconv.Itoa(int(message.SysFlagTransactionPrepared)),
			"bornTimestamp": strconv.FormatInt(time.Now().UnixMilli(), 10), "flag": "0", "properties": props,
			"reconsumeTimes": "0", "unitMode": "false", "batch": "false"}, []byte(id))
		expectCode(t, "send "+id, half, remoting.Success)
		_, commitLogOffset, err := message.DecodeOffsetMsgID(half.ExtFields["msgId"])
		if err != nil {
			t.Fatalf("%s: msgId %q: %v", id, half.ExtFields["msgId"], err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		resp, err := w.client.Invoke(ctx, w.addr, remoting.NewRequest(remoting.EndTransaction, map[string]string{
			"producerGroup": group, "tranStateTableOffset": half.ExtFields["queueOffset"],
			"commitLogOffset": strconv.FormatInt(commitLogOffset, 10), "commitOrRollback": "8",
			"fromTransactionCheck": "false", "msgId": id, "transactionId": id}, nil))
		cancel()
		if err != nil {
			t.Fatalf("commit %s: %v (the op record's put waits for the flusher it runs on)", id, err)
		}
		expectCode(t, "commit "+id, resp, remoting.Success)
		expectCode(t, "plain send after commit "+id, w.send(topic, 0, []byte("plain-"+id), ""), remoting.Success)
	}
	// The ConsumeQueue is written by the dispatch, which may still be behind the last answer (it failed once
	// in make test reading 0): wait for it, then check that nothing more came.
	var got int64
	testutil.WaitFor(t, 30*time.Second, "the six messages dispatched", func() bool {
		max := w.call(remoting.GetMaxOffset, map[string]string{"topic": topic, "queueId": "0"}, nil)
		expectCode(t, "max offset", max, remoting.Success)
		got, _ = strconv.ParseInt(max.ExtFields["offset"], 10, 64)
		return got >= 6
	})
	if got != 6 {
		t.Fatalf("%s holds %d messages, want 6 (3 committed, 3 plain)", topic, got)
	}
}
