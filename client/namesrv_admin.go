package client

import (
	"context"
	"strconv"

	"github.com/rocketraft/rocketraft/remoting"
)

// The name server admin requests: each goes to the one name server at ns (the tools ask every name server
// in turn and report each).

// SetBrokerWritePerm is WIPE_WRITE_PERM_OF_BROKER (allow false) or ADD_WRITE_PERM_OF_BROKER (allow true) of
// brokerName at the name server at ns: the write permission of every queue data of that broker name in its
// routes is taken away or given back. It returns how many topics changed (the answer's wipeTopicCount or
// addTopicCount).
func (c *Client) SetBrokerWritePerm(ctx context.Context, ns, brokerName string, allow bool) (int, error) {
	code, countKey := remoting.WipeWritePermOfBroker, "wipeTopicCount"
	if allow {
		code, countKey = remoting.AddWritePermOfBroker, "addTopicCount"
	}
	resp, err := c.Call(ctx, ns, code, map[string]string{"brokerName": brokerName}, nil)
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(resp.ExtFields[countKey])
	if err != nil {
		return 0, &ResponseError{Request: code, Addr: ns, Code: remoting.ResponseCode(resp.Code),
			Remark: "the answer has no number " + countKey}
	}
	return n, nil
}

// NamesrvConfig is GET_NAMESRV_CONFIG at ns: the name server's config as a properties text.
func (c *Client) NamesrvConfig(ctx context.Context, ns string) ([]byte, error) {
	resp, err := c.Call(ctx, ns, remoting.GetNamesrvConfig, nil, nil)
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}

// UpdateNamesrvConfig is UPDATE_NAMESRV_CONFIG at ns with body, a properties text ("key=value" lines).
func (c *Client) UpdateNamesrvConfig(ctx context.Context, ns string, body []byte) error {
	_, err := c.Call(ctx, ns, remoting.UpdateNamesrvConfig, nil, body)
	return err
}

// PutKVConfig is PUT_KV_CONFIG of namespace/key=value at ns.
func (c *Client) PutKVConfig(ctx context.Context, ns, namespace, key, value string) error {
	_, err := c.Call(ctx, ns, remoting.PutKVConfig, map[string]string{"namespace": namespace, "key": key, "value": value}, nil)
	return err
}

// DeleteKVConfig is DELETE_KV_CONFIG of namespace/key at ns.
func (c *Client) DeleteKVConfig(ctx context.Context, ns, namespace, key string) error {
	_, err := c.Call(ctx, ns, remoting.DeleteKVConfig, map[string]string{"namespace": namespace, "key": key}, nil)
	return err
}

// KVConfig is GET_KV_CONFIG of namespace/key at ns; found is false when the name server has none
// (QUERY_NOT_FOUND).
func (c *Client) KVConfig(ctx context.Context, ns, namespace, key string) (value string, found bool, err error) {
	resp, err := c.Call(ctx, ns, remoting.GetKVConfig, map[string]string{"namespace": namespace, "key": key}, nil)
	if HasCode(err, remoting.QueryNotFound) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	return resp.ExtFields["value"], true, nil
}
