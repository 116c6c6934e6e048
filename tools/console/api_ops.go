package console

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/rocketraft/rocketraft/message"
	"github.com/rocketraft/rocketraft/protocol"
)

// The operations pages' API: message trace, dead letters, subscription groups, consumer running info,
// broker config, topic throughput, test messages and consume directly.

// dlqPrefix names a group's dead-letter topic: %DLQ%<group>.
const dlqPrefix = protocol.DLQGroupTopicPrefix

type traceBody struct {
	TraceTopic string        `json:"traceTopic"`
	Records    []TraceRecord `json:"records"`
}

// getTrace is GET /api/messages/{id}/trace[?traceTopic=T]: the trace records of a message by its unique id.
func (s *Server) getTrace(r *http.Request) (any, error) {
	topic := strings.TrimSpace(r.URL.Query().Get("traceTopic"))
	if topic == "" {
		topic = DefaultTraceTopic
	}
	if err := protocol.ValidateTopicName(topic); err != nil {
		return nil, badRequest("parameter traceTopic: %v", err)
	}
	recs, err := s.cfg.Source.MessageTrace(r.Context(), topic, r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	if recs == nil {
		recs = []TraceRecord{}
	}
	return traceBody{TraceTopic: topic, Records: recs}, nil
}

// dlqRow is a dead-letter message in a list: where it came from and how often it was tried.
type dlqRow struct {
	messageRow
	OriginTopic    string `json:"originTopic"`
	OriginMsgID    string `json:"originMsgId"`
	ReconsumeTimes int32  `json:"reconsumeTimes"`
}

type dlqBody struct {
	Topic    string   `json:"topic"`
	Messages []dlqRow `json:"messages"`
}

// dlqMessages reads the dead-letter messages of ?group=G stored in [begin, end) (default: the last day), at
// most max per queue.
func (s *Server) dlqMessages(r *http.Request) (string, []Message, error) {
	group, err := param(r, "group")
	if err != nil {
		return "", nil, err
	}
	topic := dlqPrefix + group
	if err := protocol.ValidateTopicName(topic); err != nil {
		return "", nil, badRequest("parameter group: %v", err)
	}
	now := time.Now().UnixMilli()
	begin, err := intParam(r, "begin", now-24*3600*1000, 0, math.MaxInt64)
	if err != nil {
		return "", nil, err
	}
	end, err := intParam(r, "end", math.MaxInt64, 0, math.MaxInt64)
	if err != nil {
		return "", nil, err
	}
	if begin >= end {
		return "", nil, badRequest("parameter begin (%d) must be before end (%d)", begin, end)
	}
	max, err := intParam(r, "max", 64, 1, 1000)
	if err != nil {
		return "", nil, err
	}
	msgs, err := s.cfg.Source.MessagesByTime(r.Context(), topic, begin, end, int(max))
	return topic, msgs, err
}

// getDLQ is GET /api/dlq?group=G[&begin=MS&end=MS&max=N].
func (s *Server) getDLQ(r *http.Request) (any, error) {
	topic, msgs, err := s.dlqMessages(r)
	if err != nil {
		return nil, err
	}
	body := dlqBody{Topic: topic, Messages: make([]dlqRow, 0, len(msgs))}
	for _, m := range msgs {
		body.Messages = append(body.Messages, dlqRow{messageRow: rowOf(m), OriginTopic: originTopic(m),
			OriginMsgID: m.Properties[message.PropertyDLQOriginMessageID], ReconsumeTimes: m.ReconsumeTimes})
	}
	return body, nil
}

// originTopic is the topic a dead-letter or retry copy was first sent to.
func originTopic(m Message) string {
	if t := m.Properties[message.PropertyDLQOriginTopic]; t != "" {
		return t
	}
	return m.Properties[message.PropertyRetryTopic]
}

// exportBody is the file GET /api/dlq/export answers: the messages in full (bodies in base64).
type exportBody struct {
	Topic      string    `json:"topic"`
	ExportedAt int64     `json:"exportedAt"`
	Messages   []Message `json:"messages"`
}

// getDLQExport is GET /api/dlq/export?group=G[&begin&end&max]: the dead-letter messages as a JSON file
// download (Content-Disposition: attachment).
func (s *Server) getDLQExport(w http.ResponseWriter, r *http.Request) {
	topic, msgs, err := s.dlqMessages(r)
	if err != nil {
		s.api(func(*http.Request) (any, error) { return nil, err }).ServeHTTP(w, r)
		return
	}
	if msgs == nil {
		msgs = []Message{}
	}
	name := strings.NewReplacer("%", "", "/", "_").Replace(topic)
	w.Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename="%s-%s.json"`, name, time.Now().UTC().Format("20060102T150405Z")))
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(exportBody{Topic: topic, ExportedAt: time.Now().UnixMilli(), Messages: msgs}) // the client went away
}

type resendRequest struct {
	Group string   `json:"group"`
	IDs   []string `json:"ids"` // offset ids of the dead-letter messages
}

type resendBody struct {
	Results []Resent `json:"results"`
}

// postDLQResend is POST /api/dlq/resend: each named dead-letter message of the group goes back to its
// original topic.
func (s *Server) postDLQResend(r *http.Request, adm Admin) (any, error) {
	var req resendRequest
	if err := decodeBody(r, &req); err != nil {
		return nil, err
	}
	if req.Group = strings.TrimSpace(req.Group); req.Group == "" {
		return nil, badRequest("group is required")
	}
	if len(req.IDs) == 0 || len(req.IDs) > 1000 {
		return nil, badRequest("ids: give 1 to 1000 message ids, not %d", len(req.IDs))
	}
	res, err := adm.ResendMessages(r.Context(), dlqPrefix+req.Group, req.IDs)
	if err != nil {
		return nil, err
	}
	s.log.Info("console: dead-letter messages resent", "group", req.Group, "count", len(req.IDs), "from", r.RemoteAddr)
	return resendBody{Results: res}, nil
}

type subGroupsBody struct {
	Groups []SubscriptionGroup `json:"groups"`
}

func (s *Server) getSubGroups(r *http.Request) (any, error) {
	groups, err := s.cfg.Source.SubscriptionGroups(r.Context())
	if err != nil {
		return nil, err
	}
	if groups == nil {
		groups = []SubscriptionGroup{}
	}
	return subGroupsBody{Groups: groups}, nil
}

// subGroupRequest is the body of POST /api/subgroups.
type subGroupRequest struct {
	Cluster string                           `json:"cluster"`
	Config  protocol.SubscriptionGroupConfig `json:"config"`
}

func (s *Server) postSubGroup(r *http.Request, adm Admin) (any, error) {
	var req subGroupRequest
	if err := decodeBody(r, &req); err != nil {
		return nil, err
	}
	c := &req.Config
	switch c.GroupName = strings.TrimSpace(c.GroupName); {
	case strings.TrimSpace(req.Cluster) == "":
		return nil, badRequest("cluster is required")
	case protocol.ValidateTopicName(c.GroupName) != nil:
		return nil, badRequest("config.groupName %q: want 1..%d characters of %%|a-zA-Z0-9_-", c.GroupName, protocol.MaxTopicNameLength)
	case c.RetryQueueNums < 0 || c.RetryQueueNums > 1024:
		return nil, badRequest("config.retryQueueNums %d: want 0 to 1024", c.RetryQueueNums)
	case c.RetryMaxTimes < -1 || c.RetryMaxTimes > 1000:
		return nil, badRequest("config.retryMaxTimes %d: want -1 to 1000", c.RetryMaxTimes)
	case c.BrokerID < 0 || c.WhichBrokerWhenConsumeSlowly < 0:
		return nil, badRequest("config.brokerId and config.whichBrokerWhenConsumeSlowly must not be negative")
	}
	brokers, err := adm.UpdateSubscriptionGroup(r.Context(), strings.TrimSpace(req.Cluster), *c)
	if err != nil {
		return nil, err
	}
	s.log.Info("console: subscription group updated", "group", c.GroupName, "cluster", req.Cluster, "from", r.RemoteAddr)
	return brokersBody{Brokers: brokers}, nil
}

func (s *Server) deleteSubGroup(r *http.Request, adm Admin) (any, error) {
	cluster, err := param(r, "cluster")
	if err != nil {
		return nil, err
	}
	group := r.PathValue("group")
	brokers, err := adm.DeleteSubscriptionGroup(r.Context(), cluster, group)
	if err != nil {
		return nil, err
	}
	s.log.Info("console: subscription group deleted", "group", group, "cluster", cluster, "from", r.RemoteAddr)
	return brokersBody{Brokers: brokers}, nil
}

// getRunningInfo is GET /api/groups/{group}/clients/{clientId}.
func (s *Server) getRunningInfo(r *http.Request) (any, error) {
	return s.cfg.Source.RunningInfo(r.Context(), r.PathValue("group"), r.PathValue("clientId"))
}

type brokerConfigBody struct {
	Addr   string            `json:"addr"`
	Config map[string]string `json:"config"`
}

// getBrokerConfig is GET /api/brokers/{addr}/config, for a broker the name servers know.
func (s *Server) getBrokerConfig(r *http.Request) (any, error) {
	addr := r.PathValue("addr")
	brokers, err := s.sampler.brokers(r.Context())
	if err != nil {
		return nil, err
	}
	known := false
	for _, b := range brokers {
		known = known || b.Addr == addr
	}
	if !known {
		return nil, &apiError{status: http.StatusNotFound, msg: fmt.Sprintf("no broker at %s is known to the name servers", addr)}
	}
	cfg, err := s.cfg.Source.BrokerConfig(r.Context(), addr)
	if err != nil {
		return nil, err
	}
	return brokerConfigBody{Addr: addr, Config: cfg}, nil
}

type topicTPSBody struct {
	Topics []TopicTPS `json:"topics"`
}

// getTopicTPS is GET /api/tps/topics: every topic's throughput over the last minute, busiest first (an answer
// up to five sample intervals old).
func (s *Server) getTopicTPS(r *http.Request) (any, error) {
	tps, err := s.sampler.topicTPS(r.Context())
	if err != nil {
		return nil, err
	}
	if tps == nil {
		tps = []TopicTPS{}
	}
	return topicTPSBody{Topics: tps}, nil
}

// maxTestBody bounds the body of a message sent from the topic page.
const maxTestBody = 32 << 10

// postSend is POST /api/topics/{topic}/send: a test message.
func (s *Server) postSend(r *http.Request, adm Admin) (any, error) {
	var m TestMessage
	if err := decodeBody(r, &m); err != nil {
		return nil, err
	}
	m.Topic = r.PathValue("topic")
	switch {
	case m.Body == "":
		return nil, badRequest("body is required")
	case len(m.Body) > maxTestBody:
		return nil, badRequest("body is %d bytes, more than the %d a test message may have", len(m.Body), maxTestBody)
	case strings.ContainsAny(m.Tags, "|"):
		return nil, badRequest("tags %q: a message has one tag (no '|')", m.Tags)
	}
	res, err := adm.SendMessage(r.Context(), m)
	if err != nil {
		return nil, err
	}
	s.log.Info("console: test message sent", "topic", m.Topic, "msgId", res.MsgID, "from", r.RemoteAddr)
	return res, nil
}

// consumeRequest is the body of POST /api/messages/{id}/consume.
type consumeRequest struct {
	Topic    string `json:"topic"`
	Group    string `json:"group"`
	ClientID string `json:"clientId"`
}

// postConsume is POST /api/messages/{id}/consume: the message is consumed now by one client of a group.
func (s *Server) postConsume(r *http.Request, adm Admin) (any, error) {
	var req consumeRequest
	if err := decodeBody(r, &req); err != nil {
		return nil, err
	}
	if req.Group = strings.TrimSpace(req.Group); req.Group == "" {
		return nil, badRequest("group is required")
	}
	if req.ClientID = strings.TrimSpace(req.ClientID); req.ClientID == "" {
		return nil, badRequest("clientId is required")
	}
	res, err := adm.ConsumeDirectly(r.Context(), strings.TrimSpace(req.Topic), r.PathValue("id"), req.Group, req.ClientID)
	if err != nil {
		return nil, err
	}
	s.log.Info("console: message consumed directly", "id", r.PathValue("id"), "group", req.Group, "client", req.ClientID,
		"result", res.ConsumeResult, "from", r.RemoteAddr)
	return res, nil
}
