package proxy

import (
	"crypto/md5"
	"encoding/hex"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/rocketraft/rocketraft/message"
	"github.com/rocketraft/rocketraft/proxy/v2pb"
)

// The properties of the stored message that carry a v2 message's system properties, as RocketMQ 5's proxy
// writes them (MessageConst names).
const (
	propBornHost   = "__BORNHOST"          // the v5 client's born_host (the record's born host is the proxy)
	propTraceCtx   = "TRACE_CONTEXT"       // trace_context
	propProxyTxGrp = "rmq_proxy_tx_group_" // see txGroup
)

// txGroup is the producer group of a topic's transactional messages sent through the proxy: v5 producers
// have no group, so the check-back of a half message reaches the proxy by this name, and the proxy asks a
// producer that publishes the topic.
func txGroup(topic string) string { return propProxyTxGrp + topic }

// systemKeys are the property names a user property may not take: the broker reads them.
var systemKeys = map[string]bool{
	message.PropertyKeys: true, message.PropertyTags: true, message.PropertyWaitStoreMsgOK: true,
	message.PropertyDelayLevel: true, message.PropertyRetryTopic: true, message.PropertyRealTopic: true,
	message.PropertyRealQueueID: true, message.PropertyTransactionPrepared: true, message.PropertyProducerGroup: true,
	message.PropertyMinOffset: true, message.PropertyMaxOffset: true, message.PropertyUniqKey: true,
	message.PropertyReconsumeTime: true, message.PropertyMaxReconsumeTimes: true,
	message.PropertyCheckImmunityTimeInSeconds: true, message.PropertyTransactionPreparedQOffset: true,
	message.PropertyTransactionID: true, message.PropertyTransactionCheckTimes: true, message.PropertyShardingKey: true,
	message.PropertyTimerDelaySec: true, message.PropertyTimerDeliverMs: true, "TIMER_DELAY_MS": true,
	"__STARTDELIVERTIME": true, propBornHost: true, propTraceCtx: true,
}

// outgoing is a v2 message made ready for SEND_MESSAGE_V2.
type outgoing struct {
	topic      string
	id         string // message_id: the UNIQ_KEY
	group      string // message_group (FIFO): picks the queue
	typ        v2pb.MessageType
	properties string
	sysFlag    int32
	born       time.Time
	body       []byte
}

// toOutgoing checks m and converts it: user properties as they are, tag, keys, message id, message group,
// delivery time and the transaction flag into the properties the broker reads. maxBody bounds the body.
func toOutgoing(m *v2pb.Message, maxBody int) (*outgoing, error) {
	sp := m.GetSystemProperties()
	o := &outgoing{topic: m.GetTopic().GetName(), id: sp.GetMessageId(), typ: sp.GetMessageType(), body: m.GetBody()}
	if err := checkTopic(o.topic); err != nil {
		return nil, err
	}
	if o.id == "" {
		return nil, fail(v2pb.Code_ILLEGAL_MESSAGE_ID, "message_id is missing")
	}
	if len(o.body) == 0 {
		return nil, fail(v2pb.Code_MESSAGE_BODY_EMPTY, "message %s has an empty body", o.id)
	}
	if maxBody > 0 && len(o.body) > maxBody {
		return nil, fail(v2pb.Code_MESSAGE_BODY_TOO_LARGE, "message %s: body of %d bytes, more than the %d allowed", o.id, len(o.body), maxBody)
	}
	var props propsBuilder
	props.Grow(len(o.id) + 64)
	for k, v := range m.GetUserProperties() {
		if systemKeys[k] {
			return nil, fail(v2pb.Code_ILLEGAL_MESSAGE_PROPERTY_KEY, "message %s: user property %s is a system property", o.id, k)
		}
		props.set(k, v)
	}
	props.set(message.PropertyUniqKey, o.id)
	if sp.Tag != nil {
		tag := sp.GetTag()
		if tag == "" || strings.ContainsAny(tag, "|\x00") || strings.TrimSpace(tag) != tag {
			return nil, fail(v2pb.Code_ILLEGAL_MESSAGE_TAG, "message %s: tag %q is empty or holds '|' or blanks", o.id, tag)
		}
		props.set(message.PropertyTags, tag)
	}
	if keys := sp.GetKeys(); len(keys) > 0 {
		for _, k := range keys {
			if strings.TrimSpace(k) == "" {
				return nil, fail(v2pb.Code_ILLEGAL_MESSAGE_KEY, "message %s: a key is blank", o.id)
			}
		}
		props.set(message.PropertyKeys, strings.Join(keys, " "))
	}
	if h := sp.GetBornHost(); h != "" {
		props.set(propBornHost, h)
	}
	if tc := sp.GetTraceContext(); tc != "" {
		props.set(propTraceCtx, tc)
	}
	o.born = time.Now()
	if bt := sp.GetBornTimestamp(); bt != nil {
		o.born = bt.AsTime()
	}
	if sp.MessageGroup != nil {
		if o.group = sp.GetMessageGroup(); o.group == "" {
			return nil, fail(v2pb.Code_ILLEGAL_MESSAGE_GROUP, "message %s: message_group is empty", o.id)
		}
		props.set(message.PropertyShardingKey, o.group)
	}
	if dt := sp.GetDeliveryTimestamp(); dt != nil {
		if o.group != "" {
			return nil, fail(v2pb.Code_MESSAGE_PROPERTY_CONFLICT_WITH_TYPE, "message %s: a FIFO message cannot have a delivery time", o.id)
		}
		props.set(message.PropertyTimerDeliverMs, strconv.FormatInt(dt.AsTime().UnixMilli(), 10))
	}
	if o.typ == v2pb.MessageType_TRANSACTION {
		if o.group != "" || sp.GetDeliveryTimestamp() != nil {
			return nil, fail(v2pb.Code_MESSAGE_PROPERTY_CONFLICT_WITH_TYPE, "message %s: a transactional message cannot have a group or a delivery time", o.id)
		}
		props.set(message.PropertyTransactionPrepared, "true")
		props.set(message.PropertyProducerGroup, txGroup(o.topic))
		if d := sp.GetOrphanedTransactionRecoveryDuration(); d != nil && d.AsDuration() >= time.Second {
			props.set(message.PropertyCheckImmunityTimeInSeconds, strconv.FormatInt(int64(d.AsDuration()/time.Second), 10))
		}
		o.sysFlag = message.SysFlagTransactionPrepared
	}
	o.properties = props.String()
	return o, nil
}

// propsBuilder encodes properties as message.EncodeProperties does, in the order set (no map, no sort).
type propsBuilder struct{ strings.Builder }

func (p *propsBuilder) set(k, v string) {
	p.WriteString(k)
	p.WriteByte(message.NameValueSeparator)
	p.WriteString(v)
	p.WriteByte(message.PropertySeparator)
}

// fromMessageExt is a stored message as v2 hands it to a consumer (or to a producer's transaction check):
// the user properties apart from the ones the broker reads, the system properties from those, an MD5 body
// digest (the clients' CRC32 texts differ between languages; MD5 is hex everywhere).
func fromMessageExt(m *message.MessageExt, topic string) *v2pb.Message {
	sp := &v2pb.SystemProperties{
		BodyEncoding:   v2pb.Encoding_IDENTITY,
		MessageType:    v2pb.MessageType_NORMAL,
		BornTimestamp:  timestamppb.New(time.UnixMilli(m.BornTimestamp)),
		StoreTimestamp: timestamppb.New(time.UnixMilli(m.StoreTimestamp)),
		StoreHost:      m.StoreHost.String(),
		QueueId:        m.QueueID,
		QueueOffset:    &m.QueueOffset,
	}
	// One pass over the stored properties (no map of them): the system ones into sp, the others the user's.
	var user map[string]string
	var bornHost string
	var delay, tx bool
	for props := m.Properties; len(props) > 0; {
		item := props
		if i := strings.IndexByte(props, message.PropertySeparator); i >= 0 {
			item, props = props[:i], props[i+1:]
		} else {
			props = ""
		}
		k, v, ok := strings.Cut(item, string(message.NameValueSeparator))
		if !ok || k == "" || strings.IndexByte(v, message.NameValueSeparator) >= 0 {
			continue // as message.ParseProperties
		}
		switch k {
		case message.PropertyUniqKey:
			sp.MessageId = v
		case message.PropertyTags:
			if v != "" {
				sp.Tag = &v
			}
		case message.PropertyKeys:
			sp.Keys = strings.Fields(v)
		case message.PropertyShardingKey:
			if v != "" {
				sp.MessageGroup = &v
			}
		case message.PropertyTimerDeliverMs:
			if ms, err := strconv.ParseInt(v, 10, 64); err == nil && v != "" {
				sp.DeliveryTimestamp = timestamppb.New(time.UnixMilli(ms))
				delay = true
			}
		case message.PropertyTransactionPrepared:
			tx = v == "true"
		case message.PropertyCheckImmunityTimeInSeconds:
			if n, err := strconv.Atoi(v); err == nil {
				sp.OrphanedTransactionRecoveryDuration = durationpb.New(time.Duration(n) * time.Second)
			}
		case propTraceCtx:
			if v != "" {
				sp.TraceContext = &v
			}
		case propBornHost:
			bornHost = v
		default:
			if !systemKeys[k] && !isInternal(k) {
				if user == nil {
					user = make(map[string]string, 4)
				}
				user[k] = v
			}
		}
	}
	if sp.MessageId == "" {
		sp.MessageId = message.CreateOffsetMsgID(m.StoreHost, m.PhysicalOffset)
	}
	switch {
	case tx:
		sp.MessageType = v2pb.MessageType_TRANSACTION
	case delay:
		sp.MessageType = v2pb.MessageType_DELAY
	case sp.MessageGroup != nil:
		sp.MessageType = v2pb.MessageType_FIFO
	}
	sp.BornHost = hostOf(bornHost, m.BornHost)
	sum := md5.Sum(m.Body)
	sp.BodyDigest = &v2pb.Digest{Type: v2pb.DigestType_MD5, Checksum: strings.ToUpper(hex.EncodeToString(sum[:]))}
	attempt := m.ReconsumeTimes + 1
	sp.DeliveryAttempt = &attempt
	if user == nil {
		user = map[string]string{}
	}
	return &v2pb.Message{Topic: &v2pb.Resource{Name: topic}, UserProperties: user, SystemProperties: sp, Body: m.Body}
}

// isInternal tells the properties the broker adds for itself (delivery bookkeeping, ids) from user ones.
func isInternal(k string) bool {
	switch k {
	case message.PropertyRealTopic, message.PropertyRealQueueID, message.PropertyOriginMessageID,
		message.PropertyConsumeStartTime, message.PropertyDLQOriginTopic, message.PropertyDLQOriginMessageID,
		message.PropertyTransferFlag, message.PropertyCorrectionFlag, message.PropertyMsgRegion, message.PropertyTraceSwitch,
		message.PropertyInnerNum, message.PropertyInnerBase, message.PropertyExtendUniqInfo, message.PropertyCluster:
		return true
	}
	return strings.HasPrefix(k, "__") || strings.HasPrefix(k, "TIMER_") || strings.HasPrefix(k, "POP_")
}

// hostOf is the v5 client's born host when it sent one, else the record's.
func hostOf(prop string, ap netip.AddrPort) string {
	if prop != "" {
		return prop
	}
	return ap.Addr().String()
}
