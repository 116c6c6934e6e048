package main

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/rocketraft/rocketraft/app/cluster"
	"github.com/rocketraft/rocketraft/client"
)

// TestServing: against a running broker the probe reports a send answered, then its pull, and exits 0.
func TestServing(t *testing.T) {
	c := cluster.Start(t, cluster.Options{})
	log := slog.New(slog.DiscardHandler)
	w := client.New(client.Config{Namesrvs: c.NamesrvAddrs(), Timeout: 5 * time.Second, Log: log})
	defer w.Close()
	if _, err := w.EnsureTopic(context.Background(), "ProbeTopic", 2, log); err != nil {
		t.Fatal(err)
	}
	b := c.Broker(0)
	var stdout, stderr bytes.Buffer
	code := run([]string{"--addr", b.Addr(), "--broker", b.Config().BrokerName, "--topic", "ProbeTopic", "--queue", "1",
		"--timeout", "1m", "--json"}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	var r result
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		t.Fatalf("output %q: %v", stdout.String(), err)
	}
	if r.SendOKSec <= 0 || r.ServeSec < r.SendOKSec || r.Attempts < 2 {
		t.Errorf("result %+v: want a send, then a pull answered no earlier, two requests at least", r)
	}
}

// TestNotServing: with nothing listening the probe gives up after --timeout and exits 1, naming the address.
func TestNotServing(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	var stdout, stderr bytes.Buffer
	if code := run([]string{"--addr", addr, "--timeout", "300ms", "--every", "10ms"}, &stdout, &stderr); code != 1 {
		t.Fatalf("exit %d, want 1; stdout %q", code, stdout.String())
	}
	if !strings.Contains(stderr.String(), addr+" did not serve within 300ms") {
		t.Errorf("stderr %q does not name the address and the timeout", stderr.String())
	}
}
