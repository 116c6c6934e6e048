package broker

import (
	"net/netip"
	"testing"

	"github.com/rocketraft/rocketraft/protocol"
)

// FuzzDecodeBatch: a SEND_BATCH_MESSAGE body comes from any client. The decoder never panics; what it
// accepts covers the body exactly, each message inside its record.
func FuzzDecodeBatch(f *testing.F) {
	rec := func(body, props string) []byte {
		total := 22 + len(body) + len(props)
		b := make([]byte, 0, total)
		b = append(b, byte(total>>24), byte(total>>16), byte(total>>8), byte(total))
		b = append(b, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0) // magic, body CRC, flag
		n := len(body)
		b = append(b, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
		b = append(b, body...)
		b = append(b, byte(len(props)>>8), byte(len(props)))
		return append(b, props...)
	}
	f.Add(append(rec("a", "KEYS\x01k\x02"), rec("bb", "")...))
	f.Add([]byte{})
	h := &sendHeader{topic: "T"}
	host := netip.MustParseAddrPort("127.0.0.1:1")
	f.Fuzz(func(t *testing.T, b []byte) {
		msgs, err := decodeBatch(b, h, 0, host)
		if err != nil {
			return
		}
		n := 0
		for _, m := range msgs {
			n += 22 + len(m.Body) + len(m.Properties)
		}
		if n != len(b) {
			t.Fatalf("%d messages cover %d of %d bytes", len(msgs), n, len(b))
		}
	})
}

// FuzzFastJSONBodies: the JSON bodies peers send (heartbeats from clients; the master's topic and offset
// tables in fastjson's dialect with bare integer keys, read by a slave) never panic their decoders.
func FuzzFastJSONBodies(f *testing.F) {
	f.Add([]byte(`{"clientID":"c","producerDataSet":[{"groupName":"P"}],"consumerDataSet":[]}`))
	f.Add([]byte(`{"offsetTable":{"T@G":{0:5,1:7}}}`))
	f.Add([]byte(`{"offsetTable":{1:{"a":2}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = decodeHeartbeat(b)
		var offsets struct {
			OffsetTable map[string]map[int32]int64 `json:"offsetTable"`
		}
		_ = protocol.UnmarshalBareIntKeys(b, &offsets)
		var any map[string]any
		_ = protocol.UnmarshalBareIntKeys(b, &any)
	})
}
