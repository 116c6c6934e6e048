package protocol

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strconv"
)

// fastjson, both ways. RocketMQ's Java brokers write JSON with Alibaba's fastjson, which is not quite
// JSON, and Java tools and clients (the official Go client too: ResetOffsetBody.Decode) parse what it
// writes; so the broker writes these bodies the same way and the tools read both forms.
//
// MessageQueue-keyed tables (TopicStatsTable, ConsumeStats, ResetOffsetBody) have objects as keys, in
// fastjson's field order (alphabetical):
//
//	{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:{"lastUpdateTimestamp":0,"maxOffset":5,"minOffset":0}}}
//
// AppendQueueTable writes that form; FastJSONToJSON rewrites it into JSON, turning every object whose
// keys are not strings into an array of [key, value] pairs, which QueueTable decodes (and an empty {}).
//
// Offset tables keyed by int ({"t@g":{0:5}}) have bare integer keys; UnmarshalBareIntKeys reads them.

// Less orders queues as RocketMQ's MessageQueue.compareTo: topic, broker name, queue id.
func (q MessageQueue) Less(o MessageQueue) bool {
	if q.Topic != o.Topic {
		return q.Topic < o.Topic
	}
	if q.BrokerName != o.BrokerName {
		return q.BrokerName < o.BrokerName
	}
	return q.QueueID < o.QueueID
}

// QueueEntry is one entry of a MessageQueue-keyed table.
type QueueEntry[V any] struct {
	MQ    MessageQueue
	Value V
}

// QueueTable is a MessageQueue-keyed table, sorted by queue once decoded.
type QueueTable[V any] []QueueEntry[V]

func (t *QueueTable[V]) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if bytes.HasPrefix(b, []byte("{")) { // only an empty table keeps the object form
		var m map[string]json.RawMessage
		if err := json.Unmarshal(b, &m); err != nil || len(m) > 0 {
			return fmt.Errorf("queue table: want [key, value] pairs, got %.60s", b)
		}
		*t = nil
		return nil
	}
	var pairs [][2]json.RawMessage
	if err := json.Unmarshal(b, &pairs); err != nil {
		return fmt.Errorf("queue table: %w", err)
	}
	out := make(QueueTable[V], len(pairs))
	for i, p := range pairs {
		if err := json.Unmarshal(p[0], &out[i].MQ); err != nil {
			return fmt.Errorf("queue table key %s: %w", p[0], err)
		}
		if err := json.Unmarshal(p[1], &out[i].Value); err != nil {
			return fmt.Errorf("queue table value of %s: %w", p[0], err)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].MQ.Less(out[j].MQ) })
	*t = out
	return nil
}

// UnmarshalFastJSON decodes fastjson text into out: FastJSONToJSON, then encoding/json.
func UnmarshalFastJSON(b []byte, out any) error {
	j, err := FastJSONToJSON(b)
	if err != nil {
		return err
	}
	return json.Unmarshal(j, out)
}

// FastJSONToJSON converts fastjson text to JSON, turning every object whose keys are not strings into an
// array of [key, value] pairs (see the top of this file).
func FastJSONToJSON(in []byte) ([]byte, error) {
	p := fjParser{s: in}
	out, err := p.value(make([]byte, 0, len(in)+16))
	if err != nil {
		return nil, err
	}
	p.ws()
	if p.i != len(p.s) {
		return nil, p.errorf("text after the value")
	}
	return out, nil
}

type fjParser struct {
	s []byte
	i int
}

func (p *fjParser) errorf(format string, args ...any) error {
	return fmt.Errorf("fastjson at byte %d: %s", p.i, fmt.Sprintf(format, args...))
}

func (p *fjParser) ws() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t' || p.s[p.i] == '\n' || p.s[p.i] == '\r') {
		p.i++
	}
}

func (p *fjParser) peek() byte {
	p.ws()
	if p.i >= len(p.s) {
		return 0
	}
	return p.s[p.i]
}

func (p *fjParser) expect(c byte) error {
	if p.peek() != c {
		return p.errorf("want %q", c)
	}
	p.i++
	return nil
}

func (p *fjParser) value(dst []byte) ([]byte, error) {
	switch p.peek() {
	case 0:
		return nil, p.errorf("unexpected end")
	case '{':
		return p.object(dst)
	case '[':
		return p.array(dst)
	case '"':
		return p.str(dst)
	}
	start := p.i
	for p.i < len(p.s) && !bytes.ContainsRune([]byte(",:]} \t\r\n"), rune(p.s[p.i])) {
		p.i++
	}
	if p.i == start {
		return nil, p.errorf("unexpected %q", p.s[p.i])
	}
	return append(dst, p.s[start:p.i]...), nil
}

func (p *fjParser) str(dst []byte) ([]byte, error) {
	start := p.i
	p.i++
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case '\\':
			p.i += 2
			continue
		case '"':
			p.i++
			return append(dst, p.s[start:p.i]...), nil
		}
		p.i++
	}
	return nil, p.errorf("unterminated string")
}

func (p *fjParser) array(dst []byte) ([]byte, error) {
	p.i++
	dst = append(dst, '[')
	if p.peek() == ']' {
		p.i++
		return append(dst, ']'), nil
	}
	for {
		var err error
		if dst, err = p.value(dst); err != nil {
			return nil, err
		}
		switch p.peek() {
		case ',':
			p.i++
			dst = append(dst, ',')
		case ']':
			p.i++
			return append(dst, ']'), nil
		default:
			return nil, p.errorf("want , or ]")
		}
	}
}

// object copies an object with string keys, and turns one with other keys into [[k,v],...].
func (p *fjParser) object(dst []byte) ([]byte, error) {
	p.i++
	if p.peek() == '}' {
		p.i++
		return append(dst, "{}"...), nil
	}
	pairs := p.peek() != '"'
	open, close := byte('{'), byte('}')
	if pairs {
		open, close = '[', ']'
	}
	dst = append(dst, open)
	for {
		var err error
		if pairs {
			dst = append(dst, '[')
		}
		if dst, err = p.value(dst); err != nil {
			return nil, err
		}
		if err := p.expect(':'); err != nil {
			return nil, err
		}
		if pairs {
			dst = append(dst, ',')
		} else {
			dst = append(dst, ':')
		}
		if dst, err = p.value(dst); err != nil {
			return nil, err
		}
		if pairs {
			dst = append(dst, ']')
		}
		switch p.peek() {
		case ',':
			p.i++
			dst = append(dst, ',')
		case '}':
			p.i++
			return append(dst, close), nil
		default:
			return nil, p.errorf("want , or }")
		}
	}
}

// AppendQueueTable appends entries as a fastjson object with MessageQueue keys, sorted by topic, broker
// name and queue id.
func AppendQueueTable[V any](dst []byte, entries []QueueEntry[V]) ([]byte, error) {
	sort.Slice(entries, func(i, j int) bool { return entries[i].MQ.Less(entries[j].MQ) })
	dst = append(dst, '{')
	for i, e := range entries {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = AppendQueueKey(dst, e.MQ)
		v, err := json.Marshal(e.Value)
		if err != nil {
			return nil, err
		}
		dst = append(append(dst, ':'), v...)
	}
	return append(dst, '}'), nil
}

// AppendQueueKey appends mq as fastjson writes it: fields in alphabetical order.
func AppendQueueKey(dst []byte, mq MessageQueue) []byte {
	name, _ := json.Marshal(mq.BrokerName) // strings always encode
	topic, _ := json.Marshal(mq.Topic)
	dst = append(append(dst, `{"brokerName":`...), name...)
	dst = strconv.AppendInt(append(dst, `,"queueId":`...), int64(mq.QueueID), 10)
	return append(append(append(dst, `,"topic":`...), topic...), '}')
}

// bareIntKey finds object keys written without quotes: fastjson (RocketMQ's brokers) writes the
// int keys of offset tables that way ({"t@g":{0:5}}), which encoding/json refuses.
var bareIntKey = regexp.MustCompile(`([{,]\s*)(-?[0-9]+)(\s*:)`)

// UnmarshalBareIntKeys decodes JSON, accepting fastjson's bare integer keys. Only a body the strict
// decoder refuses is rewritten; topic and group names cannot hold ':' or ',', so the rewrite can
// only touch a string value that itself holds such a pattern (a topic attribute, say).
func UnmarshalBareIntKeys(body []byte, v any) error {
	err := json.Unmarshal(body, v)
	if err == nil {
		return nil
	}
	if fixed := bareIntKey.ReplaceAll(body, []byte(`$1"$2"$3`)); len(fixed) != len(body) {
		if json.Unmarshal(fixed, v) == nil {
			return nil
		}
	}
	return err
}
