package console_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/rocketraft/rocketraft/app/cluster"
	"github.com/rocketraft/rocketraft/broker"
	"github.com/rocketraft/rocketraft/internal/testutil"
	"github.com/rocketraft/rocketraft/remoting"
	"github.com/rocketraft/rocketraft/tools/admin"
	"github.com/rocketraft/rocketraft/tools/bench"
	"github.com/rocketraft/rocketraft/tools/console"
)

// The console's pages in headless Chromium, driven with chromedp, against an in-process cluster. The tests
// skip when chromiumPath is absent (Debian: apt-get install chromium). Every test saves screenshots of the
// pages it checks in the folder $CONSOLE_SCREENSHOTS names (created when missing), else in its temp folder,
// and logs where: CONSOLE_SCREENSHOTS=/tmp/shots go test ./tools/console -run Browser.

const (
	chromiumPath  = "/usr/bin/chromium"
	screenshotEnv = "CONSOLE_SCREENSHOTS"
	// pageTimeout bounds every wait on a page's figures: they come from the cluster, and the pages refresh
	// themselves every sample interval.
	pageTimeout = 30 * time.Second
)

func TestMain(m *testing.M) {
	rlog.SetLogLevel("error")
	code := m.Run()
	if chromium.cancel != nil {
		chromium.cancel()
	}
	os.Exit(code)
}

// chromium is the headless Chromium the tests share, each in a tab of its own: it is started by the first test
// that asks (a start costs seconds) and closed by TestMain.
var chromium struct {
	once   sync.Once
	ctx    context.Context // a chromedp context on the started browser
	cancel context.CancelFunc
	err    error
}

// startChromium starts the shared browser once.
func startChromium() (context.Context, error) {
	chromium.once.Do(func() {
		opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromiumPath), chromedp.NoSandbox,
			chromedp.WindowSize(1280, 900), chromedp.Flag("lang", "en-US"))
		allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
		ctx, cancel := chromedp.NewContext(allocCtx)
		chromium.ctx, chromium.cancel = ctx, func() {
			cancel()
			cancelAlloc()
		}
		// The first action starts the browser, which lives as long as that action's context: ctx itself.
		chromium.err = chromedp.Do(ctx)
	})
	return chromium.ctx, chromium.err
}

// browser is one Chromium tab on a console.
type browser struct {
	t     *testing.T
	ctx   context.Context
	base  string // http://host:port/
	shots string // the screenshot folder
}

// newBrowser opens a tab of the shared Chromium on the console at addr, closed at cleanup.
func newBrowser(t *testing.T, addr string) *browser {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Skipf("the browser tests need Chromium at %s (Debian: apt-get install chromium): %v", chromiumPath, err)
	}
	shots := os.Getenv(screenshotEnv)
	if shots == "" {
		shots = t.TempDir()
	}
	shots = filepath.Join(shots, t.Name())
	if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatalf("%s: %v", screenshotEnv, err)
	}
	browserCtx, err := startChromium()
	if err != nil {
		t.Fatalf("start Chromium: %v", err)
	}
	ctx, cancel := chromedp.NewContext(browserCtx) // a tab of its own, closed by cancel
	b := &browser{t: t, ctx: ctx, base: "http://" + addr + "/", shots: shots}
	// Every uncaught JavaScript exception of the tab (a broken page, an unhandled promise rejection) fails
	// the test at its end.
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		uncaught []string
	)
	events := chromedp.Events(ctx, runtime.ExceptionThrown)
	wg.Go(func() {
		for ev, err := range events {
			if err != nil {
				return
			}
			d := ev.ExceptionDetails
			msg := fmt.Sprintf("%s (%s:%d:%d)", d.Text, d.URL, d.LineNumber+1, d.ColumnNumber+1)
			if d.Exception != nil {
				msg += ": " + d.Exception.Description
			}
			mu.Lock()
			uncaught = append(uncaught, msg)
			mu.Unlock()
		}
	})
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		for _, e := range uncaught {
			t.Errorf("uncaught JavaScript exception: %s", e)
		}
	})
	if err := chromedp.Do(ctx, chromedp.Navigate(b.base)); err != nil {
		t.Fatalf("open a tab on the console: %v", err)
	}
	t.Logf("screenshots in %s", shots)
	return b
}

// do runs steps within pageTimeout and fails the test (with a screenshot of the page) if one fails.
func (b *browser) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, pageTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		b.fail("%s: %v", what, err)
	}
}

// run runs one action within pageTimeout and returns its value; it fails the test as do.
func run[T any](b *browser, what string, a chromedp.Action[T]) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, pageTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		b.fail("%s: %v", what, err)
	}
	return v
}

// fail saves a screenshot and the page's text, then fails the test.
func (b *browser) fail(format string, args ...any) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
	defer cancel()
	if png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)); err == nil {
		path := filepath.Join(b.shots, "FAILED.png")
		_ = os.WriteFile(path, png, 0o644)
		b.t.Logf("screenshot at the failure: %s", path)
	}
	if text, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`)); err == nil {
		b.t.Logf("page at the failure:\n%s", text)
	}
	b.t.Fatalf(format, args...)
}

// open shows the console's page at hash (as "#/topics").
func (b *browser) open(hash string) {
	b.t.Helper()
	b.do("open "+hash, chromedp.Navigate(b.base+hash))
}

// waitJS polls the JavaScript expression cond (a boolean) every 100 ms until it holds, for up to pageTimeout.
func (b *browser) waitJS(what, cond string) {
	b.t.Helper()
	deadline := time.Now().Add(pageTimeout)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		ctx, cancel := context.WithTimeout(b.ctx, pageTimeout)
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](cond))
		cancel()
		if err == nil && ok {
			return
		}
		if time.Now().After(deadline) {
			b.fail("waited %v for %s (%s): last error %v", pageTimeout, what, cond, err)
		}
		<-tick.C
	}
}

// text is the text of the first node that matches the CSS selector, once there is one. It is read in one
// evaluation: pages that refresh themselves replace their nodes every sample interval.
func (b *browser) text(sel string) string {
	b.t.Helper()
	b.waitJS("a node "+sel, fmt.Sprintf(`!!document.querySelector(%q)`, sel))
	return run(b, "text of "+sel, chromedp.Evaluate[string](fmt.Sprintf(`(document.querySelector(%q) || {innerText: ''}).innerText`, sel)))
}

// number evaluates a JavaScript expression to a float.
func (b *browser) number(expr string) float64 {
	b.t.Helper()
	return run(b, "evaluate "+expr, chromedp.Evaluate[float64](expr))
}

// screenshot saves the whole page as name.png.
func (b *browser) screenshot(name string) {
	b.t.Helper()
	png := run(b, "screenshot "+name, chromedp.FullScreenshot(100))
	if err := os.WriteFile(filepath.Join(b.shots, name+".png"), png, 0o644); err != nil {
		b.t.Fatal(err)
	}
}

// confirmAll makes the page's confirmation questions (window.confirm) answer yes.
func (b *browser) confirmAll() {
	b.t.Helper()
	run(b, "answer confirmations", chromedp.Evaluate[bool](`(window.confirm = () => true, true)`))
}

// setAccount gives the page an admin account through the header's dialog.
func (b *browser) setAccount(accessKey, secretKey string) {
	b.t.Helper()
	b.do("set the admin account",
		chromedp.Click(chromedp.CSS(`#account-button`)),
		chromedp.WaitVisible(chromedp.CSS(`#account-dialog`)),
		chromedp.SetValue(chromedp.CSS(`#account-access-key`), accessKey),
		chromedp.SetValue(chromedp.CSS(`#account-secret-key`), secretKey),
		chromedp.Click(chromedp.CSS(`#account-form button[value=save]`)),
		chromedp.WaitNotVisible(chromedp.CSS(`#account-dialog`)))
	b.waitJS("the account in the header", fmt.Sprintf(`document.getElementById('account-button').textContent === 'Admin: ' + %q`, accessKey))
}

// createTopic fills the topics page's create form and submits it.
func (b *browser) createTopic(topic string, queues int) {
	b.t.Helper()
	b.open("#/topics")
	q := strconv.Itoa(queues)
	b.do("fill the create form",
		chromedp.WaitVisible(chromedp.CSS(`#create-topic-form`)),
		chromedp.SetValue(chromedp.CSS(`#create-topic-form input[name=topic]`), topic),
		chromedp.SetValue(chromedp.CSS(`#create-topic-form input[name=readQueues]`), q),
		chromedp.SetValue(chromedp.CSS(`#create-topic-form input[name=writeQueues]`), q),
		chromedp.Click(chromedp.CSS(`#create-topic-form button[type=submit]`)))
}

// startConsole serves the console for the cluster's name servers, signing reads with creds, until cleanup.
func startConsole(t *testing.T, c *cluster.Cluster, creds remoting.Credentials) *console.Server {
	t.Helper()
	return startConsoleWith(t, c, creds, func(*console.Config) {})
}

// startConsoleWith is startConsole with the configuration changed by tune first.
func startConsoleWith(t *testing.T, c *cluster.Cluster, creds remoting.Credentials, tune func(*console.Config)) *console.Server {
	t.Helper()
	log := cluster.TestLogger(t, slog.LevelWarn)
	client := admin.NewClient(c.NamesrvAddrs(), 5*time.Second, creds, log)
	// Samples (and page refreshes) every 250 ms: the pages' figures follow the cluster within a second.
	cfg := console.Config{Listen: "127.0.0.1:0", Source: admin.NewConsoleSource(client, log), Logger: log,
		SampleInterval: 250 * time.Millisecond, History: 2 * time.Minute}
	tune(&cfg)
	srv, err := console.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Errorf("close the console: %v", err)
		}
		_ = client.Close()
	})
	return srv
}

// startProducer is an official Go client producer of group on the cluster, shut down at cleanup.
func startProducer(t *testing.T, c *cluster.Cluster, group string) rocketmq.Producer {
	t.Helper()
	p, err := rocketmq.NewProducer(producer.WithNsResolver(primitive.NewPassthroughResolver(c.NamesrvAddrs())),
		producer.WithGroupName(group), producer.WithInstanceName(fmt.Sprintf("%s-%d", group, os.Getpid())),
		producer.WithRetry(2), producer.WithSendMsgTimeout(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Shutdown() })
	return p
}

// sendOrders sends n messages "order i" with key order-i and tag TagA to topic.
func sendOrders(t *testing.T, p rocketmq.Producer, topic string, n int) {
	t.Helper()
	for i := range n {
		msg := primitive.NewMessage(topic, []byte(fmt.Sprintf("order %d", i))).WithTag("TagA").
			WithKeys([]string{fmt.Sprintf("order-%d", i)})
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		res, err := p.SendSync(ctx, msg)
		cancel()
		if err != nil || res.Status != primitive.SendOK {
			t.Fatalf("send %d: %v %v", i, res, err)
		}
	}
}

// lagOnPage is the group page's total lag (-1 until the page shows one).
const lagOnPage = `(() => { const e = document.getElementById('lag-total'); return e ? Number(e.dataset.lag) : -1; })()`

// TestBrowserConsole opens every page against a cluster with traffic: the cluster, a topic created from the
// topics page, its route and queues, messages found by key, by id and by time with their body as text and
// hex, a consumer group whose lag is reset from its page and then falls as it consumes, the groups list,
// the producers, and the throughput plots.
func TestBrowserConsole(t *testing.T) {
	t.Parallel() // each has its own cluster and tab; most of their time is waiting on pages
	c := cluster.Start(t, cluster.Options{})
	brokerAddr := c.Broker(0).Addr()
	srv := startConsole(t, c, remoting.Credentials{})
	b := newBrowser(t, srv.Addr())

	// Cluster: the broker with its role, address and version.
	b.open("#/cluster")
	b.waitJS("the broker row", fmt.Sprintf(`!!document.querySelector('#cluster-tables tr[data-addr=%q]')`, brokerAddr))
	if row := b.text(fmt.Sprintf(`#cluster-tables tr[data-addr=%q]`, brokerAddr)); !strings.Contains(row, "ASYNC_MASTER") ||
		!strings.Contains(row, "broker-a") || !strings.Contains(row, "V4_9_4") || !strings.Contains(row, "up") {
		t.Fatalf("broker row: %q", row)
	}

	// Topics: create one from the page; it is then listed, and the search finds it.
	const topic, group, producerGroup, n = "BrowserOrders", "BrowserGroup", "BrowserProducer", 40
	b.createTopic(topic, 4)
	b.waitJS("the creation's notice", `!!document.querySelector('#create-topic-form .notice.ok')`)
	if got := b.text(`#create-topic-form .notice`); !strings.Contains(got, "Topic "+topic+" created on "+brokerAddr) {
		t.Fatalf("create notice: %q", got)
	}
	b.do("search the topics", chromedp.SendKeys(chromedp.CSS(`#topic-search`), "browser"))
	b.waitJS("the new topic, alone in the search", fmt.Sprintf(
		`document.querySelectorAll('#topics-table tbody tr').length === 1 && !!document.querySelector('#topics-table tr[data-topic=%q]')`, topic))
	b.screenshot("topics")

	// Traffic: an official producer sends n keyed messages.
	c.WaitTopicRoute(topic)
	p := startProducer(t, c, producerGroup)
	sendOrders(t, p, topic, n)
	// SEND_OK from an ASYNC_MASTER means stored, not yet in the ConsumeQueues and the key index: the broker's
	// dispatch builds them right after (and creates a queue's ConsumeQueue file with its first message), while
	// the topic page loads its figures once. A page opened at once showed 1 of the 40 (make test, then most
	// reruns of this test on 2026-12-04, on that day's commits and the previous day's; the dispatch was up to
	// 37 ms behind the last SEND_OK): wait for the dispatch, as a user would see the page after it.
	st := c.Broker(0).Store()
	testutil.WaitFor(t, pageTimeout, "the broker's dispatch of the sends", func() bool { return st.DispatchBehindBytes() == 0 })

	// The topic's page: route and per-queue offsets adding up to n.
	b.open("#/topic/" + topic)
	b.waitJS("the queue total", fmt.Sprintf(`(document.querySelector('#queues-table tfoot')||{}).textContent === 'Total%d'`, n))
	if rows := b.number(`document.querySelectorAll('#queues-table tbody tr').length`); rows != 4 {
		t.Fatalf("queues table: %v rows, want 4", rows)
	}
	if route := b.text(`#route-table tbody`); !strings.Contains(route, "0="+brokerAddr) || !strings.Contains(route, "RW") {
		t.Fatalf("route: %q", route)
	}
	b.screenshot("topic")

	// Messages by key: one hit; its page shows the body as text and hex, and the properties.
	b.open("#/messages?mode=key")
	b.do("search by key",
		chromedp.WaitVisible(chromedp.CSS(`#message-search input[name=key]`)),
		chromedp.SetValue(chromedp.CSS(`#message-search input[name=topic]`), topic),
		chromedp.SetValue(chromedp.CSS(`#message-search input[name=key]`), "order-7"),
		chromedp.Click(chromedp.CSS(`#message-search button[type=submit]`)))
	b.waitJS("the message found by key", `document.querySelectorAll('#messages-table tbody tr[data-keys="order-7"]').length === 1`)
	b.screenshot("messages-by-key")
	b.do("open the message", chromedp.Click(chromedp.CSS(`#messages-table tbody tr a`)))
	b.waitJS("the message's body", `(document.getElementById('message-body')||{}).textContent === 'order 7'`)
	offsetID := b.text(`#message-id`)
	if props := b.text(`#properties-table`); !strings.Contains(props, "KEYS") || !strings.Contains(props, "order-7") {
		t.Fatalf("properties: %q", props)
	}
	b.do("show the body as hex", chromedp.Click(chromedp.CSS(`#body-hex`)))
	b.waitJS("the hex dump", `document.getElementById('message-body').textContent.includes('6f 72 64 65 72 20 37')`) // "order 7"

	// By id: the form leads to the same message.
	b.open("#/messages?mode=id")
	b.do("search by id",
		chromedp.WaitVisible(chromedp.CSS(`#message-search input[name=id]`)),
		chromedp.SetValue(chromedp.CSS(`#message-search input[name=id]`), offsetID),
		chromedp.Click(chromedp.CSS(`#message-search button[type=submit]`)))
	b.waitJS("the message found by id", `(document.getElementById('message-body')||{}).textContent === 'order 7'`)

	// By time: the last hour, at most 2 per queue: 8 of the 4 queues.
	b.open("#/messages?mode=time&topic=" + topic)
	b.do("search by time",
		chromedp.WaitVisible(chromedp.CSS(`#message-search input[name=max]`)),
		chromedp.SetValue(chromedp.CSS(`#message-search input[name=max]`), "2"),
		chromedp.Click(chromedp.CSS(`#message-search button[type=submit]`)))
	b.waitJS("the messages of the last hour", `document.querySelectorAll('#messages-table tbody tr[data-msgid]').length === 8`)

	// A consumer group: a member (our remoting client standing in for a client library) subscribes to the
	// topic, and the group consumes everything.
	member := startMember(t, brokerAddr, group, topic)
	consume(t, c, topic, group, n)
	b.open("#/group/" + group)
	b.waitJS("lag 0 after consuming everything", lagOnPage+` === 0`)
	if got := b.text(`#member-count`); got != "1" {
		t.Fatalf("members: %q", got)
	}
	if got := b.text(`#members-table tbody`); !strings.Contains(got, member) {
		t.Fatalf("members table: %q, want %s", got, member)
	}

	// Reset by time from the page (the form's default: an hour ago, before every message): lag n. Then the
	// group consumes half, and the rest: the lag on the page falls to n/2, then to 0.
	b.confirmAll()
	b.do("reset to an hour ago",
		chromedp.WaitVisible(chromedp.CSS(`#reset-form`)),
		chromedp.SetValue(chromedp.CSS(`#reset-form input[name=topic]`), topic),
		chromedp.Click(chromedp.CSS(`#reset-form button[type=submit]`)))
	b.waitJS("the reset's offsets", `document.querySelectorAll('#reset-result tbody tr').length === 4`)
	b.waitJS("lag n after the reset", fmt.Sprintf(`%s === %d`, lagOnPage, n))
	if foot := b.text(`#lag-table tfoot`); !strings.Contains(foot, strconv.Itoa(n)) {
		t.Fatalf("lag table total: %q", foot)
	}
	b.screenshot("group-lag")
	consume(t, c, topic, group, n/2)
	b.waitJS("lag n/2", fmt.Sprintf(`%s === %d`, lagOnPage, n/2))
	consume(t, c, topic, group, n/2)
	b.waitJS("lag 0", lagOnPage+` === 0`)
	// The plot followed: its line ends at 0 and went through n.
	b.waitJS("the lag plot at 0", `(document.querySelector('#group-lag-chart polyline')||{dataset:{}}).dataset.last === '0'`)
	if top := b.number(`Number(document.querySelector('#group-lag-chart polyline').dataset.max)`); top != n {
		t.Fatalf("lag plot's highest point %v, want %d", top, n)
	}
	b.screenshot("group")

	// The message's delivery trace: consumed by the group; NOT_ONLINE for a group that consumed it by pulls
	// alone (no member ever online, so no retry topic), with its offset.
	const pullGroup = "BrowserPullGroup"
	consume(t, c, topic, pullGroup, n)
	b.open("#/message/" + offsetID)
	b.waitJS("the delivery trace", `document.querySelectorAll('#trace-table tbody tr').length === 2`)
	consumed := fmt.Sprintf("\tgroup offset %d > message offset", n/4) // every queue's end
	if trace := b.text(`#trace-table tbody`); !strings.Contains(trace, group+"\tCONSUMED"+consumed) ||
		!strings.Contains(trace, pullGroup+"\tNOT_ONLINE"+consumed) || !strings.Contains(trace, "has no retry topic") {
		t.Fatalf("trace:\n%s", trace)
	}
	b.screenshot("message")

	// The groups list, with the lag plot of every group.
	b.open("#/groups")
	b.waitJS("the group in the list", fmt.Sprintf(`!!document.querySelector('#groups-table tr[data-group=%q]')`, group))
	b.waitJS("the lag plot", fmt.Sprintf(`!!document.querySelector('#lag-chart polyline[data-name=%q]')`, group))
	b.screenshot("groups")

	// The producers of the group on the topic's brokers.
	b.open(fmt.Sprintf("#/producers?topic=%s&group=%s", topic, producerGroup))
	b.waitJS("the producer", `document.querySelectorAll('#producers-table tbody tr td').length > 1`)
	if got := b.text(`#producers-table tbody`); !strings.Contains(got, "GO") {
		t.Fatalf("producers: %q", got)
	}
	b.screenshot("producers")
	b.open(fmt.Sprintf("#/producers?topic=%s&group=NoSuchProducer", topic))
	b.waitJS("no producer", `(document.querySelector('#producers-table td.empty')||{}).textContent === 'No producer of group NoSuchProducer is connected to the brokers of `+topic+`'`)

	// The cluster page's throughput plots have sampled the sends.
	b.open("#/cluster")
	b.waitJS("messages in, plotted", fmt.Sprintf(`Number((document.querySelector('#tps-in polyline[data-name$=%q]')||{dataset:{}}).dataset.max) > 0`, brokerAddr))
	b.screenshot("cluster")
}

// startMember makes our remoting client a member of group subscribed to topic on the broker at addr (a
// HEART_BEAT with the group's consumer data, which also makes the broker create the group's retry topic) and
// answers the broker's GET_CONSUMER_RUNNING_INFO as a consumer that holds no queue. It returns the member's
// client id. The consuming itself is consume's.
func startMember(t *testing.T, addr, group, topic string) string {
	t.Helper()
	return startMemberReporting(t, addr, group, topic, `{"properties":{},"statusTable":{},"subscriptionSet":[],"mqTable":{},"jstack":""}`)
}

// startMemberReporting is startMember answering GET_CONSUMER_RUNNING_INFO with report.
func startMemberReporting(t *testing.T, addr, group, topic, report string) string {
	t.Helper()
	clientID := "127.0.0.1@browser-test-member"
	rc := remoting.NewClient(remoting.ClientConfig{}, cluster.TestLogger(t, slog.LevelWarn))
	t.Cleanup(func() { _ = rc.Close() })
	rc.RegisterHandler(remoting.GetConsumerRunningInfo, func(*remoting.Command) *remoting.Command {
		resp := remoting.NewResponse(remoting.Success, "")
		resp.Body = []byte(report)
		return resp
	})
	body := fmt.Sprintf(`{"clientID":%q,"producerDataSet":[],"consumerDataSet":[{"groupName":%q,`+
		`"consumeType":"CONSUME_PASSIVELY","messageModel":"CLUSTERING","consumeFromWhere":"CONSUME_FROM_FIRST_OFFSET",`+
		`"subscriptionDataSet":[{"topic":%q,"subString":"*","subVersion":1}],"unitMode":false}]}`, clientID, group, topic)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := rc.Invoke(ctx, addr, remoting.NewRequest(remoting.HeartBeat, nil, []byte(body)))
	if err != nil || resp.Code != int32(remoting.Success) {
		t.Fatalf("heartbeat: %v %v", resp, err)
	}
	return clientID
}

// consume has group consume k messages of topic from its committed offsets (mqbench's native consumer,
// which commits as it pulls and when it stops).
func consume(t *testing.T, c *cluster.Cluster, topic, group string, k int) {
	t.Helper()
	cfg := bench.DefaultConsumerConfig()
	cfg.NamesrvAddrs, cfg.Topic, cfg.Group, cfg.Total, cfg.Threads, cfg.PullBatch = c.NamesrvAddrs(), topic, group, int64(k), 4, 8
	ctx, cancel := context.WithTimeout(context.Background(), pageTimeout)
	defer cancel()
	sum, err := bench.RunConsumer(ctx, cfg, bench.Options{Log: cluster.TestLogger(t, slog.LevelWarn)})
	if err != nil {
		t.Fatalf("consume %d of %s as %s: %v", k, topic, group, err)
	}
	if sum.Messages != int64(k) {
		t.Fatalf("consumed %d of %s as %s, want %d", sum.Messages, topic, group, k)
	}
}

// aclFile is the brokers' plain_acl.yml of TestBrowserACL: an admin and a reader.
const aclFile = `accounts:
  - accessKey: rocketmqAdmin
    secretKey: adminSecret123
    admin: true
  - accessKey: rocketmqReader
    secretKey: readerSecret12
    defaultTopicPerm: SUB
    defaultGroupPerm: SUB
`

// startACLCluster starts a cluster whose brokers have ACL on with aclFile.
func startACLCluster(t *testing.T) *cluster.Cluster {
	t.Helper()
	aclPath := filepath.Join(t.TempDir(), "plain_acl.yml")
	if err := os.WriteFile(aclPath, []byte(aclFile), 0o600); err != nil {
		t.Fatal(err)
	}
	c := cluster.Start(t, cluster.Options{Configure: func(_ int, cfg *broker.Config) {
		cfg.ACL.AclEnable, cfg.ACL.AclFile = true, aclPath
		cfg.ACL.AccessKey, cfg.ACL.SecretKey = "rocketmqAdmin", "adminSecret123" // signs what the broker sends
	}})
	return c
}

// TestBrowserACL: with ACL on, the console reads with its own account (a reader: mqadmin console's
// --accessKey/--secretKey), and a change from the page needs the person's admin account: without one the page
// asks for it (401), with a reader's the broker's refusal shows (403), with an admin's the topic is created,
// updated and deleted.
func TestBrowserACL(t *testing.T) {
	t.Parallel() // each has its own cluster and tab; most of their time is waiting on pages
	c := startACLCluster(t)
	srv := startConsole(t, c, remoting.Credentials{AccessKey: "rocketmqReader", SecretKey: "readerSecret12"})
	b := newBrowser(t, srv.Addr())

	b.open("#/cluster")
	b.waitJS("ACL on", `(document.getElementById('cluster-summary')||{}).textContent.includes('ACL on')`)

	const topic = "AclTopic"
	notice := `((document.querySelector('#create-topic-form .notice.error')||{}).textContent || '')`
	b.createTopic(topic, 4)
	b.waitJS("the page asking for an admin account", notice+`.includes('needs an admin account')`)
	b.waitJS("the account button flagged", `document.getElementById('account-button').classList.contains('wanted')`)
	b.screenshot("need-account")

	b.setAccount("rocketmqReader", "readerSecret12")
	b.createTopic(topic, 4)
	b.waitJS("the broker's refusal", notice+`.startsWith('403: ')`)
	if got := b.text(`#create-topic-form .notice`); !strings.Contains(got, "rocketmqReader") {
		t.Fatalf("refusal: %q does not name the account", got)
	}
	b.screenshot("denied")

	b.setAccount("rocketmqAdmin", "adminSecret123")
	b.createTopic(topic, 4)
	b.waitJS("the topic created", `!!document.querySelector('#create-topic-form .notice.ok')`)
	c.WaitTopicRoute(topic)

	// Update (to 2 write queues) and delete from the topic's page, with the admin account.
	b.open("#/topic/" + topic)
	b.do("update the topic",
		chromedp.WaitVisible(chromedp.CSS(`#update-topic-form`)),
		chromedp.SetValue(chromedp.CSS(`#update-topic-form input[name=writeQueues]`), "2"),
		chromedp.Click(chromedp.CSS(`#update-topic-form button[type=submit]`)))
	b.waitJS("2 write queues in the route", `(document.querySelector('#route-table tbody tr td:nth-child(5)')||{}).textContent === '2'`)
	b.confirmAll()
	b.do("delete the topic", chromedp.Click(chromedp.CSS(`#delete-topic`)))
	b.waitJS("back on the topics page", `location.hash === '#/topics' && !!document.querySelector('#topics-table')`)
	b.waitJS("the topic gone", fmt.Sprintf(`!document.querySelector('#topics-table tr[data-topic=%q]')`, topic))
}

// TestBrowserRaft: with a three-node Raft group, the cluster page shows the Raft columns: nodes n0, n1 and n2
// in one term, one leader registered as brokerId 0 (the master) that every node names, and the followers
// registered as slaves.
func TestBrowserRaft(t *testing.T) {
	t.Parallel() // each has its own cluster and tab; most of their time is waiting on pages
	c := cluster.Start(t, cluster.Options{RaftNodes: 3})
	c.RaftMaster("broker-a")
	srv := startConsole(t, c, remoting.Credentials{})
	b := newBrowser(t, srv.Addr())

	b.open("#/cluster")
	// Read in one evaluation from the cells (Broker, ID, Role, Address, Version, In, Out, Disk, Raft group,
	// Node, Raft role, Term, Leader, ...): an election under way shows until the page's next refresh.
	b.waitJS("three Raft nodes that agree on one leader", `(() => {
		const rows = [...document.querySelectorAll('#cluster-tables tbody tr')].map((r) => [...r.cells].map((c) => c.innerText));
		const leaders = rows.filter((r) => r[10] === 'Leader');
		if (rows.length !== 3 || leaders.length !== 1) return false;
		const [l] = leaders;
		return l[1] === '0' && l[2].endsWith('MASTER') && rows.map((r) => r[9]).sort().join() === 'n0,n1,n2' &&
			rows.every((r) => r[8] === 'broker-a' && r[11] === l[11] && r[12] === l[9] && (r === l || (r[2] === 'SLAVE' && r[10] === 'Follower')));
	})()`)
	if !strings.Contains(b.text(`#cluster-summary`), "Raft mode") {
		t.Fatalf("summary: %q", b.text(`#cluster-summary`))
	}
	b.screenshot("cluster-raft")
}
