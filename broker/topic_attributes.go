package broker

import (
	"fmt"
	"maps"
	"strings"
)

// Topic attributes (RocketMQ 5's TopicAttributes and AttributeUtil): UPDATE_AND_CREATE_TOPIC's header
// "attributes" is "+key=value,+key=value,-key". A new topic takes only additions; an existing one may add,
// change and delete (-key) attributes, except those that cannot change once set. Unknown keys and values are
// refused, naming them.

// topicAttribute is one attribute: its allowed values, whether an existing topic may change it, and the
// values this broker supports (a value RocketMQ knows but this broker does not implement is refused).
type topicAttribute struct {
	changeable bool
	values     map[string]bool // RocketMQ's values
	supported  map[string]bool // the ones this broker implements
}

func set(vs ...string) map[string]bool {
	m := map[string]bool{}
	for _, v := range vs {
		m[v] = true
	}
	return m
}

var topicAttributes = map[string]topicAttribute{
	"queue.type":     {changeable: false, values: set("BatchCQ", "SimpleCQ"), supported: set("SimpleCQ")},
	"cleanup.policy": {changeable: false, values: set("DELETE", "COMPACTION"), supported: set("DELETE")},
	"message.type": {changeable: true, values: set("UNSPECIFIED", "NORMAL", "FIFO", "DELAY", "TRANSACTION", "MIXED"),
		supported: set("UNSPECIFIED", "NORMAL", "FIFO", "DELAY", "TRANSACTION", "MIXED")},
}

// alterTopicAttributes applies the modification text mod to current (nil for a topic being created) and
// returns the new attributes, or an error in RocketMQ's words naming the key.
func alterTopicAttributes(current map[string]string, create bool, mod string) (map[string]string, error) {
	out := maps.Clone(current)
	if out == nil {
		out = map[string]string{}
	}
	if strings.TrimSpace(mod) == "" {
		return out, nil
	}
	seen := map[string]bool{}
	for _, kv := range strings.Split(mod, ",") {
		kv = strings.TrimSpace(kv)
		if len(kv) < 2 || (kv[0] != '+' && kv[0] != '-') {
			return nil, fmt.Errorf("wrong format key: %q (attributes are +key=value or -key)", kv)
		}
		op, body := kv[0], kv[1:]
		key, value, hasValue := strings.Cut(body, "=")
		if key == "" || strings.ContainsAny(key, "+-") {
			return nil, fmt.Errorf("kv string format wrong: %q", kv)
		}
		if seen[key] {
			return nil, fmt.Errorf("alter duplication key. key: %s", key)
		}
		seen[key] = true
		attr, ok := topicAttributes[key]
		if !ok {
			return nil, fmt.Errorf("unsupported key: %s (known: message.type, queue.type, cleanup.policy)", key)
		}
		if op == '-' {
			if create {
				return nil, fmt.Errorf("only add attribute is supported while creating topic. key: %s", key)
			}
			if hasValue {
				return nil, fmt.Errorf("delete attribute format is wrong: %s", kv)
			}
			if _, ok := out[key]; !ok {
				return nil, fmt.Errorf("attempt to delete a nonexistent key: %s", key)
			}
			if !attr.changeable {
				return nil, fmt.Errorf("attempt to update an unchangeable attribute. key: %s", key)
			}
			delete(out, key)
			continue
		}
		if !hasValue || value == "" {
			return nil, fmt.Errorf("add/alter attribute format is wrong: %s", key)
		}
		if !attr.values[value] {
			return nil, fmt.Errorf("value %s of attribute %s is not one of %v", value, key, sortedKeys(attr.values))
		}
		if !attr.supported[value] {
			return nil, fmt.Errorf("attribute %s=%s is not supported by this broker", key, value)
		}
		if old, had := out[key]; !create && !attr.changeable && (!had || old != value) {
			return nil, fmt.Errorf("attempt to update an unchangeable attribute. key: %s", key)
		}
		out[key] = value
	}
	return out, nil
}
