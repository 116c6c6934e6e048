package remoting

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Flag bits of Command.Flag (RemotingCommand.RPC_TYPE / RPC_ONEWAY). Wire format: never change.
const (
	FlagResponse int32 = 1 << 0 // the command is a response
	FlagOneway   int32 = 1 << 1 // the request expects no response
	// FlagForwarded is RocketRaft's own: a broker of a Raft group forwarded this request to the group's
	// leader on a client's behalf (broker/raft_forward.go), and the receiver never forwards it again.
	// RocketMQ leaves the bit unused; it is outside what an ACL signature covers.
	FlagForwarded int32 = 1 << 8
)

// Serialization types of a header (the top byte of the frame's second int32). Wire format: never change.
const (
	SerializeJSON     byte = 0
	SerializeRocketMQ byte = 1
)

// CurrentVersion is the version our side puts in every command it creates: 317, the ordinal of V4_5_2, the same
// as the official Go client sends. It must stay within int16 and be >= 0 (the Go client drops a response whose
// version does not fit int16, and its pull consumer refuses a broker whose heartbeat answer has a negative one).
const CurrentVersion int32 = 317

// LanguageGoName is the language our side announces.
const LanguageGoName = "GO"

// requestID is the process-wide source of request opaques, as RocketMQ's RemotingCommand.requestId. It is the
// package's only mutable state: opaques must be unique per connection across every Client and Conn of the
// process, and a shared counter is the simplest way to guarantee it.
var requestID atomic.Int32

// Command is one remoting command: a request or a response, with its header fields and body.
type Command struct {
	Code      int32             // request code or response code
	Language  string            // "GO", "JAVA", ...; our own side sends "GO"
	Version   int32             // sender's version ordinal
	Opaque    int32             // request id; a response echoes its request's
	Flag      int32             // bit0 response, bit1 oneway
	Remark    string            // free text, usually the error of a response
	ExtFields map[string]string // header fields, always strings on the wire
	Body      []byte
	// BodyParts, when non-nil, is written after Body as more frame body, without copying (the broker hands
	// slices of mmap'd CommitLog here for PULL answers). Never set by decoding.
	BodyParts [][]byte
	// Release, when non-nil, is called exactly once after the frame has been written or dropped.
	Release func()
	// SerializeType is the header encoding: SerializeJSON or SerializeRocketMQ. A response is encoded in its
	// request's type.
	SerializeType byte

	// received is when a server read this request (unix nanoseconds; 0 for commands built here), and
	// suspended whether its handler held it for a long poll: both for the reply observer's figures.
	received  int64
	suspended bool
	// frame is the memory of a large request frame read in a turn from a server's frameCache (framecache.go):
	// while it is set the request holds that turn, which ends once its route is done with it (Server.endTurn),
	// and a transient route gives the memory back; nil otherwise.
	frame []byte
	// reusable: the server is done with this request (a transient route answered it inline), and its reader
	// decodes the next frame into it.
	reusable bool
}

// MarkSuspended records that the request was held for a long poll before its answer (RocketMQ's
// is_long_polling). Call it from the goroutine that owns the request.
func (c *Command) MarkSuspended() { c.suspended = true }

// Suspended reports whether MarkSuspended was called.
func (c *Command) Suspended() bool { return c.suspended }

// Received is when a server read this request, the zero time for a command not read by a server.
func (c *Command) Received() time.Time {
	if c.received == 0 {
		return time.Time{}
	}
	return time.Unix(0, c.received)
}

// NewRequest returns a request with a fresh opaque, language GO and CurrentVersion. ext may be nil.
func NewRequest(code RequestCode, ext map[string]string, body []byte) *Command {
	return &Command{
		Code:      int32(code),
		Language:  LanguageGoName,
		Version:   CurrentVersion,
		Opaque:    requestID.Add(1),
		ExtFields: ext,
		Body:      body,
	}
}

// NewResponse returns a response with the given code and remark. The server fills opaque, flag and serialize
// type from the request when it replies.
func NewResponse(code ResponseCode, remark string) *Command {
	return &Command{
		Code:     int32(code),
		Language: LanguageGoName,
		Version:  CurrentVersion,
		Flag:     FlagResponse,
		Remark:   remark,
	}
}

// NewPooledResponse is NewResponse for an answer handed to Conn.Reply (or returned by a handler) and not
// touched after that: the command is taken from a pool and goes back to it once written or dropped (its
// Release, which the caller must not set). A name server answers every route query with one; allocated
// each time, they were a sixth of its bytes allocated per query.
func NewPooledResponse(code ResponseCode, remark string) *Command {
	p := responsePool.Get().(*pooledResponse)
	p.cmd = Command{Code: int32(code), Language: LanguageGoName, Version: CurrentVersion, Flag: FlagResponse,
		Remark: remark, Release: p.put}
	return &p.cmd
}

type pooledResponse struct {
	cmd Command
	put func() // made once per pooled command: setting Release allocates nothing
}

var responsePool sync.Pool

func init() {
	responsePool.New = func() any {
		p := &pooledResponse{}
		p.put = func() {
			p.cmd = Command{}
			responsePool.Put(p)
		}
		return p
	}
}

// NewJSONResponse returns a SUCCESS response whose body is v as compact JSON, or a SYSTEM_ERROR response
// naming the encoding error.
func NewJSONResponse(v any) *Command {
	body, err := json.Marshal(v)
	if err != nil {
		return NewResponse(SystemError, "encode answer: "+err.Error())
	}
	resp := NewResponse(Success, "")
	resp.Body = body
	return resp
}

// IsResponse reports whether the response flag is set.
func (c *Command) IsResponse() bool { return c.Flag&FlagResponse != 0 }

// IsOneway reports whether the oneway flag is set.
func (c *Command) IsOneway() bool { return c.Flag&FlagOneway != 0 }

// MarkResponse sets the response flag.
func (c *Command) MarkResponse() { c.Flag |= FlagResponse }

// MarkOneway sets the oneway flag.
func (c *Command) MarkOneway() { c.Flag |= FlagOneway }

// SetExt sets one header field, creating the map when needed, and returns c.
func (c *Command) SetExt(key, value string) *Command {
	if c.ExtFields == nil {
		c.ExtFields = make(map[string]string, 4)
	}
	c.ExtFields[key] = value
	return c
}

// BodyLen is the number of body bytes the frame carries: Body plus every BodyParts slice.
func (c *Command) BodyLen() int {
	n := len(c.Body)
	for _, p := range c.BodyParts {
		n += len(p)
	}
	return n
}

// String is a short form for logs; it never prints the body.
func (c *Command) String() string {
	kind := "request"
	code := RequestCode(c.Code).String()
	if c.IsResponse() {
		kind = "response"
		code = ResponseCode(c.Code).String()
	}
	return fmt.Sprintf("%s code=%s(%d) opaque=%d flag=%d remark=%q ext=%v body=%dB", kind, code, c.Code, c.Opaque,
		c.Flag, c.Remark, c.ExtFields, c.BodyLen())
}

// ErrHeaderField is matched (errors.Is) by every error of the typed header accessors.
var ErrHeaderField = errors.New("remoting: bad header field")

// HeaderError is the error of a typed header accessor: a required field missing or a value that does not parse.
type HeaderError struct {
	Key     string
	Value   string // the value found; empty when Missing
	Missing bool
	Want    string // the type wanted: "int32", "int64", "bool"
}

func (e *HeaderError) Error() string {
	if e.Missing {
		return "missing header field " + e.Key
	}
	return fmt.Sprintf("header field %s: %q is not a valid %s", e.Key, e.Value, e.Want)
}

// Is makes errors.Is(err, ErrHeaderField) true.
func (e *HeaderError) Is(target error) bool { return target == ErrHeaderField }

func (c *Command) ext(key string) (string, bool) {
	v, ok := c.ExtFields[key]
	return v, ok
}

// ExtString returns a required header field; a missing field is an error "missing header field <key>".
func (c *Command) ExtString(key string) (string, error) {
	v, ok := c.ext(key)
	if !ok {
		return "", &HeaderError{Key: key, Missing: true}
	}
	return v, nil
}

// OptString returns a header field, or def when it is absent.
func (c *Command) OptString(key, def string) string {
	if v, ok := c.ext(key); ok {
		return v
	}
	return def
}

// ExtInt32 returns a required decimal int32 header field.
func (c *Command) ExtInt32(key string) (int32, error) { return required(c, key, parseInt32) }

// OptInt32 returns a decimal int32 header field, or def when it is absent or empty. A value that is present
// and does not parse is still an error.
func (c *Command) OptInt32(key string, def int32) (int32, error) {
	return optional(c, key, def, parseInt32)
}

// ExtInt64 returns a required decimal int64 header field.
func (c *Command) ExtInt64(key string) (int64, error) { return required(c, key, parseInt64) }

// OptInt64 returns a decimal int64 header field, or def when it is absent or empty.
func (c *Command) OptInt64(key string, def int64) (int64, error) {
	return optional(c, key, def, parseInt64)
}

// ExtBool returns a required boolean header field: "true" or "false", in any case.
func (c *Command) ExtBool(key string) (bool, error) { return required(c, key, parseBool) }

// OptBool returns a boolean header field, or def when it is absent or empty.
func (c *Command) OptBool(key string, def bool) (bool, error) {
	return optional(c, key, def, parseBool)
}

func required[T any](c *Command, key string, parse func(key, v string) (T, error)) (T, error) {
	v, ok := c.ext(key)
	if !ok {
		var zero T
		return zero, &HeaderError{Key: key, Missing: true}
	}
	return parse(key, v)
}

func optional[T any](c *Command, key string, def T, parse func(key, v string) (T, error)) (T, error) {
	v, ok := c.ext(key)
	if !ok || v == "" {
		return def, nil
	}
	return parse(key, v)
}

func parseInt32(key, v string) (int32, error) {
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil {
		return 0, &HeaderError{Key: key, Value: v, Want: "int32"}
	}
	return int32(n), nil
}

func parseInt64(key, v string) (int64, error) {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, &HeaderError{Key: key, Value: v, Want: "int64"}
	}
	return n, nil
}

func parseBool(key, v string) (bool, error) {
	switch {
	case strings.EqualFold(v, "true"):
		return true, nil
	case strings.EqualFold(v, "false"):
		return false, nil
	}
	return false, &HeaderError{Key: key, Value: v, Want: "bool"}
}
