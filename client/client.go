package client

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/rocketraft/rocketraft/remoting"
)

// DefaultTimeout is Config.Timeout's default.
const DefaultTimeout = 3 * time.Second

// Config configures a Client. The zero value of each field is its default.
type Config struct {
	Namesrvs []string      // name server addresses, tried in turn (see NamesrvJSON); none is allowed for broker-only use
	Timeout  time.Duration // bound of each Call and of dialling; default DefaultTimeout
	// Credentials, when set (an AccessKey), sign every request as the official clients sign them
	// (remoting.SignRequest), for servers with ACL on.
	Credentials  remoting.Credentials
	TLS          *tls.Config // when set, every connection is TLS (remoting.ClientConfig.TLS)
	ConnsPerAddr int         // connections per address, used round robin; default 1
	// Serialize is the header encoding of the requests the client builds: remoting.SerializeJSON (the zero
	// value) or remoting.SerializeRocketMQ (binary, as the official clients with rocketmq.client.serialize).
	Serialize byte
	Log       *slog.Logger // nil discards
}

// Client is the one native client of the tools: name server lookups with failover, sends, pulls, offsets and
// the admin requests, over one remoting.Client. Safe for concurrent use; Close ends it.
type Client struct {
	rc        *remoting.Client
	namesrvs  []string
	timeout   time.Duration
	serialize byte
	log       *slog.Logger
	preferred atomic.Int32 // index in namesrvs of the name server that answered last
}

// New returns a client; connections are dialled on first use.
func New(cfg Config) *Client {
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	log := cfg.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	rc := remoting.NewClient(remoting.ClientConfig{DialTimeout: cfg.Timeout, ConnsPerAddr: cfg.ConnsPerAddr,
		TLS: cfg.TLS, Credentials: cfg.Credentials}, log)
	return &Client{rc: rc, namesrvs: append([]string(nil), cfg.Namesrvs...), timeout: cfg.Timeout, serialize: cfg.Serialize, log: log}
}

// Close closes every connection; calls in flight fail.
func (c *Client) Close() error { return c.rc.Close() }

// CloseAddr closes the connections to addr, so that the next request dials afresh.
func (c *Client) CloseAddr(addr string) { c.rc.CloseAddr(addr) }

// Namesrvs returns the name server addresses (a copy).
func (c *Client) Namesrvs() []string { return append([]string(nil), c.namesrvs...) }

// Timeout is the bound of each Call.
func (c *Client) Timeout() time.Duration { return c.timeout }

// Request returns a new request in the client's header encoding.
func (c *Client) Request(code remoting.RequestCode, ext map[string]string, body []byte) *remoting.Command {
	req := remoting.NewRequest(code, ext, body)
	req.SerializeType = c.serialize
	return req
}

// Invoke sends req to addr and waits for the answer, bounded by ctx only (for long polls and callers with a
// timeout of their own). Any answer is returned as it is, whatever its code; err is a transport failure.
func (c *Client) Invoke(ctx context.Context, addr string, req *remoting.Command) (*remoting.Command, error) {
	return c.rc.Invoke(ctx, addr, req)
}

// InvokeAsync sends req to addr and calls cb once with the answer (any code) or the failure, on a goroutine
// of the client; bounded by ctx only. An error returned means cb will not be called.
func (c *Client) InvokeAsync(ctx context.Context, addr string, req *remoting.Command, cb func(*remoting.Command, error)) error {
	return c.rc.InvokeAsync(ctx, addr, req, cb)
}

// InvokeOneway sends req to addr without waiting for an answer (the server sends none).
func (c *Client) InvokeOneway(ctx context.Context, addr string, req *remoting.Command) error {
	return c.rc.InvokeOneway(ctx, addr, req)
}

// Call sends a request to addr and waits for its answer at most the client's Timeout (and ctx). An answer
// other than SUCCESS is a *ResponseError, and the answer is returned with it (for its header and remark).
func (c *Client) Call(ctx context.Context, addr string, code remoting.RequestCode, ext map[string]string, body []byte) (*remoting.Command, error) {
	return c.invoke(ctx, addr, code, c.Request(code, ext, body))
}

// invoke sends req (of code) to addr as Call does.
func (c *Client) invoke(ctx context.Context, addr string, code remoting.RequestCode, req *remoting.Command) (*remoting.Command, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	resp, err := c.rc.Invoke(ctx, addr, req)
	if err != nil {
		return nil, fmt.Errorf("%s to %s: %w", code, addr, err)
	}
	if err := AnswerError(code, addr, resp); err != nil {
		return resp, err
	}
	return resp, nil
}

// CallJSON is Call decoding the answer's JSON body into out.
func (c *Client) CallJSON(ctx context.Context, addr string, code remoting.RequestCode, ext map[string]string, out any) error {
	resp, err := c.Call(ctx, addr, code, ext, nil)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(resp.Body, out); err != nil {
		return fmt.Errorf("%s from %s: decode answer: %w", code, addr, err)
	}
	return nil
}

// SplitAddrs splits "a:9876;b:9876" (commas too) into addresses, as NAMESRV_ADDR and -n are written.
func SplitAddrs(s string) []string {
	var out []string
	for _, a := range strings.FieldsFunc(s, func(r rune) bool { return r == ';' || r == ',' }) {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}
