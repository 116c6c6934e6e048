package admin

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/rocketraft/rocketraft/app/cluster"
	"github.com/rocketraft/rocketraft/client"
)

// The official Go push consumer runs in a child process (this test binary again, in the mode TestMain picks
// with childConsumerEnv). Its ResetOffset clears a process queue while the consume goroutine reads it, a data
// race inside the client that the race detector reports (the reason the Makefile keeps e2e/ off -race); in a
// child started with GORACE exitcode=0 that report is logged by the test instead of failing it, while every
// race in our own code (mqadmin, broker, name server: all in the parent) still fails the test.
const childConsumerEnv = "MQADMIN_TEST_CHILD_CONSUMER"

// received counts the deliveries of each body to the child's push consumer.
type received struct {
	mu     sync.Mutex
	counts map[string]int
}

func (r *received) add(body string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.counts[body]++
}

// atLeast reports how many distinct bodies arrived at least n times.
func (r *received) atLeast(n int) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	k := 0
	for _, c := range r.counts {
		if c >= n {
			k++
		}
	}
	return k
}

// startPushConsumer starts an official push consumer of topic as group (from the first offset) in a child
// process; it is stopped at cleanup.
func startPushConsumer(t *testing.T, c *cluster.Cluster, group, topic string) *received {
	t.Helper()
	raceDir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childConsumerEnv+"="+strings.Join([]string{c.NamesrvAddr(), group, topic}, "|"),
		"GORACE=halt_on_error=0 exitcode=0 log_path="+filepath.Join(raceDir, "race"))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	rec := &received{counts: map[string]int{}}
	started := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := sc.Text()
			if line == "STARTED" {
				close(started)
			} else if body, ok := strings.CutPrefix(line, "MSG "); ok {
				rec.add(body)
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	t.Cleanup(func() {
		_ = stdin.Close() // the child shuts its consumer down and exits
		done := make(chan error, 1)
		go func() { wg.Wait(); done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("child consumer: %v; stderr:\n%s", err, stderr.String())
			}
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-done
			t.Errorf("child consumer did not stop; stderr:\n%s", stderr.String())
		}
		if races, _ := filepath.Glob(filepath.Join(raceDir, "race*")); len(races) > 0 {
			for _, f := range races {
				b, _ := os.ReadFile(f)
				t.Logf("the official client's own data race, reported in the child consumer (%s):\n%s", f, b)
			}
		}
	})
	select {
	case <-started:
	case <-time.After(20 * time.Second):
		t.Fatalf("child consumer did not start; stderr:\n%s", stderr.String())
	}
	return rec
}

// runChildConsumer is the child's side: it consumes until its stdin closes, printing "MSG <body>" per
// delivery.
func runChildConsumer(spec string) int {
	parts := strings.Split(spec, "|")
	if len(parts) != 3 {
		fmt.Fprintf(os.Stderr, "bad %s %q\n", childConsumerEnv, spec)
		return 2
	}
	var mu sync.Mutex
	out := bufio.NewWriter(os.Stdout)
	emit := func(line string) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintln(out, line)
		_ = out.Flush()
	}
	pc, err := rocketmq.NewPushConsumer(consumer.WithNsResolver(primitive.NewPassthroughResolver(client.SplitAddrs(parts[0]))),
		consumer.WithGroupName(parts[1]), consumer.WithInstance(fmt.Sprintf("child-%d", os.Getpid())),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset))
	if err == nil {
		err = pc.Subscribe(parts[2], consumer.MessageSelector{Type: consumer.TAG, Expression: "*"},
			func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
				for _, m := range msgs {
					emit("MSG " + string(m.Body))
				}
				return consumer.ConsumeSuccess, nil
			})
	}
	if err == nil {
		err = pc.Start()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "child consumer:", err)
		return 1
	}
	emit("STARTED")
	_, _ = io.Copy(io.Discard, os.Stdin)
	if err := pc.Shutdown(); err != nil {
		fmt.Fprintln(os.Stderr, "child consumer shutdown:", err)
		return 1
	}
	return 0
}
