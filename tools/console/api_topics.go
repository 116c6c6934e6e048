package console

import (
	"net/http"
	"regexp"
	"sort"
	"strings"

	"github.com/rocketraft/rocketraft/protocol"
)

// Topic kinds in the list.
const (
	kindNormal = "normal"
	kindRetry  = "retry"  // %RETRY%group
	kindDLQ    = "dlq"    // %DLQ%group
	kindSystem = "system" // the broker's own topics, the cluster and broker names the name server lists, CLUSTER_REPLY_TOPIC
)

// replyTopicSuffix follows a cluster's name in its reply topic (RocketMQ's MixAll.REPLY_TOPIC_POSTFIX).
const replyTopicSuffix = protocol.TopicReplySuffix

// topicKind classifies a topic of the list; names holds the cluster and broker names and each cluster's reply
// topic (CLUSTER_REPLY_TOPIC, which a broker creates for request-reply messages).
func topicKind(topic string, names map[string]bool) string {
	switch {
	case strings.HasPrefix(topic, protocol.RetryGroupTopicPrefix):
		return kindRetry
	case strings.HasPrefix(topic, protocol.DLQGroupTopicPrefix):
		return kindDLQ
	case protocol.SystemTopics[topic] || protocol.HasSystemTopicPrefix(topic) || names[topic]:
		return kindSystem
	}
	return kindNormal
}

// topicRow is one topic of GET /api/topics.
type topicRow struct {
	Name string `json:"name"`
	Kind string `json:"kind"`
}

type topicsBody struct {
	Topics []topicRow `json:"topics"`
}

func (s *Server) getTopics(r *http.Request) (any, error) {
	names, err := s.cfg.Source.TopicNames(r.Context())
	if err != nil {
		return nil, err
	}
	special := map[string]bool{}
	if brokers, err := s.sampler.brokers(r.Context()); err == nil {
		for _, b := range brokers {
			special[b.Cluster], special[b.BrokerName], special[b.Cluster+replyTopicSuffix] = true, true, true
		}
	}
	sort.Strings(names)
	body := topicsBody{Topics: make([]topicRow, 0, len(names))}
	for _, n := range names {
		body.Topics = append(body.Topics, topicRow{Name: n, Kind: topicKind(n, special)})
	}
	return body, nil
}

func (s *Server) getTopic(r *http.Request) (any, error) {
	return s.cfg.Source.Topic(r.Context(), r.PathValue("topic"))
}

// validTopic is RocketMQ's topic name rule (TopicValidator): letters, digits, %, |, _ and -, at most 127.
var validTopic = regexp.MustCompile(`^[%|a-zA-Z0-9_-]{1,127}$`)

// maxQueues bounds the queue numbers a page may ask for.
const maxQueues = 1024

// checkTopicSpec fills the defaults of a topic to create (8 queues each way, perm 6) and refuses bad fields
// by name.
func checkTopicSpec(spec *TopicSpec) error {
	spec.Topic, spec.Cluster, spec.BrokerAddr = strings.TrimSpace(spec.Topic), strings.TrimSpace(spec.Cluster), strings.TrimSpace(spec.BrokerAddr)
	if !validTopic.MatchString(spec.Topic) {
		return badRequest("topic %q: use 1 to 127 letters, digits, %%, |, _ or -", spec.Topic)
	}
	if protocol.SystemTopics[spec.Topic] {
		return badRequest("topic %s is a system topic", spec.Topic)
	}
	if (spec.Cluster == "") == (spec.BrokerAddr == "") {
		return badRequest("give one of cluster or brokerAddr")
	}
	for _, q := range []struct {
		name string
		n    *int
	}{{"readQueues", &spec.ReadQueues}, {"writeQueues", &spec.WriteQueues}} {
		if *q.n == 0 {
			*q.n = 8
		}
		if *q.n < 1 || *q.n > maxQueues {
			return badRequest("%s %d: want 1 to %d", q.name, *q.n, maxQueues)
		}
	}
	switch spec.Perm {
	case 0:
		spec.Perm = 6
	case 2, 4, 6:
	default:
		return badRequest("perm %d: want 2 (write), 4 (read) or 6 (both)", spec.Perm)
	}
	return nil
}

// brokersBody is the answer of a change: the brokers it was made on.
type brokersBody struct {
	Brokers []string `json:"brokers"`
}

func (s *Server) postTopic(r *http.Request, adm Admin) (any, error) {
	var spec TopicSpec
	if err := decodeBody(r, &spec); err != nil {
		return nil, err
	}
	if err := checkTopicSpec(&spec); err != nil {
		return nil, err
	}
	done, err := adm.UpdateTopic(r.Context(), spec)
	if err != nil {
		return nil, err
	}
	s.log.Info("console: topic updated", "topic", spec.Topic, "brokers", done, "from", r.RemoteAddr)
	return brokersBody{Brokers: done}, nil
}

func (s *Server) deleteTopic(r *http.Request, adm Admin) (any, error) {
	cluster, err := param(r, "cluster")
	if err != nil {
		return nil, err
	}
	topic := r.PathValue("topic")
	done, err := adm.DeleteTopic(r.Context(), topic, cluster)
	if err != nil {
		return nil, err
	}
	s.log.Info("console: topic deleted", "topic", topic, "cluster", cluster, "brokers", done, "from", r.RemoteAddr)
	return brokersBody{Brokers: done}, nil
}
