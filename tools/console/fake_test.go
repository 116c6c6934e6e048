package console

import (
	"context"
	"fmt"
	"sync"

	"github.com/rocketraft/rocketraft/remoting"
)

// fakeSource is a Source of fixed answers that records the changes asked of it. Safe for concurrent use.
type fakeSource struct {
	mu       sync.Mutex
	brokers  []Broker
	topics   []string
	topic    map[string]*Topic
	groups   []GroupSummary
	group    map[string]*Group
	messages []Message
	conns    []Connection
	err      error // when set, every read fails with it
	calls    map[string]int
	admins   []*fakeAdmin
	// blockBrokers, when set, makes Brokers wait for ctx (to test that Close cancels requests in flight).
	blockBrokers chan struct{}
	blockOnce    sync.Once
}

var _ Source = (*fakeSource)(nil)

func newFakeSource() *fakeSource {
	return &fakeSource{
		brokers: []Broker{
			{Cluster: "DefaultCluster", BrokerName: "broker-a", BrokerID: 0, Addr: "127.0.0.1:10911", Role: "ASYNC_MASTER",
				Version: "V4_9_4", InTPS: 12.5, OutTPS: 3, DiskRatio: 0.25},
			{Cluster: "DefaultCluster", BrokerName: "broker-a", BrokerID: 1, Addr: "127.0.0.1:10921", Role: "SLAVE",
				Version: "V4_9_4", InTPS: 0, OutTPS: 1},
		},
		topics: []string{"Orders", "%RETRY%G1", "%DLQ%G1", "TBW102", "DefaultCluster", "broker-a", "RMQ_SYS_TRACE_TOPIC", "DefaultCluster_REPLY_TOPIC"},
		topic: map[string]*Topic{"Orders": {Name: "Orders", Brokers: []TopicBroker{{Cluster: "DefaultCluster",
			BrokerName: "broker-a", Addrs: map[int64]string{0: "127.0.0.1:10911"}, ReadQueues: 2, WriteQueues: 2, Perm: 6}},
			Queues: []QueueStatus{{BrokerName: "broker-a", QueueID: 0, MaxOffset: 5}, {BrokerName: "broker-a", QueueID: 1, MaxOffset: 7}},
			Groups: []string{"G1"}}},
		groups: []GroupSummary{{Group: "G1", Members: 1, Type: "PUSH", Model: "CLUSTERING", Lag: 4}},
		group:  map[string]*Group{"G1": {Name: "G1", Online: true, Lag: 4}, "Offline": {Name: "Offline", Lag: 9}},
		calls:  map[string]int{},
	}
}

func (f *fakeSource) call(name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls[name]++
	return f.err
}

func (f *fakeSource) count(name string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[name]
}

func (f *fakeSource) set(fn func(f *fakeSource)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f)
}

func (f *fakeSource) Brokers(ctx context.Context) ([]Broker, error) {
	f.mu.Lock()
	block := f.blockBrokers
	f.mu.Unlock()
	if block != nil {
		f.blockOnce.Do(func() { close(block) })
		<-ctx.Done()
		return nil, ctx.Err()
	}
	if err := f.call("Brokers"); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Broker(nil), f.brokers...), nil
}

func (f *fakeSource) TopicNames(context.Context) ([]string, error) {
	if err := f.call("TopicNames"); err != nil {
		return nil, err
	}
	return append([]string(nil), f.topics...), nil
}

func (f *fakeSource) Topic(_ context.Context, name string) (*Topic, error) {
	if err := f.call("Topic"); err != nil {
		return nil, err
	}
	if t, ok := f.topic[name]; ok {
		return t, nil
	}
	return nil, fmt.Errorf("topic %s does not exist: %w", name, ErrNotFound)
}

func (f *fakeSource) Groups(context.Context) ([]GroupSummary, error) {
	if err := f.call("Groups"); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]GroupSummary(nil), f.groups...), nil
}

func (f *fakeSource) Group(_ context.Context, name string) (*Group, error) {
	if err := f.call("Group " + name); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if g, ok := f.group[name]; ok {
		c := *g
		return &c, nil
	}
	return nil, fmt.Errorf("group %s: %w", name, ErrNotFound)
}

func (f *fakeSource) Producers(_ context.Context, group, topic string) ([]Connection, error) {
	if err := f.call("Producers " + group + " " + topic); err != nil {
		return nil, err
	}
	return f.conns, nil
}

func (f *fakeSource) MessagesByKey(_ context.Context, topic, key string, max int) ([]Message, error) {
	if err := f.call(fmt.Sprintf("MessagesByKey %s %s %d", topic, key, max)); err != nil {
		return nil, err
	}
	return f.messages, nil
}

func (f *fakeSource) MessagesByTime(_ context.Context, topic string, begin, end int64, max int) ([]Message, error) {
	if err := f.call(fmt.Sprintf("MessagesByTime %s %d %d %d", topic, begin, end, max)); err != nil {
		return nil, err
	}
	return f.messages, nil
}

func (f *fakeSource) Message(_ context.Context, topic, id string) (*Message, error) {
	if err := f.call("Message " + topic + " " + id); err != nil {
		return nil, err
	}
	for _, m := range f.messages {
		if m.MsgID == id || m.OffsetMsgID == id {
			c := m
			return &c, nil
		}
	}
	return nil, fmt.Errorf("message %s: %w", id, ErrNotFound)
}

func (f *fakeSource) Admin(creds remoting.Credentials) Admin {
	f.mu.Lock()
	defer f.mu.Unlock()
	a := &fakeAdmin{creds: creds}
	f.admins = append(f.admins, a)
	return a
}

func (f *fakeSource) lastAdmin() *fakeAdmin {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.admins) == 0 {
		return nil
	}
	return f.admins[len(f.admins)-1]
}

// fakeAdmin records the changes asked of it.
type fakeAdmin struct {
	creds   remoting.Credentials
	specs   []TopicSpec
	deleted []string // topic@cluster
	resets  []string // group topic timestamp
	// The operations pages' changes (fake_ops_test.go).
	subgroups []string
	sent      []TestMessage
	resent    []string // topic id
	direct    []string // topic id group client
	acl       []string
	err       error
	closed    bool
}

func (a *fakeAdmin) UpdateTopic(_ context.Context, spec TopicSpec) ([]string, error) {
	a.specs = append(a.specs, spec)
	return []string{"127.0.0.1:10911"}, a.err
}

func (a *fakeAdmin) DeleteTopic(_ context.Context, topic, cluster string) ([]string, error) {
	a.deleted = append(a.deleted, topic+"@"+cluster)
	return []string{"127.0.0.1:10911"}, a.err
}

func (a *fakeAdmin) ResetOffset(_ context.Context, group, topic string, ts int64) ([]QueueOffset, error) {
	a.resets = append(a.resets, fmt.Sprintf("%s %s %d", group, topic, ts))
	return []QueueOffset{{BrokerName: "broker-a", QueueID: 0, Offset: 3}}, a.err
}

func (a *fakeAdmin) Close() error {
	a.closed = true
	return nil
}
