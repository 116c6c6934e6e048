package proxy_test

import (
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/rocketraft/rocketraft/app/cluster"
	"github.com/rocketraft/rocketraft/broker"
	"github.com/rocketraft/rocketraft/internal/testutil"
	"github.com/rocketraft/rocketraft/message"
	"github.com/rocketraft/rocketraft/proxy/v2pb"
)

// queueOf returns the queue id a pulled message was stored in.
func queueOf(m *v2pb.Message) int32 { return m.SystemProperties.QueueId }

// TestSendNormalAndPull: normal messages sent through gRPC are pulled back through gRPC with their body,
// tag, keys, user properties and id; the round robin spreads them over the queues; an empty body is refused.
func TestSendNormalAndPull(t *testing.T) {
	e := start(t, envOptions{})
	e.topic(t, "TS", 2)
	sent := map[string]string{}
	for i := range 4 {
		m := msg("TS", "body-"+string(rune('0'+i)))
		tag := "TagA"
		m.SystemProperties.Tag = &tag
		m.SystemProperties.Keys = []string{"k1", "k2"}
		entry := e.send(t, m)
		if entry.MessageId != m.SystemProperties.MessageId || entry.Offset < 0 {
			t.Fatalf("entry %v", entry)
		}
		sent[entry.MessageId] = string(m.Body)
	}
	got := map[string]string{}
	for q := range int32(2) {
		e.waitPull(t, "TS", "broker-a", q, 2)
		st, msgs, next := e.pull(t, "TS", "broker-a", q, 0, 0)
		if st.Code != v2pb.Code_OK || len(msgs) != 2 || next != 2 {
			t.Fatalf("queue %d: %v, %d messages, next %d", q, st, len(msgs), next)
		}
		for _, m := range msgs {
			sp := m.SystemProperties
			if sp.GetTag() != "TagA" || len(sp.Keys) != 2 || m.UserProperties["k"] != "v" || sp.MessageType != v2pb.MessageType_NORMAL ||
				sp.BodyDigest.GetType() != v2pb.DigestType_MD5 || queueOf(m) != q {
				t.Errorf("message %v", m)
			}
			got[sp.MessageId] = string(m.Body)
		}
	}
	if len(got) != 4 {
		t.Fatalf("pulled %v, sent %v", got, sent)
	}
	for id, b := range sent {
		if got[id] != b {
			t.Errorf("message %s: pulled %q, sent %q", id, got[id], b)
		}
	}
	st, _, next := e.pull(t, "TS", "broker-a", 0, 2, 0)
	if st.Code != v2pb.Code_MESSAGE_NOT_FOUND || next != 2 {
		t.Errorf("pull past the end: %v next %d", st, next)
	}

	bad := msg("TS", "")
	r, err := e.rpc.SendMessage(e.ctx(t), &v2pb.SendMessageRequest{Messages: []*v2pb.Message{bad}})
	if err != nil || r.Status.Code != v2pb.Code_MESSAGE_BODY_EMPTY {
		t.Errorf("empty body: %v %v", r, err)
	}
	bad = msg("TS", "x")
	bad.UserProperties["UNIQ_KEY"] = "mine"
	r, err = e.rpc.SendMessage(e.ctx(t), &v2pb.SendMessageRequest{Messages: []*v2pb.Message{bad}})
	if err != nil || r.Status.Code != v2pb.Code_ILLEGAL_MESSAGE_PROPERTY_KEY {
		t.Errorf("system property as user property: %v %v", r, err)
	}
	r, err = e.rpc.SendMessage(e.ctx(t), &v2pb.SendMessageRequest{Messages: []*v2pb.Message{msg("NO_SUCH_TOPIC", "x")}})
	if err != nil || r.Status.Code != v2pb.Code_TOPIC_NOT_FOUND {
		t.Errorf("unknown topic: %v %v", r, err)
	}
}

// TestSendFIFOGroupsKeepTheirQueue: every message of a message group lands in the queue the Java hash of
// the group picks, in the order sent.
func TestSendFIFOGroupsKeepTheirQueue(t *testing.T) {
	e := start(t, envOptions{})
	e.topic(t, "TF", 4)
	groups := []string{"order-1", "order-2", "order-3"}
	for i := range 9 {
		m := msg("TF", string(rune('a'+i)))
		g := groups[i%3]
		m.SystemProperties.MessageGroup = &g
		m.SystemProperties.MessageType = v2pb.MessageType_FIFO
		e.send(t, m)
	}
	for _, g := range groups {
		h := int64(message.JavaStringHash(g)) % 4
		if h < 0 {
			h = -h
		}
		want := map[string]string{"order-1": "adg", "order-2": "beh", "order-3": "cfi"}[g]
		msgs := e.waitPull(t, "TF", "broker-a", int32(h), len(want))
		var bodies string
		for _, m := range msgs {
			if m.SystemProperties.GetMessageGroup() == g {
				bodies += string(m.Body)
				if m.SystemProperties.MessageType != v2pb.MessageType_FIFO {
					t.Errorf("group %s: type %v", g, m.SystemProperties.MessageType)
				}
			}
		}
		if bodies != want {
			t.Errorf("group %s in queue %d: %q, want %q", g, h, bodies, want)
		}
	}
}

// TestSendTimedMessage: a message with a delivery time is not in its queue before that time and is after.
func TestSendTimedMessage(t *testing.T) {
	e := start(t, envOptions{})
	e.topic(t, "TD", 1)
	m := msg("TD", "later")
	due := time.Now().Add(5 * time.Second)
	m.SystemProperties.DeliveryTimestamp = timestamppb.New(due)
	m.SystemProperties.MessageType = v2pb.MessageType_DELAY
	e.send(t, m)
	// Early only if the answer came before its time: at load 15 the send and this pull took longer than the
	// 2 s the message used to wait, and the pull found it delivered on time.
	if st, msgs, _ := e.pull(t, "TD", "broker-a", 0, 0, 0); len(msgs) != 0 && time.Now().Before(due) {
		t.Fatalf("the timed message is there before its time %v: %v %v", due, st, msgs)
	}
	var got []*v2pb.Message
	testutil.WaitFor(t, 15*time.Second, "the timed message is delivered", func() bool {
		_, got, _ = e.pull(t, "TD", "broker-a", 0, 0, 0)
		return len(got) == 1
	})
	if time.Now().Before(due) {
		t.Errorf("delivered before its time %v", due)
	}
	if sp := got[0].SystemProperties; sp.MessageId != m.SystemProperties.MessageId || string(got[0].Body) != "later" {
		t.Errorf("timed message %v", got[0])
	}
}

// TestTransactionCommitAndRollback: half messages stay hidden; EndTransaction COMMIT shows one, ROLLBACK
// drops the other; a transaction id not made by the proxy is refused.
func TestTransactionCommitAndRollback(t *testing.T) {
	e := start(t, envOptions{})
	e.topic(t, "TT", 1)
	var ids, txs []string
	for _, b := range []string{"commit-me", "roll-me-back"} {
		m := msg("TT", b)
		m.SystemProperties.MessageType = v2pb.MessageType_TRANSACTION
		entry := e.send(t, m)
		if entry.TransactionId == "" {
			t.Fatalf("no transaction id: %v", entry)
		}
		ids, txs = append(ids, entry.MessageId), append(txs, entry.TransactionId)
	}
	if _, msgs, _ := e.pull(t, "TT", "broker-a", 0, 0, 0); len(msgs) != 0 {
		t.Fatalf("half messages visible: %v", msgs)
	}
	for i, resolution := range []v2pb.TransactionResolution{v2pb.TransactionResolution_COMMIT, v2pb.TransactionResolution_ROLLBACK} {
		r, err := e.rpc.EndTransaction(e.ctx(t), &v2pb.EndTransactionRequest{Topic: res("TT"), MessageId: ids[i], TransactionId: txs[i],
			Resolution: resolution, Source: v2pb.TransactionSource_SOURCE_CLIENT})
		if err != nil || r.Status.Code != v2pb.Code_OK {
			t.Fatalf("end %s: %v %v", resolution, r, err)
		}
	}
	var msgs []*v2pb.Message
	testutil.WaitFor(t, 10*time.Second, "the committed message is in its queue", func() bool {
		_, msgs, _ = e.pull(t, "TT", "broker-a", 0, 0, 0)
		return len(msgs) > 0
	})
	if len(msgs) != 1 || string(msgs[0].Body) != "commit-me" || msgs[0].SystemProperties.MessageId != ids[0] {
		t.Fatalf("after commit and rollback: %v", msgs)
	}
	r, err := e.rpc.EndTransaction(e.ctx(t), &v2pb.EndTransactionRequest{Topic: res("TT"), MessageId: ids[0], TransactionId: "nope",
		Resolution: v2pb.TransactionResolution_COMMIT})
	if err != nil || r.Status.Code != v2pb.Code_INVALID_TRANSACTION_ID {
		t.Errorf("bad transaction id: %v %v", r, err)
	}
}

// TestTransactionCheckBackRelayed: a half message left open is checked by the broker; the proxy relays the
// check to the producer's Telemetry stream as a RecoverOrphanedTransactionCommand, and the producer's
// EndTransaction (SERVER_CHECK) commits it.
func TestTransactionCheckBackRelayed(t *testing.T) {
	e := start(t, envOptions{cluster: cluster.Options{Configure: func(_ int, c *broker.Config) {
		c.TransactionCheckInterval, c.TransactionTimeOut = 200, 100
	}}})
	e.topic(t, "TC", 1)
	tel, err := e.rpc.Telemetry(e.ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	producer := v2pb.ClientType_PRODUCER
	if err := tel.Send(&v2pb.TelemetryCommand{Command: &v2pb.TelemetryCommand_Settings{Settings: &v2pb.Settings{ClientType: &producer,
		PubSub: &v2pb.Settings_Publishing{Publishing: &v2pb.Publishing{Topics: []*v2pb.Resource{res("TC")}}}}}}); err != nil {
		t.Fatal(err)
	}
	first, err := tel.Recv()
	if err != nil || first.GetSettings().GetPublishing().GetMaxBodySize() != 4<<20 || first.GetSettings().GetBackoffPolicy().GetMaxAttempts() == 0 {
		t.Fatalf("settings answer: %v %v", first, err)
	}
	m := msg("TC", "checked")
	m.SystemProperties.MessageType = v2pb.MessageType_TRANSACTION
	entry := e.send(t, m)
	cmd, err := tel.Recv()
	if err != nil {
		t.Fatal(err)
	}
	rec := cmd.GetRecoverOrphanedTransactionCommand()
	// The check names the half message as the broker put it back for the check (a new offset), as RocketMQ's.
	if rec == nil || rec.TransactionId == "" || rec.Message.SystemProperties.MessageId != entry.MessageId ||
		rec.Message.Topic.Name != "TC" || string(rec.Message.Body) != "checked" {
		t.Fatalf("check-back: %v (sent %v)", cmd, entry)
	}
	r, err := e.rpc.EndTransaction(e.ctx(t), &v2pb.EndTransactionRequest{Topic: res("TC"), MessageId: entry.MessageId,
		TransactionId: rec.TransactionId, Resolution: v2pb.TransactionResolution_COMMIT, Source: v2pb.TransactionSource_SOURCE_SERVER_CHECK})
	if err != nil || r.Status.Code != v2pb.Code_OK {
		t.Fatalf("end: %v %v", r, err)
	}
	testutil.WaitFor(t, 10*time.Second, "the checked transaction is committed", func() bool {
		_, msgs, _ := e.pull(t, "TC", "broker-a", 0, 0, 0)
		return len(msgs) == 1 && string(msgs[0].Body) == "checked"
	})
}
