package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	dto "github.com/prometheus/client_model/go"

	"github.com/rocketraft/rocketraft/app/cluster"
	"github.com/rocketraft/rocketraft/broker"
	"github.com/rocketraft/rocketraft/internal/metrics"
	"github.com/rocketraft/rocketraft/namesrv"
	"github.com/rocketraft/rocketraft/remoting"
)

// dashboardFiles are the Grafana dashboards deploy/ ships.
const dashboardGlob = "../deploy/grafana/*.json"

// seriesUse is what a dashboard asks of one metric: the labels its selectors match on (with the literal
// values of = matchers) and the labels it groups by.
type seriesUse struct {
	labels map[string]map[string]bool // label -> literal values required ("" entry: any value)
	where  []string                   // panel titles, for messages
}

var (
	selectorRE = regexp.MustCompile(`\b((?:rocketmq|go|process)_[a-zA-Z0-9_]+)\s*(\{[^}]*\})?`)
	matcherRE  = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*"([^"]*)"`)
	groupingRE = regexp.MustCompile(`\b(?:by|without)\s*\(([^)]*)\)`)
	labelValRE = regexp.MustCompile(`label_values\(\s*([a-zA-Z0-9_]+)(\{[^}]*\})?\s*,\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\)`)
)

// dashboardUses reads every query of a Grafana dashboard (panel targets, nested rows, templating queries)
// and returns, per metric name, what the queries need of it.
func dashboardUses(t *testing.T, path string) map[string]*seriesUse {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels     []json.RawMessage `json:"panels"`
		Templating struct {
			List []struct {
				Name  string          `json:"name"`
				Type  string          `json:"type"`
				Query json.RawMessage `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	uses := map[string]*seriesUse{}
	use := func(metric, where string) *seriesUse {
		u := uses[metric]
		if u == nil {
			u = &seriesUse{labels: map[string]map[string]bool{}}
			uses[metric] = u
		}
		u.where = append(u.where, where)
		return u
	}
	need := func(u *seriesUse, label, value string) {
		if u.labels[label] == nil {
			u.labels[label] = map[string]bool{}
		}
		u.labels[label][value] = true
	}
	addExpr := func(expr, where string) {
		var inExpr []*seriesUse
		for _, m := range selectorRE.FindAllStringSubmatch(expr, -1) {
			u := use(m[1], where)
			inExpr = append(inExpr, u)
			for _, mm := range matcherRE.FindAllStringSubmatch(m[2], -1) {
				value := ""
				if mm[2] == "=" && !strings.Contains(mm[3], "$") {
					value = mm[3]
				}
				need(u, mm[1], value)
			}
		}
		for _, g := range groupingRE.FindAllStringSubmatch(expr, -1) {
			for _, label := range strings.Split(g[1], ",") {
				if label = strings.TrimSpace(label); label != "" {
					for _, u := range inExpr {
						need(u, label, "")
					}
				}
			}
		}
		for _, lv := range labelValRE.FindAllStringSubmatch(expr, -1) {
			need(use(lv[1], where), lv[3], "")
		}
	}
	var walk func(panels []json.RawMessage)
	walk = func(panels []json.RawMessage) {
		for _, p := range panels {
			var panel struct {
				Title   string            `json:"title"`
				Panels  []json.RawMessage `json:"panels"`
				Targets []struct {
					Expr string `json:"expr"`
				} `json:"targets"`
			}
			if err := json.Unmarshal(p, &panel); err != nil {
				t.Fatalf("%s: panel: %v", path, err)
			}
			for _, target := range panel.Targets {
				addExpr(target.Expr, panel.Title)
			}
			walk(panel.Panels)
		}
	}
	walk(dash.Panels)
	for _, v := range dash.Templating.List {
		if v.Type != "query" {
			continue
		}
		var q struct {
			Query string `json:"query"`
		}
		var s string
		if json.Unmarshal(v.Query, &s) == nil {
			addExpr(s, "variable "+v.Name)
		} else if json.Unmarshal(v.Query, &q) == nil {
			addExpr(q.Query, "variable "+v.Name)
		}
	}
	return uses
}

// mergeScrapes unions the families of several endpoints.
func mergeScrapes(scrapes ...metrics.Families) metrics.Families {
	out := metrics.Families{}
	for _, f := range scrapes {
		for name, fam := range f {
			merged := out[name]
			if merged == nil {
				merged = &dto.MetricFamily{Name: fam.Name, Help: fam.Help, Type: fam.Type}
				out[name] = merged
			}
			merged.Metric = append(merged.Metric, fam.Metric...)
		}
	}
	return out
}

// promLabels are added by Prometheus itself to every scraped series.
var promLabels = map[string]bool{"instance": true, "job": true}

// rareValues are label values the dashboard filters on that only appear when something goes wrong.
var rareValues = map[string]bool{"result=write_channel_failed": true}

// checkDashboard reports every metric the dashboard queries that fams do not have, and every label (and
// literal = value) it needs that no sample of the metric carries.
func checkDashboard(t *testing.T, path string, fams metrics.Families) {
	uses := dashboardUses(t, path)
	if len(uses) < 20 {
		t.Fatalf("%s: only %d metrics found in its queries", path, len(uses))
	}
	names := make([]string, 0, len(uses))
	for name := range uses {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		u := uses[name]
		fam, histogramPart := fams[name], ""
		if fam == nil {
			for _, suffix := range []string{"_bucket", "_count", "_sum"} {
				if base, ok := strings.CutSuffix(name, suffix); ok && fams[base] != nil &&
					fams[base].GetType() == dto.MetricType_HISTOGRAM {
					fam, histogramPart = fams[base], suffix
				}
			}
		}
		if fam == nil {
			t.Errorf("%s: %s (panels %v) is not exported", filepath.Base(path), name, u.where)
			continue
		}
		for label, values := range u.labels {
			if promLabels[label] || (label == "le" && histogramPart == "_bucket") {
				continue
			}
			seen := map[string]bool{}
			for _, m := range fam.GetMetric() {
				for _, lp := range m.GetLabel() {
					if lp.GetName() == label {
						seen[lp.GetValue()] = true
					}
				}
			}
			if len(seen) == 0 {
				t.Errorf("%s: %s has no label %s (panels %v)", filepath.Base(path), name, label, u.where)
				continue
			}
			for v := range values {
				if v != "" && !seen[v] && !rareValues[label+"="+v] {
					t.Errorf("%s: %s has no sample with %s=%q (values %v; panels %v)", filepath.Base(path), name, label, v,
						keys(seen), u.where)
				}
			}
		}
	}
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestDashboardSeriesExported: the Grafana dashboard deploy/ ships queries only series that running servers
// export, with the labels (and label values) it filters and groups by. The official Go client drives
// traffic that reaches every panel: sends, consumption with one message dead-lettered, a committed and a
// rolled-back transaction, a timer message; against a master with a slave and a name server, then a
// three-node Raft group.
func TestDashboardSeriesExported(t *testing.T) {
	paths, err := filepath.Glob(dashboardGlob)
	if err != nil || len(paths) == 0 {
		t.Fatalf("no dashboard under %s: %v", dashboardGlob, err)
	}
	classic := classicMetricsAfterTraffic(t)
	raft := raftMetricsAfterTraffic(t)
	fams := mergeScrapes(append(classic, raft...)...)
	for _, path := range paths {
		checkDashboard(t, path, fams)
	}
}

// classicMetricsAfterTraffic scrapes a master, its slave and the name server after the traffic.
func classicMetricsAfterTraffic(t *testing.T) []metrics.Families {
	ports := map[int]int{}
	var nsPort int
	c := cluster.Start(t, cluster.Options{Slaves: 1,
		Configure: func(i int, cfg *broker.Config) {
			cfg.MetricsPort = cluster.FreePort(t)
			ports[i] = cfg.MetricsPort
			cfg.Replication.HASendHeartbeatInterval = 200
		},
		ConfigureNamesrv: func(_ int, cfg *namesrv.Config) {
			cfg.MetricsPort = cluster.FreePort(t)
			nsPort = cfg.MetricsPort
		},
	})
	const topic, group = "DashTopic", "DashGroup"
	createTopic(t, c, topic, 2)
	// A subscription group created by an admin tool (mqadmin updateSubGroup), for the creation time panel.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	resp, err := newWireClient(t).Invoke(ctx, c.Broker(0).Addr(), remoting.NewRequest(remoting.UpdateAndCreateSubscriptionGroup,
		nil, []byte(`{"groupName":"DashAdminGroup","consumeEnable":true,"retryQueueNums":1,"retryMaxTimes":16}`)))
	cancel()
	if err != nil || resp.Code != int32(remoting.Success) {
		t.Fatalf("UPDATE_AND_CREATE_SUBSCRIPTIONGROUP: %v %v", err, resp)
	}
	p := newProducer(t, c)
	sendN(t, p, topic, "dash", 10)

	// A consumer that gives up on "dash-0" at once (maxReconsumeTimes 0: straight to the dead letter queue).
	got := newReceived()
	var failed atomic.Bool
	pc := newPushConsumer(t, c, group, consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
		consumer.WithMaxReconsumeTimes(0))
	err = pc.Subscribe(topic, consumer.MessageSelector{}, func(ctx context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		if string(msgs[0].Body) == "dash-0" && failed.CompareAndSwap(false, true) {
			return consumer.ConsumeRetryLater, nil
		}
		got.add(msgs...)
		return consumer.ConsumeSuccess, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := pc.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pc.Shutdown() })

	// Transactions: one committed, one rolled back.
	tp, err := rocketmq.NewTransactionProducer(&txListener{checked: map[string]int{}},
		producer.WithNsResolver(primitive.NewPassthroughResolver(c.NamesrvAddrs())),
		producer.WithGroupName("PG_dash_tx"), producer.WithInstanceName(instance("tx")), producer.WithRetry(1))
	if err != nil {
		t.Fatal(err)
	}
	if err := tp.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tp.Shutdown() })
	for _, body := range []string{"commit", "rollback"} {
		if _, err := tp.SendMessageInTransaction(context.Background(), primitive.NewMessage(topic, []byte(body))); err != nil {
			t.Fatalf("%s: %v", body, err)
		}
	}
	// A timer message due in three seconds (one due within a second is stored for delivery at once).
	m := primitive.NewMessage(topic, []byte("timed"))
	m.WithDelayTimestamp(time.Now().Add(3 * time.Second))
	if _, err := p.SendSync(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	cluster.Eventually(t, 30*time.Second, func() bool { return got.has("timed") && got.has("commit") && got.distinct() >= 9+2 },
		"the consumer to get the sends, the committed transaction and the timer message")
	cluster.Eventually(t, 45*time.Second, func() bool {
		f := scrapeAt(t, ports[0])
		lag, ok := f.Value("rocketmq_ha_slave_lag_bytes")
		dlq := f.Sum("rocketmq_send_to_dlq_messages_total", "consumer_group", group)
		producers := f.Sum("rocketmq_producer_connections")
		return ok && lag == 0 && dlq == 1 && producers >= 1
	}, "the slave caught up, dash-0 in the dead letter queue, a producer heartbeat (every 30 s)")
	return []metrics.Families{scrapeAt(t, ports[0]), scrapeAt(t, ports[1]), scrapeAt(t, nsPort)}
}

// raftMetricsAfterTraffic scrapes the nodes of a three-node Raft group after sends.
func raftMetricsAfterTraffic(t *testing.T) []metrics.Families {
	var ports []int
	c := cluster.Start(t, cluster.Options{RaftNodes: 3, Configure: func(_ int, cfg *broker.Config) {
		cfg.MetricsPort = cluster.FreePort(t)
		ports = append(ports, cfg.MetricsPort)
	}})
	const topic = "DashRaft"
	raftCreateTopic(t, newWireClient(t), c.Broker(c.RaftMaster("broker-a")).Addr(), topic)
	c.WaitTopicRoute(topic)
	sendN(t, newProducer(t, c), topic, "raft", 5)
	var out []metrics.Families
	for _, port := range ports {
		out = append(out, scrapeAt(t, port))
	}
	return out
}
