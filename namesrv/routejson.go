package namesrv

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"
)

// A route answer written straight from the tables. Building one by PickupTopicRouteData and
// encoding/json cost a rebuild about 7 KB in 20 objects (a clone of every broker's address map, the
// route's slices and filter table, the encoder's reflection and map-key sorting), and a master change
// or a broker leaving rebuilds a thousand routes at once: in a fleet's churn those rebuilds were 40 %
// of what the name server allocated, and the collections they brought cost route queries tens of
// milliseconds. appendRouteLocked writes the same bytes under the read lock into one buffer.
//
// The bytes are encoding/json's for protocol.TopicRouteData without orderTopicConf: fields in their
// declared order, map keys sorted by their text (broker ids as decimal strings), a nil address map as
// null, strings escaped as encoding/json escapes them (a string with anything but printable ASCII other
// than <, >, &, " and \ is handed to encoding/json). TestRouteCacheMatchesEncoder and
// TestAppendJSONString compare them with encoding/json's.

// appendRouteLocked appends e's route answer to dst and records in a what it depends on; ok is false
// (and dst returned as it was) when the topic has no route. Lock should be held for reading.
func (m *RouteInfoManager) appendRouteLocked(dst []byte, e *topicEntry, a *routeAnswer) (out []byte, ok bool,
	until time.Time) {
	a.topicVer = e.ver.Load()
	a.gen = m.gen.Load()
	start := len(dst)
	dst = append(dst, `{"queueDatas":[`...)
	for i, qd := range e.queues {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"brokerName":`...)
		dst = appendJSONString(dst, qd.BrokerName)
		dst = append(dst, `,"readQueueNums":`...)
		dst = strconv.AppendInt(dst, int64(qd.ReadQueueNums), 10)
		dst = append(dst, `,"writeQueueNums":`...)
		dst = strconv.AppendInt(dst, int64(qd.WriteQueueNums), 10)
		dst = append(dst, `,"perm":`...)
		dst = strconv.AppendInt(dst, int64(qd.Perm), 10)
		dst = append(dst, `,"topicSysFlag":`...)
		dst = strconv.AppendInt(dst, int64(qd.TopicSysFlag), 10)
		dst = append(dst, '}')
	}
	dst = append(dst, `],"brokerDatas":[`...)
	now := m.now()
	a.brokers = make([]*brokerEntry, 0, len(e.queues))
	a.vers = make([]uint64, 0, len(e.queues))
	listed := 0
	var filterAddrs []string // addresses with a filter server list, of the brokers listed
	for _, qd := range e.queues {
		bd := m.brokerAddr[qd.BrokerName]
		if bd == nil {
			continue
		}
		a.brokers = append(a.brokers, bd)
		a.vers = append(a.vers, bd.ver.Load())
		addrs := bd.BrokerAddrs
		if g := m.raft[bd.BrokerName]; g != nil && addrs != nil { // a stand-in master shows in a copy
			clone := cloneBrokerData(&bd.BrokerData)
			if end := m.raftStandInLocked(&clone, now); !end.IsZero() {
				addrs = clone.BrokerAddrs
				if until.IsZero() || end.Before(until) {
					until = end
				}
			}
		}
		if listed > 0 {
			dst = append(dst, ',')
		}
		listed++
		dst = append(dst, `{"cluster":`...)
		dst = appendJSONString(dst, bd.Cluster)
		dst = append(dst, `,"brokerName":`...)
		dst = appendJSONString(dst, bd.BrokerName)
		dst = append(dst, `,"brokerAddrs":`...)
		dst = appendBrokerAddrs(dst, addrs)
		dst = append(dst, '}')
		for _, addr := range bd.BrokerAddrs {
			if m.filters[addr] != nil {
				filterAddrs = append(filterAddrs, addr)
			}
		}
	}
	if listed == 0 {
		return dst[:start], false, until
	}
	dst = append(dst, `],"filterServerTable":{`...)
	slices.Sort(filterAddrs)
	filterAddrs = slices.Compact(filterAddrs)
	for i, addr := range filterAddrs {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendJSONString(dst, addr)
		dst = append(dst, ":["...)
		for j, f := range m.filters[addr] {
			if j > 0 {
				dst = append(dst, ',')
			}
			dst = appendJSONString(dst, f)
		}
		dst = append(dst, ']')
	}
	return append(dst, "}}"...), true, until
}

// appendBrokerAddrs appends a broker id -> address map as encoding/json does: keys sorted as text.
func appendBrokerAddrs(dst []byte, addrs map[int64]string) []byte {
	if addrs == nil {
		return append(dst, "null"...)
	}
	var small [8]int64
	ids := small[:0]
	for id := range addrs {
		ids = append(ids, id)
	}
	var ka, kb [20]byte
	slices.SortFunc(ids, func(x, y int64) int {
		return bytes.Compare(strconv.AppendInt(ka[:0], x, 10), strconv.AppendInt(kb[:0], y, 10))
	})
	dst = append(dst, '{')
	for i, id := range ids {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, '"')
		dst = strconv.AppendInt(dst, id, 10)
		dst = append(dst, `":`...)
		dst = appendJSONString(dst, addrs[id])
	}
	return append(dst, '}')
}

// appendJSONString appends s as encoding/json encodes a string: printable ASCII other than the characters
// it escapes is copied, and anything else goes through encoding/json. (remoting's header encoder has one of
// the same name that writes the Go client's header bytes: no HTML escapes, invalid UTF-8 as raw U+FFFD; a
// route body must be encoding/json's, which the name server answered before the cache.)
func appendJSONString(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			b, _ := json.Marshal(s) // cannot fail for a string
			return append(dst, b...)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}

// routeAnswerSizeLocked guesses the bytes of e's answer (the last one's, else about 250 a broker name),
// so that the buffer is allocated once. Lock should be held for reading.
func routeAnswerSizeLocked(e *topicEntry) int {
	if a := e.cache.cur.Load(); a != nil && len(a.body) > 0 {
		return len(a.body) + 64
	}
	return 64 + 256*len(e.queues)
}
