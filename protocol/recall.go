package protocol

// Recalling a timed message (RocketMQ 5.3: RecallMessageHandle.java, RecallMessageRequestHeader.java,
// RecallMessageResponseHeader.java of apache/rocketmq): wire format, never to change.

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// RecallHandle is what a send of a timed message hands the producer (SEND_MESSAGE's recallHandle, a v5
// SendResultEntry's recall_handle) and what RECALL_MESSAGE takes back: the URL-safe base64 of
// "v1 <topic> <brokerName> <delivery time ms> <message id>", fields apart by one space.
type RecallHandle struct {
	Topic      string
	BrokerName string
	DeliverMs  int64  // when the message is due (ms; the broker's TIMER_OUT_MS)
	MessageID  string // the message's UNIQ_KEY
}

// ErrRecallHandle is the error of a handle that does not decode.
var ErrRecallHandle = errors.New("recall handle is invalid")

// Encode is h as the handle string.
func (h RecallHandle) Encode() string {
	raw := strings.Join([]string{"v1", h.Topic, h.BrokerName, strconv.FormatInt(h.DeliverMs, 10), h.MessageID}, " ")
	return base64.URLEncoding.EncodeToString([]byte(raw))
}

// ParseRecallHandle decodes a handle (padded or not); an error wraps ErrRecallHandle and says why.
func ParseRecallHandle(s string) (RecallHandle, error) {
	raw, err := base64.URLEncoding.DecodeString(s)
	if err != nil {
		if raw, err = base64.RawURLEncoding.DecodeString(s); err != nil {
			return RecallHandle{}, fmt.Errorf("%w: not URL-safe base64", ErrRecallHandle)
		}
	}
	f := strings.Split(string(raw), " ")
	if len(f) != 5 || f[0] != "v1" {
		return RecallHandle{}, fmt.Errorf("%w: want \"v1 topic brokerName timestamp messageId\"", ErrRecallHandle)
	}
	ms, err := strconv.ParseInt(f[3], 10, 64)
	if err != nil {
		return RecallHandle{}, fmt.Errorf("%w: timestamp %q is not a number", ErrRecallHandle, f[3])
	}
	if f[1] == "" || f[2] == "" || f[4] == "" {
		return RecallHandle{}, fmt.Errorf("%w: an empty field", ErrRecallHandle)
	}
	return RecallHandle{Topic: f[1], BrokerName: f[2], DeliverMs: ms, MessageID: f[4]}, nil
}

// RecallMessageRequestHeader is RECALL_MESSAGE's request (370).
type RecallMessageRequestHeader struct {
	ProducerGroup string // may be empty
	Topic         string
	RecallHandle  string
}

// Ext is h as header fields.
func (h *RecallMessageRequestHeader) Ext() map[string]string {
	ext := map[string]string{"topic": h.Topic, "recallHandle": h.RecallHandle}
	if h.ProducerGroup != "" {
		ext["producerGroup"] = h.ProducerGroup
	}
	return ext
}

// ParseRecallMessageRequestHeader decodes RECALL_MESSAGE's header fields (topic and recallHandle required).
func ParseRecallMessageRequestHeader(ext map[string]string) (*RecallMessageRequestHeader, error) {
	p := extParser{ext: ext}
	h := &RecallMessageRequestHeader{Topic: p.str("topic"), RecallHandle: p.str("recallHandle"), ProducerGroup: ext["producerGroup"]}
	return h, p.err
}

// RecallMessageResponseHeader is RECALL_MESSAGE's answer: the recalled message's id.
type RecallMessageResponseHeader struct {
	MsgID string
}

// Ext is h as header fields.
func (h *RecallMessageResponseHeader) Ext() map[string]string {
	return map[string]string{"msgId": h.MsgID}
}

// TimerDeleteKey is the TIMER_DEL_UNIQKEY of the record that recalls the message id of topic
// (TimerMessageStore.buildDeleteKey): the timer drops the message of that key due at the record's time.
func TimerDeleteKey(topic, msgID string) string { return topic + "+" + msgID }
