package console_test

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/chromedp/chromedp"

	"github.com/rocketraft/rocketraft/app/cluster"
	"github.com/rocketraft/rocketraft/broker"
	"github.com/rocketraft/rocketraft/client"
	"github.com/rocketraft/rocketraft/internal/testutil"
	"github.com/rocketraft/rocketraft/message"
	"github.com/rocketraft/rocketraft/remoting"
	"github.com/rocketraft/rocketraft/tools/admin"
)

// The operations pages in headless Chromium: a traced message's trace, consume directly, dead letters
// (TestBrowserTraceAndDLQ); subscription groups, broker config, a test message from the topic page, topic
// throughput and a consumer's running info (TestBrowserOps).

// tracedRuns counts the runs of TestBrowserTraceAndDLQ in this process (-count).
var tracedRuns atomic.Int32

// bodies counts the bodies an official push consumer was handed, safe for its goroutines.
type bodies struct {
	mu sync.Mutex
	n  map[string]int
}

func (b *bodies) count(body string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.n[body]
}

// startTracedConsumer is an official Go push consumer of group on topic with tracing on (to traceTopic),
// counting what it consumes, shut down at cleanup.
func startTracedConsumer(t *testing.T, c *cluster.Cluster, group, topic, traceTopic string) *bodies {
	t.Helper()
	got := &bodies{n: map[string]int{}}
	pc, err := rocketmq.NewPushConsumer(consumer.WithNsResolver(primitive.NewPassthroughResolver(c.NamesrvAddrs())),
		consumer.WithGroupName(group), consumer.WithInstance(group+"-consumer"),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
		consumer.WithTrace(&primitive.TraceConfig{TraceTopic: traceTopic, GroupName: group, NamesrvAddrs: c.NamesrvAddrs()}))
	if err != nil {
		t.Fatal(err)
	}
	err = pc.Subscribe(topic, consumer.MessageSelector{}, func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		got.mu.Lock()
		for _, m := range msgs {
			got.n[string(m.Body)]++
		}
		got.mu.Unlock()
		return consumer.ConsumeSuccess, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := pc.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pc.Shutdown() })
	return got
}

// nativeClient is our client on the cluster's name servers, closed at cleanup.
func nativeClient(t *testing.T, c *cluster.Cluster) *client.Client {
	t.Helper()
	cl := admin.NewClient(c.NamesrvAddrs(), 5*time.Second, remoting.Credentials{}, cluster.TestLogger(t, slog.LevelWarn))
	t.Cleanup(func() { _ = cl.Close() })
	return cl
}

// ensureTopic creates topic with 4 queues and waits for its route.
func ensureTopic(t *testing.T, c *cluster.Cluster, cl *client.Client, topic string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), pageTimeout)
	defer cancel()
	if _, err := cl.EnsureTopic(ctx, topic, 4, nil); err != nil {
		t.Fatal(err)
	}
	c.WaitTopicRoute(topic)
}

// TestBrowserTraceAndDLQ: the official Go client sends and consumes with tracing on, and the message's page
// shows its trace (the send, the group's SubBefore and SubAfter); from the same page the message is consumed
// again by the group's client (consume directly). Then two messages the group gave up on (its client sends
// them back with delay level -1, as after its last retry) are listed on the dead-letter page, viewed,
// exported, and resent to their topic, one and then all, and the group consumes them again.
func TestBrowserTraceAndDLQ(t *testing.T) {
	t.Parallel() // each has its own cluster and tab; most of their time is waiting on pages
	if tracedRuns.Add(1) > 1 {
		t.Skip("the official Go client keeps one trace client per process, bound to the first name servers it was " +
			"given (internal/trace.go: GetOrNewRocketMQClient answers nil for others): run this test once per process")
	}
	const traceTopic, topic, pg, group = "BrowserTrace", "BrowserTraced", "BrowserTracedProducer", "BrowserTracedGroup"
	c := cluster.Start(t, cluster.Options{Configure: func(_ int, cfg *broker.Config) {
		cfg.TraceTopicEnable, cfg.MsgTraceTopicName = true, traceTopic
	}})
	brokerAddr := c.Broker(0).Addr()
	c.WaitTopicRoute(traceTopic)
	cl := nativeClient(t, c)
	ensureTopic(t, c, cl, topic)
	srv := startConsole(t, c, remoting.Credentials{})
	b := newBrowser(t, srv.Addr())

	p, err := rocketmq.NewProducer(producer.WithNsResolver(primitive.NewPassthroughResolver(c.NamesrvAddrs())),
		producer.WithGroupName(pg), producer.WithInstanceName(pg), producer.WithRetry(2),
		producer.WithTrace(&primitive.TraceConfig{TraceTopic: traceTopic, GroupName: pg, NamesrvAddrs: c.NamesrvAddrs()}))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Shutdown() })
	send := func(body, key string) *primitive.SendResult {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		res, err := p.SendSync(ctx, primitive.NewMessage(topic, []byte(body)).WithTag("TagT").WithKeys([]string{key}))
		if err != nil || res.Status != primitive.SendOK {
			t.Fatalf("send %s: %v %v", body, res, err)
		}
		return res
	}
	traced := send("traced order", "traced-1")
	got := startTracedConsumer(t, c, group, topic, traceTopic)
	testutil.WaitFor(t, pageTimeout, "the traced message consumed", func() bool { return got.count("traced order") == 1 })

	// The trace: Pub by the producer group, then the consumer group's SubBefore and SubAfter (they reach the
	// trace topic asynchronously: the page is reopened until they are all there).
	b.open(fmt.Sprintf("#/message/%s?topic=%s", traced.OffsetMsgID, topic))
	b.do("the trace topic", chromedp.WaitVisible(chromedp.CSS(`#msgtrace-form input[name=traceTopic]`)),
		chromedp.SetValue(chromedp.CSS(`#msgtrace-form input[name=traceTopic]`), traceTopic))
	rows := func(typ, grp string) string {
		return fmt.Sprintf(`document.querySelectorAll('#msgtrace-table tbody tr[data-type=%q][data-group=%q]').length === 1`, typ, grp)
	}
	all := rows("Pub", pg) + " && " + rows("SubBefore", group) + " && " + rows("SubAfter", group)
	testutil.WaitFor(t, pageTimeout, "the Pub, SubBefore and SubAfter rows", func() bool {
		b.do("show the trace", chromedp.Click(chromedp.CSS(`#msgtrace-form button[type=submit]`)))
		b.waitJS("the trace table", `!!document.querySelector('#msgtrace-table') || !!document.querySelector('#msgtrace .notice')`)
		return b.number(`(`+all+`) ? 1 : 0`) == 1
	})
	if pub := b.text(`#msgtrace-table tr[data-type=Pub]`); !strings.Contains(pub, "success") || !strings.Contains(pub, "stored at "+brokerAddr) ||
		!strings.Contains(pub, traced.OffsetMsgID) {
		t.Fatalf("Pub row: %q", pub)
	}
	if after := b.text(`#msgtrace-table tr[data-type=SubAfter]`); !strings.Contains(after, "success") {
		t.Fatalf("SubAfter row: %q", after)
	}
	b.screenshot("message-trace")

	// Consume directly: the group's client (the only member, picked by the form) consumes it again.
	b.waitJS("the group's client in the form", `document.querySelectorAll('#consume-form select[name=clientId] option').length === 1`)
	b.do("consume now", chromedp.Click(chromedp.CSS(`#consume-form button[type=submit]`)))
	b.waitJS("the consumer's answer", `(document.querySelector('#consume-form .notice.ok')||{}).textContent?.startsWith('CR_SUCCESS')`)
	testutil.WaitFor(t, pageTimeout, "the message consumed a second time", func() bool { return got.count("traced order") == 2 })

	// Dead letters: two messages the group gives up on (CONSUMER_SEND_MSG_BACK with delay level -1).
	poison := []*primitive.SendResult{send("poison 1", "poison-1"), send("poison 2", "poison-2")}
	testutil.WaitFor(t, pageTimeout, "the poison messages consumed", func() bool { return got.count("poison 1") == 1 && got.count("poison 2") == 1 })
	for _, r := range poison {
		_, phy, err := message.DecodeOffsetMsgID(r.OffsetMsgID)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err = cl.Call(ctx, brokerAddr, remoting.ConsumerSendMsgBack, map[string]string{"group": group,
			"offset": strconv.FormatInt(phy, 10), "delayLevel": "-1", "originMsgId": r.MsgID, "originTopic": topic,
			"maxReconsumeTimes": "16"}, nil)
		cancel()
		if err != nil {
			t.Fatalf("send back %s: %v", r.MsgID, err)
		}
	}
	src := admin.NewConsoleSource(cl, nil)
	dlq := "%DLQ%" + group
	testutil.WaitFor(t, pageTimeout, "two dead letters stored", func() bool {
		msgs, err := src.MessagesByTime(context.Background(), dlq, 0, time.Now().Add(time.Minute).UnixMilli(), 64)
		return err == nil && len(msgs) == 2
	})

	now := time.Now().UnixMilli()
	b.open(fmt.Sprintf("#/dlq?group=%s&begin=%d&end=%d&max=64", group, now-3600_000, now+60_000))
	b.waitJS("the two dead letters", `document.querySelectorAll('#dlq-table tbody tr[data-offsetid]').length === 2`)
	if row := b.text(`#dlq-table tbody tr`); !strings.Contains(row, topic) || !strings.Contains(row, "poison 1") {
		t.Fatalf("dead-letter row: %q", row)
	}
	b.screenshot("dlq")

	// Export: the file the link downloads holds both, with their bodies.
	run(b, "fetch the export", chromedp.Evaluate[bool](`(fetch(document.getElementById('dlq-export').href)
		.then((r) => r.text().then((t) => { window.exported = r.headers.get('Content-Disposition') + '\n' + t; })), true)`))
	b.waitJS("the export", `typeof window.exported === 'string'`)
	exported := run(b, "read the export", chromedp.Evaluate[string](`window.exported`))
	if !strings.HasPrefix(exported, "attachment; filename=") || !strings.Contains(exported, poison[0].MsgID) ||
		!strings.Contains(exported, poison[1].MsgID) || !strings.Contains(exported, `"DLQ_ORIGIN_TOPIC": "`+topic+`"`) {
		t.Fatalf("export:\n%s", exported)
	}

	// View one: its page shows the body and where it came from.
	b.do("open the first dead letter", chromedp.Click(chromedp.CSS(`#dlq-table tbody tr a`)))
	b.waitJS("the dead letter's body", `(document.getElementById('message-body')||{}).textContent === 'poison 1'`)
	if props := b.text(`#properties-table`); !strings.Contains(props, "DLQ_ORIGIN_TOPIC") {
		t.Fatalf("properties: %q", props)
	}

	// Resend the first alone, then all: the group consumes them again from their topic.
	b.open(fmt.Sprintf("#/dlq?group=%s&begin=%d&end=%d&max=64", group, now-3600_000, now+60_000))
	b.waitJS("the two dead letters", `document.querySelectorAll('#dlq-table tbody tr[data-offsetid]').length === 2`)
	b.confirmAll()
	b.do("select the first", chromedp.Click(chromedp.CSS(`#dlq-table tbody tr:first-child input.dlq-select`)))
	b.do("resend it", chromedp.Click(chromedp.CSS(`#dlq-resend-selected`)))
	b.waitJS("one resent", `document.querySelectorAll('#dlq-resend-table tbody tr[data-ok=true]').length === 1`)
	if res := b.text(`#dlq-resend-table tbody`); !strings.Contains(res, topic) || !strings.Contains(res, "SEND_OK") {
		t.Fatalf("resend: %q", res)
	}
	testutil.WaitFor(t, pageTimeout, "poison 1 consumed again", func() bool { return got.count("poison 1") == 2 })
	b.do("resend all", chromedp.Click(chromedp.CSS(`#dlq-resend-all`)))
	b.waitJS("two resent", `document.querySelectorAll('#dlq-resend-table tbody tr[data-ok=true]').length === 2`)
	testutil.WaitFor(t, pageTimeout, "both consumed again", func() bool { return got.count("poison 1") == 3 && got.count("poison 2") == 2 })
	b.screenshot("dlq-resent")

	// The group's official Go client reports itself on its page. It cannot encode its report while one of its
	// one-minute rates is NaN (a stats item with a single 10-second snapshot: ~10 s after it first counts), and
	// then answers without a body, which the page says; the page refreshes itself until the report comes.
	b.open("#/group/" + group)
	b.clickNow("the member", `#members-table tbody a`)
	b.waitJS("the page answered", `!!document.getElementById('client-version') || !!document.querySelector('main .notice.error')`)
	testutil.WaitFor(t, 2*pageTimeout, "the official client's report", func() bool {
		return run(b, "the client version", chromedp.Evaluate[string](`(document.getElementById('client-version')||{}).textContent || ''`)) != ""
	})
	if v := b.text(`#client-version`); !strings.HasPrefix(v, "v2.") {
		t.Fatalf("client version %q, want the Go client's v2.x", v)
	}
	b.waitJS("its queues", fmt.Sprintf(`document.querySelectorAll('#client-queues tr[data-queue^="%s/"]').length === 4`, topic))
	if s := b.text(`#client-subscriptions tbody`); !strings.Contains(s, topic) {
		t.Fatalf("subscriptions: %q", s)
	}
	b.screenshot("client-official")
}

// clickNow clicks the first node that matches sel, once there is one, in one evaluation: a page that
// refreshes itself replaces its nodes between a wait and a click of chromedp's.
func (b *browser) clickNow(what, sel string) {
	b.t.Helper()
	b.waitJS("click "+what, fmt.Sprintf(`(() => { const e = document.querySelector(%q); if (!e) return false; e.click(); return true; })()`, sel))
}

// runningInfoBody is a consumer's GET_CONSUMER_RUNNING_INFO answer as the official Go client encodes it
// (internal/model.go ConsumerRunningInfo.Encode), for a client holding queue 1 of topic.
func runningInfoBody(topic string) string {
	return `{"properties":{"PROP_CLIENT_VERSION":"V4_9_4","PROP_CONSUME_TYPE":"CONSUME_PASSIVELY",` +
		`"PROP_CONSUMER_START_TIMESTAMP":"1700000000000"},` +
		`"statusTable":{"` + topic + `":{"pullRT":1.5,"pullTPS":12.25,"consumeRT":3,"consumeOKTPS":11,"consumeFailedTPS":0,"consumeFailedMsgs":2}},` +
		`"subscriptionSet":[{"topic":"` + topic + `","subString":"TagA || TagB","expressionType":"TAG","subVersion":1}],` +
		`"mqTable":{{"topic":"` + topic + `","brokerName":"broker-a","queueId":1}:{"commitOffset":7,"cachedMsgMinOffset":8,` +
		`"cachedMsgMaxOffset":9,"cachedMsgCount":2,"cachedMsgSizeInMiB":0,"locked":false,"lastPullTimestamp":1700000001000,` +
		`"lastConsumeTimestamp":1700000002000}}, "jstack":"" }`
}

// TestBrowserOps: subscription groups created, updated and deleted from their page; a broker's config from the
// cluster page; a test message sent from the topic page and found; the topic's throughput on the cluster
// page; a consumer client's running info (version, subscriptions, the queue it holds and its rates).
func TestBrowserOps(t *testing.T) {
	t.Parallel() // each has its own cluster and tab; most of their time is waiting on pages
	c := cluster.Start(t, cluster.Options{})
	brokerAddr := c.Broker(0).Addr()
	cl := nativeClient(t, c)
	srv := startConsole(t, c, remoting.Credentials{})
	b := newBrowser(t, srv.Addr())
	b.confirmAll()

	// Subscription groups: create with retry max 5, update to 3, delete.
	const sg = "BrowserSubGroup"
	subRow := fmt.Sprintf(`#subgroups-table tr[data-group=%q]`, sg)
	b.open("#/subgroups")
	b.do("create a subscription group",
		chromedp.WaitVisible(chromedp.CSS(`#create-subgroup-form`)),
		chromedp.SetValue(chromedp.CSS(`#create-subgroup-form input[name=groupName]`), sg),
		chromedp.SetValue(chromedp.CSS(`#create-subgroup-form input[name=retryMaxTimes]`), "5"),
		chromedp.Click(chromedp.CSS(`#create-subgroup-form button[type=submit]`)))
	b.waitJS("the creation's notice", `!!document.querySelector('#create-subgroup-form .notice.ok')`)
	b.waitJS("the group listed with retry max 5", fmt.Sprintf(`(document.querySelector('%s td:nth-child(5)')||{}).textContent === '5'`, subRow))
	b.screenshot("subgroups")
	b.do("edit it", chromedp.Click(chromedp.CSS(subRow+` button.subgroup-edit`)),
		chromedp.WaitVisible(chromedp.CSS(`#update-subgroup-form`)),
		chromedp.SetValue(chromedp.CSS(`#update-subgroup-form input[name=retryMaxTimes]`), "3"),
		chromedp.Click(chromedp.CSS(`#update-subgroup-form button[type=submit]`)))
	b.waitJS("retry max 3", fmt.Sprintf(`(document.querySelector('%s td:nth-child(5)')||{}).textContent === '3'`, subRow))
	b.do("delete it", chromedp.Click(chromedp.CSS(subRow+` button.subgroup-delete`)))
	b.waitJS("the deletion's notice", `!!document.querySelector('#subgroup-delete-result .notice.ok')`)
	b.waitJS("the group gone", fmt.Sprintf(`!!document.querySelector('#subgroups-table') && !document.querySelector('%s')`, subRow))

	// The broker's config, from its address on the cluster page.
	b.open("#/cluster")
	b.clickNow("the broker's address", fmt.Sprintf(`#cluster-tables tr[data-addr=%q] a.broker-config-link`, brokerAddr))
	b.waitJS("the broker's name in its config", `(document.querySelector('#broker-config-table tr[data-key=brokerName] td:nth-child(2)')||{}).textContent === 'broker-a'`)
	b.screenshot("broker-config")

	// A test message from the topic page, found by its key.
	const topic = "BrowserOpsTopic"
	ensureTopic(t, c, cl, topic)
	b.open("#/topic/" + topic)
	b.do("send a test message",
		chromedp.WaitVisible(chromedp.CSS(`#send-message-form`)),
		chromedp.SetValue(chromedp.CSS(`#send-message-form input[name=tags]`), "TagS"),
		chromedp.SetValue(chromedp.CSS(`#send-message-form input[name=keys]`), "page-key"),
		chromedp.SetValue(chromedp.CSS(`#send-message-form textarea[name=body]`), "hello from the page"),
		chromedp.Click(chromedp.CSS(`#send-message-form button[type=submit]`)))
	b.waitJS("the send's result", `(document.querySelector('#send-result .notice.ok')||{}).textContent?.startsWith('SEND_OK')`)
	b.do("open the sent message", chromedp.Click(chromedp.CSS(`#sent-message`)))
	b.waitJS("its body", `(document.getElementById('message-body')||{}).textContent === 'hello from the page'`)
	b.open("#/messages?mode=key&topic=" + topic + "&key=page-key")
	b.waitJS("found by its key", `document.querySelectorAll('#messages-table tbody tr[data-keys="page-key"]').length === 1`)

	// Its throughput on the cluster page: the topic stored a message in the last minute.
	b.open("#/cluster")
	b.waitJS("the topic's TPS", fmt.Sprintf(`Number((document.querySelector('#topic-tps-table tr[data-topic=%q]')||{dataset:{}}).dataset.in) > 0`, topic))
	b.waitJS("the topic's TPS plotted", fmt.Sprintf(`Number((document.querySelector('#tps-topics polyline[data-name=%q]')||{dataset:{}}).dataset.max) > 0`, topic))
	b.screenshot("cluster-topic-tps")

	// A consumer client's running info, from the group's members.
	const group = "BrowserOpsGroup"
	member := startMemberReporting(t, brokerAddr, group, topic, runningInfoBody(topic))
	b.open("#/group/" + group)
	b.clickNow("the member", `#members-table tbody a`)
	b.waitJS("the client's version", `(document.getElementById('client-version')||{}).textContent === 'V4_9_4'`)
	if got := b.text(`#client-id`); got != member {
		t.Fatalf("client page of %q, want %s", got, member)
	}
	b.waitJS("the queue it holds", fmt.Sprintf(`!!document.querySelector('#client-queues tr[data-queue="%s/broker-a/1"]')`, topic))
	if q := b.text(fmt.Sprintf(`#client-queues tr[data-queue="%s/broker-a/1"]`, topic)); !strings.Contains(q, "7\t2 (8–9)") {
		t.Fatalf("queue row: %q", q)
	}
	if s := b.text(`#client-subscriptions tbody`); !strings.Contains(s, "TagA || TagB") {
		t.Fatalf("subscriptions: %q", s)
	}
	if s := b.text(`#client-status tbody`); !strings.Contains(s, "12.25") || !strings.Contains(s, "11.00") {
		t.Fatalf("rates: %q", s)
	}
	b.screenshot("client")
}
