package broker_test

import (
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/rocketraft/rocketraft/app/cluster"
	"github.com/rocketraft/rocketraft/broker"
	"github.com/rocketraft/rocketraft/internal/testutil"
	"github.com/rocketraft/rocketraft/message"
	"github.com/rocketraft/rocketraft/protocol"
	"github.com/rocketraft/rocketraft/remoting"
)

// TestRecallTimedMessage: timed messages sent over the wire answer a recall handle; RECALL_MESSAGE with it
// keeps the message from ever being delivered, while a message due at the same millisecond and one due
// later are delivered. Bad recalls get RocketMQ's codes and say why.
func TestRecallTimedMessage(t *testing.T) {
	b := startBrokerWith(t, cluster.TestBrokerConfig(t, "127.0.0.1:1", "broker-recall"), broker.Options{})
	w := newWire(t, b.Addr())
	const topic = "RecallTimed"
	for _, tp := range []string{topic, "RecallOther"} {
		expectCode(t, "create "+tp, w.call(remoting.UpdateAndCreateTopic, map[string]string{"topic": tp, "readQueueNums": "1",
			"writeQueueNums": "1", "perm": "6"}, nil), remoting.Success)
	}
	due := time.Now().Add(3 * time.Second).UnixMilli()
	at := func(ms int64) string {
		return message.PropertyTimerDeliverMs + "\x01" + strconv.FormatInt(ms, 10) + "\x02"
	}
	handles := map[string]string{}
	send := func(body, props string) {
		t.Helper()
		resp := w.send(topic, 0, []byte(body), props)
		expectCode(t, "send "+body, resp, remoting.Success)
		handles[body] = resp.ExtFields["recallHandle"]
	}
	send("recalled", at(due))
	send("kept", at(due)) // the same millisecond as the recalled one
	send("recalled-relative", "TIMER_DELAY_MS\x012500\x02")
	send("later", at(due+500))
	send("now", "") // not timed: no handle
	if handles["now"] != "" {
		t.Errorf("a message sent for now got recall handle %q", handles["now"])
	}
	h, err := protocol.ParseRecallHandle(handles["recalled"])
	if err != nil {
		t.Fatalf("recall handle %q: %v", handles["recalled"], err)
	}
	if h.Topic != topic || h.BrokerName != "broker-recall" || h.DeliverMs != due || h.MessageID == "" {
		t.Fatalf("recall handle %+v: want topic %s, broker broker-recall, time %d and an id", h, topic, due)
	}

	recall := func(tp, handle string) *remoting.Command {
		return w.call(remoting.RecallMessage, map[string]string{"producerGroup": "PG", "topic": tp, "recallHandle": handle}, nil)
	}
	other := h
	other.BrokerName = "broker-z"
	past := h
	past.DeliverMs = time.Now().Add(-time.Second).UnixMilli()
	expectCode(t, "recall with a bad handle", recall(topic, "bm90IGEgaGFuZGxl"), remoting.IllegalOperation, "recall handle is invalid")
	expectCode(t, "recall on an unknown topic", recall("NoSuchTopic", handles["recalled"]), remoting.TopicNotExist, "NoSuchTopic")
	expectCode(t, "recall on another topic", recall("RecallOther", handles["recalled"]), remoting.IllegalOperation, "topic not match")
	expectCode(t, "recall on another broker", recall(topic, other.Encode()), remoting.IllegalOperation, "broker-z")
	expectCode(t, "recall of a time passed", recall(topic, past.Encode()), remoting.IllegalOperation, "timestamp invalid")
	expectCode(t, "recall without a handle", w.call(remoting.RecallMessage, map[string]string{"topic": topic}, nil), remoting.InvalidParameter, "recallHandle")
	for _, body := range []string{"recalled", "recalled-relative"} {
		resp := recall(topic, handles[body])
		expectCode(t, "recall "+body, resp, remoting.Success)
		if id, _ := protocol.ParseRecallHandle(handles[body]); resp.ExtFields["msgId"] != id.MessageID {
			t.Errorf("recall %s answered msgId %q, want %q", body, resp.ExtFields["msgId"], id.MessageID)
		}
	}

	// The timer delivers in time order: once "later" is read, everything due before it was delivered or dropped.
	var mu sync.Mutex
	read, stop := readTopic(t, w, topic, &mu)
	defer stop()
	testutil.WaitFor(t, 60*time.Second, "the message due last is delivered", func() bool {
		mu.Lock()
		defer mu.Unlock()
		_, ok := read["later"]
		return ok
	})
	mu.Lock()
	defer mu.Unlock()
	for _, body := range []string{"kept", "later", "now"} {
		if _, ok := read[body]; !ok {
			t.Errorf("%s was not delivered", body)
		}
	}
	for _, body := range []string{"recalled", "recalled-relative", "0"} {
		if _, ok := read[body]; ok {
			t.Errorf("%s was delivered", body)
		}
	}
	if len(read) != 3 {
		t.Errorf("read %d messages, want 3: %v", len(read), read)
	}
}
