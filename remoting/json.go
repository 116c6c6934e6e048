package remoting

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// The JSON header is a flat object. It is encoded and decoded by hand here because it is on the path of every
// send and pull: the encoder writes the keys in the Go client's order (so a command encodes to the very bytes
// the client sends, extFields sorted by key) and the decoder keeps unescaped strings as substrings of one copy of
// the header.
//
// Decoding follows what the Java server and the Go client accept: numbers for code/opaque/flag/version, language
// as a name or a number, remark and extFields may be null or missing, an extFields value that is null counts as
// absent, a number or boolean value is kept as its text, unknown keys (Java's serializeTypeCurrentRPC) are
// skipped whatever their value.

// appendJSONHeader appends c's header as compact JSON.
func appendJSONHeader(dst []byte, c *Command) []byte {
	dst = append(dst, `{"code":`...)
	dst = strconv.AppendInt(dst, int64(c.Code), 10)
	dst = append(dst, `,"language":`...)
	lang := c.Language
	if lang == "" {
		lang = LanguageGoName
	}
	dst = appendJSONString(dst, lang)
	dst = append(dst, `,"version":`...)
	dst = strconv.AppendInt(dst, int64(c.Version), 10)
	dst = append(dst, `,"opaque":`...)
	dst = strconv.AppendInt(dst, int64(c.Opaque), 10)
	dst = append(dst, `,"flag":`...)
	dst = strconv.AppendInt(dst, int64(c.Flag), 10)
	dst = append(dst, `,"remark":`...)
	dst = appendJSONString(dst, c.Remark)
	dst = append(dst, `,"extFields":{`...)
	var keys [32]string
	for i, k := range sortedKeys(keys[:0], c.ExtFields) {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendJSONString(dst, k)
		dst = append(dst, ':')
		dst = appendJSONString(dst, c.ExtFields[k])
	}
	return append(dst, "}}"...)
}

// sortedKeys returns the map's keys in byte order, so that an encoding is deterministic. It appends to
// keys, which a caller gives from an array on its stack so that a header's encoding does not allocate.
func sortedKeys(keys []string, m map[string]string) []string {
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as a JSON string: quotes, backslashes and control characters escaped, invalid
// UTF-8 bytes replaced by U+FFFD, U+2028/U+2029 escaped (as encoding/json does).
func appendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '"', '\\':
				dst = append(dst, '\\', b)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, string(utf8.RuneError)...) // as UTF-8, so that a re-encoding is byte-identical
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// jsonScanner walks one header. s is a string copy of the header, so unescaped strings are substrings of it;
// or, with intern set, the header's own memory, and every string kept goes through keep (intern.go).
type jsonScanner struct {
	s      string
	pos    int
	intern Interner
}

var errJSONEnd = errors.New("unexpected end of JSON header")

func (p *jsonScanner) errorf(format string, args ...any) error {
	return fmt.Errorf("JSON header at byte %d: %s", p.pos, fmt.Sprintf(format, args...))
}

func (p *jsonScanner) skipSpace() {
	for p.pos < len(p.s) {
		switch p.s[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

// peek returns the next non-space byte without consuming it.
func (p *jsonScanner) peek() (byte, error) {
	p.skipSpace()
	if p.pos >= len(p.s) {
		return 0, errJSONEnd
	}
	return p.s[p.pos], nil
}

func (p *jsonScanner) expect(b byte) error {
	c, err := p.peek()
	if err != nil {
		return err
	}
	if c != b {
		return p.errorf("want %q, found %q", b, c)
	}
	p.pos++
	return nil
}

// literal consumes one of true, false, null.
func (p *jsonScanner) literal(word string) error {
	if len(p.s)-p.pos < len(word) || p.s[p.pos:p.pos+len(word)] != word {
		return p.errorf("invalid literal")
	}
	p.pos += len(word)
	return nil
}

// str consumes a string whose opening quote is the next byte.
func (p *jsonScanner) str() (string, error) {
	p.pos++ // opening quote
	start := p.pos
	for p.pos < len(p.s) {
		switch p.s[p.pos] {
		case '"':
			v := p.s[start:p.pos]
			p.pos++
			return v, nil
		case '\\':
			return p.escapedStr(start)
		}
		p.pos++
	}
	return "", errJSONEnd
}

// escapedStr finishes a string that contains escapes, from its first content byte at start.
func (p *jsonScanner) escapedStr(start int) (string, error) {
	// One allocation: sized by unescapedMax, filled in a strings.Builder, which hands its bytes over
	// without the copy string(buf) would make.
	var buf strings.Builder
	buf.Grow(p.pos - start + unescapedMax(p.s[p.pos:]))
	buf.WriteString(p.s[start:p.pos])
	for p.pos < len(p.s) {
		b := p.s[p.pos]
		switch {
		case b == '"':
			p.pos++
			return buf.String(), nil
		case b != '\\':
			buf.WriteByte(b)
			p.pos++
			continue
		}
		if p.pos+1 >= len(p.s) {
			return "", errJSONEnd
		}
		e := p.s[p.pos+1]
		p.pos += 2
		switch e {
		case '"', '\\', '/':
			buf.WriteByte(e)
		case 'b':
			buf.WriteByte('\b')
		case 'f':
			buf.WriteByte('\f')
		case 'n':
			buf.WriteByte('\n')
		case 'r':
			buf.WriteByte('\r')
		case 't':
			buf.WriteByte('\t')
		case 'u':
			r, err := p.hex4()
			if err != nil {
				return "", err
			}
			if utf16.IsSurrogate(r) {
				r = p.lowSurrogate(r)
			}
			buf.WriteRune(r)
		default:
			return "", p.errorf("invalid escape \\%c", e)
		}
	}
	return "", errJSONEnd
}

// unescapedMax bounds the bytes that s, the rest of a string from an escape on, decodes to up to its
// closing quote: one per byte or short escape, three per \uXXXX (a surrogate pair, 12 bytes, decodes to 4).
func unescapedMax(s string) int {
	n := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '"':
			return n
		case '\\':
			if i+1 < len(s) && s[i+1] == 'u' {
				i += 5
				n += 3
				continue
			}
			i++
		}
		n++
	}
	return n
}

// lowSurrogate completes a UTF-16 pair whose high half is hi; a lone half becomes U+FFFD.
func (p *jsonScanner) lowSurrogate(hi rune) rune {
	if len(p.s)-p.pos >= 6 && p.s[p.pos] == '\\' && p.s[p.pos+1] == 'u' {
		save := p.pos
		p.pos += 2
		if lo, err := p.hex4(); err == nil {
			if r := utf16.DecodeRune(hi, lo); r != utf8.RuneError {
				return r
			}
		}
		p.pos = save
	}
	return utf8.RuneError
}

func (p *jsonScanner) hex4() (rune, error) {
	if len(p.s)-p.pos < 4 {
		return 0, errJSONEnd
	}
	var r rune
	for _, c := range []byte(p.s[p.pos : p.pos+4]) {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		case c >= 'A' && c <= 'F':
			r |= rune(c - 'A' + 10)
		default:
			return 0, p.errorf("invalid \\u escape")
		}
	}
	p.pos += 4
	return r, nil
}

// number consumes a JSON number and returns its text.
func (p *jsonScanner) number() (string, error) {
	start := p.pos
	if p.pos < len(p.s) && p.s[p.pos] == '-' {
		p.pos++
	}
	digits := p.digits()
	if digits == 0 {
		return "", p.errorf("invalid number")
	}
	if p.pos < len(p.s) && p.s[p.pos] == '.' {
		p.pos++
		if p.digits() == 0 {
			return "", p.errorf("invalid number")
		}
	}
	if p.pos < len(p.s) && (p.s[p.pos] == 'e' || p.s[p.pos] == 'E') {
		p.pos++
		if p.pos < len(p.s) && (p.s[p.pos] == '+' || p.s[p.pos] == '-') {
			p.pos++
		}
		if p.digits() == 0 {
			return "", p.errorf("invalid number")
		}
	}
	return p.s[start:p.pos], nil
}

func (p *jsonScanner) digits() int {
	start := p.pos
	for p.pos < len(p.s) && p.s[p.pos] >= '0' && p.s[p.pos] <= '9' {
		p.pos++
	}
	return p.pos - start
}

// int32Value consumes a number that must be an integer in int32 range, or null (0).
func (p *jsonScanner) int32Value(key string) (int32, error) {
	c, err := p.peek()
	if err != nil {
		return 0, err
	}
	if c == 'n' {
		return 0, p.literal("null")
	}
	if c != '-' && (c < '0' || c > '9') {
		return 0, p.errorf("%s must be a number", key)
	}
	text, err := p.number()
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(text, 10, 32)
	if err != nil {
		return 0, p.errorf("%s %s is not an int32", key, text)
	}
	return int32(n), nil
}

// scalar consumes a string, number, boolean or null and returns its text; null is reported as !present.
func (p *jsonScanner) scalar(key string) (v string, present bool, err error) {
	c, err := p.peek()
	if err != nil {
		return "", false, err
	}
	switch {
	case c == '"':
		v, err = p.str()
		return v, true, err
	case c == 'n':
		return "", false, p.literal("null")
	case c == 't':
		return "true", true, p.literal("true")
	case c == 'f':
		return "false", true, p.literal("false")
	case c == '-' || (c >= '0' && c <= '9'):
		v, err = p.number()
		return v, true, err
	}
	return "", false, p.errorf("value of %s must be a string", key)
}

// maxSkipDepth bounds the nesting of an unknown member's value.
const maxSkipDepth = 64

// skipValue consumes any value, nested objects and arrays included, without recursion.
func (p *jsonScanner) skipValue() error {
	var stack [maxSkipDepth]byte // the open containers' closing brackets
	depth := 0
	for {
		c, err := p.peek()
		if err != nil {
			return err
		}
		if c == '{' || c == '[' {
			p.pos++
			closer := byte('}')
			if c == '[' {
				closer = ']'
			}
			if next, err := p.peek(); err != nil {
				return err
			} else if next == closer {
				p.pos++ // empty container: a complete value
			} else {
				if depth == maxSkipDepth {
					return p.errorf("unknown member nested deeper than %d", maxSkipDepth)
				}
				stack[depth] = closer
				depth++
				if closer == '}' {
					if _, err := p.objectKey(); err != nil {
						return err
					}
				}
				continue // a value follows
			}
		} else if _, _, err := p.scalar("value"); err != nil {
			return err
		}
		// A value is complete: close containers until one continues with a comma.
		for {
			if depth == 0 {
				return nil
			}
			c, err := p.peek()
			if err != nil {
				return err
			}
			p.pos++
			if c == stack[depth-1] {
				depth--
				continue
			}
			if c != ',' {
				return p.errorf("want ',' or %q, found %q", stack[depth-1], c)
			}
			if stack[depth-1] == '}' {
				if _, err := p.objectKey(); err != nil {
					return err
				}
			}
			break
		}
	}
}

// objectKey consumes `"key":` and returns the key.
func (p *jsonScanner) objectKey() (string, error) {
	c, err := p.peek()
	if err != nil {
		return "", err
	}
	if c != '"' {
		return "", p.errorf("want an object key, found %q", c)
	}
	key, err := p.str()
	if err != nil {
		return "", err
	}
	return key, p.expect(':')
}

// object consumes an object, handing each member's key to value, which must consume the member's value.
func (p *jsonScanner) object(value func(key string) error) error {
	if err := p.expect('{'); err != nil {
		return err
	}
	b, err := p.peek()
	if err != nil {
		return err
	}
	if b == '}' {
		p.pos++
		return nil
	}
	for {
		key, err := p.objectKey()
		if err != nil {
			return err
		}
		if err := value(key); err != nil {
			return err
		}
		if b, err = p.peek(); err != nil {
			return err
		}
		p.pos++
		if b == '}' {
			return nil
		}
		if b != ',' {
			return p.errorf("want ',' or '}', found %q", b)
		}
	}
}

// extFields consumes the extFields object (or null) into c.ExtFields.
func (p *jsonScanner) extFields(c *Command) error {
	if b, err := p.peek(); err != nil {
		return err
	} else if b == 'n' {
		return p.literal("null")
	}
	return p.object(func(key string) error {
		v, present, err := p.scalar(key)
		if err != nil || !present {
			return err
		}
		if key, err = p.keep(key); err != nil {
			return err
		}
		if v, err = p.keep(v); err != nil {
			return err
		}
		if c.ExtFields == nil {
			c.ExtFields = make(map[string]string, extFieldsHint(p.s[p.pos:]))
		}
		c.ExtFields[key] = v
		return nil
	})
}

// extFieldsHint guesses the number of extFields members still to come from rest, the header after the first
// value: one more than the '","' between string members. Only a size hint for the map: a small response's
// map (5 members) fits one group instead of the tables sized for 16, and a request's is made at its size.
func extFieldsHint(rest string) int {
	return min(strings.Count(rest, `","`)+1, 64)
}

// decodeJSONHeader decodes a JSON header into a new Command; intern (nil: none) as for decodeJSONHeaderInto.
func decodeJSONHeader(header []byte, intern Interner) (*Command, error) {
	c := &Command{}
	if err := decodeJSONHeaderInto(c, header, intern); err != nil {
		return nil, err
	}
	return c, nil
}

// decodeJSONHeaderInto decodes a JSON header into c, a zero Command but for an empty ExtFields map it fills.
// With intern it decodes the header in place when every string it keeps is common or interned (intern.go).
func decodeJSONHeaderInto(c *Command, header []byte, intern Interner) error {
	if intern != nil && len(header) > 0 {
		p := &jsonScanner{s: unsafe.String(unsafe.SliceData(header), len(header)), intern: intern}
		err := p.header(c)
		if err != errNotInterned {
			return err
		}
		resetCommand(c)
	}
	p := &jsonScanner{s: string(header)}
	return p.header(c)
}

// resetCommand makes c a zero Command again but for its ExtFields map, emptied to be filled again.
func resetCommand(c *Command) {
	m := c.ExtFields
	clear(m)
	*c = Command{ExtFields: m}
}

// header consumes the whole header into c.
func (p *jsonScanner) header(c *Command) error {
	if err := p.object(func(key string) error { return p.member(c, key) }); err != nil {
		return err
	}
	p.skipSpace()
	if p.pos != len(p.s) {
		return p.errorf("trailing data after the header object")
	}
	return nil
}

func (p *jsonScanner) member(c *Command, key string) error {
	var err error
	switch key {
	case "code":
		c.Code, err = p.int32Value(key)
	case "opaque":
		c.Opaque, err = p.int32Value(key)
	case "flag":
		c.Flag, err = p.int32Value(key)
	case "version":
		c.Version, err = p.int32Value(key)
	case "language":
		var v string
		if v, _, err = p.scalar(key); err != nil {
			return err
		}
		if v != "" && v[0] >= '0' && v[0] <= '9' {
			if n, perr := strconv.ParseUint(v, 10, 8); perr == nil {
				c.Language = LanguageCode(n).String()
				return nil
			}
		}
		c.Language, err = p.keep(v)
	case "remark":
		var v string
		if v, _, err = p.scalar(key); err != nil {
			return err
		}
		c.Remark, err = p.keep(v)
	case "extFields":
		err = p.extFields(c)
	default:
		err = p.skipValue()
	}
	return err
}
