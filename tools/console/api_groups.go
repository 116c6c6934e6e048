package console

import (
	"net/http"
	"strings"
	"time"
)

type groupsBody struct {
	Groups []GroupSummary `json:"groups"`
}

func (s *Server) getGroups(r *http.Request) (any, error) {
	groups, err := s.sampler.groups(r.Context())
	if err != nil {
		return nil, err
	}
	if groups == nil {
		groups = []GroupSummary{}
	}
	return groupsBody{Groups: groups}, nil
}

// getGroup answers a group's page and has the sampler follow the group's lag from now on, so its plot fills
// even when the group has no retry topic (the group list would not show it).
func (s *Server) getGroup(r *http.Request) (any, error) {
	name := r.PathValue("group")
	g, err := s.cfg.Source.Group(r.Context(), name)
	if err != nil {
		return nil, err
	}
	s.sampler.watch(name, time.Now())
	return g, nil
}

// resetRequest is the body of POST /api/groups/{group}/reset.
type resetRequest struct {
	Topic     string `json:"topic"`
	Timestamp int64  `json:"timestamp"` // ms since the epoch; -1: the end of each queue
}

type resetBody struct {
	Queues []QueueOffset `json:"queues"`
}

func (s *Server) postReset(r *http.Request, adm Admin) (any, error) {
	var req resetRequest
	if err := decodeBody(r, &req); err != nil {
		return nil, err
	}
	if req.Topic = strings.TrimSpace(req.Topic); req.Topic == "" {
		return nil, badRequest("topic is required")
	}
	if req.Timestamp < -1 {
		return nil, badRequest("timestamp %d: want milliseconds since the epoch, or -1 for the end of each queue", req.Timestamp)
	}
	group := r.PathValue("group")
	queues, err := adm.ResetOffset(r.Context(), group, req.Topic, req.Timestamp)
	if err != nil {
		return nil, err
	}
	s.log.Info("console: offsets reset", "group", group, "topic", req.Topic, "timestamp", req.Timestamp, "from", r.RemoteAddr)
	return resetBody{Queues: queues}, nil
}

type producersBody struct {
	Connections []Connection `json:"connections"`
}

func (s *Server) getProducers(r *http.Request) (any, error) {
	group, err := param(r, "group")
	if err != nil {
		return nil, err
	}
	topic, err := param(r, "topic")
	if err != nil {
		return nil, err
	}
	conns, err := s.cfg.Source.Producers(r.Context(), group, topic)
	if err != nil {
		return nil, err
	}
	return producersBody{Connections: conns}, nil
}
