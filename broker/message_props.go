package broker

import (
	"strings"

	"github.com/rocketraft/rocketraft/message"
)

// propValue finds key in an encoded properties string ("k\x01v\x02..."), without allocating.
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

// hasProperty reports whether the encoded properties hold key.
func hasProperty(props, key string) bool {
	_, ok := propValue(props, key)
	return ok
}

// editProperties decodes props, lets edit change the map, and encodes it again (sorted keys). For the
// paths that rewrite messages (delay, retry, transactions); plain sends never re-encode.
func editProperties(props string, edit func(m map[string]string)) string {
	m := message.ParseProperties(props)
	edit(m)
	return message.EncodeProperties(m)
}
