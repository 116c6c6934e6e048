package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/rocketraft/rocketraft/app/cluster"
	"github.com/rocketraft/rocketraft/broker"
	"github.com/rocketraft/rocketraft/client"
	"github.com/rocketraft/rocketraft/internal/faultnet"
	"github.com/rocketraft/rocketraft/internal/testutil"
	"github.com/rocketraft/rocketraft/message"
	"github.com/rocketraft/rocketraft/protocol"
	"github.com/rocketraft/rocketraft/proxy"
	"github.com/rocketraft/rocketraft/remoting"
)

// The official RocketMQ 5 Node.js client (rocketmq-client-nodejs, installed into e2e/nodejs by make test-deps)
// against the gRPC endpoint: e2e/nodejs/v5client.js does the client's part and prints one JSON line per
// outcome.

// nodeLine is one line v5client.js prints.
type nodeLine struct {
	Sent     string            `json:"sent"`
	Received string            `json:"received"`
	Checked  string            `json:"checked"`
	Commit   bool              `json:"commit"`
	Error    string            `json:"error"`
	ID       string            `json:"id"`
	Body     string            `json:"body"`
	Tag      string            `json:"tag"`
	Group    string            `json:"group"`
	Attempt  int               `json:"attempt"`
	Keys     []string          `json:"keys"`
	Props    map[string]string `json:"props"`
	Topic    string            `json:"topic"`
	Failed   string            `json:"failed"`
	Handle   string            `json:"handle"`
	Recalled string            `json:"recalled"`
	// drain's summary
	Drained    int            `json:"drained"`
	Deliveries int            `json:"deliveries"`
	Again      map[string]int `json:"again"`
	AckErrors  int            `json:"ackErrors"`
	Seconds    float64        `json:"seconds"`
	IDs        []string       `json:"ids"`
}

// nodeScript is v5client.js, once node, npm and the client are there; without node or npm the test skips.
func nodeScript(t *testing.T) string {
	t.Helper()
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed: the RocketMQ 5 Node.js client tests need node and npm (make test-deps then installs rocketmq-client-nodejs into e2e/nodejs)", tool)
		}
	}
	dir, err := filepath.Abs("nodejs")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "rocketmq-client-nodejs", "package.json")); err != nil {
		t.Fatalf("rocketmq-client-nodejs is not installed in %s: run make test-deps (npm ci there)", dir)
	}
	return filepath.Join(dir, "v5client.js")
}

// runNode runs v5client.js with args, failing the test when it fails; its stderr goes to the test log.
func runNode(t *testing.T, script string, timeout time.Duration, args ...string) []nodeLine {
	t.Helper()
	began := time.Now()
	lines, stdout, stderr, err := nodeCmd(script, timeout, args...)
	t.Logf("v5client.js %s: %v", args[0], time.Since(began).Round(time.Millisecond))
	if stderr != "" {
		t.Logf("v5client.js %s stderr:\n%s", args[0], stderr)
	}
	if err != nil {
		t.Fatalf("v5client.js %s: %v\n%s", strings.Join(args, " "), err, stdout)
	}
	return lines
}

// nodeCmd runs v5client.js with args and returns its lines, its raw output and how it ended (safe to call
// from any goroutine).
func nodeCmd(script string, timeout time.Duration, args ...string) (lines []nodeLine, stdout, stderr string, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", append([]string{script}, args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	sc := bufio.NewScanner(bytes.NewReader(out.Bytes()))
	sc.Buffer(make([]byte, 64<<10), 64<<20) // drain's summary line lists every message id
	for sc.Scan() {
		var l nodeLine
		if json.Unmarshal(sc.Bytes(), &l) == nil {
			lines = append(lines, l)
		}
	}
	return lines, out.String(), errb.String(), err
}

// nativeClient is our client of c's name servers, closed when the test ends.
func nativeClient(t *testing.T, c *cluster.Cluster) *client.Client {
	nc := client.New(client.Config{Namesrvs: c.NamesrvAddrs()})
	t.Cleanup(func() { nc.Close() })
	return nc
}

// startProxy starts a gRPC endpoint in cluster mode with opts (its log the test's) on a free port of
// 127.0.0.1, closed at cleanup.
func startProxy(t *testing.T, opts proxy.Options) *proxy.Server {
	t.Helper()
	opts.Log = cluster.TestLogger(t, 0)
	px, err := proxy.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := px.Listen("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { px.Close() })
	return px
}

// queuesHold adds up the max offsets of queues 0..queues-1 of topic on brokerName's broker at addr: the
// messages they hold there.
func queuesHold(nc *client.Client, addr, brokerName, topic string, queues int32) (int64, error) {
	var held int64
	for q := range queues {
		max, err := nc.QueueOffset(context.Background(), remoting.GetMaxOffset, client.Queue{Addr: addr,
			MessageQueue: protocol.MessageQueue{Topic: topic, BrokerName: brokerName, QueueID: q}}, 0)
		if err != nil {
			return 0, err
		}
		held += max
	}
	return held, nil
}

// grpcBrokerConfig turns on the broker's gRPC endpoint and quick transaction check-backs.
func grpcBrokerConfig(t *testing.T) func(int, *broker.Config) {
	return func(_ int, c *broker.Config) {
		c.Grpc.EnableProxy, c.Grpc.GrpcServerPort = true, testutil.FreePort(t)
		c.TransactionCheckInterval, c.TransactionTimeOut = 500, 500
	}
}

// orderlyGroup creates group with consumeMessageOrderly on every broker of c.
func orderlyGroup(t *testing.T, c *cluster.Cluster, group string) {
	t.Helper()
	nc := nativeClient(t, c)
	body, _ := json.Marshal(protocol.SubscriptionGroupConfig{GroupName: group, ConsumeEnable: true, RetryQueueNums: 1,
		RetryMaxTimes: 16, ConsumeMessageOrderly: true})
	for i := range c.BrokerCount() {
		if _, err := nc.Call(context.Background(), c.Broker(i).Addr(), remoting.UpdateAndCreateSubscriptionGroup, nil, body); err != nil {
			t.Fatal(err)
		}
	}
}

// checkProduce checks the producer's lines: every kind sent, the open transaction checked back and
// committed.
func checkProduce(t *testing.T, lines []nodeLine) {
	t.Helper()
	kinds := map[string]int{}
	checked := false
	for _, l := range lines {
		if l.Error != "" {
			t.Fatalf("producer: %s", l.Error)
		}
		if l.Sent != "" {
			kinds[l.Sent]++
			if l.ID == "" {
				t.Errorf("a send without a message id: %+v", l)
			}
		}
		if l.Checked != "" && l.Commit {
			checked = true
		}
	}
	want := map[string]int{"normal": 2, "fifo": 3, "delay": 1, "tx-commit": 1, "tx-rollback": 1, "tx-open": 1}
	for k, n := range want {
		if kinds[k] != n {
			t.Errorf("sent %d %s messages, want %d (all: %v)", kinds[k], k, n, kinds)
		}
	}
	if !checked {
		t.Error("the open transaction was not checked back to the producer")
	}
}

// checkConsume checks a consumer's lines of the main topic: exactly the normal, delayed and committed
// messages, the rolled-back one never, the message left unacked back with a higher attempt.
func checkConsume(t *testing.T, lines []nodeLine) {
	t.Helper()
	bodies := map[string]int{}
	attempts := map[string][]int{}
	for _, l := range lines {
		if l.Error != "" {
			t.Fatalf("consumer: %s", l.Error)
		}
		if l.Received != "" {
			bodies[l.Body]++
			attempts[l.Received] = append(attempts[l.Received], l.Attempt)
			if l.Tag != "TagA" {
				t.Errorf("message %s: tag %q", l.Body, l.Tag)
			}
			if strings.HasPrefix(l.Body, "normal-") && (l.Props["p"] != "v" || len(l.Keys) != 1) {
				t.Errorf("message %s: properties %v keys %v", l.Body, l.Props, l.Keys)
			}
		}
	}
	for _, b := range []string{"normal-1", "normal-2", "delay-1", "tx-commit", "tx-checked"} {
		if bodies[b] == 0 {
			t.Errorf("%s was not received (received %v)", b, bodies)
		}
	}
	if bodies["tx-rollback"] != 0 {
		t.Error("the rolled-back transactional message was delivered")
	}
	redelivered := false
	for id, a := range attempts {
		if len(a) > 1 {
			if a[len(a)-1] <= a[0] {
				t.Errorf("message %s came back with attempts %v", id, a)
			}
			redelivered = true
		}
	}
	if !redelivered {
		t.Error("the message left unacked did not come back")
	}
}

// checkFIFO checks that a group's FIFO messages came in the order sent.
func checkFIFO(t *testing.T, lines []nodeLine) {
	t.Helper()
	var order []string
	for _, l := range lines {
		if l.Received != "" {
			order = append(order, l.Body)
			if l.Group != "g1" {
				t.Errorf("FIFO message %s: group %q", l.Body, l.Group)
			}
		}
	}
	if strings.Join(order, ",") != "fifo-1,fifo-2,fifo-3" {
		t.Errorf("FIFO order %v", order)
	}
}

// nodeRun produces every kind of message through endpoint, then consumes the main topic (leaving one
// message unacked once) and the FIFO topic with an orderly group.
func nodeRun(t *testing.T, c *cluster.Cluster, endpoint string) {
	script := nodeScript(t)
	createTopic(t, c, "T5", 4)
	createTopic(t, c, "T5F", 4)
	orderlyGroup(t, c, "G5F")
	checkProduce(t, runNode(t, script, 60*time.Second, "produce", endpoint, "T5", "T5F", "TagA"))
	checkConsume(t, runNode(t, script, 90*time.Second, "consume", endpoint, "G5", "T5", "5", "60", "2000"))
	checkFIFO(t, runNode(t, script, 60*time.Second, "consume", endpoint, "G5F", "T5F", "3", "30"))
}

// TestNodeClientOneBroker: the Node.js client against one broker's own gRPC endpoint (local mode): normal,
// FIFO, delayed and transactional sends (commit, rollback, check-back), a SimpleConsumer receiving and acking
// them, a message left unacked coming back, a FIFO group in order.
func TestNodeClientOneBroker(t *testing.T) {
	c := cluster.Start(t, cluster.Options{Configure: grpcBrokerConfig(t)})
	nodeRun(t, c, c.Broker(0).GrpcAddr())
}

// TestNodeClientThroughMqproxy: the same through the proxy in cluster mode in front of two broker groups;
// the messages land on both.
func TestNodeClientThroughMqproxy(t *testing.T) {
	c := cluster.Start(t, cluster.Options{Brokers: 2, Configure: func(_ int, cfg *broker.Config) {
		cfg.TransactionCheckInterval, cfg.TransactionTimeOut = 500, 500
	}})
	nc := nativeClient(t, c)
	px := startProxy(t, proxy.Options{Client: nc})
	nodeRun(t, c, px.Addr())
	for i := range 2 {
		held, err := queuesHold(nc, c.Broker(i).Addr(), "broker-"+string(rune('a'+i)), "T5", 4)
		if err != nil {
			t.Fatal(err)
		}
		if held == 0 {
			t.Errorf("broker %d holds no message of T5: the proxy did not spread the sends", i)
		}
	}
}

// drainMessages is how many messages TestNodeSimpleConsumersDrain drains: ROCKETRAFT_NODE_DRAIN, else 2000
// (make test: seconds).
func drainMessages(t *testing.T) int {
	if v := os.Getenv("ROCKETRAFT_NODE_DRAIN"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			t.Fatalf("ROCKETRAFT_NODE_DRAIN=%q: want a positive number of messages", v)
		}
		return n
	}
	return 2000
}

// TestNodeSimpleConsumersDrain: a group of 4 SimpleConsumers of the official Node.js client drains N
// stored messages (ROCKETRAFT_NODE_DRAIN, 2000 by default) through one broker's own endpoint (local mode:
// pops and acks in process) and through the proxy in cluster mode in front of two broker groups: every
// message sent is received and acked; a message received again is counted by why (a delivery attempt
// above 1: its invisible time passed; an earlier ack of it failed), and one received again for no such
// reason fails the test.
func TestNodeSimpleConsumersDrain(t *testing.T) {
	script := nodeScript(t)
	n := drainMessages(t)
	for _, mode := range []string{"local", "mqproxy"} {
		t.Run(mode, func(t *testing.T) {
			var c *cluster.Cluster
			var endpoint string
			if mode == "local" {
				c = cluster.Start(t, cluster.Options{Configure: grpcBrokerConfig(t)})
				endpoint = c.Broker(0).GrpcAddr()
			} else {
				c = cluster.Start(t, cluster.Options{Brokers: 2})
				endpoint = startProxy(t, proxy.Options{Client: nativeClient(t, c)}).Addr()
			}
			createTopic(t, c, "TDRAIN", 4)
			sent := sendStored(t, c, "TDRAIN", n)
			secs := max(60, n/300)
			began := time.Now()
			lines := runNode(t, script, time.Duration(secs+60)*time.Second, "drain", endpoint, "GDRAIN", "TDRAIN",
				strconv.Itoa(n), strconv.Itoa(secs), "4")
			var sum *nodeLine
			for i := range lines {
				if lines[i].Error != "" {
					t.Fatalf("drain: %s", lines[i].Error)
				}
				if lines[i].IDs != nil {
					sum = &lines[i]
				}
			}
			if sum == nil {
				t.Fatal("drain printed no summary")
			}
			got := map[string]bool{}
			for _, id := range sum.IDs {
				if !sent[id] {
					t.Errorf("received %s, never sent", id)
				}
				got[id] = true
			}
			for id := range sent {
				if !got[id] {
					t.Errorf("sent %s, never received", id)
				}
			}
			again := sum.Deliveries - sum.Drained
			t.Logf("%s: %d messages drained by 4 SimpleConsumers in %.1f s (%.0f msgs/s; the node process %v in all), "+
				"%d deliveries, %d received again: %d with a delivery attempt above 1, %d after a failed ack, %d otherwise; %d acks failed",
				mode, sum.Drained, sum.Seconds, float64(sum.Drained)/sum.Seconds, time.Since(began).Round(time.Millisecond),
				sum.Deliveries, again, sum.Again["attempt"], sum.Again["afterAckError"], sum.Again["other"], sum.AckErrors)
			if sum.Again["other"] > 0 {
				t.Errorf("%d messages received again with delivery attempt 1 and no failed ack before", sum.Again["other"])
			}
		})
	}
}

// sendStored sends n messages to topic through our client (its queues round robin over the brokers) and
// returns their message ids.
func sendStored(t *testing.T, c *cluster.Cluster, topic string, n int) map[string]bool {
	t.Helper()
	nc := nativeClient(t, c)
	route, err := nc.WaitRoute(context.Background(), topic, c.BrokerCount())
	if err != nil {
		t.Fatal(err)
	}
	qs := client.RouteQueues(route, topic, "", true)
	ids := make([]string, n)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < n; i += 8 {
				q := qs[i%len(qs)]
				ids[i] = client.NewUniqID()
				props := message.EncodeProperties(map[string]string{message.PropertyUniqKey: ids[i]})
				if _, err := nc.SendMessage(context.Background(), q.Addr, &client.Send{Group: "PDRAIN", Topic: topic,
					BrokerName: q.BrokerName, QueueID: q.QueueID, Properties: props, Body: []byte("drain-" + strconv.Itoa(i))}); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
	out := make(map[string]bool, n)
	for _, id := range ids {
		out[id] = true
	}
	return out
}

// TestNodeProducerSlowRoutes: a Node.js producer of two topics starts through a proxy whose name server
// answers slowly. The client writes its settings once it has the first topic's route and listens for the
// answer only after the second's: the answer comes in between and is dropped, and the client would wait
// for its 5-minute settings sync; the proxy's repeat of the answer after the client's first heartbeat
// (every 10 s) lets it start (proxy/doc.go "Settings").
func TestNodeProducerSlowRoutes(t *testing.T) {
	script := nodeScript(t)
	c := cluster.Start(t, cluster.Options{Configure: func(_ int, cfg *broker.Config) {
		cfg.TransactionCheckInterval, cfg.TransactionTimeOut = 500, 500
	}})
	slow, err := faultnet.Listen("namesrv", c.NamesrvAddrs()[0], cluster.TestLogger(t, 0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { slow.Close() })
	slow.SetDelay(300 * time.Millisecond)
	nc := client.New(client.Config{Namesrvs: []string{slow.Addr()}})
	t.Cleanup(func() { nc.Close() })
	px := startProxy(t, proxy.Options{Client: nc})
	createTopic(t, c, "TSLOW", 4)
	createTopic(t, c, "TSLOWF", 4)
	checkProduce(t, runNode(t, script, 60*time.Second, "produce", px.Addr(), "TSLOW", "TSLOWF", "TagA"))
}

// TestNodeRecallTimedMessage: the Node.js producer sends three timed messages to one broker's gRPC
// endpoint, two due at one millisecond and one after them, and recalls the first with the recall handle
// its send got (Producer.recallMessage): the consumer gets the other two, and the topic holds only them.
func TestNodeRecallTimedMessage(t *testing.T) {
	script := nodeScript(t)
	c := cluster.Start(t, cluster.Options{Configure: grpcBrokerConfig(t)})
	createTopic(t, c, "TRECALL", 2)
	ep := c.Broker(0).GrpcAddr()
	sent := runNode(t, script, 60*time.Second, "recall", ep, "TRECALL", "3000")
	ids := map[string]string{}
	recalled := ""
	for _, l := range sent {
		if l.Error != "" {
			t.Fatalf("producer: %s", l.Error)
		}
		if l.Sent != "" {
			ids[l.Sent] = l.ID
			if l.Handle == "" {
				t.Errorf("the timed message %s was sent without a recall handle", l.Sent)
			}
		}
		if l.Recalled != "" {
			recalled = l.Recalled
		}
	}
	if recalled == "" || recalled != ids["recalled"] {
		t.Fatalf("recall answered message id %q, want %q (sent %v)", recalled, ids["recalled"], ids)
	}
	got := map[string]bool{}
	for _, l := range runNode(t, script, 90*time.Second, "consume", ep, "GRECALL", "TRECALL", "2", "60") {
		if l.Received != "" {
			got[l.Body] = true
		}
	}
	if !got["kept"] || !got["later"] || got["recalled"] {
		t.Errorf("consumed %v, want kept and later only", got)
	}
	// "later" was due last: the timer has delivered or dropped everything before it.
	nc := nativeClient(t, c)
	held, err := queuesHold(nc, c.Broker(0).Addr(), "broker-a", "TRECALL", 2)
	if err != nil {
		t.Fatal(err)
	}
	if held != 2 {
		t.Errorf("topic TRECALL holds %d messages, want 2 (the recalled one was delivered)", held)
	}
}

// TestNodeConsumerRegistered: a Node.js SimpleConsumer through mqproxy is registered at the broker under its
// own client id while it runs (GET_CONSUMER_CONNECTION_LIST, mqadmin consumerConnection, lists it as a
// CONSUME_POP consumer with its subscription), and is gone from there once it ended.
func TestNodeConsumerRegistered(t *testing.T) {
	script := nodeScript(t)
	c := cluster.Start(t, cluster.Options{})
	nc := nativeClient(t, c)
	px := startProxy(t, proxy.Options{Client: nc, MaxLongPolling: 2 * time.Second})
	createTopic(t, c, "TREG", 2)
	type connections struct {
		ConnectionSet []struct {
			ClientID string `json:"clientId"`
		} `json:"connectionSet"`
		SubscriptionTable map[string]struct {
			SubString string `json:"subString"`
		} `json:"subscriptionTable"`
		ConsumeType string `json:"consumeType"`
	}
	online := func() (connections, bool) {
		var cc connections
		err := nc.CallJSON(context.Background(), c.Broker(0).Addr(), remoting.GetConsumerConnectionList,
			map[string]string{"consumerGroup": "GREG"}, &cc)
		if err != nil && !client.HasCode(err, remoting.ConsumerNotOnline) {
			t.Fatal(err)
		}
		return cc, err == nil && len(cc.ConnectionSet) > 0
	}
	type result struct {
		lines []nodeLine
		err   error
	}
	done := make(chan result, 1)
	go func() {
		lines, _, _, err := nodeCmd(script, 60*time.Second, "consume", px.Addr(), "GREG", "TREG", "1", "45")
		done <- result{lines, err}
	}()
	var cc connections
	testutil.WaitFor(t, 30*time.Second, "the v5 consumer registered at the broker", func() bool {
		var ok bool
		cc, ok = online()
		return ok
	})
	if len(cc.ConnectionSet) != 1 || cc.ConnectionSet[0].ClientID == "" || cc.ConsumeType != "CONSUME_POP" || cc.SubscriptionTable["TREG"].SubString != "*" {
		t.Errorf("consumer connection of GREG: %+v; want one client, CONSUME_POP, subscribed to TREG with *", cc)
	}
	runNode(t, script, 60*time.Second, "send", px.Addr(), "TREG", "1", "reg")
	r := <-done
	if r.err != nil {
		t.Fatalf("consume: %v %+v", r.err, r.lines)
	}
	testutil.WaitFor(t, 30*time.Second, "the ended consumer unregistered", func() bool {
		_, ok := online()
		return !ok
	})
}

// TestV4AndV5ClientsShareATopic: a 4.x client (the Go client over remoting) and a 5.x client (the Node.js
// client over gRPC) produce to one topic; a consumer group of each sees every message of both.
func TestV4AndV5ClientsShareATopic(t *testing.T) {
	script := nodeScript(t)
	c := cluster.Start(t, cluster.Options{Configure: grpcBrokerConfig(t)})
	createTopic(t, c, "TMIX", 4)
	got4 := newReceived()
	pc := newPushConsumer(t, c, "G4MIX", consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset))
	if err := pc.Subscribe("TMIX", consumer.MessageSelector{}, got4.handler()); err != nil {
		t.Fatal(err)
	}
	if err := pc.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pc.Shutdown() })
	p := newProducer(t, c)
	for i := 1; i <= 5; i++ {
		if _, err := p.SendSync(context.Background(), primitive.NewMessage("TMIX", []byte("v4-"+strconv.Itoa(i)))); err != nil {
			t.Fatal(err)
		}
	}
	runNode(t, script, 60*time.Second, "send", c.Broker(0).GrpcAddr(), "TMIX", "5", "v5")
	got4.waitDistinct(t, 10, 60*time.Second)
	lines := runNode(t, script, 90*time.Second, "consume", c.Broker(0).GrpcAddr(), "G5MIX", "TMIX", "10", "60")
	seen5 := map[string]bool{}
	for _, l := range lines {
		if l.Received != "" {
			seen5[l.Body] = true
		}
	}
	for i := 1; i <= 5; i++ {
		for _, b := range []string{"v4-" + strconv.Itoa(i), "v5-" + strconv.Itoa(i)} {
			if !got4.has(b) {
				t.Errorf("the 4.x consumer did not see %s", b)
			}
			if !seen5[b] {
				t.Errorf("the 5.x consumer did not see %s", b)
			}
		}
	}
}

// TestNodePushConsumer: the Node.js PushConsumer (QueryAssignment, receive, ack): a message whose first
// delivery fails comes back (the client's ChangeInvisibleDuration) and is consumed; in an ordered group with
// one retry, a message that always fails goes to the dead-letter queue (ForwardMessageToDeadLetterQueue) and
// the group's next message follows.
func TestNodePushConsumer(t *testing.T) {
	script := nodeScript(t)
	c := cluster.Start(t, cluster.Options{})
	// The endpoint in cluster mode with receives held 2 s at most: the client's shutdown waits for its held
	// receive, 20 s with the default.
	pnc := nativeClient(t, c)
	px := startProxy(t, proxy.Options{Client: pnc, MaxLongPolling: 2 * time.Second})
	endpoint := px.Addr()
	createTopic(t, c, "TPUSH", 2)
	runNode(t, script, 60*time.Second, "send", endpoint, "TPUSH", "3", "push")
	lines := runNode(t, script, 90*time.Second, "push", endpoint, "GPUSH", "TPUSH", "3", "60", "")
	attempts := map[string][]int{}
	for _, l := range lines {
		if l.Received != "" {
			attempts[l.Body] = append(attempts[l.Body], l.Attempt)
		}
	}
	for i := 1; i <= 3; i++ {
		b := "push-" + strconv.Itoa(i)
		if a := attempts[b]; len(a) < 2 || a[0] != 1 || a[len(a)-1] < 2 {
			t.Errorf("%s was delivered with attempts %v, want a failed first and a later one", b, a)
		}
	}

	createTopic(t, c, "TPUSHF", 1)
	nc := nativeClient(t, c)
	body, _ := json.Marshal(protocol.SubscriptionGroupConfig{GroupName: "GPUSHF", ConsumeEnable: true, RetryQueueNums: 1,
		RetryMaxTimes: 1, ConsumeMessageOrderly: true})
	if _, err := nc.Call(context.Background(), c.Broker(0).Addr(), remoting.UpdateAndCreateSubscriptionGroup, nil, body); err != nil {
		t.Fatal(err)
	}
	runNode(t, script, 60*time.Second, "send", endpoint, "TPUSHF", "2", "fifo")
	runNode(t, script, 90*time.Second, "push", endpoint, "GPUSHF", "TPUSHF", "1", "60", "fifo-1")
	testutil.WaitFor(t, 20*time.Second, "fifo-1 is in the dead-letter queue", func() bool {
		r, err := nc.PullMessage(context.Background(), c.Broker(0).Addr(), &client.Pull{Group: "G_check", Topic: "%DLQ%GPUSHF",
			BrokerName: "broker-a", QueueID: 0, MaxNums: 8})
		return err == nil && len(r.Msgs) == 1 && string(r.Msgs[0].Body) == "fifo-1"
	})
}

// TestNodeClientAcrossRaftLeaderStop: the Node.js client sends through the proxy to a three-node Raft group
// while its leader is stopped (Close: it tries to hand leadership over first); every send the client saw
// acknowledged is received afterwards (sends during the election may fail; none acknowledged is lost).
func TestNodeClientAcrossRaftLeaderStop(t *testing.T) {
	script := nodeScript(t)
	c := cluster.Start(t, cluster.Options{RaftNodes: 3})
	leader := c.RaftMaster("broker-a")
	nc := nativeClient(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := nc.EnsureTopic(ctx, "TRAFT5", 2, nil); err != nil {
		t.Fatal(err)
	}
	nodeAcrossFailover(t, script, nc, "TRAFT5", 2, "broker-a", c.Broker(leader).Addr(), func() { c.StopBroker(leader) })
}

// TestNodeClientAcrossRaftLeaderKill9: the same with the leader of a group of child processes (SYNC_FLUSH)
// killed with SIGKILL: nothing the Node.js client saw acknowledged is lost.
func TestNodeClientAcrossRaftLeaderKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("starts broker processes")
	}
	script := nodeScript(t)
	c := cluster.Start(t, cluster.Options{NoBrokers: true})
	const group = "broker-k"
	nodes := startRaftChildren(t, c, group, "")
	w := newWireClient(t)
	m := raftChildMaster(t, c, w, group, "", nodes, "")
	raftCreateTopic(t, w, m.addr, "TKILL5")
	nc := nativeClient(t, c)
	nodeAcrossFailover(t, script, nc, "TKILL5", 4, group, m.addr, func() {
		if err := m.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = m.cmd.Wait()
		t.Logf("killed the leader %s; the new master is %s", m.addr, raftChildMaster(t, c, w, group, "", nodes, m.addr).addr)
	})
}

// nodeAcrossFailover runs v5client.js paced sends to topic (of queues queues) through a proxy in cluster
// mode on nc, calls fail once leader (the address of brokerName's master) holds ten of them, and checks that
// the client consumes every send it saw acknowledged.
func nodeAcrossFailover(t *testing.T, script string, nc *client.Client, topic string, queues int32, brokerName, leader string, fail func()) {
	t.Helper()
	px := startProxy(t, proxy.Options{Client: nc, RouteTTL: 500 * time.Millisecond})
	type result struct {
		lines          []nodeLine
		stdout, stderr string
		err            error
	}
	done := make(chan result, 1)
	go func() {
		lines, stdout, stderr, err := nodeCmd(script, 120*time.Second, "paced", px.Addr(), topic, "80", "raft", "50")
		done <- result{lines, stdout, stderr, err}
	}()
	testutil.WaitFor(t, 60*time.Second, "the first sends are stored", func() bool {
		held, err := queuesHold(nc, leader, brokerName, topic, queues)
		return err == nil && held >= 10
	})
	fail()
	r := <-done
	if r.stderr != "" {
		t.Logf("paced stderr:\n%s", r.stderr)
	}
	if r.err != nil {
		t.Fatalf("paced: %v\n%s", r.err, r.stdout)
	}
	acked := map[string]bool{}
	failed := 0
	for _, l := range r.lines {
		if l.Sent != "" {
			acked[l.Body] = true
		}
		if l.Failed != "" {
			failed++
		}
	}
	t.Logf("%d sends acknowledged, %d failed during the election", len(acked), failed)
	if len(acked) < 40 {
		t.Fatalf("only %d of 80 sends acknowledged", len(acked))
	}
	lines := runNode(t, script, 120*time.Second, "consume", px.Addr(), "G"+topic, topic, strconv.Itoa(len(acked)), "90")
	got := map[string]bool{}
	for _, l := range lines {
		if l.Received != "" {
			got[l.Body] = true
		}
	}
	for b := range acked {
		if !got[b] {
			t.Errorf("acknowledged %s was not received", b)
		}
	}
}
