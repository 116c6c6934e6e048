package client

import (
	"fmt"
	"sort"
	"strconv"

	"github.com/rocketraft/rocketraft/protocol"
)

// Queue is one message queue of a topic and the address of the master of the broker that serves it.
type Queue struct {
	protocol.MessageQueue
	Addr string
}

// String is "brokerName/queueId".
func (q Queue) String() string { return q.BrokerName + "/" + strconv.Itoa(int(q.QueueID)) }

// MQString is the queue as RocketMQ's MessageQueue.toString writes it.
func MQString(q protocol.MessageQueue) string {
	return fmt.Sprintf("MessageQueue [topic=%s, brokerName=%s, queueId=%d]", q.Topic, q.BrokerName, q.QueueID)
}

// RouteQueues lists a route's queues on brokers with a master, ordered by broker name and queue id (as the
// clients order them): with write, the write queues of brokers whose perm allows writing; else the read
// queues of readable ones. brokerName != "" keeps that broker's only.
func RouteQueues(route *protocol.TopicRouteData, topic, brokerName string, write bool) []Queue {
	masters := map[string]string{}
	for _, bd := range route.BrokerDatas {
		if a := bd.BrokerAddrs[protocol.MasterID]; a != "" {
			masters[bd.BrokerName] = a
		}
	}
	var out []Queue
	for _, qd := range route.QueueDatas {
		n, perm := qd.ReadQueueNums, int32(protocol.PermRead)
		if write {
			n, perm = qd.WriteQueueNums, protocol.PermWrite
		}
		addr := masters[qd.BrokerName]
		if addr == "" || qd.Perm&perm == 0 || (brokerName != "" && qd.BrokerName != brokerName) {
			continue
		}
		for q := range n {
			out = append(out, Queue{protocol.MessageQueue{Topic: topic, BrokerName: qd.BrokerName, QueueID: q}, addr})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].MessageQueue.Less(out[j].MessageQueue) })
	return out
}

// ReadAddr is the address to read from among a broker's id -> address table: the master's, else the lowest
// slave's (RocketMQ's BrokerData.selectBrokerAddr prefers the master too, and clients pull from a slave
// while the master is gone). "" for an empty table.
func ReadAddr(addrs map[int64]string) string {
	if a := addrs[protocol.MasterID]; a != "" {
		return a
	}
	best := int64(-1)
	for id := range addrs {
		if best < 0 || id < best {
			best = id
		}
	}
	return addrs[best]
}
