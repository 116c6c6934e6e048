package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/rocketraft/rocketraft/protocol"
	"github.com/rocketraft/rocketraft/remoting"
)

// hasAddr reports whether addr is an address of any broker of ci.
func hasAddr(ci *protocol.ClusterInfo, addr string) bool {
	for _, bd := range ci.BrokerAddrTable {
		for _, a := range bd.BrokerAddrs {
			if a == addr {
				return true
			}
		}
	}
	return false
}

// hasBroker reports whether the route has queues on broker name.
func hasBroker(r *protocol.TopicRouteData, name string) bool {
	for _, q := range r.QueueDatas {
		if q.BrokerName == name {
			return true
		}
	}
	return false
}

func (c *Cluster) invoke(addr string, code remoting.RequestCode, ext map[string]string, out any) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	resp, err := c.client.Invoke(ctx, addr, remoting.NewRequest(code, ext, nil))
	if err != nil {
		return err
	}
	if resp.Code != int32(remoting.Success) {
		return fmt.Errorf("%s: code %d %s", code, resp.Code, resp.Remark)
	}
	return json.Unmarshal(resp.Body, out)
}

func (c *Cluster) clusterInfo(ns string) (*protocol.ClusterInfo, error) {
	var ci protocol.ClusterInfo
	return &ci, c.invoke(ns, remoting.GetBrokerClusterInfo, nil, &ci)
}

func (c *Cluster) topicRoute(ns, topic string) (*protocol.TopicRouteData, error) {
	var r protocol.TopicRouteData
	return &r, c.invoke(ns, remoting.GetRouteInfoByTopic, map[string]string{"topic": topic}, &r)
}
