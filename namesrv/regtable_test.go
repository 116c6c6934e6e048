package namesrv

import (
	"testing"
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
