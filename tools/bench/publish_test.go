package bench

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestRunPublishers: the peer driver sends exactly the quota over its goroutines, counts failures apart, and
// fills the summary as a producer run's.
func TestRunPublishers(t *testing.T) {
	var calls atomic.Int64
	cfg := PublishConfig{Client: "fake", Subject: "s", Threads: 4, MessageSize: 100, Total: 1000,
		Timeout: time.Second, Interval: time.Second}
	sum, err := RunPublishers(context.Background(), cfg, func(int) Publish {
		return func(context.Context) error {
			if calls.Add(1)%10 == 0 {
				return errors.New("no ack")
			}
			return nil
		}
	}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if calls.Load() != 1000 || sum.Messages+sum.Failed != 1000 || sum.Failed != 100 {
		t.Fatalf("calls %d, messages %d, failed %d; want 1000 = 900 + 100", calls.Load(), sum.Messages, sum.Failed)
	}
	if sum.Client != "fake" || sum.Topic != "s" || sum.Threads != 4 || sum.Bytes != 900*100 || sum.Latency == nil {
		t.Fatalf("summary %+v", sum)
	}
	if sum.FirstError != "no ack" {
		t.Fatalf("first error %q", sum.FirstError)
	}
}

func TestPublishConfigNamesFlags(t *testing.T) {
	cfg := PublishConfig{Threads: 0, MessageSize: 0, Duration: -1, Total: -1, Rate: -1}
	err := cfg.Validate()
	for _, flag := range []string{"-w:", "-s:", "--duration:", "-q:", "--rate:", "--timeout:", "--interval:"} {
		if err == nil || !strings.Contains(err.Error(), flag) {
			t.Errorf("no error naming %s in %v", flag, err)
		}
	}
}
