package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"

	"github.com/rocketraft/rocketraft/app/cluster"
)

func TestMain(m *testing.M) {
	rlog.SetLogLevel("error")
	if spec := os.Getenv(childConsumerEnv); spec != "" {
		os.Exit(runChildConsumer(spec))
	}
	os.Exit(m.Run())
}

// outcome is one mqadmin run.
type outcome struct {
	stdout, stderr string
	code           int
}

// mqadmin runs the tool with argv and an empty environment.
func mqadmin(t *testing.T, argv ...string) outcome {
	t.Helper()
	return mqadminEnv(t, nil, argv...)
}

func mqadminEnv(t *testing.T, env map[string]string, argv ...string) outcome {
	t.Helper()
	var out, errOut bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	code := Run(ctx, argv, Env{Stdout: &out, Stderr: &errOut, Getenv: func(k string) string { return env[k] },
		Logger: cluster.TestLogger(t, 0)})
	return outcome{stdout: out.String(), stderr: errOut.String(), code: code}
}

// ok runs mqadmin and fails the test unless it exits 0.
func ok(t *testing.T, argv ...string) string {
	t.Helper()
	o := mqadmin(t, argv...)
	if o.code != ExitOK {
		t.Fatalf("mqadmin %s: exit %d, stderr %q, stdout:\n%s", strings.Join(argv, " "), o.code, o.stderr, o.stdout)
	}
	return o.stdout
}

// okJSON runs mqadmin with --json and decodes stdout into out.
func okJSON(t *testing.T, out any, argv ...string) {
	t.Helper()
	s := ok(t, append(argv, "--json")...)
	if err := json.Unmarshal([]byte(s), out); err != nil {
		t.Fatalf("mqadmin %s --json: %v in\n%s", strings.Join(argv, " "), err, s)
	}
}

// failing runs mqadmin, wants exit code, and checks stderr is one line that contains every want.
func failing(t *testing.T, code int, wants []string, argv ...string) outcome {
	t.Helper()
	o := mqadmin(t, argv...)
	if o.code != code {
		t.Fatalf("mqadmin %s: exit %d, want %d; stderr %q", strings.Join(argv, " "), o.code, code, o.stderr)
	}
	if strings.Count(o.stderr, "\n") != 1 || !strings.HasPrefix(o.stderr, "mqadmin ") {
		t.Fatalf("mqadmin %s: stderr is not one line: %q", strings.Join(argv, " "), o.stderr)
	}
	for _, w := range wants {
		if !strings.Contains(o.stderr, w) {
			t.Fatalf("mqadmin %s: stderr %q does not say %q", strings.Join(argv, " "), o.stderr, w)
		}
	}
	return o
}

// contains fails unless text holds every want.
func contains(t *testing.T, text string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(text, w) {
			t.Fatalf("output does not contain %q:\n%s", w, text)
		}
	}
}

// eventually retries f (which reports what is missing, or "") every 50 ms until it passes or timeout.
func eventually(t *testing.T, timeout time.Duration, f func() string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		missing := f()
		if missing == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %s", timeout, missing)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

var instanceSeq atomic.Int64

func instance(prefix string) string {
	return fmt.Sprintf("%s-%d-%d", prefix, os.Getpid(), instanceSeq.Add(1))
}

func startProducer(t *testing.T, c *cluster.Cluster, group string) rocketmq.Producer {
	t.Helper()
	p, err := rocketmq.NewProducer(producer.WithNsResolver(primitive.NewPassthroughResolver(c.NamesrvAddrs())),
		producer.WithGroupName(group), producer.WithInstanceName(instance("p")), producer.WithRetry(2),
		producer.WithSendMsgTimeout(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Shutdown() })
	return p
}

// sendN sends n messages body-0.. with keys key-0.. and tag.
func sendN(t *testing.T, p rocketmq.Producer, topic, tag string, n int) {
	t.Helper()
	for i := range n {
		msg := primitive.NewMessage(topic, []byte(fmt.Sprintf("body-%d", i))).WithTag(tag).
			WithKeys([]string{fmt.Sprintf("key-%d", i)})
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		res, err := p.SendSync(ctx, msg)
		cancel()
		if err != nil || res.Status != primitive.SendOK {
			t.Fatalf("send %d: %v %v", i, res, err)
		}
	}
}

func jsonDecode(s string, out any) error { return json.Unmarshal([]byte(s), out) }
