package bench

import (
	"encoding/binary"
	"encoding/hex"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
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

// uniqIDs makes UNIQ_KEY values as the clients do: a fixed per-process prefix and a counter, 32 hex digits.
// The official client sets one on every single message; the native producer does the same, so the broker's
// work per message is the same for both.
type uniqIDs struct {
	prefix string // 12 hex digits: pid and a random part
	seq    atomic.Uint64
}

func newUniqIDs() *uniqIDs {
	var b [6]byte
	binary.BigEndian.PutUint16(b[0:], uint16(os.Getpid()))
	binary.BigEndian.PutUint32(b[2:], rand.Uint32())
	return &uniqIDs{prefix: strings.ToUpper(hex.EncodeToString(b[:]))}
}

func (u *uniqIDs) next() string {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], u.seq.Add(1))
	return u.prefix + hex.EncodeToString(b[:]) + "0000"
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

// appendBatchRecord appends one message of a SEND_BATCH_MESSAGE body:
//
//	totalSize int32 | magic int32 (0) | bodyCRC int32 (0) | flag int32 | bodyLen int32 | body | propsLen int16 | props
func appendBatchRecord(dst, body, props []byte) []byte {
	total := 22 + len(body) + len(props)
	dst = binary.BigEndian.AppendUint32(dst, uint32(total))
	dst = binary.BigEndian.AppendUint32(dst, 0) // magic
	dst = binary.BigEndian.AppendUint32(dst, 0) // body CRC
	dst = binary.BigEndian.AppendUint32(dst, 0) // flag
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(body)))
	dst = append(dst, body...)
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(props)))
	return append(dst, props...)
}
