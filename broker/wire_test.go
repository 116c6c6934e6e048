package broker_test

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rocketraft/rocketraft/app/cluster"
	"github.com/rocketraft/rocketraft/broker"
	"github.com/rocketraft/rocketraft/message"
	"github.com/rocketraft/rocketraft/protocol"
	"github.com/rocketraft/rocketraft/remoting"
)

// wire is a raw protocol client for broker tests: requests built by hand, as a client would send them.
type wire struct {
	t      *testing.T
	client *remoting.Client
	addr   string
}

func newWire(t *testing.T, addr string) *wire {
	// A loopback dial is answered at once unless the machine is loaded: at load 30 under the race detector 1 s
	// timed a dial out (TestHAUnderPeerTLS); 10 s bounds a dial to a broker that is gone.
	c := remoting.NewClient(remoting.ClientConfig{DialTimeout: 10 * time.Second}, cluster.TestLogger(t, slog.LevelWarn))
	t.Cleanup(func() { _ = c.Close() })
	return &wire{t: t, client: c, addr: addr}
}

func (w *wire) call(code remoting.RequestCode, ext map[string]string, body []byte) *remoting.Command {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := w.client.Invoke(ctx, w.addr, remoting.NewRequest(code, ext, body))
	if err != nil {
		w.t.Fatalf("%v: %v", code, err)
	}
	return resp
}

func (w *wire) send(topic string, queueID int, body []byte, props string) *remoting.Command {
	w.t.Helper()
	return w.call(remoting.SendMessage, map[string]string{
		"producerGroup": "PG", "topic": topic, "defaultTopic": "TBW102", "defaultTopicQueueNums": "4",
		"queueId": fmt.Sprint(queueID), "sysFlag": "0", "bornTimestamp": fmt.Sprint(time.Now().UnixMilli()),
		"flag": "0", "properties": props, "reconsumeTimes": "0", "unitMode": "false", "batch": "false",
	}, body)
}

func (w *wire) pull(group, topic string, queueID int, offset int64, suspend time.Duration, sub string) *remoting.Command {
	w.t.Helper()
	return w.call(remoting.PullMessage, map[string]string{
		"consumerGroup": group, "topic": topic, "queueId": fmt.Sprint(queueID), "queueOffset": fmt.Sprint(offset),
		"maxMsgNums": "32", "sysFlag": fmt.Sprint(2 | 4), "commitOffset": "0",
		"suspendTimeoutMillis": fmt.Sprint(suspend.Milliseconds()), "subscription": sub, "subVersion": "0", "expressionType": "TAG",
	}, nil)
}

func expectCode(t *testing.T, what string, resp *remoting.Command, code remoting.ResponseCode, remarkHas ...string) {
	t.Helper()
	if resp.Code != int32(code) {
		t.Fatalf("%s: code %s %q, want %s", what, remoting.ResponseCode(resp.Code), resp.Remark, code)
	}
	for _, s := range remarkHas {
		if !strings.Contains(resp.Remark, s) {
			t.Errorf("%s: remark %q does not say %q", what, resp.Remark, s)
		}
	}
}

func TestSendErrorsNameTheProblem(t *testing.T) {
	c := cluster.Start(t, cluster.Options{Brokers: 3, Configure: func(i int, cfg *broker.Config) {
		switch i {
		case 1:
			cfg.BrokerPermission = protocol.PermRead
		case 2:
			cfg.BrokerRole = broker.RoleSlave
			cfg.BrokerID = 1
			cfg.BrokerName = "broker-a"
		}
		cfg.AutoCreateTopicEnable = i != 0
	}})
	w := newWire(t, c.Broker(0).Addr())
	expectCode(t, "bad topic name", w.send("bad topic!", 0, []byte("x"), ""), remoting.InvalidParameter, "bad topic!", "%|a-zA-Z0-9_-")
	expectCode(t, "long topic", w.send(strings.Repeat("t", 128), 0, []byte("x"), ""), remoting.InvalidParameter, "127")
	expectCode(t, "missing topic", w.send("Missing", 0, []byte("x"), ""), remoting.TopicNotExist, "Missing", "autoCreateTopicEnable=false")
	expectCode(t, "system topic", w.send("SCHEDULE_TOPIC_XXXX", 0, []byte("x"), ""), remoting.NoPermission, "system topic")

	w1 := newWire(t, c.Broker(1).Addr())
	expectCode(t, "read-only broker", w1.send("Anything", 0, []byte("x"), ""), remoting.NoPermission, "forbidden", "brokerPermission 4")

	w2 := newWire(t, c.Broker(2).Addr())
	expectCode(t, "slave", w2.send("Anything", 0, []byte("x"), ""), remoting.ServiceNotAvailable, "slave")

	// Too big: the store's maxMessageSize, named with the size and the limit.
	limit := broker.DefaultConfig().MaxMessageSize
	big := make([]byte, limit+1)
	resp := w.call(remoting.UpdateAndCreateTopic, map[string]string{"topic": "Big", "readQueueNums": "1", "writeQueueNums": "1", "perm": "6"}, nil)
	expectCode(t, "create topic", resp, remoting.Success)
	expectCode(t, "oversize", w.send("Big", 0, big, ""), remoting.MessageIllegal, fmt.Sprint(limit), fmt.Sprint(limit+1))
	expectCode(t, "bad queue", w.send("Big", 5, []byte("x"), ""), remoting.SystemError, "queueId[5] is illegal")
	// The oversize refusal wrote nothing.
	expectCode(t, "max offset", w.call(remoting.GetMaxOffset, map[string]string{"topic": "Big", "queueId": "0"}, nil), remoting.Success)
	if off := w.call(remoting.GetMaxOffset, map[string]string{"topic": "Big", "queueId": "0"}, nil).ExtFields["offset"]; off != "0" {
		t.Fatalf("after a refused message the queue's max offset is %s, want 0", off)
	}
	expectCode(t, "unknown code", w.call(remoting.RequestCode(9999), nil, nil), remoting.RequestCodeNotSupported, "9999")
	expectCode(t, "missing header", w.call(remoting.SendMessage, map[string]string{"producerGroup": "PG"}, nil), remoting.InvalidParameter, "topic")
}

func TestLongPolling(t *testing.T) {
	c := cluster.Start(t, cluster.Options{})
	w := newWire(t, c.Broker(0).Addr())
	expectCode(t, "create", w.call(remoting.UpdateAndCreateTopic, map[string]string{"topic": "LP", "readQueueNums": "1", "writeQueueNums": "1", "perm": "6"}, nil), remoting.Success)

	// Nothing there: the pull is held for its suspend timeout, then answered PULL_NOT_FOUND at offset 0.
	resp := w.pull("G", "LP", 0, 0, 200*time.Millisecond, "*")
	expectCode(t, "empty pull", resp, remoting.PullNotFound)
	if resp.ExtFields["nextBeginOffset"] != "0" || resp.ExtFields["maxOffset"] != "0" || resp.ExtFields["suggestWhichBrokerId"] != "0" {
		t.Fatalf("empty pull header %v", resp.ExtFields)
	}

	// A held pull is answered with the message as soon as dispatch reaches its queue.
	var wg sync.WaitGroup
	wg.Add(1)
	var held *remoting.Command
	go func() {
		defer wg.Done()
		held = w.pull("G", "LP", 0, 0, 20*time.Second, "*")
	}()
	cluster.Eventually(t, 10*time.Second, func() bool {
		info := runtimeInfo(t, w)
		return info["pullHoldCount"] == "1"
	}, "the pull is held")
	expectCode(t, "send", w.send("LP", 0, []byte("wake up"), ""), remoting.Success)
	wg.Wait()
	expectCode(t, "woken pull", held, remoting.Success)
	if held.ExtFields["nextBeginOffset"] != "1" || !strings.Contains(string(held.Body), "wake up") {
		t.Fatalf("woken pull: header %v body %q", held.ExtFields, held.Body)
	}

	// Offsets out of range move the consumer, as RocketMQ's table says.
	expectCode(t, "offset overflow", w.pull("G", "LP", 0, 5, 0, "*"), remoting.PullOffsetMoved)
	// A tag that matches nothing: retry immediately with the offset past what was examined.
	resp = w.pull("G", "LP", 0, 0, 0, "NoSuchTag")
	expectCode(t, "no match", resp, remoting.PullRetryImmediately)
	if resp.ExtFields["nextBeginOffset"] != "1" {
		t.Fatalf("no-match pull: nextBeginOffset %s, want 1", resp.ExtFields["nextBeginOffset"])
	}
}

func runtimeInfo(t *testing.T, w *wire) map[string]string {
	resp := w.call(remoting.GetBrokerRuntimeInfo, nil, nil)
	var kv struct {
		Table map[string]string `json:"table"`
	}
	if err := json.Unmarshal(resp.Body, &kv); err != nil {
		t.Fatal(err)
	}
	return kv.Table
}

func heartbeat(t *testing.T, w *wire, clientID, group string) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{
		"clientID":        clientID,
		"producerDataSet": []any{},
		"consumerDataSet": []any{map[string]any{"groupName": group, "consumeType": "CONSUME_PASSIVELY", "messageModel": "CLUSTERING",
			"consumeFromWhere": "CONSUME_FROM_LAST_OFFSET", "unitMode": false,
			"subscriptionDataSet": []any{map[string]any{"topic": "T", "subString": "*", "tagsSet": []string{}, "codeSet": []string{}, "subVersion": 1, "expressionType": "TAG"}}}},
	})
	expectCode(t, "heartbeat", w.call(remoting.HeartBeat, nil, body), remoting.Success)
}

func consumerList(t *testing.T, w *wire, group string) []string {
	resp := w.call(remoting.GetConsumerListByGroup, map[string]string{"consumerGroup": group}, nil)
	if resp.Code != int32(remoting.Success) {
		return nil
	}
	var body struct {
		ConsumerIDList []string `json:"consumerIdList"`
	}
	if err := json.Unmarshal(resp.Body, &body); err != nil {
		t.Fatal(err)
	}
	return body.ConsumerIDList
}

// TestConsumerGroupMembership: heartbeats join a group, the members hear NOTIFY_CONSUMER_IDS_CHANGED when
// someone joins or leaves, and a closed connection leaves at once.
func TestConsumerGroupMembership(t *testing.T) {
	c := cluster.Start(t, cluster.Options{})
	addr := c.Broker(0).Addr()
	a, b := newWire(t, addr), newWire(t, addr)
	notified := make(chan string, 10)
	a.client.RegisterHandler(remoting.NotifyConsumerIDsChanged, func(req *remoting.Command) *remoting.Command {
		notified <- req.ExtFields["consumerGroup"]
		return nil
	})
	heartbeat(t, a, "client-a", "CG")
	if ids := consumerList(t, a, "CG"); len(ids) != 1 || ids[0] != "client-a" {
		t.Fatalf("members %v, want [client-a]", ids)
	}
	// The retry topic of the group exists now.
	expectCode(t, "retry topic", a.call(remoting.GetMaxOffset, map[string]string{"topic": "%RETRY%CG", "queueId": "0"}, nil), remoting.Success)

	drain := func() {
		for len(notified) > 0 {
			<-notified
		}
	}
	drain()
	heartbeat(t, b, "client-b", "CG")
	select {
	case g := <-notified:
		if g != "CG" {
			t.Fatalf("notified for %q", g)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("client-a was not told that client-b joined")
	}
	if ids := consumerList(t, a, "CG"); len(ids) != 2 {
		t.Fatalf("members %v, want two", ids)
	}
	drain()
	b.client.CloseAddr(addr)
	select {
	case <-notified:
	case <-time.After(10 * time.Second):
		t.Fatal("client-a was not told that client-b left")
	}
	cluster.Eventually(t, 5*time.Second, func() bool { return len(consumerList(t, a, "CG")) == 1 }, "client-b removed")
}

func TestQueueLocks(t *testing.T) {
	c := cluster.Start(t, cluster.Options{Configure: func(_ int, cfg *broker.Config) { cfg.RebalanceLockMaxLiveTime = 300 }})
	w := newWire(t, c.Broker(0).Addr())
	lock := func(client string, code remoting.RequestCode) []map[string]any {
		body, _ := json.Marshal(map[string]any{"consumerGroup": "OG", "clientId": client,
			"mqSet": []any{map[string]any{"topic": "T", "brokerName": "broker-a", "queueId": 0}, map[string]any{"topic": "T", "brokerName": "broker-a", "queueId": 1}}})
		resp := w.call(code, nil, body)
		var out struct {
			LockOKMQSet []map[string]any `json:"lockOKMQSet"`
		}
		if len(resp.Body) > 0 {
			_ = json.Unmarshal(resp.Body, &out)
		}
		return out.LockOKMQSet
	}
	if got := lock("c1", remoting.LockBatchMQ); len(got) != 2 {
		t.Fatalf("c1 locked %v, want both queues", got)
	}
	if got := lock("c2", remoting.LockBatchMQ); len(got) != 0 {
		t.Fatalf("c2 locked %v while c1 holds them", got)
	}
	if got := lock("c1", remoting.LockBatchMQ); len(got) != 2 {
		t.Fatalf("c1 could not renew: %v", got)
	}
	lock("c1", remoting.UnlockBatchMQ)
	if got := lock("c2", remoting.LockBatchMQ); len(got) != 2 {
		t.Fatalf("after c1 unlocked, c2 locked %v", got)
	}
	// c2 stops renewing: after the lease (300 ms here) c1 can take the queues.
	cluster.Eventually(t, 10*time.Second, func() bool { return len(lock("c1", remoting.LockBatchMQ)) == 2 }, "lease expiry")
}

// TestQueryConsumerOffsetRule: no committed offset answers 0 while the queue starts at 0 in memory.
func TestQueryConsumerOffsetRule(t *testing.T) {
	c := cluster.Start(t, cluster.Options{})
	w := newWire(t, c.Broker(0).Addr())
	expectCode(t, "create", w.call(remoting.UpdateAndCreateTopic, map[string]string{"topic": "Q", "readQueueNums": "1", "writeQueueNums": "1", "perm": "6"}, nil), remoting.Success)
	q := map[string]string{"consumerGroup": "G", "topic": "Q", "queueId": "0"}
	resp := w.call(remoting.QueryConsumerOffset, q, nil)
	expectCode(t, "query", resp, remoting.Success)
	if resp.ExtFields["offset"] != "0" {
		t.Fatalf("offset %s, want 0", resp.ExtFields["offset"])
	}
	expectCode(t, "update", w.call(remoting.UpdateConsumerOffset, map[string]string{"consumerGroup": "G", "topic": "Q", "queueId": "0", "commitOffset": "7"}, nil), remoting.Success)
	if got := w.call(remoting.QueryConsumerOffset, q, nil).ExtFields["offset"]; got != "7" {
		t.Fatalf("offset after commit %s, want 7", got)
	}
}

// TestQueriesAndAdmin covers SEND_MESSAGE_V2, the offset and time queries, QUERY_MESSAGE,
// VIEW_MESSAGE_BY_ID and topic deletion over the wire.
func TestQueriesAndAdmin(t *testing.T) {
	c := cluster.Start(t, cluster.Options{})
	w := newWire(t, c.Broker(0).Addr())
	expectCode(t, "create", w.call(remoting.UpdateAndCreateTopic, map[string]string{"topic": "QA", "readQueueNums": "1", "writeQueueNums": "1", "perm": "6"}, nil), remoting.Success)
	before := time.Now().UnixMilli()
	var ids []string
	for i := 0; i < 3; i++ {
		props := fmt.Sprintf("KEYS\x01order-%d\x02TAGS\x01T\x02", i)
		resp := w.call(remoting.SendMessageV2, map[string]string{"a": "PG", "b": "QA", "c": "TBW102", "d": "4", "e": "0", "f": "0",
			"g": fmt.Sprint(time.Now().UnixMilli()), "h": "0", "i": props, "j": "0", "k": "false", "m": "false"}, []byte(fmt.Sprintf("body-%d", i)))
		expectCode(t, "send v2", resp, remoting.Success)
		if resp.ExtFields["queueOffset"] != fmt.Sprint(i) || len(resp.ExtFields["msgId"]) != 32 {
			t.Fatalf("send v2 answer %v", resp.ExtFields)
		}
		ids = append(ids, resp.ExtFields["msgId"])
	}
	q := map[string]string{"topic": "QA", "queueId": "0"}
	cluster.Eventually(t, 5*time.Second, func() bool {
		return w.call(remoting.GetMaxOffset, q, nil).ExtFields["offset"] == "3"
	}, "three messages dispatched")
	if got := w.call(remoting.GetMinOffset, q, nil).ExtFields["offset"]; got != "0" {
		t.Errorf("min offset %s", got)
	}
	earliest := w.call(remoting.GetEarliestMsgStoreTime, q, nil)
	expectCode(t, "earliest", earliest, remoting.Success)
	if ts, _ := strconv.ParseInt(earliest.ExtFields["timestamp"], 10, 64); ts < before {
		t.Errorf("earliest store time %d before the first send at %d", ts, before)
	}
	if got := w.call(remoting.SearchOffsetByTimestamp, map[string]string{"topic": "QA", "queueId": "0", "timestamp": fmt.Sprint(before)}, nil).ExtFields["offset"]; got != "0" {
		t.Errorf("offset at the first send's time: %s, want 0", got)
	}

	// By key, through the index.
	cluster.Eventually(t, 5*time.Second, func() bool {
		resp := w.call(remoting.QueryMessage, map[string]string{"topic": "QA", "key": "order-1", "maxNum": "32",
			"beginTimestamp": "0", "endTimestamp": fmt.Sprint(time.Now().Add(time.Minute).UnixMilli())}, nil)
		return resp.Code == int32(remoting.Success) && strings.Contains(string(resp.Body), "body-1") && !strings.Contains(string(resp.Body), "body-2")
	}, "QUERY_MESSAGE finds order-1")
	expectCode(t, "query missing key", w.call(remoting.QueryMessage, map[string]string{"topic": "QA", "key": "nope", "maxNum": "32",
		"beginTimestamp": "0", "endTimestamp": fmt.Sprint(time.Now().UnixMilli())}, nil), remoting.QueryNotFound)

	// By offset message id.
	_, phy, err := message.DecodeOffsetMsgID(ids[2])
	if err != nil {
		t.Fatal(err)
	}
	view := w.call(remoting.ViewMessageByID, map[string]string{"offset": fmt.Sprint(phy)}, nil)
	expectCode(t, "view", view, remoting.Success)
	m, err := message.DecodeMessage(view.Body, true)
	if err != nil || string(m.Body) != "body-2" || m.Topic != "QA" {
		t.Fatalf("viewed message %+v, err %v", m, err)
	}
	expectCode(t, "view bad offset", w.call(remoting.ViewMessageByID, map[string]string{"offset": "123456789"}, nil), remoting.SystemError, "123456789")

	// Delete: the config, the queue and the offsets go.
	expectCode(t, "delete", w.call(remoting.DeleteTopicInBroker, map[string]string{"topic": "QA"}, nil), remoting.Success)
	var all protocol.TopicConfigSerializeWrapper
	if err := json.Unmarshal(w.call(remoting.GetAllTopicConfig, nil, nil).Body, &all); err != nil {
		t.Fatal(err)
	}
	if _, ok := all.TopicConfigTable["QA"]; ok {
		t.Fatal("deleted topic still in GET_ALL_TOPIC_CONFIG")
	}
	if _, ok := all.TopicConfigTable["TBW102"]; !ok {
		t.Fatal("TBW102 missing from GET_ALL_TOPIC_CONFIG")
	}
	expectCode(t, "delete system topic", w.call(remoting.DeleteTopicInBroker, map[string]string{"topic": "TBW102"}, nil), remoting.InvalidParameter)
}

// TestBatchBodyErrors: a malformed SEND_BATCH_MESSAGE body is refused as a whole, naming the record.
func TestBatchBodyErrors(t *testing.T) {
	c := cluster.Start(t, cluster.Options{})
	w := newWire(t, c.Broker(0).Addr())
	ext := map[string]string{"a": "PG", "b": "Batch", "c": "TBW102", "d": "4", "e": "0", "f": "0", "g": "0", "h": "0", "i": "", "j": "0", "k": "false", "m": "true"}
	rec := func(body string) []byte {
		b := make([]byte, 22+len(body))
		binary.BigEndian.PutUint32(b, uint32(len(b)))
		binary.BigEndian.PutUint32(b[16:], uint32(len(body)))
		copy(b[20:], body)
		return b
	}
	good := append(rec("one"), rec("two")...)
	resp := w.call(remoting.SendBatchMessage, ext, good)
	expectCode(t, "good batch", resp, remoting.Success)
	if n := len(strings.Split(resp.ExtFields["msgId"], ",")); n != 2 {
		t.Fatalf("batch of 2 answered %d ids", n)
	}
	bad := append(rec("three"), 0, 0, 0, 99) // a truncated second record
	expectCode(t, "truncated batch", w.call(remoting.SendBatchMessage, ext, bad), remoting.MessageIllegal, "message 1")
	// Nothing of the refused batch was stored: the next message gets queue offset 2.
	resp = w.call(remoting.SendBatchMessage, ext, rec("four"))
	expectCode(t, "batch of one", resp, remoting.Success)
	if resp.ExtFields["queueOffset"] != "2" {
		t.Fatalf("after a refused batch the next message got queue offset %s, want 2", resp.ExtFields["queueOffset"])
	}
}

// TestLocksReleasedWhenClientLeaves: when an orderly consumer's connection closes, its queue locks are
// released at once, so another member need not wait for the lease.
func TestLocksReleasedWhenClientLeaves(t *testing.T) {
	c := cluster.Start(t, cluster.Options{})
	addr := c.Broker(0).Addr()
	a, other := newWire(t, addr), newWire(t, addr)
	heartbeat(t, a, "client-a", "OG")
	body, _ := json.Marshal(map[string]any{"consumerGroup": "OG", "clientId": "client-a",
		"mqSet": []any{map[string]any{"topic": "T", "brokerName": "broker-a", "queueId": 0}}})
	resp := a.call(remoting.LockBatchMQ, nil, body)
	if !strings.Contains(string(resp.Body), `"queueId":0`) {
		t.Fatalf("client-a could not lock: %s", resp.Body)
	}
	body2, _ := json.Marshal(map[string]any{"consumerGroup": "OG", "clientId": "client-b",
		"mqSet": []any{map[string]any{"topic": "T", "brokerName": "broker-a", "queueId": 0}}})
	if resp := other.call(remoting.LockBatchMQ, nil, body2); strings.Contains(string(resp.Body), `"queueId":0`) {
		t.Fatal("client-b locked a queue client-a holds")
	}
	a.client.CloseAddr(addr)
	cluster.Eventually(t, 5*time.Second, func() bool {
		return strings.Contains(string(other.call(remoting.LockBatchMQ, nil, body2).Body), `"queueId":0`)
	}, "client-b locks the queue once client-a's connection closed")
}

// TestReadOnlyBrokerAdvertisesItsPermission: a broker with brokerPermission 4 registers every topic with
// perm 4, so clients stop routing sends to it (RocketMQ's registerBrokerAll).
func TestReadOnlyBrokerAdvertisesItsPermission(t *testing.T) {
	c := cluster.Start(t, cluster.Options{Configure: func(_ int, cfg *broker.Config) { cfg.BrokerPermission = protocol.PermRead }})
	ns := newWire(t, c.NamesrvAddrs()[0])
	cluster.Eventually(t, 10*time.Second, func() bool {
		resp := ns.call(remoting.GetRouteInfoByTopic, map[string]string{"topic": "TBW102"}, nil)
		var route struct {
			QueueDatas []struct {
				Perm int `json:"perm"`
			} `json:"queueDatas"`
		}
		if resp.Code != int32(remoting.Success) || json.Unmarshal(resp.Body, &route) != nil || len(route.QueueDatas) == 0 {
			return false
		}
		return route.QueueDatas[0].Perm == protocol.PermRead
	}, "TBW102 routed with perm 4")
}

// A consumer that says it leaves (UNREGISTER_CLIENT with its group, as RocketMQ's Java client does on shutdown)
// over a connection that stays open (its producer's) has its held pulls answered at once, without a message:
// woken later, they would hand a message to a consumer that is gone while another member of the group is online.
func TestUnregisterAnswersHeldPulls(t *testing.T) {
	c := cluster.Start(t, cluster.Options{})
	addr := c.Broker(0).Addr()
	a, b := newWire(t, addr), newWire(t, addr)
	expectCode(t, "create", a.call(remoting.UpdateAndCreateTopic, map[string]string{"topic": "T", "readQueueNums": "1", "writeQueueNums": "1", "perm": "6"}, nil), remoting.Success)
	heartbeat(t, a, "client-a", "UG")
	heartbeat(t, b, "client-b", "UG")
	var held *remoting.Command
	done := make(chan struct{})
	go func() {
		defer close(done)
		held = a.call(remoting.PullMessage, map[string]string{ // as the clients pull: the subscription from the heartbeat
			"consumerGroup": "UG", "topic": "T", "queueId": "0", "queueOffset": "0", "maxMsgNums": "32", "sysFlag": "2",
			"commitOffset": "0", "suspendTimeoutMillis": "20000", "subscription": "*", "subVersion": "0", "expressionType": "TAG",
		}, nil)
	}()
	cluster.Eventually(t, 10*time.Second, func() bool { return runtimeInfo(t, a)["pullHoldCount"] == "1" }, "the pull is held")
	expectCode(t, "unregister", a.call(remoting.UnregisterClient, map[string]string{"clientID": "client-a", "consumerGroup": "UG"}, nil), remoting.Success)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the held pull of the consumer that left is still held")
	}
	expectCode(t, "the held pull", held, remoting.SubscriptionNotExist, "UNREGISTER_CLIENT")
	if n := runtimeInfo(t, a)["pullHoldCount"]; n != "0" {
		t.Fatalf("pullHoldCount %s after the consumer left", n)
	}
	// The message sent now goes to the member still there.
	expectCode(t, "send", a.send("T", 0, []byte("for b"), ""), remoting.Success)
	cluster.Eventually(t, 10*time.Second, func() bool {
		resp := b.pull("UG", "T", 0, 0, 0, "*")
		return resp.Code == int32(remoting.Success) && strings.Contains(string(resp.Body), "for b")
	}, "client-b pulls the message")
}
