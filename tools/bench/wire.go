package bench

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/rocketraft/rocketraft/client"
	"github.com/rocketraft/rocketraft/remoting"
)

// newClient is a client of c's name servers with c's timeout, building requests in the header encoding
// serialize (remoting.SerializeJSON or SerializeRocketMQ).
func newClient(c Common, serialize byte, log *slog.Logger) *client.Client {
	return client.New(client.Config{Namesrvs: c.NamesrvAddrs, Timeout: c.Timeout, Serialize: serialize,
		Log: log.With("component", "bench-client")})
}

// storedCount adds up the max offsets of queues: how many messages the topic's queues hold in all.
func storedCount(ctx context.Context, c *client.Client, queues []client.Queue) (int64, error) {
	var sum int64
	for _, q := range queues {
		off, err := c.QueueOffset(ctx, remoting.GetMaxOffset, q, 0)
		if err != nil {
			return 0, fmt.Errorf("max offset of %s: %w", q, err)
		}
		sum += off
	}
	return sum, nil
}

// waitStored polls storedCount until it reaches want, or has not grown for the client's timeout, and
// returns the last count. Dispatch to the consume queues runs behind the store, so a just-stored message
// shows a moment later.
func waitStored(ctx context.Context, c *client.Client, topic string, queues []client.Queue, want int64, log *slog.Logger) int64 {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	var last int64 = -1
	grew := time.Now()
	for {
		n, err := storedCount(ctx, c, queues)
		if err != nil {
			log.Warn("count stored messages", "topic", topic, "err", err)
			return max(last, 0)
		}
		if n >= want {
			return n
		}
		if n > last {
			last, grew = n, time.Now()
		}
		if time.Since(grew) > c.Timeout() {
			log.Warn("oneway sends not stored", "topic", topic, "stored", n, "want", want)
			return n
		}
		select {
		case <-ctx.Done():
			return n
		case <-tick.C:
		}
	}
}

// waitDispatched polls the brokers of queues until none has CommitLog bytes left to dispatch
// (dispatchBehindBytes 0), so that queue offsets count every message stored so far; at most the client's
// timeout.
func waitDispatched(ctx context.Context, c *client.Client, queues []client.Queue) error {
	addrs := map[string]bool{}
	for _, q := range queues {
		addrs[q.Addr] = true
	}
	deadline := time.Now().Add(c.Timeout())
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for addr := range addrs {
		for {
			t, err := c.RuntimeInfo(ctx, addr)
			if err != nil {
				return err
			}
			if t["dispatchBehindBytes"] == "0" {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("broker %s: %s bytes still to dispatch after %v", addr, t["dispatchBehindBytes"], c.Timeout())
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-tick.C:
			}
		}
	}
	return nil
}
