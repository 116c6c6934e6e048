package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/rocketraft/rocketraft/remoting"
)

type brokerData struct {
	Cluster     string            `json:"cluster"`
	BrokerName  string            `json:"brokerName"`
	BrokerAddrs map[string]string `json:"brokerAddrs"`
}

type clusterInfo struct {
	BrokerAddrTable  map[string]brokerData `json:"brokerAddrTable"`
	ClusterAddrTable map[string][]string   `json:"clusterAddrTable"`
}

func (ci *clusterInfo) hasAddr(addr string) bool {
	for _, bd := range ci.BrokerAddrTable {
		for _, a := range bd.BrokerAddrs {
			if a == addr {
				return true
			}
		}
	}
	return false
}

type topicRoute struct {
	QueueDatas []struct {
		BrokerName string `json:"brokerName"`
	} `json:"queueDatas"`
	BrokerDatas []brokerData `json:"brokerDatas"`
}

func (r *topicRoute) hasBroker(name string) bool {
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

func (c *Cluster) clusterInfo(ns string) (*clusterInfo, error) {
	var ci clusterInfo
	return &ci, c.invoke(ns, remoting.GetBrokerClusterInfo, nil, &ci)
}

func (c *Cluster) topicRoute(ns, topic string) (*topicRoute, error) {
	var r topicRoute
	return &r, c.invoke(ns, remoting.GetRouteInfoByTopic, map[string]string{"topic": topic}, &r)
}
