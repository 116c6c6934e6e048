package pop

import (
	"strings"
	"time"

	"github.com/rocketraft/rocketraft/message"
)

// maxReadBytes bounds the bytes of one read of a queue (the broker's pull bound).
const maxReadBytes = 4 << 20

// GroupQueue names a group's queue.
type GroupQueue struct {
	Group, Topic string
	QueueID      int32
}

// ms is a duration of v milliseconds.
func ms(v int64) time.Duration { return time.Duration(v) * time.Millisecond }

// propValue is the value of key in encoded properties (message.EncodeProperties), without building a map.
func propValue(props, key string) (string, bool) {
	for len(props) > 0 {
		item := props
		if i := strings.IndexByte(props, message.PropertySeparator); i >= 0 {
			item, props = props[:i], props[i+1:]
		} else {
			props = ""
		}
		if k, v, ok := strings.Cut(item, string(message.NameValueSeparator)); ok && k == key {
			return v, true
		}
	}
	return "", false
}

// editProperties decodes encoded properties, lets edit change them and encodes them again.
func editProperties(props string, edit func(m map[string]string)) string {
	m := message.ParseProperties(props)
	edit(m)
	return message.EncodeProperties(m)
}
