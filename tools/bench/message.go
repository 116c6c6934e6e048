package bench

import (
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/rocketraft/rocketraft/message"
)

// newBody is RocketMQ's benchmark body: size random alphanumeric bytes, made once and sent in every message.
func newBody(size int) []byte {
	const alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, size)
	for i := range b {
		b[i] = alnum[rand.IntN(len(alnum))]
	}
	return b
}

// messageProps is what varies per message: keys and tag as RocketMQ's benchmark sets them.
type messageProps struct {
	keys string // the send time in seconds (not unique, as RocketMQ's tool), or ""
	tag  string // "tag" + (now ms % tagCount), or ""
}

func (c *ProducerConfig) propsAt(now time.Time) messageProps {
	var p messageProps
	if c.Keys {
		p.keys = strconv.FormatInt(now.Unix(), 10)
	}
	if c.TagCount > 0 {
		p.tag = "tag" + strconv.FormatInt(now.UnixMilli()%int64(c.TagCount), 10)
	}
	return p
}

// encode appends the encoded properties string (§5.3 of the protocol notes) with uniq as UNIQ_KEY when set.
func (p messageProps) encode(dst []byte, uniq string) []byte {
	add := func(k, v string) {
		dst = append(dst, k...)
		dst = append(dst, message.NameValueSeparator)
		dst = append(dst, v...)
		dst = append(dst, message.PropertySeparator)
	}
	if p.keys != "" {
		add(message.PropertyKeys, p.keys)
	}
	if p.tag != "" {
		add(message.PropertyTags, p.tag)
	}
	if uniq != "" {
		add(message.PropertyUniqKey, uniq)
	}
	return dst
}
