package console

import (
	"context"
	"errors"

	"github.com/rocketraft/rocketraft/protocol"
	"github.com/rocketraft/rocketraft/remoting"
)

// Errors a Source wraps so the API can answer with the right status. Anything else is a failure to reach
// or read a server (502).
var (
	// ErrNotFound: the topic, group, message or producer asked for does not exist (404).
	ErrNotFound = errors.New("console: not found")
	// ErrDenied: a server refused the account the request was signed with (ACL, NO_PERMISSION) (403).
	ErrDenied = errors.New("console: denied")
	// ErrInvalid: a server or the source refused an argument (400).
	ErrInvalid = errors.New("console: invalid argument")
)

// Source gathers what the pages show, from the name servers and brokers. tools/admin implements it over
// the wire protocol (mqadmin console); the tests of this package use a fake.
//
// Every method may be called concurrently (the sampler and any number of HTTP requests), must honour ctx,
// and returns values the caller owns. Errors wrap ErrNotFound, ErrDenied or ErrInvalid where those apply.
type Source interface {
	// Brokers lists every broker the name servers know, by cluster, broker name and id, with its runtime
	// figures. A broker that does not answer is listed with Error set; the error is for the name servers.
	Brokers(ctx context.Context) ([]Broker, error)
	// TopicNames lists every topic the name servers know, in any order.
	TopicNames(ctx context.Context) ([]string, error)
	// Topic is a topic's route, its queues' offsets and the groups that consume it.
	Topic(ctx context.Context, name string) (*Topic, error)
	// Groups lists the consumer groups (those with a retry topic) with their members and total lag.
	Groups(ctx context.Context) ([]GroupSummary, error)
	// Group is a consumer group's members, subscriptions and lag per queue. A group that is not online
	// but has committed offsets is answered with Online false.
	Group(ctx context.Context, name string) (*Group, error)
	// Producers lists the producers of group connected to the brokers of topic.
	Producers(ctx context.Context, group, topic string) ([]Connection, error)
	// MessagesByKey finds up to max messages of topic indexed under key, oldest first.
	MessagesByKey(ctx context.Context, topic, key string, max int) ([]Message, error)
	// MessagesByTime reads up to max messages of each queue of topic stored in [begin, end) (ms since the
	// epoch), without committing anything.
	MessagesByTime(ctx context.Context, topic string, begin, end int64, max int) ([]Message, error)
	// Message finds one message by its offset id, or (with topic) by its unique id, with its Trace.
	Message(ctx context.Context, topic, id string) (*Message, error)
	// MessageTrace is the trace records of message msgID (its unique id) in traceTopic, oldest first.
	MessageTrace(ctx context.Context, traceTopic, msgID string) ([]TraceRecord, error)
	// SubscriptionGroups lists the subscription groups of every master, by broker.
	SubscriptionGroups(ctx context.Context) ([]SubscriptionGroup, error)
	// RunningInfo is what client clientID of group reports of itself. A client that does not answer, or
	// answers without a report, is an error naming it.
	RunningInfo(ctx context.Context, group, clientID string) (*RunningInfo, error)
	// BrokerConfig is the config of the broker at addr (GET_BROKER_CONFIG), key by key.
	BrokerConfig(ctx context.Context, addr string) (map[string]string, error)
	// TopicTPS is the throughput of every topic but the system, retry and dead-letter ones, busiest first.
	TopicTPS(ctx context.Context) ([]TopicTPS, error)
	// Admin returns the administrative actions signed with creds; zero credentials sign with the source's
	// own account (or not at all when it has none). The caller closes it.
	Admin(creds remoting.Credentials) Admin
}

// Admin is what the console changes. Each method goes on after a broker fails and returns what succeeded
// with the joined errors.
type Admin interface {
	// UpdateTopic creates or updates a topic on the brokers spec names; it returns their addresses.
	UpdateTopic(ctx context.Context, spec TopicSpec) ([]string, error)
	// DeleteTopic deletes a topic from every broker of cluster and from the name servers.
	DeleteTopic(ctx context.Context, topic, cluster string) ([]string, error)
	// ResetOffset moves group's offsets on topic to the first message stored at or after timestamp (ms;
	// -1 is the end of each queue) and returns the new offsets.
	ResetOffset(ctx context.Context, group, topic string, timestamp int64) ([]QueueOffset, error)
	// UpdateSubscriptionGroup creates or updates a subscription group on the masters of cluster; it returns
	// their addresses.
	UpdateSubscriptionGroup(ctx context.Context, cluster string, cfg protocol.SubscriptionGroupConfig) ([]string, error)
	// DeleteSubscriptionGroup deletes a subscription group from the masters of cluster (its offsets too).
	DeleteSubscriptionGroup(ctx context.Context, cluster, group string) ([]string, error)
	// SendMessage sends a message to a writable queue of its topic.
	SendMessage(ctx context.Context, m TestMessage) (*SendResult, error)
	// ResendMessages sends each message of topic named by its offset id again, to the topic it was first
	// sent to (a dead-letter or retry copy's RETRY_TOPIC), with its body, tags, keys and user properties and
	// a new unique id. It answers one Resent per id, failures included.
	ResendMessages(ctx context.Context, topic string, ids []string) ([]Resent, error)
	// ConsumeDirectly has client clientID of group consume the message (offset id, or unique id with its
	// topic) now, whatever its offsets (CONSUME_MESSAGE_DIRECTLY).
	ConsumeDirectly(ctx context.Context, topic, id, group, clientID string) (*DirectResult, error)
	// ACLConfigs reads the ACL file of every master (GET_BROKER_CLUSTER_ACL_CONFIG: the brokers answer admin
	// accounts only, so it is signed with the person's account). A broker that refuses or fails is listed
	// with Error set; the error is for the name servers.
	ACLConfigs(ctx context.Context) ([]BrokerACL, error)
	// UpdateACLAccount creates or replaces an account in the ACL file of every master of cluster: every field
	// is set as given, but an empty SecretKey keeps the account's secret (a new account needs one).
	UpdateACLAccount(ctx context.Context, cluster string, a protocol.PlainAccessConfig) ([]string, error)
	// DeleteACLAccount removes an account from the ACL file of every master of cluster.
	DeleteACLAccount(ctx context.Context, cluster, accessKey string) ([]string, error)
	// UpdateGlobalWhiteAddrs sets the global white addresses of the ACL file of every master of cluster.
	UpdateGlobalWhiteAddrs(ctx context.Context, cluster string, addrs []string) ([]string, error)
	// Close releases the connections made for the credentials.
	Close() error
}

// Broker is one broker process as the cluster page shows it.
type Broker struct {
	Cluster    string  `json:"cluster"`
	BrokerName string  `json:"brokerName"`
	BrokerID   int64   `json:"brokerId"`
	Addr       string  `json:"addr"`
	Role       string  `json:"role"` // brokerRole: ASYNC_MASTER, SYNC_MASTER or SLAVE
	Version    string  `json:"version"`
	InTPS      float64 `json:"inTps"`  // messages stored per second (putTps, last 10 s)
	OutTPS     float64 `json:"outTps"` // messages sent to consumers per second (getTransferedTps)
	DiskRatio  float64 `json:"diskRatio"`
	ACL        bool    `json:"acl"` // aclEnable, or the broker refused the console's account
	// Raft is set for brokers that run the Raft mode and report their Raft status; nil otherwise.
	Raft  *RaftNode `json:"raft,omitempty"`
	Error string    `json:"error,omitempty"`
}

// RaftNode is a broker's place in its Raft group, as the broker reports it (GET_RAFT_STATUS).
type RaftNode struct {
	Group  string `json:"group"`  // dLegerGroup
	SelfID string `json:"selfId"` // dLegerSelfId
	Role   string `json:"role"`   // Leader, Follower, Candidate (hashicorp/raft's names)
	// Master: the node is the leader and everything before its term is applied, so it takes sends.
	Master bool   `json:"master"`
	Term   uint64 `json:"term"`
	// LeaderID and Leader are the leader's dLegerSelfId and Raft address as this node knows them; "" when it
	// knows none.
	LeaderID     string `json:"leaderId"`
	Leader       string `json:"leader"`
	CommitIndex  uint64 `json:"commitIndex"`
	AppliedIndex uint64 `json:"appliedIndex"`
}

// Topic is a topic's route and queues.
type Topic struct {
	Name    string        `json:"name"`
	Order   bool          `json:"order"`
	Brokers []TopicBroker `json:"brokers"`
	Queues  []QueueStatus `json:"queues"`
	Groups  []string      `json:"groups"`
}

// TopicBroker is one broker name of a topic's route.
type TopicBroker struct {
	Cluster     string           `json:"cluster"`
	BrokerName  string           `json:"brokerName"`
	Addrs       map[int64]string `json:"addrs"` // by broker id, 0 the master
	ReadQueues  int32            `json:"readQueues"`
	WriteQueues int32            `json:"writeQueues"`
	Perm        int32            `json:"perm"` // 2 write, 4 read, 6 both
}

// QueueStatus is one queue's offsets.
type QueueStatus struct {
	BrokerName  string `json:"brokerName"`
	QueueID     int32  `json:"queueId"`
	MinOffset   int64  `json:"minOffset"`
	MaxOffset   int64  `json:"maxOffset"`
	LastUpdated int64  `json:"lastUpdated"` // ms; 0 when nothing was stored
}

// TopicSpec is a topic to create or update: on the masters of Cluster, or on the broker at BrokerAddr.
type TopicSpec struct {
	Topic       string `json:"topic"`
	Cluster     string `json:"cluster,omitempty"`
	BrokerAddr  string `json:"brokerAddr,omitempty"`
	ReadQueues  int    `json:"readQueues"`
	WriteQueues int    `json:"writeQueues"`
	Perm        int    `json:"perm"`
	Order       bool   `json:"order"`
}

// GroupSummary is one consumer group in the list.
type GroupSummary struct {
	Group   string  `json:"group"`
	Members int     `json:"members"`
	Version string  `json:"version"` // the oldest member's client version; OFFLINE without members
	Type    string  `json:"type"`    // PUSH or PULL
	Model   string  `json:"model"`   // CLUSTERING or BROADCASTING
	TPS     float64 `json:"tps"`
	Lag     int64   `json:"lag"`
}

// Group is one consumer group in full.
type Group struct {
	Name             string         `json:"name"`
	Online           bool           `json:"online"`
	ConsumeType      string         `json:"consumeType"`
	MessageModel     string         `json:"messageModel"`
	ConsumeFromWhere string         `json:"consumeFromWhere"`
	Members          []Connection   `json:"members"`
	Subscriptions    []Subscription `json:"subscriptions"`
	Queues           []QueueLag     `json:"queues"`
	TPS              float64        `json:"tps"`
	BrokerOffset     int64          `json:"brokerOffset"`   // total
	ConsumerOffset   int64          `json:"consumerOffset"` // total
	Lag              int64          `json:"lag"`            // total
}

// Connection is one client connected to the brokers.
type Connection struct {
	ClientID   string `json:"clientId"`
	ClientAddr string `json:"clientAddr"`
	Language   string `json:"language"`
	Version    string `json:"version"`
}

// Subscription is a topic a group subscribes to, with its expression.
type Subscription struct {
	Topic      string `json:"topic"`
	Expression string `json:"expression"`
}

// QueueLag is a group's progress on one queue.
type QueueLag struct {
	Topic          string `json:"topic"`
	BrokerName     string `json:"brokerName"`
	QueueID        int32  `json:"queueId"`
	BrokerOffset   int64  `json:"brokerOffset"`
	ConsumerOffset int64  `json:"consumerOffset"`
	Lag            int64  `json:"lag"`
	Client         string `json:"client,omitempty"` // the member that holds the queue, when known
	LastTimestamp  int64  `json:"lastTimestamp"`    // store time of the last consumed message (ms)
}

// QueueOffset is a queue's offset after a reset.
type QueueOffset struct {
	BrokerName string `json:"brokerName"`
	QueueID    int32  `json:"queueId"`
	Offset     int64  `json:"offset"`
}

// Message is a stored message. Body is the raw body (inflated when it was compressed); JSON carries it in
// base64 and the page shows it as text or hex.
type Message struct {
	MsgID           string            `json:"msgId"` // the unique id, else the offset id
	OffsetMsgID     string            `json:"offsetMsgId"`
	Topic           string            `json:"topic"`
	Tags            string            `json:"tags"`
	Keys            string            `json:"keys"`
	QueueID         int32             `json:"queueId"`
	QueueOffset     int64             `json:"queueOffset"`
	CommitLogOffset int64             `json:"commitLogOffset"`
	BornTimestamp   int64             `json:"bornTimestamp"`
	StoreTimestamp  int64             `json:"storeTimestamp"`
	BornHost        string            `json:"bornHost"`
	StoreHost       string            `json:"storeHost"`
	ReconsumeTimes  int32             `json:"reconsumeTimes"`
	SysFlag         int32             `json:"sysFlag"`
	StoreSize       int32             `json:"storeSize"`
	Properties      map[string]string `json:"properties"`
	Body            []byte            `json:"body"`
	// Trace is set by Source.Message only: for each group that consumes the topic, where the message stands.
	Trace []Delivery `json:"trace,omitempty"`
}

// Delivery is where a message stands for one consumer group.
type Delivery struct {
	Group string `json:"group"`
	// State is RocketMQ's track type: CONSUMED, CONSUMED_BUT_FILTERED, NOT_CONSUME_YET, PULL (a pull
	// consumer, whose progress the broker cannot tell), NOT_ONLINE or UNKNOWN.
	State string `json:"state"`
	// ConsumerOffset is the group's committed offset on the message's queue (nil when it has none): the
	// message is consumed once it is past the message's QueueOffset.
	ConsumerOffset *int64 `json:"consumerOffset,omitempty"`
	Detail         string `json:"detail,omitempty"`
}
