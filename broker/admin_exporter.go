package broker

import (
	"context"
	"sort"
	"time"

	"github.com/rocketraft/rocketraft/remoting"
)

// timedCreate wraps a topic (topic true) or subscription group creation handler to record how long it took
// and whether it succeeded (rocketmq_topic_create_execution_time,
// rocketmq_consumer_group_create_execution_time).
func (b *Broker) timedCreate(topic bool, h remoting.HandlerFunc) remoting.HandlerFunc {
	return func(ctx context.Context, conn *remoting.Conn, req *remoting.Command) *remoting.Command {
		start := time.Now()
		resp := h(ctx, conn, req)
		ok := resp != nil && resp.Code == int32(remoting.Success)
		if topic {
			b.stats.RecordTopicCreate(ok, isSystemTopic(req.OptString("topic", ""), b.cfg.BrokerClusterName), time.Since(start))
		} else {
			b.stats.RecordGroupCreate(ok, time.Since(start))
		}
		return resp
	}
}

// processViewBrokerStatsData is VIEW_BROKER_STATS_DATA (315; mqadmin statsAll, rocketmq-exporter): one stats
// item of the broker's BrokerStatsManager over the last minute, hour and day. The header names the item:
// statsName (TOPIC_PUT_NUMS, GROUP_GET_NUMS, ...: broker/internal/stats, items.go) and statsKey (a topic, topic@group or the
// cluster name). An item nothing was ever counted under is SYSTEM_ERROR "The stats <name> <key> not exist",
// as RocketMQ answers.
func (b *Broker) processViewBrokerStatsData(ctx context.Context, conn *remoting.Conn, req *remoting.Command) *remoting.Command {
	name, err := req.ExtString("statsName")
	if err != nil {
		return errResponse(remoting.InvalidParameter, "%v", err)
	}
	key, err := req.ExtString("statsKey")
	if err != nil {
		return errResponse(remoting.InvalidParameter, "%v", err)
	}
	data, ok := b.stats.ItemData(name, key, time.Now())
	if !ok {
		return errResponse(remoting.SystemError, "The stats <%s> <%s> not exist", name, key)
	}
	return remoting.NewJSONResponse(data)
}

// ProducerInfo is one producer client in GET_ALL_PRODUCER_INFO's answer (RocketMQ's ProducerInfo): remoteIP is
// the connection's address as Java prints it ("/host:port").
type ProducerInfo struct {
	ClientID            string `json:"clientId"`
	RemoteIP            string `json:"remoteIP"`
	Language            string `json:"language"`
	Version             int32  `json:"version"`
	LastUpdateTimestamp int64  `json:"lastUpdateTimestamp"`
}

// ProducerTableInfo is GET_ALL_PRODUCER_INFO's body: the online producers by group.
type ProducerTableInfo struct {
	Data map[string][]ProducerInfo `json:"data"`
}

// processGetAllProducerInfo is GET_ALL_PRODUCER_INFO (328; mqadmin producer, rocketmq-exporter's producer
// counts): every producer group with a live connection here and its clients.
func (b *Broker) processGetAllProducerInfo(ctx context.Context, conn *remoting.Conn, req *remoting.Command) *remoting.Command {
	return remoting.NewJSONResponse(b.clients.producerTable())
}

// producerTable lists the producer groups and their channels, each group sorted by client id.
func (m *clientManager) producerTable() ProducerTableInfo {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := ProducerTableInfo{Data: make(map[string][]ProducerInfo, len(m.producers))}
	for group, chans := range m.producers {
		if len(chans) == 0 {
			continue
		}
		list := make([]ProducerInfo, 0, len(chans))
		for _, ch := range chans {
			list = append(list, ProducerInfo{ClientID: ch.clientID, RemoteIP: "/" + ch.conn.RemoteAddr(),
				Language: ch.language, Version: ch.version, LastUpdateTimestamp: ch.lastUpdate.UnixMilli()})
		}
		sort.Slice(list, func(i, j int) bool { return list[i].ClientID < list[j].ClientID })
		out.Data[group] = list
	}
	return out
}
