package store

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"net/netip"
	"sort"
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
	// blankRecordMinLength is the room a file must keep for a blank record: size + magic.
	blankRecordMinLength = 8
	// recordFixedLength is the size of a record with IPv4 hosts, empty body, topic and properties.
	recordFixedLength = 91
	// hostV4Length and hostV6Length are the sizes of an encoded host: address + int32 port.
	hostV4Length = 8
	hostV6Length = 20
)

// Byte offsets of the fixed-position fields of a record. Wire format: never change.
const (
	offTotalSize      = 0
	offMagic          = 4
	offBodyCRC        = 8
	offQueueID        = 12
	offFlag           = 16
	offQueueOffset    = 20
	offPhysicalOffset = 28
	offSysFlag        = 36
	offBornTimestamp  = 40
	offBornHost       = 48
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
	PropertyTimerDelaySec              = "TIMER_DELAY_SEC"
	PropertyTimerDeliverMs             = "TIMER_DELIVER_MS"
	PropertyDLQOriginTopic             = "DLQ_ORIGIN_TOPIC"
	PropertyDLQOriginMessageID         = "DLQ_ORIGIN_MESSAGE_ID"
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

// ErrCorruptRecord is returned (wrapped with the detail) by DecodeMessage and by the readers
// when bytes do not form a valid stored record.
var ErrCorruptRecord = errors.New("store: corrupt record")

// putInt32 writes v big-endian (for negative constants).
func putInt32(b []byte, v int32) { binary.BigEndian.PutUint32(b, uint32(v)) }

// hostLength is the encoded size of a host: IPv4 (and IPv4-mapped IPv6) take 8 bytes.
func hostLength(ap netip.AddrPort) int {
	if ap.Addr().Unmap().Is6() {
		return hostV6Length
	}
	return hostV4Length
}

// putHost encodes ap (address + big-endian int32 port) at b and returns the bytes written.
func putHost(b []byte, ap netip.AddrPort) int {
	a := ap.Addr().Unmap()
	if a.Is6() {
		ip := a.As16()
		copy(b, ip[:])
		binary.BigEndian.PutUint32(b[16:], uint32(ap.Port()))
		return hostV6Length
	}
	if a.Is4() {
		ip := a.As4()
		copy(b, ip[:])
	} else {
		clear(b[:4])
	}
	binary.BigEndian.PutUint32(b[4:], uint32(ap.Port()))
	return hostV4Length
}

// readHost decodes a host of the given encoded length.
func readHost(b []byte, n int) (netip.AddrPort, error) {
	var addr netip.Addr
	if n == hostV6Length {
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
	if hostLength(born) == hostV6Length {
		sysFlag |= SysFlagBornHostV6
	}
	if hostLength(storeHost) == hostV6Length {
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
	return recordFixedLength - 2*hostV4Length + bornHostLen + storeHostLen +
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

// encodedMessage holds what is computed before the CommitLog lock is taken.
type encodedMessage struct {
	msg       *Message
	length    int
	bodyCRC   int32
	sysFlag   int32
	storeHost netip.AddrPort
}

// encodeRecordAt writes the whole record of e into b (len(b) >= e.length) with the given
// store-assigned fields. It is the one encoder of the record layout.
func encodeRecordAt(b []byte, e *encodedMessage, queueOffset, physicalOffset, storeTimestamp int64) {
	m := e.msg
	be := binary.BigEndian
	be.PutUint32(b[offTotalSize:], uint32(e.length))
	putInt32(b[offMagic:], MessageMagicCode)
	be.PutUint32(b[offBodyCRC:], uint32(e.bodyCRC))
	be.PutUint32(b[offQueueID:], uint32(m.QueueID))
	be.PutUint32(b[offFlag:], uint32(m.Flag))
	be.PutUint64(b[offQueueOffset:], uint64(queueOffset))
	be.PutUint64(b[offPhysicalOffset:], uint64(physicalOffset))
	be.PutUint32(b[offSysFlag:], uint32(e.sysFlag))
	be.PutUint64(b[offBornTimestamp:], uint64(m.BornTimestamp))
	p := offBornHost + putHost(b[offBornHost:], m.BornHost)
	be.PutUint64(b[p:], uint64(storeTimestamp))
	p += 8
	p += putHost(b[p:], e.storeHost)
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

// prepareMessage validates m and computes its length, CRC and sysFlag (no store limits).
func prepareMessage(m *Message, storeHost netip.AddrPort) (encodedMessage, error) {
	n, err := RecordSize(m, storeHost)
	if err != nil {
		return encodedMessage{}, err
	}
	return encodedMessage{
		msg:       m,
		length:    n,
		bodyCRC:   BodyCRC(m.Body),
		sysFlag:   hostSysFlag(m.SysFlag, m.BornHost, storeHost),
		storeHost: storeHost,
	}, nil
}

// EncodeRecord appends the stored record of m to dst: the layout a pull serves and the
// CommitLog holds. The body CRC is computed from m.Body (m.BodyCRC and m.StoreSize are
// ignored) and the host bits of the sysFlag follow the addresses.
func EncodeRecord(dst []byte, m *MessageExt) ([]byte, error) {
	e, err := prepareMessage(&m.Message, m.StoreHost)
	if err != nil {
		return dst, err
	}
	start := len(dst)
	dst = append(dst, make([]byte, e.length)...)
	encodeRecordAt(dst[start:], &e, m.QueueOffset, m.PhysicalOffset, m.StoreTimestamp)
	return dst, nil
}

// recordView gives access to the fields of a record that has passed parseRecord; the slices
// alias the record.
type recordView struct {
	size           int
	magic          int32
	bodyCRC        int32
	queueID        int32
	flag           int32
	queueOffset    int64
	physicalOffset int64
	sysFlag        int32
	bornTimestamp  int64
	bornHost       []byte
	storeTimestamp int64
	storeHost      []byte
	reconsumeTimes int32
	preparedTxOff  int64
	body           []byte
	topic          []byte
	properties     []byte
}

// parseRecord checks the framing of the record at the start of b and returns its view. It
// never panics: every length is checked against the total size and against len(b).
func parseRecord(b []byte) (recordView, error) {
	var v recordView
	if len(b) < 8 {
		return v, fmt.Errorf("%w: %d bytes, too short for size and magic", ErrCorruptRecord, len(b))
	}
	be := binary.BigEndian
	size := int64(int32(be.Uint32(b[offTotalSize:])))
	v.magic = int32(be.Uint32(b[offMagic:]))
	if v.magic != MessageMagicCode && v.magic != MessageMagicCodeV2 {
		return v, fmt.Errorf("%w: bad magic code 0x%08X", ErrCorruptRecord, uint32(v.magic))
	}
	if size < recordFixedLength || size > int64(len(b)) {
		return v, fmt.Errorf("%w: total size %d outside %d..%d", ErrCorruptRecord, size, recordFixedLength, len(b))
	}
	v.size = int(size)
	r := b[:v.size]
	v.bodyCRC = int32(be.Uint32(r[offBodyCRC:]))
	v.queueID = int32(be.Uint32(r[offQueueID:]))
	v.flag = int32(be.Uint32(r[offFlag:]))
	v.queueOffset = int64(be.Uint64(r[offQueueOffset:]))
	v.physicalOffset = int64(be.Uint64(r[offPhysicalOffset:]))
	v.sysFlag = int32(be.Uint32(r[offSysFlag:]))
	v.bornTimestamp = int64(be.Uint64(r[offBornTimestamp:]))
	bornLen, storeLen := hostV4Length, hostV4Length
	if v.sysFlag&SysFlagBornHostV6 != 0 {
		bornLen = hostV6Length
	}
	if v.sysFlag&SysFlagStoreHostV6 != 0 {
		storeLen = hostV6Length
	}
	p := offBornHost
	need := p + bornLen + 8 + storeLen + 4 + 8 + 4
	if need > v.size {
		return v, fmt.Errorf("%w: header needs %d bytes, total size %d", ErrCorruptRecord, need, v.size)
	}
	v.bornHost = r[p : p+bornLen]
	p += bornLen
	v.storeTimestamp = int64(be.Uint64(r[p:]))
	p += 8
	v.storeHost = r[p : p+storeLen]
	p += storeLen
	v.reconsumeTimes = int32(be.Uint32(r[p:]))
	v.preparedTxOff = int64(be.Uint64(r[p+4:]))
	bodyLen := int64(int32(be.Uint32(r[p+12:])))
	p += 16
	if bodyLen < 0 || int64(p)+bodyLen > int64(v.size) {
		return v, fmt.Errorf("%w: body length %d overruns total size %d", ErrCorruptRecord, bodyLen, v.size)
	}
	v.body = r[p : p+int(bodyLen)]
	p += int(bodyLen)
	topicLenSize := 1
	if v.magic == MessageMagicCodeV2 {
		topicLenSize = 2
	}
	if p+topicLenSize > v.size {
		return v, fmt.Errorf("%w: topic length overruns total size %d", ErrCorruptRecord, v.size)
	}
	var topicLen int
	if topicLenSize == 1 {
		topicLen = int(r[p])
	} else {
		topicLen = int(be.Uint16(r[p:]))
	}
	p += topicLenSize
	if p+topicLen+2 > v.size {
		return v, fmt.Errorf("%w: topic length %d overruns total size %d", ErrCorruptRecord, topicLen, v.size)
	}
	v.topic = r[p : p+topicLen]
	p += topicLen
	propsLen := int(int16(be.Uint16(r[p:])))
	p += 2
	if propsLen < 0 || p+propsLen != v.size {
		return v, fmt.Errorf("%w: properties length %d does not end at total size %d (at %d)", ErrCorruptRecord, propsLen, v.size, p)
	}
	v.properties = r[p : p+propsLen]
	return v, nil
}

// DecodeMessage decodes the record at the start of rec into a copy that does not alias rec.
// withBody=false leaves Body nil. Every malformed case is an error wrapping ErrCorruptRecord.
func DecodeMessage(rec []byte, withBody bool) (*MessageExt, error) {
	v, err := parseRecord(rec)
	if err != nil {
		return nil, err
	}
	born, err := readHost(v.bornHost, len(v.bornHost))
	if err != nil {
		return nil, err
	}
	storeHost, err := readHost(v.storeHost, len(v.storeHost))
	if err != nil {
		return nil, err
	}
	m := &MessageExt{
		Message: Message{
			Topic:                     string(v.topic),
			QueueID:                   v.queueID,
			Flag:                      v.flag,
			Properties:                string(v.properties),
			SysFlag:                   v.sysFlag,
			BornTimestamp:             v.bornTimestamp,
			BornHost:                  born,
			ReconsumeTimes:            v.reconsumeTimes,
			PreparedTransactionOffset: v.preparedTxOff,
		},
		QueueOffset:    v.queueOffset,
		PhysicalOffset: v.physicalOffset,
		StoreTimestamp: v.storeTimestamp,
		StoreHost:      storeHost,
		StoreSize:      int32(v.size),
		BodyCRC:        v.bodyCRC,
	}
	if withBody {
		m.Body = append([]byte(nil), v.body...)
	}
	return m, nil
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

// propertyValue finds name in encoded properties without allocating; ok is false when absent.
func propertyValue(props []byte, name string) (value []byte, ok bool) {
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

func indexByte(b []byte, c byte) int {
	for i, x := range b {
		if x == c {
			return i
		}
	}
	return -1
}

// javaStringHash is Java's String.hashCode: 31*h + c over the UTF-16 code units of s.
func javaStringHash[T string | []byte](s T) int32 {
	return javaStringHashAppend(0, s)
}

// javaStringHashAppend continues a String.hashCode h over the UTF-16 code units of s, so the
// hash of a concatenation needs no concatenated string.
func javaStringHashAppend[T string | []byte](h int32, s T) int32 {
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
	return int64(javaStringHash(tag))
}

// CreateOffsetMsgID returns the offset message id: upper-case hex of the store host address,
// its port as int32 and the physical offset as int64 (32 hex chars for IPv4, 56 for IPv6).
func CreateOffsetMsgID(host netip.AddrPort, phyOffset int64) string {
	var buf [hostV6Length + 8]byte
	n := putHost(buf[:], host)
	binary.BigEndian.PutUint64(buf[n:], uint64(phyOffset))
	return strings.ToUpper(hex.EncodeToString(buf[:n+8]))
}

// appendOffsetMsgID appends the offset message id to dst without intermediate allocations.
func appendOffsetMsgID(dst []byte, hostBytes []byte, phyOffset int64) []byte {
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
	if len(id) != 2*(hostV4Length+8) && len(id) != 2*(hostV6Length+8) {
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
