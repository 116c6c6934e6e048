package message

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"net/netip"
	"sort"
	"strconv"
	"strings"
	"unicode/utf16"
)

// Magic codes of the stored-message record. Wire format: never change.
const (
	// MessageMagicCode marks a V1 record (1-byte topic length). It is the only version written.
	MessageMagicCode = int32(-626843481) // 0xDAA320A7
	// MessageMagicCodeV2 marks a V2 record (2-byte topic length), written by RocketMQ 5.x for
	// topics longer than 127 bytes. Decoded, never written.
	MessageMagicCodeV2 = int32(-626843477) // 0xDAA320AB
	// BlankMagicCode marks the blank record that closes the unused tail of a CommitLog file.
	BlankMagicCode = int32(-875286124) // 0xCBD43194
)

// Sizes and limits of the record. Wire format: never change.
const (
	// MaxTopicLength is the longest topic a V1 record can carry (Java reads the length signed).
	MaxTopicLength = 127
	// MaxPropertiesLength is the longest encoded properties string (2-byte signed length).
	MaxPropertiesLength = math.MaxInt16
	// BlankRecordMinLength is the room a file must keep for a blank record: size + magic.
	BlankRecordMinLength = 8
	// RecordFixedLength is the size of a record with IPv4 hosts, empty body, topic and properties.
	RecordFixedLength = 91
	// HostV4Length and HostV6Length are the sizes of an encoded host: address + int32 port.
	HostV4Length = 8
	HostV6Length = 20
)

// Byte offsets of the fixed-position fields of a record. Wire format: never change.
const (
	OffTotalSize      = 0
	OffMagic          = 4
	OffBodyCRC        = 8
	OffQueueID        = 12
	OffFlag           = 16
	OffQueueOffset    = 20
	OffPhysicalOffset = 28
	OffSysFlag        = 36
	OffBornTimestamp  = 40
	OffBornHost       = 48
)

// Message sysFlag bits (RocketMQ MessageSysFlag). Wire format: never change.
const (
	SysFlagCompressed          = int32(0x1)
	SysFlagMultiTags           = int32(0x2)
	SysFlagTransactionNotType  = int32(0x0)
	SysFlagTransactionPrepared = int32(0x4)
	SysFlagTransactionCommit   = int32(0x8)
	SysFlagTransactionRollback = int32(0xC)
	SysFlagTransactionMask     = int32(0xC)
	SysFlagBornHostV6          = int32(0x10)
	SysFlagStoreHostV6         = int32(0x20)
	SysFlagNeedUnwrap          = int32(0x40)
	SysFlagInnerBatch          = int32(0x80)
	SysFlagCompressionTypeMask = int32(0x700)
)

// Property separators of the encoded properties string. Wire format: never change.
const (
	NameValueSeparator = '\x01'
	PropertySeparator  = '\x02'
	// KeySeparator separates the keys inside the KEYS property.
	KeySeparator = " "
)

// Well-known property names (RocketMQ MessageConst).
const (
	PropertyKeys                       = "KEYS"
	PropertyTags                       = "TAGS"
	PropertyWaitStoreMsgOK             = "WAIT"
	PropertyDelayLevel                 = "DELAY"
	PropertyRetryTopic                 = "RETRY_TOPIC"
	PropertyRealTopic                  = "REAL_TOPIC"
	PropertyRealQueueID                = "REAL_QID"
	PropertyTransactionPrepared        = "TRAN_MSG"
	PropertyProducerGroup              = "PGROUP"
	PropertyMinOffset                  = "MIN_OFFSET"
	PropertyMaxOffset                  = "MAX_OFFSET"
	PropertyBuyerID                    = "BUYER_ID"
	PropertyOriginMessageID            = "ORIGIN_MESSAGE_ID"
	PropertyTransferFlag               = "TRANSFER_FLAG"
	PropertyCorrectionFlag             = "CORRECTION_FLAG"
	PropertyMQ2Flag                    = "MQ2_FLAG"
	PropertyReconsumeTime              = "RECONSUME_TIME"
	PropertyMsgRegion                  = "MSG_REGION"
	PropertyTraceSwitch                = "TRACE_ON"
	PropertyUniqKey                    = "UNIQ_KEY"
	PropertyExtendUniqInfo             = "EXTEND_UNIQ_INFO"
	PropertyMaxReconsumeTimes          = "MAX_RECONSUME_TIMES"
	PropertyConsumeStartTime           = "CONSUME_START_TIME"
	PropertyInnerNum                   = "INNER_NUM"
	PropertyInnerBase                  = "INNER_BASE"
	PropertyCheckImmunityTimeInSeconds = "CHECK_IMMUNITY_TIME_IN_SECONDS"
	PropertyTransactionPreparedQOffset = "TRAN_PREPARED_QUEUE_OFFSET"
	PropertyTransactionID              = "__transactionId__"
	PropertyTransactionCheckTimes      = "TRANSACTION_CHECK_TIMES"
	PropertyInstanceID                 = "INSTANCE_ID"
	PropertyCorrelationID              = "CORRELATION_ID"
	PropertyReplyToClient              = "REPLY_TO_CLIENT"
	PropertyMessageTTL                 = "TTL"
	PropertyReplyArriveTime            = "ARRIVE_TIME"
	PropertyPushReplyTime              = "PUSH_REPLY_TIME"
	PropertyCluster                    = "CLUSTER"
	PropertyMessageType                = "MSG_TYPE"
	PropertyShardingKey                = "__SHARDINGKEY"
	PropertyShardingKeyGo              = "SHARDING_KEY"
	PropertyTimerDelaySec              = "TIMER_DELAY_SEC"    // a delivery time: relative seconds
	PropertyTimerDeliverMs             = "TIMER_DELIVER_MS"   // a delivery time: absolute ms
	PropertyTimerDelayMs               = "TIMER_DELAY_MS"     // a delivery time: relative ms
	PropertyStartDeliverTime           = "__STARTDELIVERTIME" // a delivery time: absolute ms (the older clients')
	PropertyTimerOutMs                 = "TIMER_OUT_MS"       // set by the broker on a timer message it parks: when it is due (ms)
	PropertyTimerDelUniqKey            = "TIMER_DEL_UNIQKEY"  // a recall record: the timer drops the message of this key (protocol.TimerDeleteKey)
	PropertyDLQOriginTopic             = "DLQ_ORIGIN_TOPIC"
	PropertyDLQOriginMessageID         = "DLQ_ORIGIN_MESSAGE_ID"
	PropertyPopCK                      = "POP_CK" // a popped message's receipt handle (protocol.ExtraInfo)
	PropertyPopCKOffset                = "POP_CK_OFFSET"
	PropertyFirstPopTime               = "1ST_POP_TIME" // when the message was first popped (ms)
)

// Message is what a producer hands to the store: everything of the stored record except the
// fields the store assigns (queue offset, physical offset, store timestamp, store host, CRC).
type Message struct {
	Topic   string
	QueueID int32
	Flag    int32
	Body    []byte
	// Properties is the encoded properties string (k 0x01 v 0x02 ...), written as is.
	Properties string
	// SysFlag is the message sysFlag; the host bits (SysFlagBornHostV6, SysFlagStoreHostV6)
	// are set by the store from the actual addresses.
	SysFlag                   int32
	BornTimestamp             int64
	BornHost                  netip.AddrPort
	ReconsumeTimes            int32
	PreparedTransactionOffset int64
}

// MessageExt is a decoded stored record.
type MessageExt struct {
	Message
	QueueOffset    int64
	PhysicalOffset int64
	StoreTimestamp int64
	StoreHost      netip.AddrPort
	StoreSize      int32
	BodyCRC        int32
}

// Sentinel errors of the record codec, each wrapped with the value and the limit. Their texts keep
// the "store:" prefix they were born with: they reach clients inside SEND_MESSAGE remarks, and the
// store re-exports them under the same names (store.ErrMessageTooLarge is ErrMessageTooLarge).
var (
	// ErrCorruptRecord: bytes do not form a valid stored record (DecodeMessage, ParseRecord and
	// the store's readers).
	ErrCorruptRecord = errors.New("store: corrupt record")
	// ErrMessageTooLarge: the record does not fit its length fields (the store adds maxMessageSize).
	ErrMessageTooLarge = errors.New("store: message too large")
	// ErrTopicTooLong: the topic is empty or longer than 127 bytes.
	ErrTopicTooLong = errors.New("store: topic too long")
	// ErrPropertiesTooLarge: the encoded properties pass 32767 bytes.
	ErrPropertiesTooLarge = errors.New("store: properties too large")
)

// PutInt32 writes v big-endian (for negative constants).
func PutInt32(b []byte, v int32) { binary.BigEndian.PutUint32(b, uint32(v)) }

// hostLength is the encoded size of a host: IPv4 (and IPv4-mapped IPv6) take 8 bytes.
func hostLength(ap netip.AddrPort) int {
	if ap.Addr().Unmap().Is6() {
		return HostV6Length
	}
	return HostV4Length
}

// PutHost encodes ap (address + big-endian int32 port) at b and returns the bytes written.
func PutHost(b []byte, ap netip.AddrPort) int {
	a := ap.Addr().Unmap()
	if a.Is6() {
		ip := a.As16()
		copy(b, ip[:])
		binary.BigEndian.PutUint32(b[16:], uint32(ap.Port()))
		return HostV6Length
	}
	if a.Is4() {
		ip := a.As4()
		copy(b, ip[:])
	} else {
		clear(b[:4])
	}
	binary.BigEndian.PutUint32(b[4:], uint32(ap.Port()))
	return HostV4Length
}

// readHost decodes a host of the given encoded length.
func readHost(b []byte, n int) (netip.AddrPort, error) {
	var addr netip.Addr
	if n == HostV6Length {
		addr = netip.AddrFrom16([16]byte(b[:16]))
	} else {
		addr = netip.AddrFrom4([4]byte(b[:4]))
	}
	port := int32(binary.BigEndian.Uint32(b[n-4:]))
	if port < 0 || port > math.MaxUint16 {
		return netip.AddrPort{}, fmt.Errorf("%w: host port %d outside 0..65535", ErrCorruptRecord, port)
	}
	return netip.AddrPortFrom(addr, uint16(port)), nil
}

// hostSysFlag returns sysFlag with the born/store IPv6 bits set from the actual addresses.
func hostSysFlag(sysFlag int32, born, storeHost netip.AddrPort) int32 {
	sysFlag &^= SysFlagBornHostV6 | SysFlagStoreHostV6
	if hostLength(born) == HostV6Length {
		sysFlag |= SysFlagBornHostV6
	}
	if hostLength(storeHost) == HostV6Length {
		sysFlag |= SysFlagStoreHostV6
	}
	return sysFlag
}

// BodyCRC is RocketMQ's body checksum: CRC32 (IEEE) with the sign bit cleared.
func BodyCRC(body []byte) int32 {
	return int32(crc32.ChecksumIEEE(body) & 0x7FFFFFFF)
}

// checkMessageLimits checks the limits that do not depend on the store's configuration.
func checkMessageLimits(m *Message) error {
	if len(m.Topic) == 0 {
		return fmt.Errorf("%w: empty topic", ErrTopicTooLong)
	}
	if len(m.Topic) > MaxTopicLength {
		return fmt.Errorf("%w: topic is %d bytes, limit %d", ErrTopicTooLong, len(m.Topic), MaxTopicLength)
	}
	if len(m.Properties) > MaxPropertiesLength {
		return fmt.Errorf("%w: properties are %d bytes, limit %d", ErrPropertiesTooLarge, len(m.Properties), MaxPropertiesLength)
	}
	return nil
}

// recordLength is the stored size of m with the given host lengths.
func recordLength(m *Message, bornHostLen, storeHostLen int) int {
	return RecordFixedLength - 2*HostV4Length + bornHostLen + storeHostLen +
		len(m.Body) + len(m.Topic) + len(m.Properties)
}

// RecordSize returns the stored size of m once stored by a broker at storeHost, or an error
// when m breaks a limit of the record format.
func RecordSize(m *Message, storeHost netip.AddrPort) (int, error) {
	if err := checkMessageLimits(m); err != nil {
		return 0, err
	}
	n := recordLength(m, hostLength(m.BornHost), hostLength(storeHost))
	if n > math.MaxInt32 {
		return 0, fmt.Errorf("%w: record is %d bytes, limit %d", ErrMessageTooLarge, n, math.MaxInt32)
	}
	return n, nil
}

// Encoded holds what is computed before the CommitLog lock is taken.
type Encoded struct {
	Msg       *Message
	Length    int
	BodyCRC   int32
	SysFlag   int32
	StoreHost netip.AddrPort
}

// EncodeRecordAt writes the whole record of e into b (len(b) >= e.Length) with the given
// store-assigned fields. It is the one encoder of the record layout.
func EncodeRecordAt(b []byte, e *Encoded, queueOffset, physicalOffset, storeTimestamp int64) {
	m := e.Msg
	be := binary.BigEndian
	be.PutUint32(b[OffTotalSize:], uint32(e.Length))
	PutInt32(b[OffMagic:], MessageMagicCode)
	be.PutUint32(b[OffBodyCRC:], uint32(e.BodyCRC))
	be.PutUint32(b[OffQueueID:], uint32(m.QueueID))
	be.PutUint32(b[OffFlag:], uint32(m.Flag))
	be.PutUint64(b[OffQueueOffset:], uint64(queueOffset))
	be.PutUint64(b[OffPhysicalOffset:], uint64(physicalOffset))
	be.PutUint32(b[OffSysFlag:], uint32(e.SysFlag))
	be.PutUint64(b[OffBornTimestamp:], uint64(m.BornTimestamp))
	p := OffBornHost + PutHost(b[OffBornHost:], m.BornHost)
	be.PutUint64(b[p:], uint64(storeTimestamp))
	p += 8
	p += PutHost(b[p:], e.StoreHost)
	be.PutUint32(b[p:], uint32(m.ReconsumeTimes))
	be.PutUint64(b[p+4:], uint64(m.PreparedTransactionOffset))
	be.PutUint32(b[p+12:], uint32(len(m.Body)))
	p += 16
	p += copy(b[p:], m.Body)
	b[p] = byte(len(m.Topic))
	p++
	p += copy(b[p:], m.Topic)
	be.PutUint16(b[p:], uint16(len(m.Properties)))
	p += 2
	copy(b[p:], m.Properties)
}

// Prepare validates m and computes its length, CRC and sysFlag (no store limits).
func Prepare(m *Message, storeHost netip.AddrPort) (Encoded, error) {
	n, err := RecordSize(m, storeHost)
	if err != nil {
		return Encoded{}, err
	}
	return Encoded{
		Msg:       m,
		Length:    n,
		BodyCRC:   BodyCRC(m.Body),
		SysFlag:   hostSysFlag(m.SysFlag, m.BornHost, storeHost),
		StoreHost: storeHost,
	}, nil
}

// EncodeRecord appends the stored record of m to dst: the layout a pull serves and the
// CommitLog holds. The body CRC is computed from m.Body (m.BodyCRC and m.StoreSize are
// ignored) and the host bits of the sysFlag follow the addresses.
func EncodeRecord(dst []byte, m *MessageExt) ([]byte, error) {
	e, err := Prepare(&m.Message, m.StoreHost)
	if err != nil {
		return dst, err
	}
	start := len(dst)
	dst = append(dst, make([]byte, e.Length)...)
	EncodeRecordAt(dst[start:], &e, m.QueueOffset, m.PhysicalOffset, m.StoreTimestamp)
	return dst, nil
}

// RecordView gives access to the fields of a record that has passed ParseRecord; the slices
// alias the record.
type RecordView struct {
	Size           int
	Magic          int32
	BodyCRC        int32
	QueueID        int32
	Flag           int32
	QueueOffset    int64
	PhysicalOffset int64
	SysFlag        int32
	BornTimestamp  int64
	BornHost       []byte
	StoreTimestamp int64
	StoreHost      []byte
	ReconsumeTimes int32
	PreparedTxOff  int64
	Body           []byte
	Topic          []byte
	Properties     []byte
}

// ParseRecord checks the framing of the record at the start of b and returns its view. It
// never panics: every length is checked against the total size and against len(b).
func ParseRecord(b []byte) (RecordView, error) {
	var v RecordView
	if len(b) < 8 {
		return v, fmt.Errorf("%w: %d bytes, too short for size and magic", ErrCorruptRecord, len(b))
	}
	be := binary.BigEndian
	size := int64(int32(be.Uint32(b[OffTotalSize:])))
	v.Magic = int32(be.Uint32(b[OffMagic:]))
	if v.Magic != MessageMagicCode && v.Magic != MessageMagicCodeV2 {
		return v, fmt.Errorf("%w: bad magic code 0x%08X", ErrCorruptRecord, uint32(v.Magic))
	}
	if size < RecordFixedLength || size > int64(len(b)) {
		return v, fmt.Errorf("%w: total size %d outside %d..%d", ErrCorruptRecord, size, RecordFixedLength, len(b))
	}
	v.Size = int(size)
	r := b[:v.Size]
	v.BodyCRC = int32(be.Uint32(r[OffBodyCRC:]))
	v.QueueID = int32(be.Uint32(r[OffQueueID:]))
	v.Flag = int32(be.Uint32(r[OffFlag:]))
	v.QueueOffset = int64(be.Uint64(r[OffQueueOffset:]))
	v.PhysicalOffset = int64(be.Uint64(r[OffPhysicalOffset:]))
	v.SysFlag = int32(be.Uint32(r[OffSysFlag:]))
	v.BornTimestamp = int64(be.Uint64(r[OffBornTimestamp:]))
	bornLen, storeLen := HostV4Length, HostV4Length
	if v.SysFlag&SysFlagBornHostV6 != 0 {
		bornLen = HostV6Length
	}
	if v.SysFlag&SysFlagStoreHostV6 != 0 {
		storeLen = HostV6Length
	}
	p := OffBornHost
	need := p + bornLen + 8 + storeLen + 4 + 8 + 4
	if need > v.Size {
		return v, fmt.Errorf("%w: header needs %d bytes, total size %d", ErrCorruptRecord, need, v.Size)
	}
	v.BornHost = r[p : p+bornLen]
	p += bornLen
	v.StoreTimestamp = int64(be.Uint64(r[p:]))
	p += 8
	v.StoreHost = r[p : p+storeLen]
	p += storeLen
	v.ReconsumeTimes = int32(be.Uint32(r[p:]))
	v.PreparedTxOff = int64(be.Uint64(r[p+4:]))
	bodyLen := int64(int32(be.Uint32(r[p+12:])))
	p += 16
	if bodyLen < 0 || int64(p)+bodyLen > int64(v.Size) {
		return v, fmt.Errorf("%w: body length %d overruns total size %d", ErrCorruptRecord, bodyLen, v.Size)
	}
	v.Body = r[p : p+int(bodyLen)]
	p += int(bodyLen)
	topicLenSize := 1
	if v.Magic == MessageMagicCodeV2 {
		topicLenSize = 2
	}
	if p+topicLenSize > v.Size {
		return v, fmt.Errorf("%w: topic length overruns total size %d", ErrCorruptRecord, v.Size)
	}
	var topicLen int
	if topicLenSize == 1 {
		topicLen = int(r[p])
	} else {
		topicLen = int(be.Uint16(r[p:]))
	}
	p += topicLenSize
	if p+topicLen+2 > v.Size {
		return v, fmt.Errorf("%w: topic length %d overruns total size %d", ErrCorruptRecord, topicLen, v.Size)
	}
	v.Topic = r[p : p+topicLen]
	p += topicLen
	propsLen := int(int16(be.Uint16(r[p:])))
	p += 2
	if propsLen < 0 || p+propsLen != v.Size {
		return v, fmt.Errorf("%w: properties length %d does not end at total size %d (at %d)", ErrCorruptRecord, propsLen, v.Size, p)
	}
	v.Properties = r[p : p+propsLen]
	return v, nil
}

// DecodeMessage decodes the record at the start of rec into a copy that does not alias rec.
// withBody=false leaves Body nil. Every malformed case is an error wrapping ErrCorruptRecord.
func DecodeMessage(rec []byte, withBody bool) (*MessageExt, error) {
	m := new(MessageExt)
	v, err := decodeInto(m, rec, "")
	if err != nil {
		return nil, err
	}
	if withBody {
		m.Body = append([]byte(nil), v.Body...)
	}
	return m, nil
}

// DecodeMessageView decodes the record at the start of rec; its Body is a slice of rec (nil when empty), so
// the message is valid while rec is. Errors as DecodeMessage's.
func DecodeMessageView(rec []byte) (*MessageExt, error) {
	m := new(MessageExt)
	v, err := decodeInto(m, rec, "")
	if err != nil {
		return nil, err
	}
	if len(v.Body) > 0 {
		m.Body = v.Body[:len(v.Body):len(v.Body)]
	}
	return m, nil
}

// DecodeRecords decodes every record of b (records back to back, as in a pull answer's body)
// for a reader that owns b and will not write to it again: each Body is a slice of b (capped
// at its length, so an append copies it instead of overwriting the next record), and the
// messages come from one allocation and share their topic's string when it repeats. A
// message kept therefore keeps all of b. On a bad record it returns the messages before it
// and an error naming the record's byte offset; every malformed case wraps ErrCorruptRecord.
func DecodeRecords(b []byte) ([]*MessageExt, error) {
	n := 0 // the records, a last malformed one included; at most len(b)/RecordFixedLength+1
	for off := 0; off < len(b); {
		n++
		if len(b)-off < RecordFixedLength {
			break
		}
		size := int(int32(binary.BigEndian.Uint32(b[off:])))
		if size < RecordFixedLength {
			break
		}
		off += size
	}
	exts := make([]MessageExt, n)
	out := make([]*MessageExt, 0, n)
	topic := ""
	for off, i := 0, 0; off < len(b); i++ {
		var m *MessageExt
		if i < len(exts) {
			m = &exts[i]
		} else { // not reached (the count walked the same sizes), but a miscount must not panic
			m = new(MessageExt)
		}
		v, err := decodeInto(m, b[off:], topic)
		if err != nil {
			return out, fmt.Errorf("record at byte %d of %d: %w", off, len(b), err)
		}
		if len(v.Body) > 0 { // nil when empty, as DecodeMessage
			m.Body = v.Body[:len(v.Body):len(v.Body)]
		}
		topic = m.Topic
		out = append(out, m)
		off += v.Size
	}
	return out, nil
}

// decodeInto fills m (Body aside) from the record at the start of rec; topic is used for
// m.Topic when it equals the record's topic, saving a string.
func decodeInto(m *MessageExt, rec []byte, topic string) (RecordView, error) {
	v, err := ParseRecord(rec)
	if err != nil {
		return v, err
	}
	born, err := readHost(v.BornHost, len(v.BornHost))
	if err != nil {
		return v, err
	}
	storeHost, err := readHost(v.StoreHost, len(v.StoreHost))
	if err != nil {
		return v, err
	}
	if string(v.Topic) != topic {
		topic = string(v.Topic)
	}
	*m = MessageExt{
		Message: Message{
			Topic:                     topic,
			QueueID:                   v.QueueID,
			Flag:                      v.Flag,
			Properties:                string(v.Properties),
			SysFlag:                   v.SysFlag,
			BornTimestamp:             v.BornTimestamp,
			BornHost:                  born,
			ReconsumeTimes:            v.ReconsumeTimes,
			PreparedTransactionOffset: v.PreparedTxOff,
		},
		QueueOffset:    v.QueueOffset,
		PhysicalOffset: v.PhysicalOffset,
		StoreTimestamp: v.StoreTimestamp,
		StoreHost:      storeHost,
		StoreSize:      int32(v.Size),
		BodyCRC:        v.BodyCRC,
	}
	return v, nil
}

// RecordProperties parses the properties of a stored record.
func RecordProperties(rec []byte) (map[string]string, error) {
	v, err := ParseRecord(rec)
	if err != nil {
		return nil, err
	}
	return ParseProperties(string(v.Properties)), nil
}

// ParseProperties decodes an encoded properties string. Items without exactly one
// name/value separator or with an empty name are skipped, as the clients do.
func ParseProperties(s string) map[string]string {
	m := make(map[string]string)
	for len(s) > 0 {
		item := s
		if i := strings.IndexByte(s, PropertySeparator); i >= 0 {
			item, s = s[:i], s[i+1:]
		} else {
			s = ""
		}
		k, v, ok := strings.Cut(item, string(NameValueSeparator))
		if !ok || k == "" || strings.IndexByte(v, NameValueSeparator) >= 0 {
			continue
		}
		m[k] = v
	}
	return m
}

// EncodeProperties encodes m with sorted names, each pair followed by the property separator.
func EncodeProperties(m map[string]string) string {
	keys := make([]string, 0, len(m))
	n := 0
	for k, v := range m {
		keys = append(keys, k)
		n += len(k) + len(v) + 2
	}
	sort.Strings(keys)
	var sb strings.Builder
	sb.Grow(n)
	for _, k := range keys {
		sb.WriteString(k)
		sb.WriteByte(NameValueSeparator)
		sb.WriteString(m[k])
		sb.WriteByte(PropertySeparator)
	}
	return sb.String()
}

// PropertyValue finds name in encoded properties without allocating; ok is false when absent.
func PropertyValue(props []byte, name string) (value []byte, ok bool) {
	for len(props) > 0 {
		item := props
		if i := indexByte(props, PropertySeparator); i >= 0 {
			item, props = props[:i], props[i+1:]
		} else {
			props = nil
		}
		sep := indexByte(item, NameValueSeparator)
		if sep <= 0 || string(item[:sep]) != name {
			continue
		}
		v := item[sep+1:]
		if indexByte(v, NameValueSeparator) >= 0 {
			continue
		}
		return v, true
	}
	return nil, false
}

// PropertyString is PropertyValue of properties held in a string: the value is a substring of props.
func PropertyString(props, name string) (value string, ok bool) {
	return propertyIn(props, name, true)
}

// FindProperty is the value of the first item named name in props, a substring of it, found without
// allocating: everything after the item's first name/value separator. Unlike PropertyString it takes a
// value that holds another separator as it is, as the broker's send, delay and transaction paths read
// properties.
func FindProperty(props, name string) (value string, ok bool) {
	return propertyIn(props, name, false)
}

// HasProperty reports whether props hold an item named name (FindProperty's reading).
func HasProperty(props, name string) bool {
	_, ok := propertyIn(props, name, false)
	return ok
}

// propertyIn finds the first item named name; wellFormed passes over an item whose value holds a
// name/value separator.
func propertyIn(props, name string, wellFormed bool) (string, bool) {
	for len(props) > 0 {
		item := props
		if i := strings.IndexByte(props, PropertySeparator); i >= 0 {
			item, props = props[:i], props[i+1:]
		} else {
			props = ""
		}
		k, v, found := strings.Cut(item, string(NameValueSeparator))
		if !found || k != name || (wellFormed && strings.IndexByte(v, NameValueSeparator) >= 0) {
			continue
		}
		return v, true
	}
	return "", false
}

// EditProperties decodes props, lets edit change the map, and encodes it again (sorted names). For the
// paths that rewrite messages (delay, retry, transactions); plain sends never re-encode.
func EditProperties(props string, edit func(m map[string]string)) string {
	m := ParseProperties(props)
	edit(m)
	return EncodeProperties(m)
}

// RestoreReal rebuilds a message parked under a system topic (SCHEDULE_TOPIC_XXXX, the timer topic, the
// transaction half topic): its REAL_TOPIC and REAL_QID become its topic and queue again (queue 0 when
// REAL_QID is missing or not a number), and the properties named in drop (what parked it) go.
func RestoreReal(m *MessageExt, drop ...string) *Message {
	var topic string
	qid := int32(0)
	props := EditProperties(m.Properties, func(p map[string]string) {
		topic = p[PropertyRealTopic]
		if n, err := strconv.Atoi(p[PropertyRealQueueID]); err == nil {
			qid = int32(n)
		}
		for _, k := range drop {
			delete(p, k)
		}
	})
	out := m.Message
	out.Topic, out.QueueID, out.Properties = topic, qid, props
	return &out
}

func indexByte(b []byte, c byte) int {
	for i, x := range b {
		if x == c {
			return i
		}
	}
	return -1
}

// JavaStringHash is Java's String.hashCode: 31*h + c over the UTF-16 code units of s.
func JavaStringHash[T string | []byte](s T) int32 {
	return JavaStringHashAppend(0, s)
}

// JavaStringHashAppend continues a String.hashCode h over the UTF-16 code units of s, so the
// hash of a concatenation needs no concatenated string.
func JavaStringHashAppend[T string | []byte](h int32, s T) int32 {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x80 {
			h = 31*h + int32(c)
			continue
		}
		// Non-ASCII: decode the rest as UTF-8 and hash its UTF-16 code units.
		for _, r := range string(s[i:]) {
			if r1, r2 := utf16.EncodeRune(r); r1 != '\uFFFD' || r2 != '\uFFFD' {
				h = 31*h + int32(r1)
				h = 31*h + int32(r2)
			} else {
				h = 31*h + int32(r)
			}
		}
		return h
	}
	return h
}

// TagsHash is the ConsumeQueue tag code of a tag: Java's String.hashCode over UTF-16 code
// units, sign-extended, as RocketMQ's tagsString2tagsCode computes it.
func TagsHash(tag string) int64 {
	return int64(JavaStringHash(tag))
}

// CreateOffsetMsgID returns the offset message id: upper-case hex of the store host address,
// its port as int32 and the physical offset as int64 (32 hex chars for IPv4, 56 for IPv6).
func CreateOffsetMsgID(host netip.AddrPort, phyOffset int64) string {
	var buf [HostV6Length + 8]byte
	n := PutHost(buf[:], host)
	binary.BigEndian.PutUint64(buf[n:], uint64(phyOffset))
	return strings.ToUpper(hex.EncodeToString(buf[:n+8]))
}

// AppendOffsetMsgID appends the offset message id to dst without intermediate allocations.
func AppendOffsetMsgID(dst []byte, hostBytes []byte, phyOffset int64) []byte {
	const digits = "0123456789ABCDEF"
	for _, c := range hostBytes {
		dst = append(dst, digits[c>>4], digits[c&0xF])
	}
	for s := 56; s >= 0; s -= 8 {
		c := byte(phyOffset >> uint(s))
		dst = append(dst, digits[c>>4], digits[c&0xF])
	}
	return dst
}

// DecodeOffsetMsgID parses an offset message id made by CreateOffsetMsgID.
func DecodeOffsetMsgID(id string) (netip.AddrPort, int64, error) {
	if len(id) != 2*(HostV4Length+8) && len(id) != 2*(HostV6Length+8) {
		return netip.AddrPort{}, 0, fmt.Errorf("store: offset msg id %q: length %d, want 32 or 56 hex chars", id, len(id))
	}
	b, err := hex.DecodeString(id)
	if err != nil {
		return netip.AddrPort{}, 0, fmt.Errorf("store: offset msg id %q: %v", id, err)
	}
	hl := len(b) - 8
	host, err := readHost(b[:hl], hl)
	if err != nil {
		return netip.AddrPort{}, 0, fmt.Errorf("store: offset msg id %q: %w", id, err)
	}
	return host, int64(binary.BigEndian.Uint64(b[hl:])), nil
}
