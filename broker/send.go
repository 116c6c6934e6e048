package broker

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/rocketraft/rocketraft/broker/internal/stats"
	"github.com/rocketraft/rocketraft/message"
	"github.com/rocketraft/rocketraft/protocol"
	"github.com/rocketraft/rocketraft/remoting"
	"github.com/rocketraft/rocketraft/store"
)

// sendHeader is SEND_MESSAGE's header, whichever of its two spellings the client used (long names for
// SEND_MESSAGE and SEND_REPLY_MESSAGE; one-letter names for SEND_MESSAGE_V2, SEND_BATCH_MESSAGE and
// SEND_REPLY_MESSAGE_V2).
type sendHeader struct {
	producerGroup         string
	topic                 string
	defaultTopic          string
	defaultTopicQueueNums int32
	queueID               int32
	sysFlag               int32
	bornTimestamp         int64
	flag                  int32
	properties            string
	reconsumeTimes        int32
	unitMode              bool
	maxReconsumeTimes     int32
	batch                 bool
}

var (
	longSendKeys  = [...]string{"producerGroup", "topic", "defaultTopic", "defaultTopicQueueNums", "queueId", "sysFlag", "bornTimestamp", "flag", "properties", "reconsumeTimes", "unitMode", "maxReconsumeTimes", "batch"}
	shortSendKeys = [...]string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m"}
)

func parseSendHeader(req *remoting.Command) (*sendHeader, error) {
	h := &sendHeader{}
	if err := h.parse(req); err != nil {
		return nil, err
	}
	return h, nil
}

// parse fills h from req's header.
func (h *sendHeader) parse(req *remoting.Command) error {
	keys := longSendKeys
	switch remoting.RequestCode(req.Code) {
	case remoting.SendMessageV2, remoting.SendBatchMessage, remoting.SendReplyMessageV2:
		keys = shortSendKeys
	}
	var err error
	if h.producerGroup, err = req.ExtString(keys[0]); err != nil {
		return err
	}
	if h.topic, err = req.ExtString(keys[1]); err != nil {
		return err
	}
	h.defaultTopic = req.OptString(keys[2], TopicAutoCreate)
	if h.defaultTopicQueueNums, err = req.OptInt32(keys[3], 4); err != nil {
		return err
	}
	if h.queueID, err = req.ExtInt32(keys[4]); err != nil {
		return err
	}
	if h.sysFlag, err = req.OptInt32(keys[5], 0); err != nil {
		return err
	}
	if h.bornTimestamp, err = req.OptInt64(keys[6], 0); err != nil {
		return err
	}
	if h.flag, err = req.OptInt32(keys[7], 0); err != nil {
		return err
	}
	h.properties = req.OptString(keys[8], "")
	if h.reconsumeTimes, err = req.OptInt32(keys[9], 0); err != nil {
		return err
	}
	if h.unitMode, err = req.OptBool(keys[10], false); err != nil {
		return err
	}
	if h.maxReconsumeTimes, err = req.OptInt32(keys[11], 0); err != nil {
		return err
	}
	if h.batch, err = req.OptBool(keys[12], false); err != nil {
		return err
	}
	return nil
}

// checkSend is RocketMQ's msgCheck for the broker side: role, permission, topic name, topic existence
// (creating it from the template when allowed) and queue id. It returns the queue id to use, or the
// response to send.
func (b *Broker) checkSend(h *sendHeader, conn *remoting.Conn) (int32, *remoting.Command) {
	return b.checkSendOn(h, conn, true)
}

// wouldCreate is checkSendOn's answer when the topic is missing and it may not create it.
var wouldCreate = new(remoting.Command)

// checkSendOn is checkSend; with create false a missing topic is answered wouldCreate, before anything was
// done for the request (sendInline, for a topic deleted since sendCannotBlock looked). conn is nil for a
// send of the gRPC endpoint's local mode.
func (b *Broker) checkSendOn(h *sendHeader, conn *remoting.Conn, create bool) (int32, *remoting.Command) {
	if resp := b.role.refuseWrite(); resp != nil {
		return 0, resp
	}
	if b.permission()&protocol.PermWrite == 0 {
		return 0, errResponse(remoting.NoPermission, "the broker[%s] sending message is forbidden (brokerPermission %d)", b.addr, b.permission())
	}
	if err := protocol.ValidateTopicName(h.topic); err != nil {
		return 0, errResponse(remoting.InvalidParameter, "%v", err)
	}
	if notAllowedSendTopics[h.topic] {
		return 0, errResponse(remoting.NoPermission, "sending message to topic[%s] is forbidden: it is a system topic", h.topic)
	}
	tc, ok := b.topics.lookup(h.topic)
	if !ok && !create {
		return 0, wouldCreate
	}
	if !ok {
		var created *protocol.TopicConfig
		var err error
		switch {
		case strings.HasPrefix(h.topic, RetryGroupPrefix):
			created, err = b.topics.createIfAbsent(h.topic, 1, protocol.PermRead|protocol.PermWrite, 0)
		case b.liveConfig().AutoCreateTopicEnable && h.defaultTopic != "":
			created, err = b.topics.createInSendMessage(h.topic, h.defaultTopic, h.defaultTopicQueueNums, 0)
		default:
			return 0, errResponse(remoting.TopicNotExist, "topic[%s] not exist, apply first please! (autoCreateTopicEnable=false on broker %s)", h.topic, b.addr)
		}
		if err != nil {
			return 0, errResponse(remoting.TopicNotExist, "topic[%s] not exist and cannot be created: %v", h.topic, err)
		}
		tc = *created
	}
	if tc.Perm&protocol.PermWrite == 0 {
		return 0, errResponse(remoting.NoPermission, "the topic[%s] is not writable (perm %d)", h.topic, tc.Perm)
	}
	qid := h.queueID
	if qid < 0 {
		qid = rand.Int32N(max(tc.WriteQueueNums, 1))
	}
	if n := tc.QueueNums(); qid >= n {
		producer := "in process" // the gRPC endpoint's local mode (grpc_local.go)
		if conn != nil {
			producer = conn.RemoteAddr()
		}
		return 0, errResponse(remoting.SystemError, "request queueId[%d] is illegal, topic %s has %d queues (read %d, write %d), producer %s",
			qid, h.topic, n, tc.ReadQueueNums, tc.WriteQueueNums, producer)
	}
	return qid, nil
}

func (b *Broker) permission() int32 { return int32(b.liveConfig().BrokerPermission) }

// sendJob is one SEND_MESSAGE in flight: the header, the message and what the answer needs, in one
// allocation (with the method value the store calls back: two per send, where separate pieces took four).
type sendJob struct {
	b     *Broker
	conn  *remoting.Conn
	req   *remoting.Command
	h     sendHeader
	qid   int32
	start time.Time
	m     message.Message
}

// processSend handles SEND_MESSAGE, SEND_MESSAGE_V2 and SEND_BATCH_MESSAGE. It answers from the store's
// completion callback, so a SYNC_FLUSH send never holds a worker while it waits for the disk.
func (b *Broker) processSend(_ context.Context, conn *remoting.Conn, req *remoting.Command) *remoting.Command {
	resp, _ := b.send(conn, req, true)
	return resp
}

// sendInline is processSend on the connection's reader (remoting.InlineFunc) for the sends that cannot block:
// this broker takes writes itself, the topic exists, and it is neither a retry topic's message (which may move
// to a dead letter topic made on first use) nor a transaction's half message (parked in a topic made on first
// use). It declines the rest, for the send pool: creating a topic writes its config to disk, or proposes it to
// the Raft group, and a Raft follower forwards to its leader.
func (b *Broker) sendInline(conn *remoting.Conn, req *remoting.Command) (*remoting.Command, bool) {
	return b.send(conn, req, false)
}

// sendCannotBlock: what sendInline takes, but for the topic's existence, which checkSendOn sees.
func (b *Broker) sendCannotBlock(h *sendHeader) bool {
	return b.role.acceptsWrites() && h.sysFlag&message.SysFlagTransactionMask != message.SysFlagTransactionPrepared &&
		!strings.HasPrefix(h.topic, RetryGroupPrefix)
}

// send is processSend; with mayBlock false it declines (done false) before doing anything when the send may
// block (sendCannotBlock, or a topic that checkSendOn would have to create).
func (b *Broker) send(conn *remoting.Conn, req *remoting.Command, mayBlock bool) (_ *remoting.Command, done bool) {
	j := &sendJob{b: b, conn: conn, req: req}
	h := &j.h
	if err := h.parse(req); err != nil {
		return errResponse(remoting.InvalidParameter, "bad send header: %v", err), true
	}
	if !mayBlock && !b.sendCannotBlock(h) {
		return nil, false
	}
	qid, resp := b.checkSendOn(h, conn, mayBlock)
	if resp == wouldCreate {
		return nil, false
	}
	if resp != nil {
		return resp, true
	}
	if h.sysFlag&message.SysFlagTransactionPrepared != 0 && b.liveConfig().RejectTransactionMessage {
		return errResponse(remoting.NoPermission, "the broker[%s] sending transaction message is forbidden (rejectTransactionMessage=true)", b.addr), true
	}
	bornHost := addrPortOf(b.role.clientAddr(conn, req))
	j.qid, j.start = qid, time.Now()
	if remoting.RequestCode(req.Code) == remoting.SendBatchMessage {
		msgs, err := decodeBatch(req.Body, h, qid, bornHost)
		if err != nil {
			return errResponse(remoting.MessageIllegal, "bad batch body from %s: %v", conn.RemoteAddr(), err), true
		}
		for _, m := range msgs {
			m.Properties = b.addBrokerProperties(m.Properties)
		}
		b.putter.PutMessagesAsync(msgs, j.done)
		return nil, true
	}
	m := &j.m
	*m = message.Message{
		Topic:          h.topic,
		QueueID:        qid,
		Flag:           h.flag,
		Body:           req.Body,
		Properties:     b.addBrokerProperties(h.properties),
		SysFlag:        h.sysFlag,
		BornTimestamp:  h.bornTimestamp,
		BornHost:       bornHost,
		ReconsumeTimes: h.reconsumeTimes,
	}
	if id, ok := message.FindProperty(m.Properties, message.PropertyReplyToClient); ok && id != "" && req.Flag&remoting.FlagForwarded == 0 {
		// (a forwarded request came on another broker's connection, not the requester's)
		b.clients.rememberClient(id, conn) // a request: its reply may come before the requester's heartbeat
	}
	if resp := b.redirectRetry(h, m, req.Version); resp != nil {
		return resp, true
	}
	if h.sysFlag&message.SysFlagTransactionMask == message.SysFlagTransactionPrepared {
		if err := b.toHalf(m); err != nil {
			return errResponse(remoting.SystemError, "park the half message: %v", err), true
		}
	}
	b.putAsync(m, j.stored)
	return nil, true
}

// stored is the store's callback for a single message: the timer's statistics when prepare parked the
// message in the timer (put.go), then the answer.
func (j *sendJob) stored(res store.PutResult, err error) {
	if err == nil {
		j.b.countTimerPut(j.h.topic, &j.m)
	}
	j.done(res, err)
}

// countTimerPut counts a message of topic that prepare parked in the timer (put.go) in the timer statistics.
func (b *Broker) countTimerPut(topic string, m *message.Message) {
	if m.Topic == TopicTimer {
		due, err := strconv.ParseInt(timerOut(m.Properties), 10, 64)
		b.stats.RecordTimerIn(topic, (due-m.BornTimestamp)/1000, err == nil)
	}
}

// done answers the send (or hands a put the store refused to the master: raft_forward.go).
func (j *sendJob) done(res store.PutResult, err error) {
	b := j.b
	if err != nil && b.role.forwardRefusedPut(j.conn, j.req, err) {
		return
	}
	if err == nil {
		b.admin.putTimes.recordPut(time.Since(j.start))
	}
	resp := b.sendResponse(&j.h, j.qid, res, err)
	if err == nil {
		if rh := b.recallHandleOf(&j.m); rh != "" {
			resp.SetExt("recallHandle", rh) // a timed message (recall.go)
		}
	}
	if err := j.conn.Reply(j.req, resp); err != nil {
		b.log.Debug("send reply", "client", j.conn.RemoteAddr(), "err", err)
	}
}

// addBrokerProperties adds what RocketMQ's broker adds to every message: CLUSTER (request-reply uses it)
// and a UNIQ_KEY when the producer set none (batch members from the Go client have none).
func (b *Broker) addBrokerProperties(props string) string {
	var sb strings.Builder
	sb.Grow(len(props) + 64)
	sb.WriteString(props)
	if !message.HasProperty(props, message.PropertyCluster) {
		appendProperty(&sb, message.PropertyCluster, b.cfg.BrokerClusterName)
	}
	if !message.HasProperty(props, message.PropertyUniqKey) {
		appendProperty(&sb, message.PropertyUniqKey, b.uniqIDs.Next())
	}
	return sb.String()
}

func appendProperty(sb *strings.Builder, k, v string) {
	s := sb.String()
	if len(s) > 0 && s[len(s)-1] != message.PropertySeparator {
		sb.WriteByte(message.PropertySeparator)
	}
	sb.WriteString(k)
	sb.WriteByte(message.NameValueSeparator)
	sb.WriteString(v)
	sb.WriteByte(message.PropertySeparator)
}

// sendResponse turns a store result into SEND_MESSAGE's answer.
func (b *Broker) sendResponse(h *sendHeader, qid int32, res store.PutResult, err error) *remoting.Command {
	if err != nil {
		return putErrorResponse(err, h.topic)
	}
	code := remoting.Success
	remark := ""
	switch res.Status {
	case store.PutFlushDiskTimeout:
		code, remark = remoting.FlushDiskTimeout, "the message is stored but the disk flush did not finish within syncFlushTimeout"
	case store.PutFlushSlaveTimeout:
		code, remark = remoting.FlushSlaveTimeout, "the message is stored but no slave acknowledged it in time"
	case store.PutSlaveNotAvailable:
		code, remark = remoting.SlaveNotAvailable, "the message is stored but no slave is available to replicate it"
	}
	resp := remoting.NewResponse(code, remark)
	resp.SetExt("msgId", res.MsgID)
	resp.SetExt("queueId", itoa(int64(qid)))
	resp.SetExt("queueOffset", itoa(res.QueueOffset))
	resp.SetExt("MSG_REGION", "DefaultRegion")
	resp.SetExt("TRACE_ON", "true")
	b.countSend(h, res)
	return resp
}

// countSend counts a stored send in the put statistics.
func (b *Broker) countSend(h *sendHeader, res store.PutResult) {
	typ := stats.TypeOf(h.properties)
	b.stats.RecordPut(h.topic, typ, res.Count, res.WroteBytes)
	if typ == stats.Transaction {
		b.stats.RecordHalf(h.topic)
	}
}

// putErrorResponse maps a store error to the response code RocketMQ uses for it.
func putErrorResponse(err error, topic string) *remoting.Command {
	if resp := raftPutErrorResponse(err, topic); resp != nil {
		return resp
	}
	var pe *putError
	switch {
	case errors.As(err, &pe):
		return errResponse(remoting.MessageIllegal, "message to topic %s refused: %v", topic, err)
	case errors.Is(err, store.ErrMessageTooLarge), errors.Is(err, store.ErrPropertiesTooLarge), errors.Is(err, store.ErrTopicTooLong):
		return errResponse(remoting.MessageIllegal, "message to topic %s refused: %v", topic, err)
	case errors.Is(err, store.ErrDiskFull):
		return errResponse(remoting.ServiceNotAvailable, "the disk is full, messages are refused: %v", err)
	case errors.Is(err, store.ErrNotWritable):
		return errResponse(remoting.ServiceNotAvailable, "the message store is not writable: %v", err)
	case errors.Is(err, store.ErrServiceNotAvailable):
		return errResponse(remoting.ServiceNotAvailable, "the message store is not available: %v", err)
	default:
		return errResponse(remoting.SystemError, "storing the message failed: %v", err)
	}
}

// decodeBatch splits a SEND_BATCH_MESSAGE body into messages that share topic and queue.
// Each record: totalSize int32 | magic int32 | bodyCRC int32 | flag int32 | bodyLen int32 | body | propsLen int16 | props.
func decodeBatch(body []byte, h *sendHeader, qid int32, bornHost netip.AddrPort) ([]*message.Message, error) {
	var out []*message.Message
	for off := 0; off < len(body); {
		if len(body)-off < 22 {
			return nil, fmt.Errorf("message %d: %d bytes left, a record needs at least 22", len(out), len(body)-off)
		}
		rec := body[off:]
		total := int(be32(rec[0:]))
		if total < 22 || total > len(rec) {
			return nil, fmt.Errorf("message %d: total size %d outside 22..%d", len(out), total, len(rec))
		}
		flag := int32(be32(rec[12:]))
		bodyLen := int(be32(rec[16:]))
		if bodyLen < 0 || 20+bodyLen+2 > total {
			return nil, fmt.Errorf("message %d: body length %d does not fit its record of %d bytes", len(out), bodyLen, total)
		}
		propsLen := int(uint16(rec[20+bodyLen])<<8 | uint16(rec[21+bodyLen]))
		if 22+bodyLen+propsLen != total {
			return nil, fmt.Errorf("message %d: record of %d bytes does not match body %d + properties %d", len(out), total, bodyLen, propsLen)
		}
		out = append(out, &message.Message{
			Topic:          h.topic,
			QueueID:        qid,
			Flag:           flag,
			Body:           rec[20 : 20+bodyLen],
			Properties:     string(rec[22+bodyLen : total]),
			SysFlag:        h.sysFlag,
			BornTimestamp:  h.bornTimestamp,
			BornHost:       bornHost,
			ReconsumeTimes: h.reconsumeTimes,
		})
		off += total
	}
	if len(out) == 0 {
		return nil, errors.New("the batch holds no message")
	}
	return out, nil
}

func be32(b []byte) uint32 {
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}

// addrPortOf parses "ip:port" (a connection's remote address); the zero value when it does not parse.
func addrPortOf(s string) netip.AddrPort {
	ap, err := netip.ParseAddrPort(s)
	if err != nil {
		return netip.AddrPort{}
	}
	if ap.Addr().Is4In6() {
		return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
	}
	return ap
}

// timerOut is the TIMER_OUT_MS property prepare put on a message it parked in the timer.
func timerOut(props string) string {
	v, _ := message.FindProperty(props, message.PropertyTimerOutMs)
	return v
}
