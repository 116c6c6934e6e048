package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/rocketraft/rocketraft/protocol"
	"github.com/rocketraft/rocketraft/remoting"
)

// Client makes the admin requests of mqadmin to name servers and brokers over remoting. Each request gets
// its own timeout and, with credentials, is signed as the official clients sign (remoting.SignRequest, done
// by the remoting client). Safe for concurrent use.
type Client struct {
	rc       *remoting.Client
	namesrvs []string
	timeout  time.Duration
}

// NewClient returns a client of the given name servers. A nil logger discards.
func NewClient(namesrvs []string, timeout time.Duration, creds remoting.Credentials, log *slog.Logger) *Client {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Client{
		rc: remoting.NewClient(remoting.ClientConfig{DialTimeout: timeout, Credentials: creds},
			log.With("component", "mqadmin")),
		namesrvs: namesrvs,
		timeout:  timeout,
	}
}

// Close closes the connections.
func (c *Client) Close() error { return c.rc.Close() }

// ResponseError is an answer other than SUCCESS.
type ResponseError struct {
	Request remoting.RequestCode
	Addr    string
	Code    remoting.ResponseCode
	Remark  string
}

func (e *ResponseError) Error() string {
	return fmt.Sprintf("%s to %s: %s (%d) %s", e.Request, e.Addr, e.Code, int32(e.Code), e.Remark)
}

// notFoundError is a lookup that found nothing (a message by id): the console answers it 404.
type notFoundError struct{ msg string }

func (e *notFoundError) Error() string { return e.msg }

func notFoundf(format string, args ...any) error { return &notFoundError{fmt.Sprintf(format, args...)} }

// answered reports whether err is a ResponseError with code.
func answered(err error, code remoting.ResponseCode) bool {
	var re *ResponseError
	return errors.As(err, &re) && re.Code == code
}

// errNoNamesrv is returned by name server requests when no name server is configured.
var errNoNamesrv = usagef("no name server: give -n host:port[;host:port] or set NAMESRV_ADDR")

// invoke signs and sends a request to addr and waits for its answer; an answer other than SUCCESS is a
// *ResponseError (the answer is returned too, for its remark and header).
func (c *Client) invoke(ctx context.Context, addr string, code remoting.RequestCode, ext map[string]string, body []byte) (*remoting.Command, error) {
	req := remoting.NewRequest(code, ext, body)
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	resp, err := c.rc.Invoke(ctx, addr, req)
	if err != nil {
		return nil, fmt.Errorf("%s to %s: %w", code, addr, err)
	}
	if resp.Code != int32(remoting.Success) {
		return resp, &ResponseError{Request: code, Addr: addr, Code: remoting.ResponseCode(resp.Code), Remark: resp.Remark}
	}
	return resp, nil
}

// invokeJSON is invoke decoding the answer's JSON body into out.
func (c *Client) invokeJSON(ctx context.Context, addr string, code remoting.RequestCode, ext map[string]string, out any) error {
	resp, err := c.invoke(ctx, addr, code, ext, nil)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(resp.Body, out); err != nil {
		return fmt.Errorf("%s from %s: decode answer: %w", code, addr, err)
	}
	return nil
}

// namesrvJSON asks the name servers in turn until one answers SUCCESS and decodes its body into out. A
// refusal (an answer other than SUCCESS) is final: the name servers share their data, so the next one would
// say the same; only unreachable ones are skipped.
func (c *Client) namesrvJSON(ctx context.Context, code remoting.RequestCode, ext map[string]string, out any) error {
	if len(c.namesrvs) == 0 {
		return errNoNamesrv
	}
	var errs []error
	for _, ns := range c.namesrvs {
		err := c.invokeJSON(ctx, ns, code, ext, out)
		var re *ResponseError
		if err == nil || errors.As(err, &re) {
			return err
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// eachNamesrv sends a request to every name server (deletions); it returns the joined errors.
func (c *Client) eachNamesrv(ctx context.Context, code remoting.RequestCode, ext map[string]string) error {
	if len(c.namesrvs) == 0 {
		return errNoNamesrv
	}
	var errs []error
	for _, ns := range c.namesrvs {
		if _, err := c.invoke(ctx, ns, code, ext, nil); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// route is GET_ROUTEINFO_BY_TOPIC.
func (c *Client) route(ctx context.Context, topic string) (*protocol.TopicRouteData, error) {
	var r protocol.TopicRouteData
	if err := c.namesrvJSON(ctx, remoting.GetRouteInfoByTopic, map[string]string{"topic": topic}, &r); err != nil {
		if answered(err, remoting.TopicNotExist) {
			return nil, fmt.Errorf("topic %s does not exist: %w", topic, err)
		}
		return nil, fmt.Errorf("route of topic %s: %w", topic, err)
	}
	return &r, nil
}

// clusterInfo is GET_BROKER_CLUSTER_INFO.
func (c *Client) clusterInfo(ctx context.Context) (*protocol.ClusterInfo, error) {
	var ci protocol.ClusterInfo
	if err := c.namesrvJSON(ctx, remoting.GetBrokerClusterInfo, nil, &ci); err != nil {
		return nil, fmt.Errorf("cluster info: %w", err)
	}
	return &ci, nil
}

// topicList is GET_ALL_TOPIC_LIST_FROM_NAMESERVER.
func (c *Client) topicList(ctx context.Context) ([]string, error) {
	var tl protocol.TopicList
	if err := c.namesrvJSON(ctx, remoting.GetAllTopicListFromNameServer, nil, &tl); err != nil {
		return nil, fmt.Errorf("topic list: %w", err)
	}
	return tl.TopicList, nil
}

// splitAddrs splits "a:9876;b:9876" (commas too) into addresses.
func splitAddrs(s string) []string {
	var out []string
	for _, a := range strings.FieldsFunc(s, func(r rune) bool { return r == ';' || r == ',' }) {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}
