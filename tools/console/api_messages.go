package console

import (
	"math"
	"net/http"
	"strings"
)

// previewBytes is how much of each body a message list carries.
const previewBytes = 96

// messageRow is a message in a list: what identifies it and the start of its body.
type messageRow struct {
	MsgID          string `json:"msgId"`
	OffsetMsgID    string `json:"offsetMsgId"`
	Topic          string `json:"topic"`
	Tags           string `json:"tags"`
	Keys           string `json:"keys"`
	QueueID        int32  `json:"queueId"`
	QueueOffset    int64  `json:"queueOffset"`
	StoreTimestamp int64  `json:"storeTimestamp"`
	StoreHost      string `json:"storeHost"`
	BodySize       int    `json:"bodySize"`
	Preview        []byte `json:"preview"` // the first previewBytes of the body
}

type messagesBody struct {
	Messages []messageRow `json:"messages"`
}

// getMessages is GET /api/messages?topic=T and either key=K or begin=MS&end=MS; max bounds the answer (per
// broker by key, per queue by time).
func (s *Server) getMessages(r *http.Request) (any, error) {
	topic, err := param(r, "topic")
	if err != nil {
		return nil, err
	}
	q := r.URL.Query()
	var msgs []Message
	switch key := strings.TrimSpace(q.Get("key")); {
	case key != "":
		max, err := intParam(r, "max", 64, 1, 1000)
		if err != nil {
			return nil, err
		}
		msgs, err = s.cfg.Source.MessagesByKey(r.Context(), topic, key, int(max))
		if err != nil {
			return nil, err
		}
	case q.Has("begin") || q.Has("end"):
		begin, err := intParam(r, "begin", 0, 0, math.MaxInt64)
		if err != nil {
			return nil, err
		}
		end, err := intParam(r, "end", math.MaxInt64, 0, math.MaxInt64)
		if err != nil {
			return nil, err
		}
		if begin >= end {
			return nil, badRequest("parameter begin (%d) must be before end (%d)", begin, end)
		}
		max, err := intParam(r, "max", 32, 1, 1000)
		if err != nil {
			return nil, err
		}
		msgs, err = s.cfg.Source.MessagesByTime(r.Context(), topic, begin, end, int(max))
		if err != nil {
			return nil, err
		}
	default:
		return nil, badRequest("give parameter key, or begin and end")
	}
	body := messagesBody{Messages: make([]messageRow, 0, len(msgs))}
	for _, m := range msgs {
		body.Messages = append(body.Messages, rowOf(m))
	}
	return body, nil
}

// rowOf is a message as a list shows it.
func rowOf(m Message) messageRow {
	return messageRow{MsgID: m.MsgID, OffsetMsgID: m.OffsetMsgID, Topic: m.Topic, Tags: m.Tags, Keys: m.Keys,
		QueueID: m.QueueID, QueueOffset: m.QueueOffset, StoreTimestamp: m.StoreTimestamp, StoreHost: m.StoreHost,
		BodySize: len(m.Body), Preview: m.Body[:min(len(m.Body), previewBytes)]}
}

// getMessage is GET /api/messages/{id}[?topic=T]: one message in full, with its trace.
func (s *Server) getMessage(r *http.Request) (any, error) {
	return s.cfg.Source.Message(r.Context(), strings.TrimSpace(r.URL.Query().Get("topic")), r.PathValue("id"))
}
