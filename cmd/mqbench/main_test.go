package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/rlog"

	"github.com/rocketraft/rocketraft/app/cluster"
	"github.com/rocketraft/rocketraft/broker"
	"github.com/rocketraft/rocketraft/internal/testutil"
	"github.com/rocketraft/rocketraft/remoting"
	"github.com/rocketraft/rocketraft/tools/bench"
)

func TestMain(m *testing.M) {
	if len(os.Args) > 1 && (os.Args[1] == hopEchoCommand || os.Args[1] == bench.StandInCommand) {
		// mqbench hop and mqbench namesrv start their own executable as the echo process and the
		// stand-in: here, this test binary.
		os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
	}
	rlog.SetLogLevel("error")
	os.Exit(m.Run())
}

// TestHop runs the hop probe against the echo process it starts (this test binary, TestMain), and
// checks a bad flag is refused by name before anything starts.
func TestHop(t *testing.T) {
	sum := runJSON(t, "hop", "--duration", "300ms", "--every", "1ms", "-s", "100")
	if sum.Role != "hop" || sum.Messages == 0 || sum.Latency == nil || sum.Latency.Count != sum.Messages ||
		sum.Latency.Mean <= 0 || sum.Bytes != 200*sum.Messages {
		t.Fatalf("summary %+v (latency %+v)", sum, sum.Latency)
	}
	var stdout, stderr syncBuffer
	if code := run(context.Background(), []string{"hop", "-s", "0"}, &stdout, &stderr); code != 2 ||
		!strings.Contains(stderr.String(), "-s 0") {
		t.Fatalf("hop -s 0: exit %d, stderr %q", code, stderr.String())
	}
}

// syncBuffer is a bytes.Buffer safe for the writers of a run (reporter, loggers, the summary).
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// runJSON runs mqbench with --json and returns its summary; the run must succeed.
func runJSON(t *testing.T, args ...string) *bench.Summary {
	t.Helper()
	var stdout, stderr syncBuffer
	code := run(context.Background(), append(args, "--json"), &stdout, &stderr)
	t.Logf("mqbench %s:\n%s", strings.Join(args, " "), stderr.String())
	if code != 0 {
		t.Fatalf("mqbench %s: exit %d", strings.Join(args, " "), code)
	}
	var sum bench.Summary
	if err := json.Unmarshal([]byte(stdout.String()), &sum); err != nil {
		t.Fatalf("summary %q: %v", stdout.String(), err)
	}
	return &sum
}

// TestProduceConsume sends a fixed number of messages in every mode with each client, then consumes them
// with the same client and checks the counts, the summary fields and the offsets the consumer committed.
func TestProduceConsume(t *testing.T) {
	c := cluster.Start(t, cluster.Options{})
	ns := c.NamesrvAddr()
	for _, client := range []string{"native", "official"} {
		t.Run(client, func(t *testing.T) {
			topic := "Bench_" + client
			modes := []struct {
				mode string
				n    int64
			}{{"sync", 300}, {"async", 200}, {"batch", 150}, {"oneway", 50}}
			var total int64
			for _, m := range modes {
				sum := runJSON(t, "producer", "-n", ns, "-t", topic, "--client", client, "--queues", "4",
					"-w", "3", "-s", "200", "-k", "-l", "3", "--mode", m.mode, "-b", "8", "-q", strconv.FormatInt(m.n, 10))
				if sum.Messages != m.n || sum.Failed != 0 || sum.Rejected != 0 {
					t.Fatalf("%s: sent %d, failed %d, rejected %d (first: %q); want %d, 0, 0", m.mode, sum.Messages, sum.Failed, sum.Rejected, sum.FirstError, m.n)
				}
				if sum.Bytes != m.n*200 || sum.Latency == nil || sum.Latency.Count == 0 || sum.Role != "producer" {
					t.Errorf("%s: summary %+v: want %d bytes and a latency", m.mode, sum, m.n*200)
				}
				if m.mode == "oneway" && sum.Stored != m.n {
					t.Errorf("oneway: the broker stored %d of %d", sum.Stored, m.n)
				}
				total += m.n
			}

			group := "CG_" + client
			sum := runJSON(t, "consumer", "-n", ns, "-t", topic, "--client", client, "-g", group, "-w", "2",
				"-q", strconv.FormatInt(total, 10), "--duration", "2m")
			if sum.Messages != total || sum.Bytes != total*200 {
				t.Fatalf("consumed %d messages (%d bytes), want %d (%d bytes)", sum.Messages, sum.Bytes, total, total*200)
			}
			if sum.BornToConsume == nil || sum.BornToConsume.Count != total || sum.StoreToConsume.Count != total {
				t.Errorf("consumer latencies %+v %+v: want %d each", sum.BornToConsume, sum.StoreToConsume, total)
			}
			if client == "native" {
				if got := committed(t, c, group, topic, 4); got != total {
					t.Errorf("committed offsets add up to %d, want %d", got, total)
				}
			}
		})
	}
}

// TestGRPC sends a fixed number of messages through a broker's own gRPC endpoint (local mode) and receives
// and acks them there, RocketMQ 5's way, with 4 consumers of one group: every message once, none left.
func TestGRPC(t *testing.T) {
	c := cluster.Start(t, cluster.Options{Configure: func(_ int, cfg *broker.Config) {
		cfg.Grpc.EnableProxy, cfg.Grpc.GrpcServerPort = true, testutil.FreePort(t)
	}})
	ns, endpoint := c.NamesrvAddr(), c.Broker(0).GrpcAddr()
	const n = 400
	sum := runJSON(t, "producer", "-n", ns, "-t", "Bench_grpc", "--client", "grpc", "--endpoint", endpoint, "--queues", "4",
		"-w", "4", "-s", "200", "-l", "2", "-q", strconv.Itoa(n))
	if sum.Messages != n || sum.Failed != 0 || sum.Rejected != 0 || sum.Latency == nil || sum.Latency.Count != n {
		t.Fatalf("producer: %+v (first error %q)", sum, sum.FirstError)
	}
	sum = runJSON(t, "consumer", "-n", ns, "-t", "Bench_grpc", "--client", "grpc", "--endpoint", endpoint, "-g", "CG_grpc",
		"-w", "4", "-q", strconv.Itoa(n), "--duration", "2m")
	if sum.Messages != n || sum.Bytes != n*200 || sum.Failed != 0 || sum.BornToConsume == nil || sum.BornToConsume.Count != n {
		t.Fatalf("consumer: %+v (first error %q)", sum, sum.FirstError)
	}
	var stdout, stderr syncBuffer
	if code := run(context.Background(), []string{"consumer", "--client", "grpc"}, &stdout, &stderr); code != 2 ||
		!strings.Contains(stderr.String(), "--endpoint") {
		t.Fatalf("--client grpc without --endpoint: exit %d, stderr %q", code, stderr.String())
	}
}

// committed adds up group's committed offsets over the topic's queues on broker 0.
func committed(t *testing.T, c *cluster.Cluster, group, topic string, queues int) int64 {
	t.Helper()
	rc := remoting.NewClient(remoting.ClientConfig{}, nil)
	defer rc.Close()
	var sum int64
	for q := range queues {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		resp, err := rc.Invoke(ctx, c.Broker(0).Addr(), remoting.NewRequest(remoting.QueryConsumerOffset,
			map[string]string{"consumerGroup": group, "topic": topic, "queueId": strconv.Itoa(q)}, nil))
		cancel()
		if err != nil || resp.Code != int32(remoting.Success) {
			t.Fatalf("query offset of queue %d: %v %v", q, err, resp)
		}
		n, _ := strconv.ParseInt(resp.ExtFields["offset"], 10, 64)
		sum += n
	}
	return sum
}

func TestBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"producer", "-w", "0"}, "-w: 0 goroutines"},
		{[]string{"producer", "--mode", "fast"}, `--mode: "fast"`},
		{[]string{"producer", "--client", "java"}, `--client: "java"`},
		{[]string{"producer", "-s", "0"}, "-s: message size 0"},
		{[]string{"producer", "-k", "true"}, `unexpected argument "true"`},
		{[]string{"producer", "-t", "bad topic"}, "-t: "},
		{[]string{"producer", "-n", "nohost"}, `-n: "nohost" is not host:port`},
		{[]string{"consumer", "--from", "middle"}, `--from: "middle"`},
		{[]string{"consumer", "--duration", "-1s"}, "--duration: -1s is negative"},
		{[]string{"consumer", "-x"}, "flag provided but not defined: -x"},
		{[]string{"bench"}, `unknown command "bench"`},
	} {
		var stdout, stderr syncBuffer
		if code := run(context.Background(), tc.args, &stdout, &stderr); code != 2 {
			t.Errorf("%v: exit %d, want 2", tc.args, code)
		}
		if !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%v: stderr %q does not name %q", tc.args, stderr.String(), tc.want)
		}
	}
}

// TestTextOutput checks the human-readable output: the settings line and the closing [Complete] line.
func TestTextOutput(t *testing.T) {
	c := cluster.Start(t, cluster.Options{})
	var stdout, stderr syncBuffer
	code := run(context.Background(), []string{"producer", "-n", c.NamesrvAddr(), "-t", "BenchText", "-w", "2", "-q", "20"},
		&stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	out := stdout.String()
	for _, want := range []string{"client: native", "threadCount: 2", "[Complete] Send Total: 20 | Send TPS: ", "RT(ms) p50: "} {
		if !strings.Contains(out, want) {
			t.Errorf("output %q lacks %q", out, want)
		}
	}
}
