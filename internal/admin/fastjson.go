package admin

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
)

// Brokers write the MessageQueue-keyed tables of their admin answers (TopicStatsTable, ConsumeStats,
// ResetOffsetBody) as fastjson does, with objects as keys:
//
//	{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:{"maxOffset":5,...},...}}
//
// fastjsonToJSON rewrites such text into JSON, turning every object whose keys are not strings into an
// array of [key, value] pairs; queueTable decodes that form (and an empty {}).

// messageQueue is RocketMQ's MessageQueue.
type messageQueue struct {
	Topic      string `json:"topic"`
	BrokerName string `json:"brokerName"`
	QueueID    int32  `json:"queueId"`
}

func (q messageQueue) String() string {
	return fmt.Sprintf("MessageQueue [topic=%s, brokerName=%s, queueId=%d]", q.Topic, q.BrokerName, q.QueueID)
}

// less orders queues as RocketMQ's MessageQueue.compareTo: topic, broker name, queue id.
func (q messageQueue) less(o messageQueue) bool {
	if q.Topic != o.Topic {
		return q.Topic < o.Topic
	}
	if q.BrokerName != o.BrokerName {
		return q.BrokerName < o.BrokerName
	}
	return q.QueueID < o.QueueID
}

// queueEntry is one entry of a MessageQueue-keyed table.
type queueEntry[V any] struct {
	MQ    messageQueue
	Value V
}

// queueTable is a MessageQueue-keyed table, sorted by queue once decoded.
type queueTable[V any] []queueEntry[V]

func (t *queueTable[V]) UnmarshalJSON(b []byte) error {
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
	out := make(queueTable[V], len(pairs))
	for i, p := range pairs {
		if err := json.Unmarshal(p[0], &out[i].MQ); err != nil {
			return fmt.Errorf("queue table key %s: %w", p[0], err)
		}
		if err := json.Unmarshal(p[1], &out[i].Value); err != nil {
			return fmt.Errorf("queue table value of %s: %w", p[0], err)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].MQ.less(out[j].MQ) })
	*t = out
	return nil
}

// decodeFastJSON decodes fastjson text into out.
func decodeFastJSON(b []byte, out any) error {
	j, err := fastjsonToJSON(b)
	if err != nil {
		return err
	}
	return json.Unmarshal(j, out)
}

// fastjsonToJSON converts fastjson text to JSON (see the top of this file).
func fastjsonToJSON(in []byte) ([]byte, error) {
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
