package admin

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/rocketraft/rocketraft/remoting"
)

// clusterRow is one broker in clusterList.
type clusterRow struct {
	Cluster     string  `json:"cluster"`
	BrokerName  string  `json:"brokerName"`
	BrokerID    int64   `json:"brokerId"`
	Addr        string  `json:"addr"`
	Version     string  `json:"version"`
	InTPS       float64 `json:"inTps"`
	OutTPS      float64 `json:"outTps"`
	SendQueue   string  `json:"sendThreadPoolQueueSize"`
	PullQueue   string  `json:"pullThreadPoolQueueSize"`
	PCWait      string  `json:"pageCacheLockTimeMills,omitempty"`
	Hours       float64 `json:"hoursOfMessages"`
	Space       float64 `json:"commitLogDiskRatio"`
	InYest      int64   `json:"inTotalYest"`
	OutYest     int64   `json:"outTotalYest"`
	InToday     int64   `json:"inTotalToday"`
	OutToday    int64   `json:"outTotalToday"`
	Unreachable string  `json:"error,omitempty"`
}

type clusterListResult struct {
	More    bool         `json:"-"`
	Brokers []clusterRow `json:"brokers"`
}

func (r *clusterListResult) writeText(w io.Writer) error {
	if r.More {
		tb := newTable("#Cluster Name", "#Broker Name", "#InTotalYest", "#OutTotalYest", "#InTotalToday", "#OutTotalToday")
		for _, b := range r.Brokers {
			tb.add(b.Cluster, b.BrokerName, b.InYest, b.OutYest, b.InToday, b.OutToday)
		}
		return tb.write(w)
	}
	tb := newTable("#Cluster Name", "#Broker Name", "#BID", "#Addr", "#Version", "#InTPS(LOAD)", "#OutTPS(LOAD)",
		"#PCWait(ms)", "#Hour", "#SPACE")
	for _, b := range r.Brokers {
		tb.add(b.Cluster, b.BrokerName, b.BrokerID, b.Addr, b.Version,
			fmt.Sprintf("%.2f(%s,-ms)", b.InTPS, b.SendQueue), fmt.Sprintf("%.2f(%s,-ms)", b.OutTPS, b.PullQueue),
			dash(b.PCWait), fmt.Sprintf("%.2f", b.Hours), fmt.Sprintf("%.4f", b.Space))
	}
	return tb.write(w)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// firstFloat is the first number of a "10s 60s 600s" TPS figure.
func firstFloat(s string) float64 {
	f, _ := strconv.ParseFloat(strings.Fields(s + " 0")[0], 64)
	return f
}

func num(m map[string]string, key string) int64 {
	n, _ := strconv.ParseInt(m[key], 10, 64)
	return n
}

func clusterListCmd() *command {
	return &command{name: "clusterList", desc: "List all of clusters", setup: func(f *flags) runFunc {
		var more bool
		var interval int
		var cluster string
		f.Switch(&more, "m", "moreStats", "Print more stats")
		f.String(&cluster, "c", "clusterName", "which cluster (default every cluster)", false)
		f.Int(&interval, "i", "interval", "print again every this many seconds, until interrupted", false)
		return func(ctx context.Context, r *runner) (result, error) {
			if interval < 0 {
				return nil, usagef("option -i (--interval) must not be negative")
			}
			return r.repeat(ctx, interval, func() (result, error) { return r.clusterList(ctx, cluster, more) })
		}
	}}
}

// repeat runs once and returns the result; with interval > 0 it prints each result and runs again every
// interval seconds until ctx ends or a run fails (the -i of clusterList and clusterRT).
func (r *runner) repeat(ctx context.Context, interval int, once func() (result, error)) (result, error) {
	for {
		res, err := once()
		if interval == 0 || err != nil {
			return res, err
		}
		if err := writeResult(r.env.Stdout, res, r.com.json); err != nil {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, nil
		case <-time.After(time.Duration(interval) * time.Second):
		}
	}
}

func (r *runner) clusterList(ctx context.Context, cluster string, more bool) (*clusterListResult, error) {
	ci, err := r.c.ClusterInfo(ctx)
	if err != nil {
		return nil, err
	}
	refs, err := brokers(ci, cluster, false)
	if err != nil {
		return nil, err
	}
	res := &clusterListResult{More: more, Brokers: []clusterRow{}}
	var errs []error
	now := time.Now().UnixMilli()
	for _, ref := range refs {
		row, _, err := r.brokerRow(ctx, ref, now)
		if err != nil {
			errs = append(errs, err)
		}
		res.Brokers = append(res.Brokers, row)
	}
	if len(errs) > 0 {
		return res, fmt.Errorf("%d of %d brokers did not answer: %w", len(errs), len(refs), errors.Join(errs...))
	}
	return res, nil
}

// brokerRow is ref's clusterList row, read from its runtime info (returned too); a broker that does not
// answer gets a row with Unreachable set, and the error.
func (r *runner) brokerRow(ctx context.Context, ref brokerRef, now int64) (clusterRow, map[string]string, error) {
	row := clusterRow{Cluster: ref.cluster, BrokerName: ref.name, BrokerID: ref.id, Addr: ref.addr}
	kv, err := r.c.RuntimeInfo(ctx, ref.addr)
	if err != nil {
		row.Unreachable = err.Error()
		return row, nil, err
	}
	row.Version = kv["brokerVersionDesc"]
	row.InTPS, row.OutTPS = firstFloat(kv["putTps"]), firstFloat(kv["getTransferedTps"])
	row.SendQueue, row.PullQueue, row.PCWait = kv["sendThreadPoolQueueSize"], kv["pullThreadPoolQueueSize"], kv["pageCacheLockTimeMills"]
	if t := num(kv, "earliestMessageTimeStamp"); t > 0 {
		row.Hours = float64(now-t) / 3_600_000
	}
	row.Space, _ = strconv.ParseFloat(kv["commitLogDiskRatio"], 64)
	row.InYest = num(kv, "msgPutTotalTodayMorning") - num(kv, "msgPutTotalYesterdayMorning")
	row.OutYest = num(kv, "msgGetTotalTodayMorning") - num(kv, "msgGetTotalYesterdayMorning")
	row.InToday = num(kv, "msgPutTotalTodayNow") - num(kv, "msgPutTotalTodayMorning")
	row.OutToday = num(kv, "msgGetTotalTodayNow") - num(kv, "msgGetTotalTodayMorning")
	return row, kv, nil
}

// brokerKV is a key/value listing per broker (brokerStatus, getBrokerConfig).
type brokerKV struct {
	Addr   string            `json:"addr"`
	Role   string            `json:"role,omitempty"` // getBrokerConfig -c: Master or Slave
	Master string            `json:"master,omitempty"`
	Table  map[string]string `json:"table"`
}

type brokerStatusResult struct {
	Brokers []brokerKV `json:"brokers"`
	prefix  bool       // -c: each line starts with the broker's address
}

func (r *brokerStatusResult) writeText(w io.Writer) error {
	t := &textWriter{w: w}
	for _, b := range r.Brokers {
		for _, k := range sortedKeys(b.Table) {
			if r.prefix {
				t.printf("%-24s %-32s: %s\n", b.Addr, k, b.Table[k])
			} else {
				t.printf("%-32s: %s\n", k, b.Table[k])
			}
		}
	}
	return t.err
}

func brokerStatusCmd() *command {
	return &command{name: "brokerStatus", desc: "Fetch broker runtime status data", setup: func(f *flags) runFunc {
		target := chooseBrokers(f, "Broker address", "which cluster")
		return func(ctx context.Context, r *runner) (result, error) {
			refs, err := target.resolve(ctx, r, false)
			if err != nil {
				return nil, err
			}
			res := &brokerStatusResult{prefix: target.cluster != "", Brokers: []brokerKV{}}
			_, err = eachBroker(refs, func(ref brokerRef) error {
				kv, err := r.c.RuntimeInfo(ctx, ref.addr)
				if err == nil {
					res.Brokers = append(res.Brokers, brokerKV{Addr: ref.addr, Table: kv})
				}
				return err
			})
			return res, err
		}
	}}
}

type brokerConfigResult struct {
	Brokers []brokerKV `json:"brokers"`
}

func (r *brokerConfigResult) writeText(w io.Writer) error {
	t := &textWriter{w: w}
	for _, b := range r.Brokers {
		switch b.Role {
		case "Master":
			t.printf("============Master: %s============\n", b.Addr)
		case "Slave":
			t.printf("============My Master: %s=====Slave: %s============\n", b.Master, b.Addr)
		default:
			t.printf("============%s============\n", b.Addr)
		}
		for _, k := range sortedKeys(b.Table) {
			t.printf("%-50s=  %s\n", k, b.Table[k])
		}
		t.printf("\n")
	}
	return t.err
}

// parseProperties reads a "key=value" text (GET_BROKER_CONFIG's body); lines without '=' and comments
// are skipped.
func parseProperties(body []byte) map[string]string {
	out := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		if k, v, ok := strings.Cut(line, "="); ok {
			out[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	return out
}

// propertiesLine is "key=value\n" with the value escaped for a Java properties reader.
func propertiesLine(key, value string) string {
	esc := strings.NewReplacer(`\`, `\\`, "\n", `\n`, "\r", `\r`)
	return esc.Replace(key) + "=" + esc.Replace(value) + "\n"
}

func getBrokerConfigCmd() *command {
	return &command{name: "getBrokerConfig", desc: "Get broker config by cluster or special broker!", setup: func(f *flags) runFunc {
		target := chooseBrokers(f, "get which broker", "get which cluster")
		return func(ctx context.Context, r *runner) (result, error) {
			refs, err := target.resolve(ctx, r, false)
			if err != nil {
				return nil, err
			}
			res := &brokerConfigResult{Brokers: []brokerKV{}}
			masters := map[string]string{}
			_, err = eachBroker(refs, func(ref brokerRef) error {
				table, err := r.brokerConfig(ctx, ref.addr)
				if err != nil {
					return err
				}
				kv := brokerKV{Addr: ref.addr, Table: table}
				if target.cluster != "" {
					if ref.id == 0 {
						kv.Role, masters[ref.name] = "Master", ref.addr
					} else {
						kv.Role, kv.Master = "Slave", masters[ref.name]
					}
				}
				res.Brokers = append(res.Brokers, kv)
				return nil
			})
			return res, err
		}
	}}
}

type updateBrokerConfigResult struct {
	Key     string   `json:"key"`
	Value   string   `json:"value"`
	Brokers []string `json:"brokers"`
}

func (r *updateBrokerConfigResult) writeText(w io.Writer) error {
	t := &textWriter{w: w}
	for _, a := range r.Brokers {
		t.printf("update broker config success, %s\n", a)
	}
	return t.err
}

func updateBrokerConfigCmd() *command {
	return &command{name: "updateBrokerConfig", desc: "Update broker's config", setup: func(f *flags) runFunc {
		var key, value string
		target := chooseBrokers(f, "update which broker", "update which cluster")
		f.String(&key, "k", "key", "config key", true)
		f.String(&value, "v", "value", "config value", true)
		return func(ctx context.Context, r *runner) (result, error) {
			refs, err := target.resolve(ctx, r, true)
			if err != nil {
				return nil, err
			}
			res := &updateBrokerConfigResult{Key: key, Value: value}
			body := []byte(propertiesLine(key, value))
			res.Brokers, err = eachBroker(refs, func(ref brokerRef) error {
				_, err := r.c.Call(ctx, ref.addr, remoting.UpdateBrokerConfig, nil, body)
				return err
			})
			return res, err
		}
	}}
}
