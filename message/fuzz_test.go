package message

import (
	"bytes"
	"net/netip"
	"testing"
)

// fuzzSeedRecords are stored records of a few shapes (v4 and v6 hosts, empty and long bodies, properties).
func fuzzSeedRecords(f *testing.F) {
	v4 := netip.MustParseAddrPort("10.1.2.3:1234")
	v6 := netip.MustParseAddrPort("[2001:db8::1]:10911")
	for _, m := range []*MessageExt{
		{Message: Message{Topic: "T", Body: []byte("hello"), Properties: "KEYS\x01k1\x02", BornHost: v4}, StoreHost: v4,
			QueueOffset: 3, PhysicalOffset: 4096, StoreTimestamp: 1700000000000},
		{Message: Message{Topic: "TopicV6", Body: nil, BornHost: v6, ReconsumeTimes: 2}, StoreHost: v6},
		{Message: Message{Topic: "Big", Body: bytes.Repeat([]byte{0xAB}, 300), Properties: "TAGS\x01a\x02UNIQ_KEY\x01x\x02", BornHost: v4,
			PreparedTransactionOffset: 77}, StoreHost: v6},
	} {
		rec, err := EncodeRecord(nil, m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(rec)
	}
	f.Add([]byte{})
	f.Add(make([]byte, 8))
}

// FuzzDecodeMessage: the stored-record decoder never panics on bytes from a file or a peer, and a record it
// accepts encodes back to a record that decodes to the same
func FuzzDecodeMessage(f *testing.F) {
	fuzzSeedRecords(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := DecodeMessage(b, true)
		if err != nil {
			return
		}
		if int(m.StoreSize) > len(b) || len(m.Body) > int(m.StoreSize) {
			t.Fatalf("decoded size %d body %d from %d bytes", m.StoreSize, len(m.Body), len(b))
		}
		if _, err := CheckRecords(b[:m.StoreSize], m.PhysicalOffset, false); err != nil {
			t.Fatalf("DecodeMessage accepted a record CheckRecords refuses: %v", err)
		}
		rec, err := EncodeRecord(nil, m)
		if err != nil {
			return // over a limit the decoder does not enforce (topic or properties length): refused, not mangled
		}
		again, err := DecodeMessage(rec, true)
		if err != nil {
			t.Fatalf("re-encoded record does not decode: %v", err)
		}
		m.BodyCRC, again.BodyCRC = 0, 0 // recomputed from the body by EncodeRecord
		m.StoreSize, again.StoreSize = 0, 0
		m.SysFlag &^= SysFlagBornHostV6 | SysFlagStoreHostV6
		again.SysFlag &^= SysFlagBornHostV6 | SysFlagStoreHostV6
		if m.Topic != again.Topic || !bytes.Equal(m.Body, again.Body) || m.Properties != again.Properties ||
			m.QueueOffset != again.QueueOffset || m.PhysicalOffset != again.PhysicalOffset || m.SysFlag != again.SysFlag ||
			m.BornHost != again.BornHost || m.StoreHost != again.StoreHost || m.StoreTimestamp != again.StoreTimestamp ||
			m.ReconsumeTimes != again.ReconsumeTimes || m.PreparedTransactionOffset != again.PreparedTransactionOffset {
			t.Fatalf("round trip changed the message:\n%+v\n%+v", m, again)
		}
	})
}

// FuzzCheckRecords: the framing check of a run of records (raft entries, HA appends, recovery) never panics
// and counts no more records than bytes allow.
func FuzzCheckRecords(f *testing.F) {
	fuzzSeedRecords(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		n, err := CheckRecords(b, 0, true)
		if err == nil && n*RecordFixedLength > len(b) {
			t.Fatalf("%d records in %d bytes", n, len(b))
		}
		cp := append([]byte(nil), b...)
		if _, err := PatchRecords(cp, 1<<20); err != nil {
			return
		}
		if _, err := CheckRecords(cp, 1<<20, false); err != nil {
			t.Fatalf("records PatchRecords accepted do not check at their new position: %v", err)
		}
	})
}
