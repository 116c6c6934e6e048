package client

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rocketraft/rocketraft/protocol"
	"github.com/rocketraft/rocketraft/remoting"
)

// NamesrvJSON asks the name servers in turn until one answers, and decodes a SUCCESS answer's JSON body
// into out. It starts at the name server that answered last; one that cannot be reached (or times out) is
// skipped for the next. A refusal (an answer other than SUCCESS, a *ResponseError) is final: the name
// servers share their data, so the next would say the same. With every name server unreachable the error
// joins each one's; with none configured it is ErrNoNamesrv.
func (c *Client) NamesrvJSON(ctx context.Context, code remoting.RequestCode, ext map[string]string, out any) error {
	n := len(c.namesrvs)
	if n == 0 {
		return ErrNoNamesrv
	}
	start := int(c.preferred.Load())
	var errs []error
	for i := range n {
		at := (start + i) % n
		err := c.CallJSON(ctx, c.namesrvs[at], code, ext, out)
		var re *ResponseError
		if err == nil || errors.As(err, &re) {
			c.preferred.Store(int32(at))
			return err
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return errors.Join(errs...)
}

// EachNamesrv sends a request to every name server (deletions must reach all); it returns the joined
// errors, or ErrNoNamesrv.
func (c *Client) EachNamesrv(ctx context.Context, code remoting.RequestCode, ext map[string]string) error {
	if len(c.namesrvs) == 0 {
		return ErrNoNamesrv
	}
	var errs []error
	for _, ns := range c.namesrvs {
		if _, err := c.Call(ctx, ns, code, ext, nil); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Route is GET_ROUTEINFO_BY_TOPIC. A topic the name servers do not route is an error that wraps the
// TOPIC_NOT_EXIST *ResponseError.
func (c *Client) Route(ctx context.Context, topic string) (*protocol.TopicRouteData, error) {
	var r protocol.TopicRouteData
	if err := c.NamesrvJSON(ctx, remoting.GetRouteInfoByTopic, map[string]string{"topic": topic}, &r); err != nil {
		if HasCode(err, remoting.TopicNotExist) {
			return nil, fmt.Errorf("topic %s does not exist: %w", topic, err)
		}
		return nil, fmt.Errorf("route of topic %s: %w", topic, err)
	}
	return &r, nil
}

// RouteAt is GET_ROUTEINFO_BY_TOPIC to the name server at ns only.
func (c *Client) RouteAt(ctx context.Context, ns, topic string) (*protocol.TopicRouteData, error) {
	var r protocol.TopicRouteData
	if err := c.CallJSON(ctx, ns, remoting.GetRouteInfoByTopic, map[string]string{"topic": topic}, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// ClusterInfo is GET_BROKER_CLUSTER_INFO.
func (c *Client) ClusterInfo(ctx context.Context) (*protocol.ClusterInfo, error) {
	var ci protocol.ClusterInfo
	if err := c.NamesrvJSON(ctx, remoting.GetBrokerClusterInfo, nil, &ci); err != nil {
		return nil, fmt.Errorf("cluster info: %w", err)
	}
	return &ci, nil
}

// ClusterInfoAt is GET_BROKER_CLUSTER_INFO to the name server at ns only.
func (c *Client) ClusterInfoAt(ctx context.Context, ns string) (*protocol.ClusterInfo, error) {
	var ci protocol.ClusterInfo
	if err := c.CallJSON(ctx, ns, remoting.GetBrokerClusterInfo, nil, &ci); err != nil {
		return nil, err
	}
	return &ci, nil
}

// TopicList is GET_ALL_TOPIC_LIST_FROM_NAMESERVER.
func (c *Client) TopicList(ctx context.Context) ([]string, error) {
	var tl protocol.TopicList
	if err := c.NamesrvJSON(ctx, remoting.GetAllTopicListFromNameServer, nil, &tl); err != nil {
		return nil, fmt.Errorf("topic list: %w", err)
	}
	return tl.TopicList, nil
}

// WaitRoute polls every name server until each routes topic to at least brokers brokers (a new topic is
// registered at once; the wait covers that round trip), at most the client's Timeout. It returns the last
// name server's route.
func (c *Client) WaitRoute(ctx context.Context, topic string, brokers int) (*protocol.TopicRouteData, error) {
	deadline := time.Now().Add(c.timeout)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		var last *protocol.TopicRouteData
		for _, ns := range c.namesrvs {
			r, err := c.RouteAt(ctx, ns, topic)
			if err != nil || len(r.QueueDatas) < brokers {
				last = nil
				break
			}
			last = r
		}
		if last != nil {
			return last, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("topic %s: not routed to %d brokers by every name server within %v", topic, brokers, c.timeout)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-tick.C:
		}
	}
}
