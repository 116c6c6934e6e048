package proxy

import (
	"context"
	"net"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/peer"

	"github.com/rocketraft/rocketraft/client"
	"github.com/rocketraft/rocketraft/message"
	"github.com/rocketraft/rocketraft/protocol"
	"github.com/rocketraft/rocketraft/proxy/v2pb"
	"github.com/rocketraft/rocketraft/remoting"
)

// route is one topic's route as the proxy offers it: in local mode only the local broker group's part.
type route struct {
	data    *protocol.TopicRouteData
	fetched time.Time
	next    atomic.Uint64 // round robin over the write queues
	// writes are the write queues of the route's topic, made once (a send picks one of them).
	writes     []client.Queue
	writesOnce sync.Once
}

// routeCache keeps the routes the name servers gave for RouteTTL.
type routeCache struct {
	c     *client.Client
	local string // local mode: the broker name kept
	ttl   time.Duration
	mu    sync.Mutex
	m     map[string]*route // guarded by mu
}

func newRouteCache(c *client.Client, local string, ttl time.Duration) *routeCache {
	return &routeCache{c: c, local: local, ttl: ttl, m: map[string]*route{}}
}

// get returns topic's route, asking the name servers when the cached one is older than the TTL. A topic no
// broker (of this mode) serves is TOPIC_NOT_FOUND.
func (rc *routeCache) get(ctx context.Context, topic string) (*route, error) {
	rc.mu.Lock()
	r := rc.m[topic]
	rc.mu.Unlock()
	if r != nil && time.Since(r.fetched) < rc.ttl {
		return r, nil
	}
	data, err := rc.c.Route(ctx, topic)
	if client.HasCode(err, remoting.TopicNotExist) {
		return nil, fail(v2pb.Code_TOPIC_NOT_FOUND, "topic %s does not exist", topic)
	}
	if err != nil {
		if r != nil { // the name servers are away: the route before still serves
			return r, nil
		}
		return nil, err
	}
	if rc.local != "" {
		data = keepBroker(data, rc.local)
		if len(data.QueueDatas) == 0 {
			return nil, fail(v2pb.Code_TOPIC_NOT_FOUND, "topic %s does not exist on broker %s", topic, rc.local)
		}
	}
	nr := &route{data: data, fetched: time.Now()}
	if r != nil {
		nr.next.Store(r.next.Load())
	}
	rc.mu.Lock()
	rc.m[topic] = nr
	rc.mu.Unlock()
	return nr, nil
}

// invalidate forgets topic's route, so the next call asks the name servers (after a broker failed a call:
// its group may have a new master).
func (rc *routeCache) invalidate(topic string) {
	rc.mu.Lock()
	delete(rc.m, topic)
	rc.mu.Unlock()
}

// addrs lists the master addresses of the brokers of every cached route, for the heartbeats.
func (rc *routeCache) addrs() []string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var out []string
	for _, r := range rc.m {
		for _, bd := range r.data.BrokerDatas {
			if a := bd.BrokerAddrs[protocol.MasterID]; a != "" && !slices.Contains(out, a) {
				out = append(out, a)
			}
		}
	}
	return out
}

// keepBroker is data with only broker name's queues and addresses.
func keepBroker(data *protocol.TopicRouteData, name string) *protocol.TopicRouteData {
	out := &protocol.TopicRouteData{}
	for _, qd := range data.QueueDatas {
		if qd.BrokerName == name {
			out.QueueDatas = append(out.QueueDatas, qd)
		}
	}
	for _, bd := range data.BrokerDatas {
		if bd.BrokerName == name {
			out.BrokerDatas = append(out.BrokerDatas, bd)
		}
	}
	return out
}

// master is broker name's master address in r, or "".
func (r *route) master(name string) string {
	for _, bd := range r.data.BrokerDatas {
		if bd.BrokerName == name {
			return bd.BrokerAddrs[protocol.MasterID]
		}
	}
	return ""
}

// reader is the address to read broker name's queues from: its master, else a slave.
func (r *route) reader(name string) string {
	for _, bd := range r.data.BrokerDatas {
		if bd.BrokerName == name {
			return client.ReadAddr(bd.BrokerAddrs)
		}
	}
	return ""
}

// brokerOf is the name of the broker group one of whose nodes is at addr, or "".
func (r *route) brokerOf(addr string) string {
	for _, bd := range r.data.BrokerDatas {
		for _, a := range bd.BrokerAddrs {
			if a == addr {
				return bd.BrokerName
			}
		}
	}
	return ""
}

// writeQueues lists the queues a send may go to, ordered by broker name and queue id.
func (r *route) writeQueues(topic string) []client.Queue {
	r.writesOnce.Do(func() { r.writes = client.RouteQueues(r.data, topic, "", true) })
	return r.writes
}

// pick chooses the queue of a send: a message group's queue by the Java hash of the group over the write
// queues (as RocketMQ 5's proxy does, so one group stays in one queue while the queues stay the same), else
// the next queue round robin.
func (r *route) pick(topic, group string) (client.Queue, bool) {
	qs := r.writeQueues(topic)
	if len(qs) == 0 {
		return client.Queue{}, false
	}
	if group != "" {
		h := int64(message.JavaStringHash(group)) % int64(len(qs))
		if h < 0 {
			h = -h
		}
		return qs[h], true
	}
	return qs[int(r.next.Add(1)-1)%len(qs)], true
}

// acceptTypes are the message types every queue takes: this broker keeps no per-topic message type.
var acceptTypes = []v2pb.MessageType{v2pb.MessageType_NORMAL, v2pb.MessageType_FIFO, v2pb.MessageType_DELAY,
	v2pb.MessageType_TRANSACTION}

// permission maps a queue's read and write rights to the v2 permission.
func permission(read, write bool) v2pb.Permission {
	switch {
	case read && write:
		return v2pb.Permission_READ_WRITE
	case read:
		return v2pb.Permission_READ
	case write:
		return v2pb.Permission_WRITE
	}
	return v2pb.Permission_NONE
}

// queues lists r's message queues for clients: every queue id below max(read, write) of each broker group
// with a master, its permission from the queue counts and the topic's perm, every broker at endpoints.
func (r *route) queues(topic string, endpoints *v2pb.Endpoints) []*v2pb.MessageQueue {
	var out []*v2pb.MessageQueue
	for _, qd := range r.data.QueueDatas {
		if r.master(qd.BrokerName) == "" {
			continue
		}
		broker := &v2pb.Broker{Name: qd.BrokerName, Id: 0, Endpoints: endpoints}
		for id := range max(qd.ReadQueueNums, qd.WriteQueueNums) {
			read := id < qd.ReadQueueNums && qd.Perm&protocol.PermRead != 0
			write := id < qd.WriteQueueNums && qd.Perm&protocol.PermWrite != 0
			out = append(out, &v2pb.MessageQueue{Topic: &v2pb.Resource{Name: topic}, Id: id, Permission: permission(read, write),
				Broker: broker, AcceptMessageTypes: acceptTypes})
		}
	}
	slices.SortFunc(out, func(a, b *v2pb.MessageQueue) int {
		if a.Broker.Name != b.Broker.Name {
			if a.Broker.Name < b.Broker.Name {
				return -1
			}
			return 1
		}
		return int(a.Id - b.Id)
	})
	return out
}

// endpoints is what QueryRoute names as every broker's endpoint: Options.Advertise, else what the client
// dialled, else the address its connection reached.
func (s *Server) endpoints(ctx context.Context, asked *v2pb.Endpoints) *v2pb.Endpoints {
	if a := s.opts.Advertise; a != "" {
		return toEndpoints(a)
	}
	if asked != nil && len(asked.Addresses) > 0 {
		return asked
	}
	if p, ok := peer.FromContext(ctx); ok && p.LocalAddr != nil {
		return toEndpoints(p.LocalAddr.String())
	}
	return toEndpoints(s.Addr())
}

// toEndpoints is "host:port" as v2 endpoints.
func toEndpoints(addr string) *v2pb.Endpoints {
	host, port, _ := net.SplitHostPort(addr)
	p, _ := strconv.Atoi(port)
	scheme := v2pb.AddressScheme_DOMAIN_NAME
	if ip := net.ParseIP(host); ip != nil {
		scheme = v2pb.AddressScheme_IPv4
		if ip.To4() == nil {
			scheme = v2pb.AddressScheme_IPv6
		}
	}
	return &v2pb.Endpoints{Scheme: scheme, Addresses: []*v2pb.Address{{Host: host, Port: int32(p)}}}
}

// QueryRoute answers a topic's message queues, every broker at the proxy's own endpoint.
func (s *Server) QueryRoute(ctx context.Context, req *v2pb.QueryRouteRequest) (*v2pb.QueryRouteResponse, error) {
	topic := req.GetTopic().GetName()
	if err := checkTopic(topic); err != nil {
		return &v2pb.QueryRouteResponse{Status: toStatus(err)}, nil
	}
	r, err := s.routes.get(ctx, topic)
	if err != nil {
		return &v2pb.QueryRouteResponse{Status: toStatus(err)}, nil
	}
	return &v2pb.QueryRouteResponse{Status: ok(), MessageQueues: r.queues(topic, s.endpoints(ctx, req.GetEndpoints()))}, nil
}

// QueryAssignment answers a push consumer's share of a topic: one assignment per readable broker group,
// queue id -1 (the broker's pop consumption spreads the group over its queues), as RocketMQ 5's proxy does.
func (s *Server) QueryAssignment(ctx context.Context, req *v2pb.QueryAssignmentRequest) (*v2pb.QueryAssignmentResponse, error) {
	topic, group := req.GetTopic().GetName(), req.GetGroup().GetName()
	if err := checkTopic(topic); err != nil {
		return &v2pb.QueryAssignmentResponse{Status: toStatus(err)}, nil
	}
	if err := checkGroup(group); err != nil {
		return &v2pb.QueryAssignmentResponse{Status: toStatus(err)}, nil
	}
	r, err := s.routes.get(ctx, topic)
	if err != nil {
		return &v2pb.QueryAssignmentResponse{Status: toStatus(err)}, nil
	}
	ep := s.endpoints(ctx, req.GetEndpoints())
	var out []*v2pb.Assignment
	for _, qd := range r.data.QueueDatas {
		if r.master(qd.BrokerName) == "" || qd.Perm&protocol.PermRead == 0 || qd.ReadQueueNums == 0 {
			continue
		}
		out = append(out, &v2pb.Assignment{MessageQueue: &v2pb.MessageQueue{Topic: &v2pb.Resource{Name: topic}, Id: -1,
			Permission: v2pb.Permission_READ_WRITE, Broker: &v2pb.Broker{Name: qd.BrokerName, Id: 0, Endpoints: ep},
			AcceptMessageTypes: acceptTypes}})
	}
	slices.SortFunc(out, func(a, b *v2pb.Assignment) int {
		if a.MessageQueue.Broker.Name < b.MessageQueue.Broker.Name {
			return -1
		}
		return 1
	})
	return &v2pb.QueryAssignmentResponse{Status: ok(), Assignments: out}, nil
}

// checkTopic refuses a missing or malformed topic name.
func checkTopic(topic string) error {
	if topic == "" {
		return fail(v2pb.Code_ILLEGAL_TOPIC, "the topic is missing")
	}
	if err := protocol.ValidateTopicName(topic); err != nil {
		return fail(v2pb.Code_ILLEGAL_TOPIC, "%v", err)
	}
	return nil
}

// checkGroup refuses a missing consumer group name.
func checkGroup(group string) error {
	if group == "" {
		return fail(v2pb.Code_ILLEGAL_CONSUMER_GROUP, "the consumer group is missing")
	}
	return nil
}
