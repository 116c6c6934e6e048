package namesrv

import (
	"errors"
	"hash/crc32"
	"hash/maphash"
	"runtime"
	"slices"
	"strings"

	"github.com/rocketraft/rocketraft/protocol"
)

// Registration bodies. A broker registers its whole topic table every 30 s, and in a fleet almost every
// one of those bodies is the one it sent 30 s earlier: same data version, same topics. Decoding 1,000
// topic configs of JSON costs milliseconds; 300 brokers registering at once then hold the name server's
// core for a second or more, and route queries wait behind them. So each broker address keeps, with its
// liveness, what its bodies of its current data version said (regTable: the version, the filter servers,
// and the queue counts of its topics when a master sent it), keyed by the body's length and a 64-bit hash
// of its bytes (hash/maphash). A body seen before is not decoded again: its table is taken as it is, and
// applied as a decoded one would be (a same-version table adds only the topics the broker name lacks). A
// split registration's chunks are bodies of their own, each remembered. The tables of an address go with
// it, and with a new data version the old ones go.
//
// Bodies that must be decoded are decoded one or two at a time (decodeSlots): they are CPU-bound, and a
// burst of 300 first registrations (a restarted name server) must not take every core from the route
// queries.

// bodyKey identifies a registration body: its length, a hash of its bytes and its encoding (a table that
// came decoded has a negative size: contentKey).
type bodyKey struct {
	size       int
	sum        uint64
	compressed bool
}

// topicRec is one topic of a registered table, as much as the routes need of it.
type topicRec struct {
	name                       string
	read, write, perm, sysFlag int32
}

func (r topicRec) queueData(brokerName string) protocol.QueueData {
	return protocol.QueueData{BrokerName: brokerName, ReadQueueNums: r.read, WriteQueueNums: r.write, Perm: r.perm,
		TopicSysFlag: r.sysFlag}
}

// regTable is what a registration body says, in the form RegisterBroker applies. Never modified once built.
type regTable struct {
	key     bodyKey
	dv      protocol.DataVersion
	filters []string   // the filter server list; nil when the body had none
	topics  []topicRec // the topic table, when kept
	kept    bool       // topics holds the table (a master registered it); else it was dropped
	crc     int64      // the bodyCrc32 the body was checked against (0: it came without one)
}

// maxTablesPerAddr bounds the tables an address keeps: a split registration of a large table has a chunk
// per splitRegistrationSize (800) topics.
const maxTablesPerAddr = 64

// tableOf turns a decoded body into a table; keep keeps its topics.
func tableOf(body *protocol.RegisterBrokerBody, keep bool) *regTable {
	t := &regTable{dv: body.TopicConfigSerializeWrapper.DataVersion, filters: body.FilterServerList, kept: keep}
	if !keep {
		return t
	}
	t.topics = make([]topicRec, 0, len(body.TopicConfigSerializeWrapper.TopicConfigTable))
	for name, p := range body.TopicConfigSerializeWrapper.TopicConfigTable {
		var tc protocol.TopicConfig // a null entry counts as an empty topic config
		if p != nil {
			tc = *p
		}
		if tc.TopicName == "" {
			tc.TopicName = name
		}
		t.topics = append(t.topics, topicRec{name: tc.TopicName, read: tc.ReadQueueNums, write: tc.WriteQueueNums,
			perm: tc.Perm, sysFlag: tc.TopicSysFlag})
	}
	slices.SortFunc(t.topics, func(a, b topicRec) int { return strings.Compare(a.name, b.name) })
	return t
}

// regDecoder decodes registration bodies, or finds them decoded already.
type regDecoder struct {
	seed  maphash.Seed
	slots chan struct{} // decodeSlots: decodes in progress
}

func newRegDecoder() regDecoder {
	return regDecoder{seed: maphash.MakeSeed(), slots: make(chan struct{}, max(1, runtime.GOMAXPROCS(0)/2))}
}

// errBodyCRC is a registration body whose crc32 is not the one its header gives (bodyCrc32).
var errBodyCRC = errors.New(remarkCRCMismatch)

// registrationTable returns the table of a REGISTER_BROKER body from brokerAddr: the one its address
// registered before when the body is the same, else the body decoded. master says whether the
// registration has brokerId 0 (only then is a table's topics used). crc is the header's bodyCrc32 (0: none
// given); a body not seen before whose crc32 differs is errBodyCRC. A body seen before with the same crc is
// not checked again: its bytes are those that passed the check when it was decoded (the same length and
// 64-bit hash, under a seed drawn at start), and checking 300 bodies of 200 KB costs a registration burst
// about 20 ms of the core (crc32 was most of the registration handlers' CPU in a trace of one).
func (m *RouteInfoManager) registrationTable(brokerAddr string, raw []byte, compressed, master bool, crc int64) (*regTable, error) {
	key := bodyKey{size: len(raw), sum: maphash.Bytes(m.bodies.seed, raw), compressed: compressed}
	m.mu.RLock()
	if li := m.live[brokerAddr]; li != nil {
		for _, t := range li.tables {
			if t.key == key && (t.kept || !master) && (crc == 0 || crc == t.crc) {
				m.mu.RUnlock()
				m.tableHits.Add(1)
				return t, nil
			}
		}
	}
	m.mu.RUnlock()
	if crc != 0 && int64(crc32.ChecksumIEEE(raw)&0x7FFFFFFF) != crc {
		return nil, errBodyCRC
	}
	m.bodies.slots <- struct{}{}
	body, err := protocol.DecodeRegisterBrokerBody(raw, compressed)
	<-m.bodies.slots
	if err != nil {
		return nil, err
	}
	t := tableOf(&body, master)
	t.key = key
	t.crc = crc
	return t, nil
}

// rememberTableLocked keeps t among li's tables: those of t's data version, t included. Lock should be
// held for writing.
func rememberTableLocked(li *brokerLiveInfo, t *regTable) {
	if t.key.size < 0 { // not from a body (RegisterBroker called with a decoded one): nothing to look up
		return
	}
	kept := li.tables[:0]
	for _, o := range li.tables {
		if o.dv == t.dv && o.key != t.key {
			kept = append(kept, o)
		}
	}
	clear(li.tables[len(kept):])
	li.tables = append(kept, t)
	if len(li.tables) > maxTablesPerAddr {
		li.tables = li.tables[len(li.tables)-maxTablesPerAddr:]
	}
}
