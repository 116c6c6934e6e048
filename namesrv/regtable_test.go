package namesrv

import (
	"testing"

	"github.com/rocketraft/rocketraft/remoting"
)

// TestRegistrationBodyDecodedOnce: a body an address registered before is not decoded again, and what it
// says still applies; a new data version, another address, or a master registration of a body first sent
// as a slave's are decoded.
func TestRegistrationBodyDecodedOnce(t *testing.T) {
	f := newFixture(t, nil)
	m := f.ns.Routes()
	f.register(f.cl, brokerA)
	if m.tableHits.Load() != 0 {
		t.Fatal("a first registration was not decoded")
	}
	for i := range 3 {
		f.register(f.cl, brokerA)
		if got := m.tableHits.Load(); got != uint64(i+1) {
			t.Fatalf("re-registration %d: %d bodies taken as decoded before", i+1, got)
		}
	}
	if _, _, ok := f.route("TopicTest"); !ok {
		t.Fatal("no route after the re-registrations")
	}

	// A new version with another table: decoded and applied.
	b := brokerA
	b.version++
	b.topics = topicsOf("TopicTest", "TBW102", "Later")
	f.register(f.cl, b)
	if m.tableHits.Load() != 3 {
		t.Fatal("a new body was taken as one decoded before")
	}
	if _, _, ok := f.route("Later"); !ok {
		t.Fatal("the new version's topic is not routed")
	}

	// A slave's registration, then the same body from the same address as master: its topics were not
	// kept for the slave's registration, so the master's is decoded and applied.
	s := b
	s.name, s.addr, s.id = "broker-s", "10.0.0.9:10911", 1
	s.topics = topicsOf("OnlyS")
	f.register(f.cl, s)
	hits := m.tableHits.Load()
	if _, _, ok := f.route("OnlyS"); ok {
		t.Fatal("a slave's table was applied")
	}
	s.id = 0
	f.register(f.cl, s)
	if m.tableHits.Load() != hits {
		t.Fatal("a slave's table (its topics dropped) was taken for a master's registration")
	}
	if _, _, ok := f.route("OnlyS"); !ok {
		t.Fatal("the promoted master's topics are not routed")
	}
}

// TestKnownBodyCRC: a body registered before with the same bodyCrc32 is taken without checking its crc32
// again; the same bytes with another bodyCrc32 are checked, and refused as Java refuses them.
func TestKnownBodyCRC(t *testing.T) {
	f := newFixture(t, nil)
	m := f.ns.Routes()
	f.register(f.cl, brokerA) // with its right bodyCrc32
	if resp := f.registerWith(f.cl, brokerA, nil); resp.Code != int32(remoting.Success) || m.tableHits.Load() != 1 {
		t.Fatalf("the same body again: %v, %d taken as known", resp, m.tableHits.Load())
	}
	resp := f.registerWith(f.cl, brokerA, map[string]string{"bodyCrc32": "12345"})
	if resp.Code != int32(remoting.SystemError) || resp.Remark != remarkCRCMismatch {
		t.Fatalf("a known body with a wrong bodyCrc32: %v, want SYSTEM_ERROR %q", resp, remarkCRCMismatch)
	}
	if m.tableHits.Load() != 1 {
		t.Fatal("a known body with another bodyCrc32 was taken unchecked")
	}
	if resp := f.registerWith(f.cl, brokerA, map[string]string{"bodyCrc32": "0"}); resp.Code != int32(remoting.Success) {
		t.Fatalf("the known body without a crc: %v", resp)
	}
}
