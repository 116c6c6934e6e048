package cluster

import (
	"context"

	"github.com/rocketraft/rocketraft/protocol"
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

func (c *Cluster) clusterInfo(ns string) (*protocol.ClusterInfo, error) {
	return c.client.ClusterInfoAt(context.Background(), ns)
}

func (c *Cluster) topicRoute(ns, topic string) (*protocol.TopicRouteData, error) {
	return c.client.RouteAt(context.Background(), ns, topic)
}
