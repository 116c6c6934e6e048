package protocol

import (
	"fmt"
	"strconv"
)

// The pop family's headers as header fields (ext fields): each type's Ext encodes it, its Parse function
// decodes it and names a missing or malformed key. Keys are RocketMQ 5's field names. The request codes are
// above 32767, so these requests travel only with JSON headers.

// PopMessageRequestHeader is POP_MESSAGE's request (200050).
type PopMessageRequestHeader struct {
	ConsumerGroup string
	Topic         string
	QueueID       int32 // -1: any readable queue of the topic
	MaxMsgNums    int32
	InvisibleTime int64 // ms
	PollTime      int64 // ms the broker may hold the request when nothing is found (long polling)
	BornTime      int64 // ms, the client's clock
	InitMode      int32 // where a group without an offset starts: 0 the queue's end (last message), 1 its start
	ExpType       string
	Exp           string
	Order         bool
	AttemptID     string
	BrokerName    string // "bname", optional
}

// Pop init modes (ConsumeInitMode).
const (
	PopInitModeMax = 0
	PopInitModeMin = 1
)

// Ext is h as header fields.
func (h *PopMessageRequestHeader) Ext() map[string]string {
	ext := map[string]string{
		"consumerGroup": h.ConsumerGroup, "topic": h.Topic, "queueId": itoa32(h.QueueID),
		"maxMsgNums": itoa32(h.MaxMsgNums), "invisibleTime": itoa64(h.InvisibleTime), "pollTime": itoa64(h.PollTime),
		"bornTime": itoa64(h.BornTime), "initMode": itoa32(h.InitMode), "order": strconv.FormatBool(h.Order),
	}
	setOpt(ext, "expType", h.ExpType)
	setOpt(ext, "exp", h.Exp)
	setOpt(ext, "attemptId", h.AttemptID)
	setOpt(ext, "bname", h.BrokerName)
	return ext
}

// ParsePopMessageRequestHeader decodes POP_MESSAGE's header fields.
func ParsePopMessageRequestHeader(ext map[string]string) (*PopMessageRequestHeader, error) {
	p := extParser{ext: ext}
	h := &PopMessageRequestHeader{
		ConsumerGroup: p.str("consumerGroup"), Topic: p.str("topic"), QueueID: p.i32("queueId"),
		MaxMsgNums: p.i32("maxMsgNums"), InvisibleTime: p.i64("invisibleTime"), PollTime: p.i64("pollTime"),
		BornTime: p.i64("bornTime"), InitMode: p.i32("initMode"), ExpType: ext["expType"], Exp: ext["exp"],
		Order: p.optBool("order"), AttemptID: ext["attemptId"], BrokerName: ext["bname"],
	}
	return h, p.err
}

// PopMessageResponseHeader is POP_MESSAGE's answer header.
type PopMessageResponseHeader struct {
	PopTime         int64
	InvisibleTime   int64
	ReviveQid       int32
	RestNum         int64
	StartOffsetInfo string // AppendStartOffsetInfo
	MsgOffsetInfo   string // AppendMsgOffsetInfo
	OrderCountInfo  string // AppendOrderCountInfo, ordered pops only
}

// Ext is h as header fields.
func (h *PopMessageResponseHeader) Ext() map[string]string {
	ext := map[string]string{"popTime": itoa64(h.PopTime), "invisibleTime": itoa64(h.InvisibleTime),
		"reviveQid": itoa32(h.ReviveQid), "restNum": itoa64(h.RestNum)}
	setOpt(ext, "startOffsetInfo", h.StartOffsetInfo)
	setOpt(ext, "msgOffsetInfo", h.MsgOffsetInfo)
	setOpt(ext, "orderCountInfo", h.OrderCountInfo)
	return ext
}

// ParsePopMessageResponseHeader decodes POP_MESSAGE's answer header fields.
func ParsePopMessageResponseHeader(ext map[string]string) (*PopMessageResponseHeader, error) {
	p := extParser{ext: ext}
	h := &PopMessageResponseHeader{PopTime: p.i64("popTime"), InvisibleTime: p.i64("invisibleTime"),
		ReviveQid: p.i32("reviveQid"), RestNum: p.i64("restNum"), StartOffsetInfo: ext["startOffsetInfo"],
		MsgOffsetInfo: ext["msgOffsetInfo"], OrderCountInfo: ext["orderCountInfo"]}
	return h, p.err
}

// AckMessageRequestHeader is ACK_MESSAGE's request (200051). Topic is the topic the message was read from
// (RealTopic of the handle), Offset its queue offset.
type AckMessageRequestHeader struct {
	ConsumerGroup string
	Topic         string
	QueueID       int32
	ExtraInfo     string
	Offset        int64
	BrokerName    string // "bname", optional
}

// Ext is h as header fields.
func (h *AckMessageRequestHeader) Ext() map[string]string {
	ext := map[string]string{"consumerGroup": h.ConsumerGroup, "topic": h.Topic, "queueId": itoa32(h.QueueID),
		"extraInfo": h.ExtraInfo, "offset": itoa64(h.Offset)}
	setOpt(ext, "bname", h.BrokerName)
	return ext
}

// ParseAckMessageRequestHeader decodes ACK_MESSAGE's header fields.
func ParseAckMessageRequestHeader(ext map[string]string) (*AckMessageRequestHeader, error) {
	p := extParser{ext: ext}
	h := &AckMessageRequestHeader{ConsumerGroup: p.str("consumerGroup"), Topic: p.str("topic"),
		QueueID: p.i32("queueId"), ExtraInfo: p.str("extraInfo"), Offset: p.i64("offset"), BrokerName: ext["bname"]}
	return h, p.err
}

// ChangeInvisibleTimeRequestHeader is CHANGE_MESSAGE_INVISIBLETIME's request (200053): AckMessageRequestHeader
// and the new InvisibleTime (ms from now).
type ChangeInvisibleTimeRequestHeader struct {
	AckMessageRequestHeader
	InvisibleTime int64
}

// Ext is h as header fields.
func (h *ChangeInvisibleTimeRequestHeader) Ext() map[string]string {
	ext := h.AckMessageRequestHeader.Ext()
	ext["invisibleTime"] = itoa64(h.InvisibleTime)
	return ext
}

// ParseChangeInvisibleTimeRequestHeader decodes CHANGE_MESSAGE_INVISIBLETIME's header fields.
func ParseChangeInvisibleTimeRequestHeader(ext map[string]string) (*ChangeInvisibleTimeRequestHeader, error) {
	a, err := ParseAckMessageRequestHeader(ext)
	if err != nil {
		return nil, err
	}
	p := extParser{ext: ext}
	h := &ChangeInvisibleTimeRequestHeader{AckMessageRequestHeader: *a, InvisibleTime: p.i64("invisibleTime")}
	return h, p.err
}

// ChangeInvisibleTimeResponseHeader is CHANGE_MESSAGE_INVISIBLETIME's answer: the new handle is the old one
// with these three fields (and the old handle is no longer valid).
type ChangeInvisibleTimeResponseHeader struct {
	PopTime       int64
	InvisibleTime int64
	ReviveQid     int32
}

// Ext is h as header fields.
func (h *ChangeInvisibleTimeResponseHeader) Ext() map[string]string {
	return map[string]string{"popTime": itoa64(h.PopTime), "invisibleTime": itoa64(h.InvisibleTime),
		"reviveQid": itoa32(h.ReviveQid)}
}

// ParseChangeInvisibleTimeResponseHeader decodes CHANGE_MESSAGE_INVISIBLETIME's answer header fields.
func ParseChangeInvisibleTimeResponseHeader(ext map[string]string) (*ChangeInvisibleTimeResponseHeader, error) {
	p := extParser{ext: ext}
	h := &ChangeInvisibleTimeResponseHeader{PopTime: p.i64("popTime"), InvisibleTime: p.i64("invisibleTime"),
		ReviveQid: p.i32("reviveQid")}
	return h, p.err
}

// NotificationRequestHeader is NOTIFICATION's request (200054): wait up to PollTime for a message a pop of
// the group would get.
type NotificationRequestHeader struct {
	ConsumerGroup string
	Topic         string
	QueueID       int32 // -1: any queue
	PollTime      int64
	BornTime      int64
	Order         bool
	AttemptID     string
	BrokerName    string
}

// Ext is h as header fields.
func (h *NotificationRequestHeader) Ext() map[string]string {
	ext := map[string]string{"consumerGroup": h.ConsumerGroup, "topic": h.Topic, "queueId": itoa32(h.QueueID),
		"pollTime": itoa64(h.PollTime), "bornTime": itoa64(h.BornTime), "order": strconv.FormatBool(h.Order)}
	setOpt(ext, "attemptId", h.AttemptID)
	setOpt(ext, "bname", h.BrokerName)
	return ext
}

// ParseNotificationRequestHeader decodes NOTIFICATION's header fields.
func ParseNotificationRequestHeader(ext map[string]string) (*NotificationRequestHeader, error) {
	p := extParser{ext: ext}
	h := &NotificationRequestHeader{ConsumerGroup: p.str("consumerGroup"), Topic: p.str("topic"),
		QueueID: p.i32("queueId"), PollTime: p.i64("pollTime"), BornTime: p.i64("bornTime"),
		Order: p.optBool("order"), AttemptID: ext["attemptId"], BrokerName: ext["bname"]}
	return h, p.err
}

// NotificationResponseHeader is NOTIFICATION's answer: HasMsg when a pop would find a message.
type NotificationResponseHeader struct {
	HasMsg      bool
	PollingFull bool
}

// Ext is h as header fields.
func (h *NotificationResponseHeader) Ext() map[string]string {
	return map[string]string{"hasMsg": strconv.FormatBool(h.HasMsg), "pollingFull": strconv.FormatBool(h.PollingFull)}
}

// ParseNotificationResponseHeader decodes NOTIFICATION's answer header fields.
func ParseNotificationResponseHeader(ext map[string]string) (*NotificationResponseHeader, error) {
	p := extParser{ext: ext}
	h := &NotificationResponseHeader{HasMsg: p.bool("hasMsg"), PollingFull: p.optBool("pollingFull")}
	return h, p.err
}

// extParser reads header fields, keeping the first error (which names the key).
type extParser struct {
	ext map[string]string
	err error
}

func (p *extParser) raw(key string) (string, bool) {
	if p.err != nil {
		return "", false
	}
	v, ok := p.ext[key]
	if !ok {
		p.err = fmt.Errorf("header field %s is missing", key)
	}
	return v, ok
}

func (p *extParser) str(key string) string {
	v, _ := p.raw(key)
	return v
}

func (p *extParser) i64(key string) int64 { return p.num(key, 64) }

func (p *extParser) i32(key string) int32 { return int32(p.num(key, 32)) }

func (p *extParser) num(key string, bits int) int64 {
	v, ok := p.raw(key)
	if !ok {
		return 0
	}
	n, err := strconv.ParseInt(v, 10, bits)
	if err != nil {
		p.err = fmt.Errorf("header field %s=%q is not a %d-bit integer", key, v, bits)
	}
	return n
}

func (p *extParser) bool(key string) bool {
	v, ok := p.raw(key)
	if !ok {
		return false
	}
	return p.parseBool(key, v)
}

func (p *extParser) optBool(key string) bool {
	v, ok := p.ext[key]
	if !ok || p.err != nil {
		return false
	}
	return p.parseBool(key, v)
}

func (p *extParser) parseBool(key, v string) bool {
	b, err := strconv.ParseBool(v)
	if err != nil {
		p.err = fmt.Errorf("header field %s=%q is not true or false", key, v)
	}
	return b
}

func setOpt(ext map[string]string, key, v string) {
	if v != "" {
		ext[key] = v
	}
}

func itoa32(v int32) string { return strconv.Itoa(int(v)) }
func itoa64(v int64) string { return strconv.FormatInt(v, 10) }

// PollingInfoRequestHeader is POLLING_INFO's request (200055): how many pops of the group are held on the
// queue.
type PollingInfoRequestHeader struct {
	ConsumerGroup string
	Topic         string
	QueueID       int32
}

// Ext is h as header fields.
func (h *PollingInfoRequestHeader) Ext() map[string]string {
	return map[string]string{"consumerGroup": h.ConsumerGroup, "topic": h.Topic, "queueId": itoa32(h.QueueID)}
}

// ParsePollingInfoRequestHeader decodes POLLING_INFO's header fields.
func ParsePollingInfoRequestHeader(ext map[string]string) (*PollingInfoRequestHeader, error) {
	p := extParser{ext: ext}
	h := &PollingInfoRequestHeader{ConsumerGroup: p.str("consumerGroup"), Topic: p.str("topic"), QueueID: p.i32("queueId")}
	return h, p.err
}

// PollingInfoResponseHeader is POLLING_INFO's answer.
type PollingInfoResponseHeader struct {
	PollingNum int32
}

// Ext is h as header fields.
func (h *PollingInfoResponseHeader) Ext() map[string]string {
	return map[string]string{"pollingNum": itoa32(h.PollingNum)}
}

// ParsePollingInfoResponseHeader decodes POLLING_INFO's answer header fields.
func ParsePollingInfoResponseHeader(ext map[string]string) (*PollingInfoResponseHeader, error) {
	p := extParser{ext: ext}
	h := &PollingInfoResponseHeader{PollingNum: p.i32("pollingNum")}
	return h, p.err
}
