package remoting

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
)

// The ROCKETMQ binary header (RocketMQSerializable). Wire format: never change.
//
//	code int16 | language int8 | version int16 | opaque int32 | flag int32 |
//	remarkLen int32 | remark | extLen int32 | ext = { keyLen int16 | key | valLen int32 | val }*
const binaryFixedLen = 2 + 1 + 2 + 4 + 4 + 4 + 4 // 21

// appendBinaryHeader appends c's header in the ROCKETMQ binary form. Code and version must fit int16, as the
// form has no room for more.
func appendBinaryHeader(dst []byte, c *Command) ([]byte, error) {
	if c.Code < math.MinInt16 || c.Code > math.MaxInt16 {
		return dst, fmt.Errorf("remoting: code %d does not fit the int16 of a ROCKETMQ binary header", c.Code)
	}
	if c.Version < math.MinInt16 || c.Version > math.MaxInt16 {
		return dst, fmt.Errorf("remoting: version %d does not fit the int16 of a ROCKETMQ binary header", c.Version)
	}
	lang := LanguageGo
	if c.Language != "" {
		var ok bool
		if lang, ok = ParseLanguage(c.Language); !ok {
			lang = LanguageOther
		}
	}
	dst = binary.BigEndian.AppendUint16(dst, uint16(int16(c.Code)))
	dst = append(dst, byte(lang))
	dst = binary.BigEndian.AppendUint16(dst, uint16(int16(c.Version)))
	dst = binary.BigEndian.AppendUint32(dst, uint32(c.Opaque))
	dst = binary.BigEndian.AppendUint32(dst, uint32(c.Flag))
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(c.Remark)))
	dst = append(dst, c.Remark...)
	lenAt := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	var keys [32]string
	for _, k := range sortedKeys(keys[:0], c.ExtFields) {
		if len(k) > math.MaxInt16 {
			return dst, fmt.Errorf("remoting: header field name of %d bytes exceeds the int16 length of a ROCKETMQ "+
				"binary header", len(k))
		}
		v := c.ExtFields[k]
		dst = binary.BigEndian.AppendUint16(dst, uint16(len(k)))
		dst = append(dst, k...)
		dst = binary.BigEndian.AppendUint32(dst, uint32(len(v)))
		dst = append(dst, v...)
	}
	binary.BigEndian.PutUint32(dst[lenAt:], uint32(len(dst)-lenAt-4))
	return dst, nil
}

// binReader reads the binary header; every read is checked against what is left.
type binReader struct {
	b   []byte
	pos int
}

// need checks that n bytes are left; what (and the key, for an extFields value) name the field in the
// error, built only when the check fails (this runs for every field of every binary header).
func (r *binReader) need(n int, what, key string) error {
	if n < 0 || n > len(r.b)-r.pos {
		if key != "" {
			what += " of " + strconv.Quote(key)
		}
		return fmt.Errorf("binary header: %s needs %d bytes at offset %d, %d left", what, n, r.pos, len(r.b)-r.pos)
	}
	return nil
}

func (r *binReader) u16() uint16 {
	v := binary.BigEndian.Uint16(r.b[r.pos:])
	r.pos += 2
	return v
}

func (r *binReader) u32() uint32 {
	v := binary.BigEndian.Uint32(r.b[r.pos:])
	r.pos += 4
	return v
}

// lenPrefixed reads a length of size 2 or 4 bytes and then that many bytes, as a string; what names
// the field in errors.
func (r *binReader) lenPrefixed(size int, what string) (string, error) {
	sp, err := r.span(size, what, nil)
	if err != nil {
		return "", err
	}
	return string(r.b[sp.from:sp.to]), nil
}

// decodeBinaryHeader decodes a ROCKETMQ binary header into a new Command.
func decodeBinaryHeader(h []byte) (*Command, error) {
	r := &binReader{b: h}
	if err := r.need(binaryFixedLen-8, "fixed part", ""); err != nil {
		return nil, err
	}
	c := &Command{}
	c.Code = int32(int16(r.u16()))
	lang := LanguageCode(h[r.pos])
	r.pos++
	c.Language = lang.String()
	c.Version = int32(int16(r.u16()))
	c.Opaque = int32(r.u32())
	c.Flag = int32(r.u32())
	var err error
	if c.Remark, err = r.lenPrefixed(4, "remark"); err != nil {
		return nil, err
	}
	if err := r.need(4, "extFields length", ""); err != nil {
		return nil, err
	}
	extLen := int(int32(r.u32()))
	if extLen < 0 {
		return nil, fmt.Errorf("binary header: negative extFields length %d", extLen)
	}
	if err := r.need(extLen, "extFields", ""); err != nil {
		return nil, err
	}
	if r.pos+extLen != len(h) {
		return nil, fmt.Errorf("binary header: %d bytes after extFields", len(h)-r.pos-extLen)
	}
	if extLen == 0 {
		return c, nil
	}
	// One string holds every key and value (they are its substrings), and the map is made for the
	// number of fields: a SEND_MESSAGE's 14 fields cost 2 allocations instead of 28 and no growth.
	var spans [32]extSpan
	fields := spans[:0]
	base := r.pos
	for r.pos < len(h) {
		k, err := r.span(2, "extFields key", nil)
		if err != nil {
			return nil, err
		}
		v, err := r.span(4, "extFields value", &k)
		if err != nil {
			return nil, err
		}
		fields = append(fields, k, v)
	}
	all := string(h[base:])
	c.ExtFields = make(map[string]string, len(fields)/2)
	for i := 0; i < len(fields); i += 2 {
		k, v := fields[i], fields[i+1]
		c.ExtFields[all[k.from-base:k.to-base]] = all[v.from-base : v.to-base]
	}
	return c, nil
}

// extSpan is where a key or a value lies in a binary header.
type extSpan struct{ from, to int }

// span is lenPrefixed without the copy: where the bytes lie. key, when set, is where the key of
// the value read lies (named in an error only).
func (r *binReader) span(size int, what string, keyAt *extSpan) (extSpan, error) {
	key := func() string {
		if keyAt == nil {
			return ""
		}
		return string(r.b[keyAt.from:keyAt.to])
	}
	if size > len(r.b)-r.pos {
		return extSpan{}, r.need(size, what+" length", key())
	}
	var n int
	if size == 2 {
		n = int(int16(r.u16()))
	} else {
		n = int(int32(r.u32()))
	}
	if n < 0 {
		return extSpan{}, fmt.Errorf("binary header: negative %s length %d (key %q)", what, n, key())
	}
	if n > len(r.b)-r.pos {
		return extSpan{}, r.need(n, what, key())
	}
	sp := extSpan{r.pos, r.pos + n}
	r.pos += n
	return sp, nil
}
