package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rocketraft/rocketraft/app/cluster"
	"github.com/rocketraft/rocketraft/namesrv"
	"github.com/rocketraft/rocketraft/tools/bench"
)

// runFleet runs mqbench namesrv with --json against two name servers of the test (metrics on; configure
// may change more) and returns its summary; the run must succeed.
func runFleet(t *testing.T, configure func(*namesrv.Config), args ...string) *bench.FleetSummary {
	t.Helper()
	var mx [2]string
	c := cluster.Start(t, cluster.Options{NameServers: 2, NoBrokers: true,
		ConfigureNamesrv: func(i int, cfg *namesrv.Config) {
			cfg.MetricsPort = cluster.FreePort(t)
			mx[i] = "127.0.0.1:" + strconv.Itoa(cfg.MetricsPort)
			if configure != nil {
				configure(cfg)
			}
		}})
	args = append([]string{"namesrv", "-n", c.NamesrvAddr(), "--ns-metrics", mx[0] + ";" + mx[1], "--json"}, args...)
	var stdout, stderr syncBuffer
	code := run(context.Background(), args, &stdout, &stderr)
	t.Logf("mqbench %s:\n%s", strings.Join(args, " "), stderr.String())
	if code != 0 {
		t.Fatalf("mqbench namesrv: exit %d", code)
	}
	var sum bench.FleetSummary
	if err := json.Unmarshal([]byte(stdout.String()), &sum); err != nil {
		t.Fatalf("summary %q: %v", stdout.String(), err)
	}
	return &sum
}

// TestNamesrvFleet runs the fleet simulator small: 6 groups of 3 brokers (plain, compressed and split
// bodies, the split ones in 4 chunks of one data version) registering every 500 ms against two name servers, 12 client connections asking 400 routes a
// second, the stand-in's floor first, and the churn. Every query must be answered, every route complete,
// every registration accepted, and the figures of both name servers read from their metrics.
func TestNamesrvFleet(t *testing.T) {
	sum := runFleet(t, nil, "--groups", "6", "--replicas", "3", "--topics", "30", "--spread", "2", "--split-size", "8",
		"--clients", "12", "--rate", "400", "--duration", "2s", "--floor", "1s", "--warmup", "300ms",
		"--register-every", "500ms", "--interval", "1s", "--churn", "topic-create,master-change,broker-kill,reconnect-storm")
	if sum.Floor == nil || sum.Floor.Queries.Answered == 0 || sum.Floor.Queries.Incomplete != 0 {
		t.Fatalf("floor %+v", sum.Floor)
	}
	p := sum.Namesrv
	if p == nil {
		t.Fatal("no name server phase")
	}
	q := p.Queries
	if q.Asked < 600 || q.Answered+q.Lost != q.Asked || q.Busy+q.NotFound+q.OtherCode != 0 || q.Overflow != 0 {
		t.Errorf("queries %+v", q)
	}
	// The reconnect storm closes connections with queries in flight: those are lost, nothing else is.
	if q.Lost > q.Asked/20 {
		t.Errorf("%d of %d queries lost", q.Lost, q.Asked)
	}
	if q.Checked != q.Answered || q.Incomplete != 0 {
		t.Errorf("%d of %d answers checked, %d incomplete (%s)", q.Checked, q.Answered, q.Incomplete, q.FirstMiss)
	}
	if q.Latency == nil || q.Latency.Count != q.Answered || q.Latency.P50 <= 0 {
		t.Errorf("latency %+v for %d answers", q.Latency, q.Answered)
	}
	if r := p.Registrations; r.OK == 0 || r.Failed != 0 {
		t.Errorf("registrations %+v", r)
	}
	if len(p.Namesrvs) != 2 {
		t.Fatalf("name server figures %+v", p.Namesrvs)
	}
	for _, n := range p.Namesrvs {
		if n.CPU <= 0 || n.RSSMB <= 0 || n.AllocsPerQ <= 0 {
			t.Errorf("name server figures %+v", n)
		}
	}
	if len(sum.Events) != 4 || sum.FirstRoundMs <= 0 || len(sum.RegistrationsAlone) != 2 {
		t.Errorf("events %q, first round %v ms, registrations alone %+v", sum.Events, sum.FirstRoundMs, sum.RegistrationsAlone)
	}
}

// TestNamesrvFleetHeartbeat: brokers that register every 3 s with heartbeatTimeoutMillis 1 s and send
// RocketMQ 5's BROKER_HEARTBEAT every 200 ms stay routed (the name servers scan every 100 ms): every
// answer lists all its groups.
func TestNamesrvFleetHeartbeat(t *testing.T) {
	sum := runFleet(t, func(c *namesrv.Config) { c.ScanNotActiveBrokerInterval = 100 },
		"--groups", "4", "--replicas", "2", "--topics", "10", "--spread", "2", "--clients", "4", "--rate", "200",
		"--duration", "3s", "--floor", "0", "--warmup", "200ms", "--register-every", "3s", "--heartbeat", "200ms",
		"--heartbeat-timeout", "1s", "--interval", "1s")
	q := sum.Namesrv.Queries
	if q.Answered == 0 || q.Checked != q.Answered || q.Incomplete != 0 || q.NotFound != 0 {
		t.Fatalf("queries %+v: routes lost groups between registrations", q)
	}
}

// TestNamesrvFleetFlags: bad flags are refused by name before anything starts.
func TestNamesrvFleetFlags(t *testing.T) {
	for _, tc := range []struct{ args, want string }{
		{"namesrv --groups 5 --spread 2 -n 127.0.0.1:1", "--spread 2"},
		{"namesrv --bodies plain,zip -n 127.0.0.1:1", `--bodies "zip"`},
		{"namesrv --churn restart -n 127.0.0.1:1", "--churn restart"},
		{"namesrv", "-n or --start"},
	} {
		var stdout, stderr syncBuffer
		if code := run(context.Background(), strings.Fields(tc.args), &stdout, &stderr); code != 2 ||
			!strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%s: exit %d, stderr %q (want %q)", tc.args, code, stderr.String(), tc.want)
		}
	}
}

// namesrvBinary returns bin/mqnamesrv of this tree: $CHAOS_BIN/mqnamesrv when make test set it (make build
// has just filled it), else a build into a temporary folder.
func namesrvBinary(t *testing.T) string {
	t.Helper()
	if dir := os.Getenv("CHAOS_BIN"); dir != "" {
		p := filepath.Join(dir, "mqnamesrv")
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("CHAOS_BIN=%s: %v (run make build)", dir, err)
		}
		return p
	}
	dir := t.TempDir()
	cmd := exec.Command("go", "build", "-o", dir+string(filepath.Separator), "../mqnamesrv")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return filepath.Join(dir, "mqnamesrv")
}

// TestNamesrvFleetRestart runs the simulator's restart small: the name server it started (bin/mqnamesrv) is
// SIGKILLed under the load of 12 client connections and started again on its folder while 6 groups (plain,
// compressed and split bodies) register every 500 ms. Every route must be complete again (the simulator's
// sweep of every topic), and no answer of the load between the restart and then may lack a group: until
// every broker name of the last run routes its topics again, the name server answers "name server not
// ready" (needWaitForService) instead of a route without the groups not back yet.
func TestNamesrvFleetRestart(t *testing.T) {
	args := []string{"namesrv", "--start", namesrvBinary(t), "--json", "--groups", "6", "--replicas", "2", "--topics", "40",
		"--spread", "2", "--split-size", "8", "--clients", "12", "--rate", "400", "--duration", "1s", "--floor", "0",
		"--warmup", "200ms", "--register-every", "500ms", "--interval", "1s", "--churn", "restart"}
	var stdout, stderr syncBuffer
	code := run(context.Background(), args, &stdout, &stderr)
	t.Logf("mqbench %s:\n%s", strings.Join(args, " "), stderr.String())
	if code != 0 {
		t.Fatalf("mqbench namesrv: exit %d", code)
	}
	var sum bench.FleetSummary
	if err := json.Unmarshal([]byte(stdout.String()), &sum); err != nil {
		t.Fatalf("summary %q: %v", stdout.String(), err)
	}
	rs := sum.Restart
	if rs == nil {
		t.Fatal("no restart in the summary")
	}
	q := rs.Queries
	if q.Answered == 0 || q.Checked == 0 || rs.FirstGoodMs < 0 {
		t.Fatalf("restart: no complete answer of the load after it: %+v", rs)
	}
	if q.Incomplete != 0 {
		t.Errorf("restart: %d of %d answers lacked a group (%s)", q.Incomplete, q.Checked, q.FirstMiss)
	}
	if q.Busy+q.NotFound != 0 {
		t.Errorf("restart: answers %+v", q)
	}
}
